"""output.graph: the solved task list drawn as Mermaid and DOT, compared with text written by hand."""

from __future__ import annotations

import re

from planner.diff import Change, ChangeSet
from planner.graph import solve
from planner.output.graph_view import drawing, to_dot, to_mermaid
from tests.unit.test_graph import (
    SHOP,
    SHOP_NAMESPACE,
    SHOP_NAMESPACE_REF,
    WEB,
    WEB_CONFIG,
    change,
    changeset,
    claim_volume,
    manifest,
    pod_spec,
)

DATA = manifest("PersistentVolumeClaim", "data", SHOP, spec={"resources": {"requests": {"storage": "1Gi"}}})
OLD = manifest("ConfigMap", "old", SHOP)
WORKER = manifest(
    "Deployment",
    "worker",
    SHOP,
    owner="worker",
    spec={"template": {"spec": pod_spec(volumes=[claim_volume("data")])}},
)


def shop_changes() -> ChangeSet:
    """web created with its config, data's claim deleted (data loss), old pruned, worker unchanged."""
    return changeset(
        SHOP,
        SHOP,
        change("create", WEB_CONFIG),
        change("create", {**WEB, "metadata": {**WEB["metadata"], "annotations": {}}}),
        Change(ref=change("delete", DATA).ref, action="delete", desired=None, live=DATA, transition="pause"),
        change("delete", OLD),
        change("noop", WORKER),
    )


def test_the_task_list_as_mermaid_one_node_per_task_styled_by_change() -> None:
    execution = solve(shop_changes(), default_timeout=120.0)
    assert [task.id for task in execution.tasks] == [
        "parent secret/shop/shop",
        "create configmap/shop/web-config",
        "create deployment/shop/web",
        "wait-ready deployment/shop/web",
        "delete persistentvolumeclaim/shop/data",
        "wait-gone persistentvolumeclaim/shop/data",
        "delete configmap/shop/old",
        "wait-gone configmap/shop/old",
    ]
    text = to_mermaid([drawing(execution, shop_changes())])
    body = text.split("classDef dataLoss stroke-width:4px\n")[1]
    assert body == (
        '  subgraph p0["plan shop (namespace shop): 8 tasks"]\n'
        '    p0t0["parent secret/shop/shop"]:::bookkeeping\n'
        '    p0t1["create configmap/shop/web-config"]:::create\n'
        '    p0t2["create deployment/shop/web"]:::create\n'
        '    p0t3["wait-ready deployment/shop/web<br/>timeout 2m"]:::wait\n'
        '    p0t4["delete persistentvolumeclaim/shop/data<br/>⚠ destroys data"]:::delete\n'
        '    p0t5["wait-gone persistentvolumeclaim/shop/data<br/>timeout 2m"]:::wait\n'
        '    p0t6["delete configmap/shop/old"]:::prune\n'
        '    p0t7["wait-gone configmap/shop/old<br/>timeout 2m"]:::wait\n'
        "  end\n"
        "  p0t0 --> p0t1\n"
        "  p0t1 --> p0t2\n"
        "  p0t2 --> p0t3\n"
        "  p0t0 --> p0t4\n"
        "  p0t4 --> p0t5\n"
        "  p0t3 --> p0t6\n"
        "  p0t5 --> p0t6\n"
        "  p0t6 --> p0t7\n"
        "  class p0t4 dataLoss\n"
    )


def test_every_task_is_a_node_and_every_predecessor_an_edge() -> None:
    execution = solve(shop_changes(), default_timeout=120.0)
    text = to_mermaid([drawing(execution, shop_changes())])
    assert len(re.findall(r"^    p0t\d+\[", text, flags=re.M)) == len(execution.tasks)
    assert len(re.findall(r"-->", text)) == sum(len(task.predecessors) for task in execution.tasks)


def test_a_namespace_and_an_unchanged_dependency_are_drawn_as_bookkeeping_and_grey() -> None:
    first = changeset(
        SHOP,
        SHOP,
        Change(ref=SHOP_NAMESPACE_REF, action="create", desired=SHOP_NAMESPACE, live=None),
        change("noop", WORKER),
        change(
            "update",
            manifest(
                "Deployment",
                "api",
                SHOP,
                owner="api",
                annotations={"config.kubernetes.io/depends-on": "apps/namespaces/shop/Deployment/worker"},
            ),
        ),
    )
    drawn = drawing(solve(first), first)
    assert [(node.lines[0], node.style) for node in drawn.nodes] == [
        ("wait-ready deployment/shop/worker", "unchanged"),
        ("ensure namespace/shop", "bookkeeping"),
        ("parent secret/shop/shop", "bookkeeping"),
        ("apply deployment/shop/api", "update"),
        ("wait-ready deployment/shop/api", "wait"),
    ]


def big_changes(count: int) -> ChangeSet:
    deployments = [manifest("Deployment", f"web-{i:04}", SHOP, owner=f"web-{i:04}") for i in range(count)]
    return changeset(SHOP, SHOP, *(change("create", d) for d in deployments), change("delete", OLD))


def test_a_large_plan_is_collapsed_by_step_and_kind_with_counts() -> None:
    changes = big_changes(1000)
    drawn = drawing(solve(changes), changes)
    assert drawn.collapsed
    assert drawn.tasks == 2003
    assert [node.lines for node in drawn.nodes] == [
        ("parent Secret × 1",),
        ("create Deployment × 1000",),
        ("wait-ready Deployment × 1000",),
        ("delete ConfigMap × 1",),
        ("wait-gone ConfigMap × 1",),
    ]
    assert drawn.edges == (("g0", "g1"), ("g1", "g2"), ("g2", "g3"), ("g3", "g4"))
    assert drawn.caption == "plan shop (namespace shop): 2003 tasks, collapsed into 5 groups by step and kind"


def test_a_plan_at_the_limit_is_drawn_whole() -> None:
    changes = big_changes(2)
    drawn = drawing(solve(changes), changes, max_nodes=7)
    assert not drawn.collapsed
    assert len(drawn.nodes) == drawn.tasks == 7


def test_labels_cannot_break_out_of_their_quotes() -> None:
    changes = changeset(SHOP, SHOP, change("create", manifest("ConfigMap", 'a"b<c>#', SHOP)))
    text = to_mermaid([drawing(solve(changes), changes)])
    assert '["create configmap/shop/a#quot;b#lt;c#gt;#35;"]' in text


def test_dot_draws_the_same_nodes_and_edges() -> None:
    execution = solve(shop_changes(), default_timeout=120.0)
    text = to_dot([drawing(execution, shop_changes())])
    assert text.startswith("digraph plan {\n  rankdir=LR;\n")
    assert (
        '    p0t4 [label="delete persistentvolumeclaim/shop/data\\n⚠ destroys data", fillcolor="#ffebe9", '
        'color="#cf222e", fontcolor="#1f2328", penwidth=3];'
    ) in text.splitlines()
    assert '    p0t6 [label="delete configmap/shop/old", fillcolor="#ffebe9", color="#cf222e", ' in text
    assert len(re.findall(r"^    p0t\d+ \[", text, flags=re.M)) == len(execution.tasks)
    assert len(re.findall(r" -> ", text)) == sum(len(task.predecessors) for task in execution.tasks)

"""The plan printers, fed hand-built ChangeSets: text, JSON lines and markdown say the same facts."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
from markdown_it import MarkdownIt

from planner.diff import Change, ChangeSet, FieldChange
from planner.kinds import CONFIG_MAP, DEPLOYMENT
from planner.monitor.pool_members import PoolStatus
from planner.objects import ObjectRef
from planner.output.changes import headline
from planner.output.comment import to_markdown
from planner.output.plan import formatted, summary_line, to_json_lines, to_text
from tests.paths import REPO

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def ref(kind: str, name: str, group: str = "") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, namespace="shop", name=name)


def deployment_web() -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"planner.dev/runtime-id": "k8s-shop|deployment|web"}},
    }


CHANGES = ChangeSet(
    plan="shop",
    namespace="shop",
    changes=(
        Change(ref=ref("ConfigMap", "web-config"), action="create", desired={}, live=None),
        Change(
            ref=ref("Deployment", "web", "apps"),
            action="update",
            desired=deployment_web(),
            live=deployment_web(),
            fields=(
                FieldChange(
                    path=".spec.template.spec.containers[name=web].image", before="web:1.0", after="web:1.1"
                ),
                FieldChange(path=".spec.replicas", before=2, after=2, manager="kubectl"),
            ),
            owner="web",
        ),
        Change(
            ref=ref("Job", "migrate", "batch"),
            action="replace",
            desired={},
            live={},
            reason="forced by spec.template",
        ),
        Change(
            ref=ref("Secret", "db"),
            action="update",
            desired={},
            live={},
            fields=(FieldChange(path=".data.password", before="(sensitive)", after="(sensitive)"),),
        ),
        Change(
            ref=ref("Service", "old-svc"), action="delete", desired=None, live={}, reason="not in the plan"
        ),
        Change(
            ref=ref("ConfigMap", "gone"),
            action="create",
            desired={},
            live=None,
            reason="deleted outside the plan",
            drift=True,
        ),
        Change(
            ref=ref("Job", "seed", "batch"), action="noop", desired={}, live=None, transition="already-ran"
        ),
        Change(ref=ref("ConfigMap", "same"), action="noop", desired={}, live={}),
    ),
)


def test_text_reads_like_terraform_and_hides_noops() -> None:
    assert to_text(CHANGES) == (
        "Plan shop (namespace shop)\n"
        "  + create configmap/shop/web-config\n"
        "  ~ update deployment/shop/web\n"
        '      .spec.template.spec.containers[name=web].image: "web:1.0" → "web:1.1"\n'
        "      .spec.replicas: takes over from kubectl\n"
        "-/+ replace job/shop/migrate (forced by spec.template)\n"
        "  ~ update secret/shop/db\n"
        "      .data.password: *** → ***\n"
        "  - delete service/shop/old-svc (not in the plan)\n"
        "  + create configmap/shop/gone (deleted outside the plan; drift)\n"
        "  = unchanged job/shop/seed (already-ran)\n"
        "Plan: 2 to create, 2 to update, 1 to replace, 1 to delete (1 drift, 5 pending).\n"
    )


def test_text_with_colour_adds_escape_codes_only_when_asked() -> None:
    assert "\x1b[" in to_text(CHANGES, colour=True)
    assert "\x1b[" not in to_text(CHANGES)


def test_no_changes_says_so() -> None:
    quiet = ChangeSet(plan="shop", namespace="shop", changes=CHANGES.changes[-1:])
    assert summary_line(quiet) == "No changes. The cluster matches plan shop."
    assert to_text(quiet) == "Plan shop (namespace shop)\nNo changes. The cluster matches plan shop.\n"


def test_json_lines_use_terraform_actions_and_a_summary() -> None:
    records = [json.loads(line) for line in to_json_lines(CHANGES, now=NOW).splitlines()]
    assert [(r["type"], r.get("object"), r.get("actions")) for r in records] == [
        ("Planned", "configmap/shop/web-config", ["create"]),
        ("Planned", "deployment/shop/web", ["update"]),
        ("Planned", "job/shop/migrate", ["delete", "create"]),
        ("Planned", "secret/shop/db", ["update"]),
        ("Planned", "service/shop/old-svc", ["delete"]),
        ("Planned", "configmap/shop/gone", ["create"]),
        ("Planned", "job/shop/seed", ["no-op"]),
        ("Summary", None, None),
    ]
    web = records[1]
    assert web["runtime_id"] == "k8s-shop|deployment|web"
    assert web["time"] == "2026-11-29T12:00:00Z"
    assert web["fields"][1] == {"path": ".spec.replicas", "before": 2, "after": 2, "manager": "kubectl"}
    assert records[6]["transition"] == "already-ran"
    assert records[3]["fields"] == [{"path": ".data.password", "before": "***", "after": "***"}]
    assert [(r.get("cause"), r["drift"]) for r in records[:-1]] == [
        ("pending", False),
        ("pending", False),
        ("pending", False),
        ("pending", False),
        ("pending", False),
        ("drift", True),
        (None, False),
    ]
    keys = ("create", "update", "replace", "delete", "drift", "pending")
    assert {k: records[-1][k] for k in keys} == {
        "create": 2,
        "update": 2,
        "replace": 1,
        "delete": 1,
        "drift": 1,
        "pending": 5,
    }


def test_markdown_renders_a_table_and_folded_details() -> None:
    text = to_markdown([CHANGES])
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = [token.type for token in tokens]
    assert "table_open" in kinds and "fence" in kinds and "html_block" in kinds
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "`deployment/shop/web`" in cells
    assert "**Plan: 2 to create, 2 to update, 1 to replace, 1 to delete (1 drift, 5 pending).**" in cells
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[2] for row in rows] == ["pending"] * 5 + ["drift", ""]
    fence = next(t for t in tokens if t.type == "fence")
    assert fence.info == "diff" and "takes over from kubectl" in fence.content


def test_markdown_lists_ownership_conflicts() -> None:
    conflicted = ChangeSet(
        plan="shop",
        namespace="shop",
        changes=(),
        conflicts=(
            "deployment shop/api exists and is not managed by plan shop: `planner apply --adopt` of this plan takes it over",
        ),
    )
    assert "- deployment shop/api exists and is not managed by plan shop" in to_markdown([conflicted])


def test_text_shows_a_conflict_no_change_carries_on_a_line_of_its_own() -> None:
    api = ref("Deployment", "api", "apps")
    reason = "deployment shop/api exists and is not managed by plan shop: `planner apply --adopt` of this plan takes it over"
    impostor = "secret shop/shop exists and is not the ApplySet parent of plan shop; rename the plan or move that secret"
    conflicted = ChangeSet(
        plan="shop",
        namespace="shop",
        changes=(Change(ref=api, action="create", desired={}, live={}, reason=reason),),
        conflicts=(reason, impostor),
    )
    assert to_text(conflicted).splitlines() == [
        "Plan shop (namespace shop)",
        f"  + create deployment/shop/api ({reason})",
        f"  ! {impostor}",
        "Plan: 1 to create, 0 to update, 0 to replace, 0 to delete (0 drift, 1 pending).",
    ]


def test_every_json_record_validates_against_the_documented_schema() -> None:
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    for line in to_json_lines(CHANGES, now=NOW).splitlines():
        errors = [e.message for e in validator.iter_errors(json.loads(line))]
        assert errors == [], line


def claim_replaced(*, allow: bool) -> ChangeSet:
    claim = Change(
        ref=ref("PersistentVolumeClaim", "alice-workspace"),
        action="replace",
        desired={},
        live={},
        reason="forced by spec.storageClassName",
    )
    return ChangeSet(plan="shop", namespace="shop", changes=(claim,), allow_data_loss=allow)


def test_text_warns_first_and_marks_a_change_that_destroys_data() -> None:
    assert to_text(claim_replaced(allow=False)).splitlines() == [
        "Plan shop (namespace shop)",
        "  ! this plan destroys data (1 object marked destroys data below); --allow-data-loss was not given, "
        "so apply refuses this plan",
        "-/+ replace persistentvolumeclaim/shop/alice-workspace (forced by spec.storageClassName; destroys data)",
        "Plan: 0 to create, 0 to update, 1 to replace, 0 to delete (0 drift, 1 pending).",
    ]
    assert (
        "  ! this plan destroys data (1 object marked destroys data below); --allow-data-loss was given: "
        in (to_text(claim_replaced(allow=True)))
    )


def test_json_carries_the_same_data_loss_flag_and_validates() -> None:
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    for allow in (False, True):
        planned, summary = [
            json.loads(line) for line in to_json_lines(claim_replaced(allow=allow)).splitlines()
        ]
        assert planned["destroys_data"] is True
        assert planned["message"].endswith("(forced by spec.storageClassName; destroys data)")
        assert (summary["destroys_data"], summary["allow_data_loss"]) == (1, allow)
        for record in (planned, summary):
            jsonschema.validate(record, schema)
    records = [json.loads(line) for line in to_json_lines(CHANGES, now=NOW).splitlines()]
    assert [r["destroys_data"] for r in records] == [False] * (len(records) - 1) + [0]


DEV_POOL = PoolStatus(namespace="shop", pool="dev", size=3, ready=2, unclaimed=3, claimed=1)
QUIET = ChangeSet(plan="shop", namespace="shop", changes=())


def test_every_format_shows_each_warm_pool_of_its_plan() -> None:
    other = ChangeSet(plan="tools", namespace="tools", changes=())
    text = formatted([QUIET, other], "text", pools=[[DEV_POOL], []])
    assert text.splitlines() == [
        "Plan shop (namespace shop)",
        "No changes. The cluster matches plan shop.",
        "warm pool shop/dev: 2 ready, 3 unclaimed of size 3, 1 claimed (kept by planner controller)",
        "Plan tools (namespace tools)",
        "No changes. The cluster matches plan tools.",
    ]
    summaries = [
        json.loads(line) for line in formatted([QUIET, other], "json", pools=[[DEV_POOL]]).splitlines()
    ]
    assert [s["warmPools"] for s in summaries] == [
        [{"name": "dev", "namespace": "shop", "size": 3, "ready": 2, "unclaimed": 3, "claimed": 1}],
        [],
    ]
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    for summary in summaries:
        jsonschema.validate(summary, schema)
    markdown = formatted([QUIET, other], "markdown", pools=[[DEV_POOL]])
    assert markdown.split("\n\n")[:4] == [
        "### planner plan `shop` (namespace `shop`)",
        "**No changes. The cluster matches plan shop.**",
        "- warm pool `shop/dev`: 2 ready, 3 unclaimed of size 3, 1 claimed (kept by `planner controller`)",
        "### planner plan `tools` (namespace `tools`)",
    ]


def test_the_summary_counts_unchanged_objects_that_are_not_ready() -> None:
    web = ObjectRef.of(DEPLOYMENT, "web", "shop")
    down = Change(ref=web, action="noop", desired={}, live={}, unready="available 0/2")
    alone = ChangeSet(plan="shop", namespace="shop", changes=(down,))
    assert summary_line(alone) == "No changes, but 1 not ready: apply waits for it, and fails if it cannot."
    assert headline(down) == "unchanged deployment/shop/web (not ready: available 0/2)"
    config = ObjectRef.of(CONFIG_MAP, "web-config", "shop")
    update = Change(ref=config, action="update", desired={}, live={}, reason="plan changed")
    both = ChangeSet(plan="shop", namespace="shop", changes=(update, down))
    assert summary_line(both) == (
        "Plan: 0 to create, 1 to update, 0 to replace, 0 to delete (0 drift, 1 pending; 1 not ready)."
    )

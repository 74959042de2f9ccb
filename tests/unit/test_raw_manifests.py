"""Raw manifests: loading (inline and from files, with positions in their own files), the checks that
need no cluster, render, kind order and dependencies in the graph, generic readiness, masking and
the pruning of cluster-scoped members. Expected values are written by hand."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from planner.diff import Change, ChangeSet, diff
from planner.errors import PlanError
from planner.graph import solve
from planner.kinds import DEPLOYMENT, KindInfo, known, served_by
from planner.live import LiveState
from planner.objects import ObjectRef, ref_of
from planner.output.masking import mask_manifest
from planner.plan import Plan, Position, load_plans
from planner.plan.raw_manifests import manifest_files
from planner.plan.source import read_plan_file
from planner.render import render
from planner.wait.readiness import ReadinessContext, readiness

HEAD = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\n"
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: {scope}
  names: {{kind: Widget, plural: widgets}}
  versions: [{{name: v1, served: true, storage: true}}]
---
# the custom resource, second document of the file
apiVersion: example.com/v1
kind: Widget
metadata:
  name: first
spec: {{size: 3}}
"""


def load(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Plan:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    (tmp_path / "plan.yaml").write_text(HEAD + text)
    return load_plans([tmp_path / "plan.yaml"]).plans[0]


def errors(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load(tmp_path, text, files)
    return [str(d).replace(f"{tmp_path}/", "") for d in raised.value.diagnostics]


# --- loading -----------------------------------------------------------------------------------------


def test_inline_and_file_manifests_keep_their_files_and_positions(tmp_path: Path) -> None:
    plan = load(
        tmp_path,
        "allowClusterScoped: true\n"
        "manifests:\n"
        "  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web}}\n"
        "manifestFiles: [crds/*.yaml]\n",
        {"crds/widget.yaml": CRD.format(scope="Namespaced")},
    )
    found = [(m.file.replace(f"{tmp_path}/", ""), m.path, m.position, m.handle) for m in plan.manifests]
    assert found == [
        ("plan.yaml", "manifests[0]", Position(line=6, column=5), "PodDisruptionBudget/web"),
        (
            "crds/widget.yaml",
            "[0]",
            Position(line=1, column=1),
            "CustomResourceDefinition/widgets.example.com",
        ),
        ("crds/widget.yaml", "[1]", Position(line=12, column=1), "Widget/first"),
    ]
    assert plan.allow_cluster_scoped is True
    assert plan.manifests[2].object == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "first"},
        "spec": {"size": 3},
    }


def test_a_bad_manifest_file_is_reported_at_its_own_line_and_column(tmp_path: Path) -> None:
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: configmap\nmetadata:\n  labels: {}\n"
    assert errors(tmp_path, "manifestFiles: [bad.yaml]\n", {"bad.yaml": bad}) == [
        'bad.yaml:6:7: [1].kind: "configmap" is not a kind: expected a kind as manifests spell it, '
        "capitalised (ConfigMap, Deployment)",
        'bad.yaml:7:1: [1].metadata: missing required field "name"',
    ]


def test_manifest_files_stay_inside_the_plan_directory_and_must_exist(tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    os.mkfifo(plans / "fifo.yaml")
    (plans / "plan.yaml").write_text(
        HEAD
        + 'manifestFiles: ["../outside.yaml", "/etc/hostname", "none/*.yaml", "link.yaml", "fifo.yaml"]\n'
    )
    with pytest.raises(PlanError) as raised:
        load_plans([plans / "plan.yaml"])
    assert [str(d).replace(f"{tmp_path}/", "") for d in raised.value.diagnostics] == [
        "plans/fifo.yaml:1:1: cannot read manifest file: a FIFO, not a regular file",
        "plans/plan.yaml:4:17: manifestFiles[0]: '../outside.yaml' leads outside the plan file's directory "
        "(plans/../outside.yaml): refused",
        "plans/plan.yaml:4:36: manifestFiles[1]: '/etc/hostname' is absolute: manifest files are named "
        "relative to the plan file's directory",
        "plans/plan.yaml:4:53: manifestFiles[2]: 'none/*.yaml' matches no file beside the plan",
        "plans/plan.yaml:4:68: manifestFiles[3]: 'link.yaml' leads outside the plan file's directory "
        "(plans/link.yaml): refused",
    ]


def test_a_manifest_file_pattern_with_a_nul_character_is_a_plan_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(HEAD + 'manifestFiles: ["a\\0b.yaml"]\n')
    with pytest.raises(PlanError) as raised:
        load_plans([tmp_path / "plan.yaml"])
    assert [str(d).replace(f"{tmp_path}/", "") for d in raised.value.diagnostics] == [
        "plan.yaml:4:17: manifestFiles[0]: 'a\\x00b.yaml' holds a NUL character: no file is named so"
    ]


def test_scope_collisions_and_dependencies_are_checked_at_their_positions(tmp_path: Path) -> None:
    text = """\
workloads:
  - {name: web, image: 'nginx:1.27', dependsOn: [Widget/none]}
manifests:
  - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader}}
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: a
      annotations: {planner.dev/depends-on: "web, Secret/nothing"}
manifestFiles: [more.yaml]
"""
    assert errors(
        tmp_path,
        text,
        {"more.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\n"},
    ) == [
        "more.yaml:3:12: [0].metadata.name: ConfigMap/a is already declared at plan.yaml:9:5: one object "
        "per kind, namespace and name",
        'plan.yaml:5:50: workloads[0].dependsOn[0]: unknown dependsOn target "Widget/none": no manifest of '
        "this plan is Widget/none (manifests: ClusterRole/reader, ConfigMap/a, Deployment/web)",
        'plan.yaml:7:56: manifests[0].metadata.name: Deployment/web collides with Deployment "web", which '
        "the plan renders itself (plan.yaml:5:12): rename one of them",
        "plan.yaml:8:48: manifests[1].kind: ClusterRole is cluster-scoped: set `allowClusterScoped: true` "
        "on the plan to manage cluster-scoped objects (apply then also prunes them)",
        "plan.yaml:13:21: manifests[2].metadata.annotations.planner.dev/depends-on: unknown dependency "
        '"Secret/nothing": expected a workload or sandbox of this plan, a manifest as Kind/name, or a chart as chart/<name>',
    ]


def test_a_dependson_target_that_is_misspelt_is_told_the_closest_name_and_a_chart_as_a_chart(
    tmp_path: Path,
) -> None:
    text = """\
workloads:
  - {name: web, image: 'nginx:1.27', dependsOn: [ConfigMap/setings, chart/nope]}
manifests:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}}
"""
    assert errors(tmp_path, text) == [
        'plan.yaml:5:50: workloads[0].dependsOn[0]: unknown dependsOn target "ConfigMap/setings": no manifest '
        'of this plan is ConfigMap/setings (did you mean "ConfigMap/settings"? manifests: ConfigMap/settings)',
        'plan.yaml:5:69: workloads[0].dependsOn[1]: unknown dependsOn target "chart/nope": no chart of this '
        "plan is named nope (it has none)",
    ]


def test_secret_and_configmap_data_the_api_could_not_decode_is_refused_where_it_is(tmp_path: Path) -> None:
    text = """\
manifests:
  - apiVersion: v1
    kind: Secret
    metadata: {name: token}
    data: {bad: "not base64!!", number: 12, good: "aGVsbG8=", wrapped: "aGVs\\nbG8="}
    stringData: {port: 80}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: "not a map"}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, binaryData: {blob: "%%%"}}
"""
    assert errors(tmp_path, text) == [
        "plan.yaml:8:12: manifests[0].data.bad: Secret/token: data.bad is not base64: the API refuses it "
        "(write the value under stringData, or encode it)",
        "plan.yaml:8:33: manifests[0].data.number: Secret/token: data.number must be a string (quote it)",
        "plan.yaml:9:18: manifests[0].stringData.port: Secret/token: stringData.port must be a string (quote it)",
        "plan.yaml:10:60: manifests[1].data: ConfigMap/a: data must be a map of keys to strings",
        "plan.yaml:11:73: manifests[2].binaryData.blob: ConfigMap/b: binaryData.blob is not base64: the API "
        "refuses it (write the value under data, or encode it)",
    ]


# --- render ------------------------------------------------------------------------------------------


def test_render_places_and_stamps_raw_objects_and_turns_their_dependencies_into_cli_utils_references(
    tmp_path: Path,
) -> None:
    plan = load(
        tmp_path,
        """\
allowClusterScoped: true
workloads:
  - {name: web, image: 'nginx:1.27', dependsOn: [Widget/first]}
manifests:
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata:
      name: web
      labels: {team: shop}
      annotations: {planner.dev/depends-on: web, note: kept}
    spec: {minAvailable: 1}
manifestFiles: [crd.yaml]
""",
        {"crd.yaml": CRD.format(scope="Cluster")},
    )
    objects = {f"{m['kind']}/{m['metadata']['name']}": m for m in render(plan, "default")}
    applyset = objects["Deployment/web"]["metadata"]["labels"]["applyset.kubernetes.io/part-of"]
    pdb = objects["PodDisruptionBudget/web"]
    del pdb["metadata"]["annotations"]["planner.dev/hash"]
    assert pdb == {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {"team": "shop", "applyset.kubernetes.io/part-of": applyset},
            "annotations": {
                "note": "kept",
                "config.kubernetes.io/depends-on": "apps/namespaces/shop/Deployment/web",
                "planner.dev/plan": "shop",
            },
        },
        "spec": {"minAvailable": 1},
    }
    # Cluster-scoped: the CRD by the table of kinds, the Widget by the plan's CRD (scope: Cluster).
    assert "namespace" not in objects["CustomResourceDefinition/widgets.example.com"]["metadata"]
    assert "namespace" not in objects["Widget/first"]["metadata"]
    annotations = objects["Deployment/web"]["metadata"]["annotations"]
    assert annotations["config.kubernetes.io/depends-on"] == "example.com/Widget/first"


def test_a_custom_resource_of_a_crd_outside_the_plan_is_placed_as_the_cluster_serves_its_kind(
    tmp_path: Path,
) -> None:
    plan = load(
        tmp_path,
        "allowClusterScoped: true\nmanifests:\n  - {apiVersion: example.com/v1, kind: Tier, metadata: {name: gold}}\n",
    )
    assert render(plan, "default")[0]["metadata"]["namespace"] == "shop"  # offline: taken as namespaced
    tier = KindInfo(kind="Tier", group="example.com", version="v1", plural="tiers", namespaced=False)
    served = dataclasses.replace(plan, served_kinds={("example.com", "Tier"): tier})
    assert "namespace" not in render(served, "default")[0]["metadata"]


# --- graph -------------------------------------------------------------------------------------------


def obj(
    api_version: str, kind: str, name: str, namespace: str | None = "shop", **fields: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "annotations": fields.pop("annotations", {})}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **fields}


def create(manifest: dict[str, Any]) -> Change:
    return Change(ref=ref_of(manifest), action="create", desired=manifest, live=None)


def test_kind_order_puts_crds_then_rbac_before_workloads_and_a_custom_resource_after_its_crd() -> None:
    crd = obj(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "widgets.example.com",
        None,
        spec={
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "storage": True}],
        },
    )
    widget = obj("example.com/v1", "Widget", "first")
    account = obj("v1", "ServiceAccount", "runner")
    pod = {"serviceAccountName": "runner", "containers": [{"name": "main", "image": "example:1"}]}
    job = obj("batch/v1", "Job", "migrate", spec={"template": {"spec": pod}})
    budget = obj(
        "policy/v1",
        "PodDisruptionBudget",
        "web",
        annotations={"config.kubernetes.io/depends-on": "batch/namespaces/shop/Job/migrate"},
    )
    changes = ChangeSet(
        plan="shop", namespace="shop", changes=tuple(map(create, (budget, job, account, widget, crd)))
    )
    assert solve(changes).as_text() == (
        "parent secret/shop/shop\n"
        "create customresourcedefinition/widgets.example.com <- parent secret/shop/shop\n"
        "wait-ready customresourcedefinition/widgets.example.com <- create customresourcedefinition/widgets.example.com\n"
        "create serviceaccount/shop/runner <- create customresourcedefinition/widgets.example.com\n"
        "create job/shop/migrate <- create serviceaccount/shop/runner\n"
        "wait-ready job/shop/migrate <- create job/shop/migrate\n"
        "create poddisruptionbudget/shop/web <- wait-ready job/shop/migrate\n"
        "wait-ready poddisruptionbudget/shop/web <- create poddisruptionbudget/shop/web\n"
        "wait-ready serviceaccount/shop/runner <- create serviceaccount/shop/runner\n"
        "create widget/shop/first <- wait-ready customresourcedefinition/widgets.example.com\n"
        "wait-ready widget/shop/first <- create widget/shop/first\n"
    )


# --- readiness ---------------------------------------------------------------------------------------

CONTEXT = ReadinessContext(now=0.0)


def conditions(**found: str) -> dict[str, Any]:
    return {"conditions": [{"type": name, "status": status} for name, status in found.items()]}


@pytest.mark.parametrize(
    ("kind", "generation", "status", "verdict"),
    [
        (
            "CustomResourceDefinition",
            1,
            conditions(NamesAccepted="True", Established="True"),
            ("Current", "Established"),
        ),
        (
            "CustomResourceDefinition",
            1,
            conditions(NamesAccepted="False", Established="False"),
            ("InProgress", "not established"),
        ),
        (
            "Widget",
            2,
            {"observedGeneration": 1, **conditions(Ready="True")},
            ("InProgress", "generation 2 not yet observed (observed 1)"),
        ),
        ("Widget", 2, {"observedGeneration": 2, **conditions(Ready="False")}, ("InProgress", "not ready")),
        ("Widget", 1, conditions(Available="True"), ("Current", "Available")),
        (
            "PodDisruptionBudget",
            1,
            {"observedGeneration": 1, **conditions(DisruptionAllowed="False")},
            ("Current", "exists"),
        ),
        ("NetworkPolicy", 1, {}, ("Current", "exists")),
    ],
)
def test_generic_readiness_follows_kstatus(
    kind: str, generation: int, status: dict[str, Any], verdict: tuple[str, str]
) -> None:
    found = readiness(
        {"kind": kind, "metadata": {"name": "x", "generation": generation}, "status": status}, CONTEXT
    )
    assert (found.status, found.message.split(":")[0]) == verdict


# --- masking and pruning -----------------------------------------------------------------------------


def test_a_raw_secret_is_masked_in_output_and_in_the_plan_text_kept(tmp_path: Path) -> None:
    text = "manifests:\n  - apiVersion: v1\n    kind: Secret\n    metadata: {name: creds}\n    stringData: {password: hunter2}\n    data: {token: aHVudGVyMg==}\n"
    plan = load(tmp_path, text)
    secret = render(plan, "default")[0]
    masked = mask_manifest(secret)
    assert (masked["stringData"], masked["data"], masked["metadata"]["annotations"]["planner.dev/hash"]) == (
        {"password": "***"},
        {"token": "***"},
        "***",
    )
    parsed = read_plan_file(tmp_path / "plan.yaml")
    assert (
        not isinstance(parsed, Exception)
        and "hunter2" not in parsed.shown
        and "aHVudGVyMg" not in parsed.shown
    )


def test_a_cluster_scoped_member_is_pruned_only_when_the_plan_allows_cluster_scoped_objects() -> None:
    role = obj("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", None)
    live = LiveState(members={ref_of(role): role})
    kept = diff([], live, plan="shop", namespace="shop")
    pruned = diff([], live, plan="shop", namespace="shop", allow_cluster_scoped=True)
    ref = ObjectRef(group="rbac.authorization.k8s.io", kind="ClusterRole", namespace=None, name="reader")
    assert [(c.ref, c.action, c.reason) for c in kept.changes] == [
        (ref, "noop", "kept: cluster-scoped, and the plan does not set allowClusterScoped")
    ]
    assert [(c.ref, c.action) for c in pruned.changes] == [(ref, "delete")]


def test_the_controller_watches_the_manifest_files_a_plan_reads(tmp_path: Path) -> None:
    files = {"m/b.yaml": CRD.format(scope="Namespaced"), "m/a.yaml": "# nothing yet\n"}
    load(tmp_path, "allowClusterScoped: true\nmanifestFiles: [m/*.yaml]\n", files)
    (tmp_path / "m" / "notes.txt").write_text("not matched")
    assert manifest_files(tmp_path / "plan.yaml") == (tmp_path / "m" / "a.yaml", tmp_path / "m" / "b.yaml")


def test_a_declared_namespace_is_ensured_then_written_whole_and_what_it_holds_waits_for_it() -> None:
    part_of = {"applyset.kubernetes.io/part-of": "applyset-x-v1"}
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team", "labels": {"team": "a", **part_of}},
    }
    quota = obj("v1", "ResourceQuota", "small", "team", spec={"hard": {"pods": "10"}})
    changes = ChangeSet(plan="shop", namespace="shop", changes=(create(namespace), create(quota)))
    assert solve(changes).as_text() == (
        "ensure namespace/team\n"
        "parent secret/shop/shop\n"
        "apply namespace/team <- ensure namespace/team, parent secret/shop/shop\n"
        "create resourcequota/team/small <- ensure namespace/team, parent secret/shop/shop\n"
        "wait-ready resourcequota/team/small <- create resourcequota/team/small\n"
    )


def test_metadata_only_the_api_server_sets_is_refused_and_a_status_left_out(tmp_path: Path) -> None:
    copied = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  resourceVersion: '42'\n  uid: x\nstatus: {}\n"
    assert errors(tmp_path, "manifestFiles: [copied.yaml]\n", {"copied.yaml": copied}) == [
        "copied.yaml:5:3: [0].metadata.resourceVersion: metadata.resourceVersion is set by the API server, "
        "not by a manifest: remove it",
        "copied.yaml:6:3: [0].metadata.uid: metadata.uid is set by the API server, not by a manifest: remove it",
    ]
    copied = copied.replace("  resourceVersion: '42'\n  uid: x\n", "")
    (rendered,) = render(load(tmp_path, "manifestFiles: [copied.yaml]\n", {"copied.yaml": copied}), "default")
    assert "status" not in rendered


def test_a_crd_manifest_declares_its_kind_at_the_storage_version() -> None:
    crd = {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {"name": "v1beta1", "served": True},
                {"name": "v1", "served": True, "storage": True},
            ],
        },
    }
    assert served_by(crd) == KindInfo(
        kind="Widget", group="example.com", version="v1", plural="widgets", namespaced=False
    )
    assert served_by({"kind": "CustomResourceDefinition", "spec": {"group": "example.com"}}) is None
    assert known("apps", "Deployment") is DEPLOYMENT  # planner's own row, with its immutable fields
    assert known("policy", "PodDisruptionBudget").plural == "poddisruptionbudgets"  # type: ignore[union-attr]
    assert known("example.com", "Widget") is None


def test_a_dependency_cycle_through_a_manifest_is_refused_when_the_plan_is_loaded(tmp_path: Path) -> None:
    text = """\
workloads:
  - {name: web, image: 'nginx:1.27', dependsOn: [PodDisruptionBudget/web]}
manifests:
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata:
      name: web
      annotations: {planner.dev/depends-on: web}
"""
    assert errors(tmp_path, text) == [
        "plan.yaml:11:21: manifests[0].metadata.annotations.planner.dev/depends-on: dependency cycle: "
        "PodDisruptionBudget/web -> web -> PodDisruptionBudget/web"
    ]


def test_a_plan_may_not_hold_another_plans_run_lock(tmp_path: Path) -> None:
    """A plan that held `planner-lock-<plan>` would block that plan's applies (issue 40, item 3)."""
    squatter = (
        "manifests:\n  - apiVersion: coordination.k8s.io/v1\n    kind: Lease\n"
        "    metadata: {name: planner-lock-b, namespace: team-b}\n    spec: {holderIdentity: squatter}\n"
    )
    assert errors(tmp_path, squatter) == [
        "plan.yaml:7:16: manifests[0].metadata.name: Lease/planner-lock-b: Leases named planner-lock-<plan> "
        "are planner's run locks, which only planner takes: a plan holding one would block that plan's applies"
    ]

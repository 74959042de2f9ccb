"""Prune end to end (DESIGN §3–§4, KEP-3659): what a plan no longer declares is deleted, last, and only
that — never a keep- or detach-annotated member, a PVC only with --allow-data-loss, an emptied plan
only with --allow-empty — and a converged apply tightens the parent to what remains. State is read
through raw HTTP and kubectl, never through planner's reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, events_since, http, write_plan

PART_OF = "applyset.kubernetes.io/part-of"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
ADDITIONAL_NAMESPACES = "applyset.kubernetes.io/additional-namespaces"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def exists(cluster: ClusterHandle, path: str) -> bool:
    return http(cluster, "GET", path)[0] == 200


def parent_annotations(cluster: ClusterHandle, namespace: str, plan: str) -> dict[str, str]:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/{plan}")
    assert status == 200, body
    annotations: dict[str, str] = body["metadata"]["annotations"]
    return annotations


def plan_text(namespace: str, *, workloads: str = "", config_maps: str = "", sandboxes: str = "") -> str:
    text = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: shop, namespace: {namespace}}}\n"
    if workloads:
        text += "workloads:\n" + workloads
    if config_maps:
        text += "configMaps:\n" + config_maps
    if sandboxes:
        text += "sandboxes:\n" + sandboxes
    return text


def exposed(name: str, extra: str = "") -> str:
    return f"  - {{name: {name}, image: 'nginx:1.27', port: 8080, expose: true{extra}}}\n"


def apply_ok(planner: Runner, plan: Path, *args: str) -> str:
    result = planner("apply", str(plan), "--no-wait", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_removed_workload_is_pruned_with_its_service_and_the_rest_stays(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, plan_text(namespace, workloads=exposed("web") + exposed("api")))
    apply_ok(planner, plan)
    apps, core = f"/apis/apps/v1/namespaces/{namespace}", f"/api/v1/namespaces/{namespace}"
    assert exists(cluster, f"{apps}/deployments/api") and exists(cluster, f"{core}/services/api-svc")
    write_plan(tmp_path, plan_text(namespace, workloads=exposed("web")))
    apply_ok(planner, plan)
    assert not exists(cluster, f"{apps}/deployments/api")
    assert not exists(cluster, f"{core}/services/api-svc")
    assert exists(cluster, f"{apps}/deployments/web") and exists(cluster, f"{core}/services/web-svc")
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize(
    "annotation",
    ["client.lifecycle.config.k8s.io/deletion=detach", "helm.sh/resource-policy=keep"],
    ids=["a detach-annotated member survives its removal", "a keep-annotated member survives its removal"],
)
def test_an_annotated_member_is_never_pruned_and_its_kind_stays_listed(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path, annotation: str
) -> None:
    config_maps = "  - {name: kept, data: {a: '1'}}\n  - {name: dropped, data: {a: '1'}}\n"
    plan = write_plan(tmp_path, plan_text(namespace, workloads=exposed("web"), config_maps=config_maps))
    apply_ok(planner, plan)
    annotated = kubectl("annotate", "-n", namespace, "configmap", "kept", annotation)
    assert annotated.returncode == 0, annotated.stderr
    write_plan(tmp_path, plan_text(namespace, workloads=exposed("web")))
    apply_ok(planner, plan)
    core = f"/api/v1/namespaces/{namespace}/configmaps"
    assert (exists(cluster, f"{core}/kept"), exists(cluster, f"{core}/dropped")) == (True, False)
    listed = parent_annotations(cluster, namespace, "shop")[GROUP_KINDS]
    assert listed == "ConfigMap,Deployment.apps,Service"  # the kept member is still the ApplySet's


def test_an_emptied_plan_is_refused_unless_allow_empty_then_everything_goes(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, plan_text(namespace, workloads=exposed("web")))
    apply_ok(planner, plan)
    write_plan(tmp_path, plan_text(namespace))
    for command in ("plan", "apply"):
        refused = planner(command, str(plan))
        assert refused.returncode == 1
        assert refused.stderr == (
            "error: plan shop declares nothing, and applying it would delete all 2 objects it manages; "
            "re-run with --allow-empty to accept it\n"
        )
    assert exists(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    apply_ok(planner, plan, "--allow-empty")
    assert not exists(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert not exists(cluster, f"/api/v1/namespaces/{namespace}/services/web-svc")
    assert parent_annotations(cluster, namespace, "shop")[GROUP_KINDS] == ""


def test_a_removed_sandbox_pvc_needs_allow_data_loss(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    sandbox = "  - {name: box, image: 'ghcr.io/acme/devbox:1', rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n"
    plan = write_plan(tmp_path, plan_text(namespace, workloads=exposed("web"), sandboxes=sandbox))
    apply_ok(planner, plan)
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    assert exists(cluster, f"{claims}/box-workspace")
    write_plan(tmp_path, plan_text(namespace, workloads=exposed("web")))
    refused = planner("apply", str(plan), "--no-wait")
    assert refused.returncode == 1
    assert f"persistentvolumeclaim/{namespace}/box-workspace" in refused.stderr
    assert "--allow-data-loss" in refused.stderr
    assert exists(cluster, f"/api/v1/namespaces/{namespace}/pods/box")  # nothing was written
    apply_ok(planner, plan, "--allow-data-loss")
    assert not exists(cluster, f"{claims}/box-workspace")
    assert not exists(cluster, f"{claims}/box-rootfs-g1")
    assert not exists(cluster, f"/api/v1/namespaces/{namespace}/pods/box")


def test_a_namespace_member_is_pruned_only_with_allow_data_loss(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """A Namespace can be an ApplySet member (e.g. one `kubectl apply --applyset` added to the set):
    pruning it deletes everything in it, so it needs --allow-data-loss, as a PVC does."""
    plan = write_plan(tmp_path, plan_text(namespace, workloads=exposed("web")))
    apply_ok(planner, plan)
    parent_path = f"/api/v1/namespaces/{namespace}/secrets/shop"
    status, parent = http(cluster, "GET", parent_path)
    assert status == 200, parent
    member = f"{namespace}-member"
    labels = {PART_OF: parent["metadata"]["labels"]["applyset.kubernetes.io/id"]}
    status, body = http(
        cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": member, "labels": labels}}
    )
    assert status == 201, body
    parent["metadata"]["annotations"][GROUP_KINDS] = "Deployment.apps,Namespace,Service"
    status, body = http(cluster, "PUT", parent_path, parent)
    assert status == 200, body

    refused = planner("apply", str(plan), "--no-wait")
    assert refused.returncode == 1
    assert f"namespace/{member}" in refused.stderr and "--allow-data-loss" in refused.stderr
    assert (
        http(cluster, "GET", f"/api/v1/namespaces/{member}")[1]["metadata"].get("deletionTimestamp") is None
    )

    apply_ok(planner, plan, "--allow-data-loss")
    status, gone = http(cluster, "GET", f"/api/v1/namespaces/{member}")
    assert status == 404 or gone["metadata"].get("deletionTimestamp"), gone
    assert parent_annotations(cluster, namespace, "shop")[GROUP_KINDS] == "Deployment.apps,Service"
    assert exists(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")


def _event_versions(cluster: ClusterHandle, path: str, since: int, kind: str) -> dict[str, int]:
    """resourceVersion of each object's `kind` (ADDED/DELETED) watch event after `since`, by name."""
    events = events_since(cluster, path, since)
    return {
        e["object"]["metadata"]["name"]: int(e["object"]["metadata"]["resourceVersion"])
        for e in events
        if e["type"] == kind
    }


def test_prunes_come_last_and_in_reverse_dependency_order(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    uses_config = ", volumes: [{configMap: api-config, mountPath: /etc/api}]"
    config_maps = "  - {name: api-config, data: {a: '1'}}\n"
    plan = write_plan(
        tmp_path, plan_text(namespace, workloads=exposed("api", uses_config), config_maps=config_maps)
    )
    apply_ok(planner, plan)
    status, listed = http(cluster, "GET", "/api/v1/namespaces?limit=1")
    assert status == 200, listed
    since = int(listed["metadata"]["resourceVersion"])
    write_plan(tmp_path, plan_text(namespace, workloads=exposed("fresh")))
    apply_ok(planner, plan)
    apps, core = f"/apis/apps/v1/namespaces/{namespace}", f"/api/v1/namespaces/{namespace}"
    created = _event_versions(cluster, f"{apps}/deployments", since, "ADDED")["fresh"]
    deployment_gone = _event_versions(cluster, f"{apps}/deployments", since, "DELETED")["api"]
    config_gone = _event_versions(cluster, f"{core}/configmaps", since, "DELETED")["api-config"]
    assert created < deployment_gone < config_gone  # creates first; the user before what it uses


def test_a_converged_apply_tightens_the_parent_to_what_remains(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    other = f"{namespace}-b"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}})
    assert status == 201, body
    config_maps = "  - {name: settings, data: {a: '1'}}\n"
    workloads = exposed("web") + exposed("batch", f", runtimeNamespace: {other}")
    plan = write_plan(tmp_path, plan_text(namespace, workloads=workloads, config_maps=config_maps))
    apply_ok(planner, plan)
    before = parent_annotations(cluster, namespace, "shop")
    assert (before[GROUP_KINDS], before[ADDITIONAL_NAMESPACES]) == (
        "ConfigMap,Deployment.apps,Service",
        other,
    )
    write_plan(tmp_path, plan_text(namespace, workloads="  - {name: web, image: 'nginx:1.27'}\n"))
    apply_ok(planner, plan)
    after = parent_annotations(cluster, namespace, "shop")
    assert after[GROUP_KINDS] == "Deployment.apps"
    assert ADDITIONAL_NAMESPACES not in after
    assert not exists(cluster, f"/apis/apps/v1/namespaces/{other}/deployments/batch")


def test_a_failed_apply_prunes_nothing_and_leaves_the_parent_wide_until_a_run_converges(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    other = f"{namespace}-c"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}})
    assert status == 201, body
    plan = write_plan(
        tmp_path,
        plan_text(namespace, workloads=exposed("web") + exposed("batch", f", runtimeNamespace: {other}")),
    )
    apply_ok(planner, plan)
    foreign = {"metadata": {"name": "blocked"}, "data": {"owner": "someone-else"}}
    status, body = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", foreign)
    assert status == 201, body
    write_plan(
        tmp_path,
        plan_text(namespace, workloads=exposed("web"), config_maps="  - {name: blocked, data: {a: '1'}}\n"),
    )
    failed = planner("apply", str(plan), "--no-wait")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"configmap {namespace}/blocked exists and is not managed by plan shop" in failed.stdout
    assert exists(cluster, f"/apis/apps/v1/namespaces/{other}/deployments/batch")  # prunes wait for success
    assert parent_annotations(cluster, namespace, "shop")[ADDITIONAL_NAMESPACES] == other
    status, body = http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/blocked")
    assert status == 200, body
    apply_ok(planner, plan)
    assert not exists(cluster, f"/apis/apps/v1/namespaces/{other}/deployments/batch")
    assert ADDITIONAL_NAMESPACES not in parent_annotations(cluster, namespace, "shop")

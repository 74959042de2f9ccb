"""The diff per object: noop, update, drift, takeover, replace, delete, keep, conflicts and adoption."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from planner.dataloss import refuse_data_loss
from planner.diff import SENSITIVE, ChangeSet, diff
from planner.errors import DataLossError
from planner.live import LiveState
from planner.objects import ref_of
from planner.plan.model import Claim, Volume
from planner.state.applyset import encode_run_record, run_record_of
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    config_map,
    entry,
    fields_of,
    find,
    live_state,
    only,
    outline,
    planner_apply,
    rendered,
    sandbox,
    secret,
    served,
    workload,
)

HASH = "planner.dev/hash"
WEB_IMAGE_PATH = ".spec.template.spec.containers[name=web].image"


def run(desired: list[Manifest], *live: Manifest, **options: Any) -> ChangeSet:
    parent = options.pop("parent", None)
    foreign = options.pop("foreign", ())
    namespaces = options.pop("namespaces", None)
    state = live_state(*live, parent=parent, foreign=foreign, namespaces=namespaces)
    return diff(desired, state, plan=PLAN, namespace=NAMESPACE, **options)


def deployment(**fields: Any) -> Manifest:
    return find(rendered(workloads=(workload(**fields),)), "Deployment", "web")


def owned_image_and_replicas() -> dict[str, Any]:
    """planner's FieldsV1 for a Deployment whose image and replicas it declared."""
    container: dict[str, Any] = {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
    return {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": container}}}}


def owned_image() -> dict[str, Any]:
    container: dict[str, Any] = {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
    return {"f:spec": {"f:template": {"f:spec": {"f:containers": container}}}}


# --- noop and zero perpetual diffs ---


def test_an_unchanged_plan_is_all_noops_despite_defaults_quantities_and_admission() -> None:
    mount = Volume(name="cfg", source="configMap", ref="settings", mount_path="/cfg", read_only=False)
    desired = rendered(
        workloads=(
            workload(
                cpu="0.5",
                memory="1024Mi",
                env={"EMPTY": "", "MODE": "fast"},
                port=8080,
                expose=True,
                volumes=(mount,),
            ),
            workload("migrate", kind="job", cpu="2000m"),
        ),
        sandboxes=(sandbox(),),
        config_maps=(config_map(),),
        secrets=(secret(password="hunter2"),),
    )
    live = [served(m) for m in desired]
    # An injected sidecar at index 0, as a service mesh's webhook adds it.
    web = find(live, "Deployment", "web")
    web["spec"]["template"]["spec"]["containers"].insert(0, {"name": "istio-proxy", "image": "proxy:1.20"})
    ran = run_record_of(find(live, "Job", "migrate"))  # recorded when planner created it

    changeset = run(desired, *live, parent={"data": {ran.run_key: encode_run_record(ran)}})

    assert outline(changeset) == [
        ("noop", "configmap/shop/settings", None, ""),
        ("noop", "deployment/shop/web", None, ""),
        ("noop", "job/shop/migrate", None, ""),
        ("noop", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        ("noop", "persistentvolumeclaim/shop/alice-workspace", None, ""),
        ("noop", "pod/shop/alice", None, ""),
        ("noop", "secret/shop/creds", None, ""),
        ("noop", "service/shop/web-svc", None, ""),
    ]
    assert not changeset.has_changes


# --- update ---


def test_an_image_change_is_an_update_with_the_old_and_new_image() -> None:
    live = served(deployment(), managed=[planner_apply(owned_image())])

    changeset = run([deployment(image="ghcr.io/acme/web:1.5.0")], live)

    change = only(changeset, "deployment/shop/web")
    assert (change.action, change.drift, change.reason, change.owner) == ("update", False, "", "web")
    assert fields_of(change) == [(WEB_IMAGE_PATH, "ghcr.io/acme/web:1.4.2", "ghcr.io/acme/web:1.5.0", None)]


def test_without_managed_fields_an_update_says_plan_changed() -> None:
    changeset = run([deployment(image="ghcr.io/acme/web:1.5.0")], served(deployment()))

    change = only(changeset, "deployment/shop/web")
    assert (change.action, change.reason) == ("update", "plan changed")
    assert fields_of(change) == [(WEB_IMAGE_PATH, "ghcr.io/acme/web:1.4.2", "ghcr.io/acme/web:1.5.0", None)]


def test_a_field_planner_owned_and_the_plan_dropped_is_listed_as_removed() -> None:
    before = deployment(env={"DEBUG": "1", "MODE": "fast"})
    env: dict[str, Any] = {
        'k:{"name":"DEBUG"}': {".": {}, "f:name": {}, "f:value": {}},
        'k:{"name":"MODE"}': {".": {}, "f:name": {}, "f:value": {}},
    }
    container = {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}, "f:env": env}}
    managed = [planner_apply({"f:spec": {"f:template": {"f:spec": {"f:containers": container}}}})]

    changeset = run([deployment(env={"MODE": "fast"})], served(before, managed=managed))

    change = only(changeset, "deployment/shop/web")
    assert change.action == "update"
    assert fields_of(change) == [
        (
            ".spec.template.spec.containers[name=web].env[name=DEBUG]",
            {"name": "DEBUG", "value": "1"},
            None,
            None,
        )
    ]


def test_a_declared_field_only_another_manager_owns_is_listed_as_a_takeover() -> None:
    desired = deployment(replicas=3, image="ghcr.io/acme/web:1.5.0")
    live = served(
        deployment(replicas=3),
        managed=[
            planner_apply(owned_image_and_replicas()),
            entry("kubectl", {"f:spec": {"f:replicas": {}}}, subresource="scale"),
        ],
    )
    # kubectl scaled to 3 as well, so planner lost replicas to kubectl without a value change.
    live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].pop("f:replicas")

    change = only(run([desired], live), "deployment/shop/web")

    assert change.action == "update"
    assert fields_of(change) == [
        (WEB_IMAGE_PATH, "ghcr.io/acme/web:1.4.2", "ghcr.io/acme/web:1.5.0", None),
        (".spec.replicas", 3, 3, "kubectl"),
    ]
    assert [f.is_takeover for f in change.fields] == [False, True]


# --- drift ---


def test_a_kubectl_edit_of_a_declared_field_is_drift_naming_the_editor() -> None:
    desired = deployment()
    live = served(
        desired,
        managed=[
            planner_apply(
                {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:name": {}}}}}}}
            ),
            entry(
                "kubectl-edit",
                {
                    "f:spec": {
                        "f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:image": {}}}}}
                    }
                },
            ),
        ],
    )
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/acme/web:hotfix"

    change = only(run([desired], live), "deployment/shop/web")

    assert (change.action, change.drift, change.reason) == (
        "update",
        True,
        "changed outside the plan by kubectl-edit",
    )
    assert fields_of(change) == [
        (WEB_IMAGE_PATH, "ghcr.io/acme/web:hotfix", "ghcr.io/acme/web:1.4.2", "kubectl-edit")
    ]


def test_a_kubectl_scale_of_declared_replicas_is_drift_naming_kubectl() -> None:
    desired = deployment(replicas=2)
    live = served(desired, managed=[entry("kubectl", {"f:spec": {"f:replicas": {}}}, subresource="scale")])
    live["spec"]["replicas"] = 5

    change = only(run([desired], live), "deployment/shop/web")

    assert (change.action, change.drift) == ("update", True)
    assert fields_of(change) == [(".spec.replicas", 5, 2, "kubectl")]


def test_replicas_another_writer_owns_are_not_drift_when_the_plan_declares_none() -> None:
    desired = deployment()
    live = served(
        desired, managed=[entry("hpa-controller", {"f:spec": {"f:replicas": {}}}, subresource="scale")]
    )
    live["spec"]["replicas"] = 7

    assert outline(run([desired], live)) == [("noop", "deployment/shop/web", None, "")]


# --- replace ---


def job(**fields: Any) -> Manifest:
    return find(rendered(workloads=(workload("migrate", kind="job", **fields),)), "Job", "migrate")


def pod_of(**fields: Any) -> Manifest:
    return find(rendered(sandboxes=(sandbox(**fields),)), "Pod", "alice")


def pvc_of(**fields: Any) -> Manifest:
    return find(rendered(sandboxes=(sandbox(**fields),)), "PersistentVolumeClaim", "alice-workspace")


def with_selector(manifest: Manifest, labels: dict[str, str]) -> Manifest:
    changed = copy.deepcopy(manifest)
    changed["spec"]["selector"] = {"matchLabels": labels}
    changed["metadata"]["annotations"][HASH] = "changed"
    return changed


def with_completions(manifest: Manifest, completions: int) -> Manifest:
    changed = copy.deepcopy(manifest)
    changed["spec"]["completions"] = completions
    changed["metadata"]["annotations"][HASH] = "changed"
    return changed


def with_cluster_ip(manifest: Manifest, ip: str) -> Manifest:
    changed = copy.deepcopy(manifest)
    changed["spec"]["clusterIP"] = ip
    changed["metadata"]["annotations"][HASH] = "changed"
    return changed


SERVICE = find(rendered(workloads=(workload(port=8080, expose=True),)), "Service", "web-svc")

REPLACES = [
    (
        job(),
        job(image="ghcr.io/acme/web:1.5.0"),
        "job/shop/migrate",
        "forced by spec.template",
        "a Job image change",
    ),
    (job(), job(env={"A": "1"}), "job/shop/migrate", "forced by spec.template", "a Job env addition"),
    (
        job(env={"A": "1"}),
        job(),
        "job/shop/migrate",
        "forced by spec.template",
        "a Job env removal, seen through its run-key",
    ),
    (
        job(),
        with_completions(job(), 3),
        "job/shop/migrate",
        "forced by spec.completions",
        "a Job completions change",
    ),
    (
        deployment(),
        with_selector(deployment(), {"app": "other"}),
        "deployment/shop/web",
        "forced by spec.selector",
        "a Deployment selector change",
    ),
    (
        SERVICE,
        with_cluster_ip(SERVICE, "10.0.0.7"),
        "service/shop/web-svc",
        "forced by spec.clusterIP",
        "a Service clusterIP change",
    ),
    (
        pod_of(),
        pod_of(cpu="2"),
        "pod/shop/alice",
        "forced by spec.containers[name=sandbox].resources.limits",
        "a Pod resources change",
    ),
]


@pytest.mark.parametrize(
    ("before", "after", "ref", "reason"), [r[:4] for r in REPLACES], ids=[r[4] for r in REPLACES]
)
def test_a_change_to_an_immutable_field_is_a_replace_naming_the_field(
    before: Manifest, after: Manifest, ref: str, reason: str
) -> None:
    change = only(run([after], served(before)), ref)

    assert (change.action, change.reason) == ("replace", reason)


def test_a_pod_image_change_is_an_update_because_pods_allow_it() -> None:
    change = only(run([pod_of(image="ghcr.io/acme/devbox:2027.01")], served(pod_of())), "pod/shop/alice")

    assert change.action == "update"
    assert fields_of(change) == [
        (
            ".spec.containers[name=sandbox].image",
            "ghcr.io/acme/devbox:2026.11",
            "ghcr.io/acme/devbox:2027.01",
            None,
        )
    ]


def test_a_job_label_change_is_an_update_because_the_run_key_is_the_same() -> None:
    change = only(run([job(labels={"team": "data"})], served(job())), "job/shop/migrate")

    assert change.action == "update"
    assert fields_of(change) == [(".metadata.labels.team", None, "data", None)]


# --- PVCs and data loss ---


def test_a_pvc_storage_increase_is_an_update() -> None:
    change = only(
        run([pvc_of(workspace=Claim(size="40Gi"))], served(pvc_of())),
        "persistentvolumeclaim/shop/alice-workspace",
    )

    assert change.action == "update"
    assert fields_of(change) == [(".spec.resources.requests.storage", "20Gi", "40Gi", None)]


@pytest.mark.parametrize(
    ("after", "why"),
    [
        (
            pvc_of(workspace=Claim(size="10Gi")),
            "would be replaced (forced by spec.resources.requests.storage)",
        ),
        (
            pvc_of(workspace=Claim(size="20Gi", storage_class="fast")),
            "would be replaced (forced by spec.storageClassName)",
        ),
    ],
    ids=["a storage decrease", "a storage class change"],
)
def test_a_pvc_replacement_needs_allow_data_loss(after: Manifest, why: str) -> None:
    changeset = run([after], served(pvc_of()))
    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([changeset])

    assert raised.value.objects == [("persistentvolumeclaim/shop/alice-workspace", why)]
    assert "persistentvolumeclaim/shop/alice-workspace" in str(raised.value)
    assert "--allow-data-loss" in str(raised.value)


def test_with_allow_data_loss_a_pvc_change_is_a_replace() -> None:
    after = pvc_of(workspace=Claim(size="20Gi", storage_class="fast"))

    change = only(
        run([after], served(pvc_of()), allow_data_loss=True), "persistentvolumeclaim/shop/alice-workspace"
    )

    assert (change.action, change.reason) == ("replace", "forced by spec.storageClassName")


def test_a_create_only_data_source_is_never_compared_after_creation() -> None:
    forked = rendered(sandboxes=(sandbox("alice"), sandbox("bob", fork_from="alice")))
    desired = find(forked, "PersistentVolumeClaim", "bob-workspace")
    live = served(desired)
    del live["spec"]["dataSource"]  # as if the source were recorded differently, or cleared

    assert outline(run([desired], live)) == [("noop", "persistentvolumeclaim/shop/bob-workspace", None, "")]


# --- delete and keep ---


def test_a_member_the_plan_no_longer_declares_is_deleted() -> None:
    web, gone = deployment(), find(rendered(workloads=(workload("old"),)), "Deployment", "old")

    changeset = run([web], served(web), served(gone))

    assert outline(changeset) == [
        ("delete", "deployment/shop/old", None, "no longer in the plan"),
        ("noop", "deployment/shop/web", None, ""),
    ]
    assert only(changeset, "deployment/shop/old").owner == "old"


@pytest.mark.parametrize(
    ("key", "value"),
    [("client.lifecycle.config.k8s.io/deletion", "detach"), ("helm.sh/resource-policy", "keep")],
    ids=["annotated detach", "annotated keep"],
)
def test_a_member_annotated_to_be_kept_is_a_noop_saying_why(key: str, value: str) -> None:
    gone = served(find(rendered(workloads=(workload("old"),)), "Deployment", "old"))
    gone["metadata"]["annotations"][key] = value

    assert outline(run([], gone)) == [
        ("noop", "deployment/shop/old", None, f"kept: annotated {key}: {value}")
    ]


def test_deleting_pvcs_of_a_removed_sandbox_needs_allow_data_loss_and_names_each() -> None:
    live = [served(m) for m in rendered(sandboxes=(sandbox(),))]

    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([run([], *live)])

    assert raised.value.objects == [
        ("persistentvolumeclaim/shop/alice-rootfs-g1", "would be deleted (no longer in the plan)"),
        ("persistentvolumeclaim/shop/alice-workspace", "would be deleted (no longer in the plan)"),
    ]
    allowed = run([], *live, allow_data_loss=True)
    assert [c.action for c in allowed.changes] == ["delete", "delete", "delete"]
    refuse_data_loss([allowed])


# --- ownership ---


def test_a_foreign_object_with_a_planned_name_is_an_ownership_conflict() -> None:
    desired = deployment()
    foreign = served(desired)
    del foreign["metadata"]["labels"]["applyset.kubernetes.io/part-of"]

    changeset = run([desired], foreign=[foreign])

    message = "deployment shop/web exists and is not managed by plan shop: `planner apply --adopt` of this plan takes it over"
    assert changeset.conflicts == (message,)
    assert outline(changeset) == [("create", "deployment/shop/web", None, message)]


def test_with_adopt_a_foreign_object_is_taken_over_by_an_update() -> None:
    desired = deployment()
    foreign = served(
        desired, managed=[entry("kubectl-client-side-apply", {"f:metadata": {"f:labels": {"f:app": {}}}})]
    )
    del foreign["metadata"]["labels"]["applyset.kubernetes.io/part-of"]
    del foreign["metadata"]["annotations"][HASH]

    changeset = run([desired], foreign=[foreign], adopt=True)

    change = only(changeset, "deployment/shop/web")
    assert (change.action, change.transition, change.reason) == ("update", "adopt", "adopted into plan shop")
    assert changeset.conflicts == ()
    applyset = desired["metadata"]["labels"]["applyset.kubernetes.io/part-of"]
    assert fields_of(change) == [
        ('.metadata.labels["applyset.kubernetes.io/part-of"]', None, applyset, None),
        (".metadata.labels.app", "web", "web", "kubectl-client-side-apply"),
    ]


# --- namespaces, order, secrets ---


def test_a_missing_namespace_is_created_first() -> None:
    desired = [deployment()]

    changeset = run(desired, namespaces=[])

    assert outline(changeset) == [
        ("create", "namespace/shop", None, "namespace does not exist"),
        ("create", "deployment/shop/web", None, ""),
    ]


def test_secret_values_never_appear_in_a_changeset() -> None:
    before = find(rendered(secrets=(secret(password="hunter2"),)), "Secret", "creds")
    after = find(rendered(secrets=(secret(password="correct-horse"),)), "Secret", "creds")
    managed = [planner_apply({"f:data": {"f:password": {}, "f:token": {}}})]
    live = served(before, managed=managed)
    live["data"]["token"] = "c2VjcmV0LXRva2Vu"  # planner set it before; the plan dropped it

    changeset = run([after], live)

    change = only(changeset, "secret/shop/creds")
    assert fields_of(change) == [
        (".data.password", SENSITIVE, SENSITIVE, None),
        (".data.token", SENSITIVE, None, None),
    ]
    text = repr(changeset) + str(changeset.changes)
    for leaked in ("hunter2", "aHVudGVyMg==", "correct-horse", "Y29ycmVjdC1ob3JzZQ==", "c2VjcmV0LXRva2Vu"):
        assert leaked not in text
    assert before["metadata"]["annotations"][HASH] not in text


def test_a_create_entry_owning_defaulted_fields_lists_no_removals() -> None:
    """planner creates by POST: its Update entry owns what the server defaulted, never declared."""
    container: dict[str, Any] = {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}}
    }
    spec = {"f:dnsPolicy": {}, "f:containers": container}
    created = entry("planner", {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": spec}}})
    live = served(deployment(), managed=[created])

    change = only(run([deployment(image="ghcr.io/acme/web:1.5.0")], live), "deployment/shop/web")

    assert (change.action, change.reason) == ("update", "plan changed")
    assert fields_of(change) == [(WEB_IMAGE_PATH, "ghcr.io/acme/web:1.4.2", "ghcr.io/acme/web:1.5.0", None)]


def test_list_items_without_kind_and_api_version_are_still_unchanged() -> None:
    live = served(deployment())
    listed = {k: v for k, v in live.items() if k not in ("kind", "apiVersion")}
    state = LiveState(members={ref_of(live): listed})  # the reader keys items by the kind it listed

    changeset = diff([deployment()], state, plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [("noop", "deployment/shop/web", None, "")]


def test_deleting_a_member_namespace_needs_allow_data_loss() -> None:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "scratch", "labels": {"applyset.kubernetes.io/part-of": "applyset-x-v1"}},
    }

    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([run([], namespace)])

    assert raised.value.objects == [("namespace/scratch", "would be deleted (no longer in the plan)")]

"""The in-process controllers through the Python client: deployments roll out, jobs finish, PVCs bind,
the garbage collector cascades, namespaces tear down (time scale 0.05: 10 s become 0.5 s)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import urlopen
from tests.simulated import eventually, simulated_cluster_fixture

cluster = simulated_cluster_fixture()


def deployment(
    name: str, *, replicas: int = 2, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
            **spec,
        },
    }


def job(name: str, *, annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]},
            },
            **spec,
        },
    }


def conditions(obj: Any) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in obj.status.conditions or []}


def pods(core_v1: client.CoreV1Api, namespace: str, selector: str) -> list[Any]:
    return list(core_v1.list_namespaced_pod(namespace, label_selector=selector).items)


# --- deployments ---------------------------------------------------------------------------------------


def test_deployment_makes_a_replica_set_and_pods_and_becomes_available(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("web"))
    done = eventually(
        lambda: (
            (d := apps_v1.read_namespaced_deployment("web", namespace)).status.available_replicas == 2 and d
        )
    )
    assert conditions(done) == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    assert (done.status.replicas, done.status.updated_replicas, done.status.ready_replicas) == (2, 2, 2)
    assert done.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    [rs] = apps_v1.list_namespaced_replica_set(namespace, label_selector="app=web").items
    digest = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == f"web-{digest}"
    assert rs.metadata.owner_references[0].uid == done.metadata.uid
    assert rs.metadata.annotations == {
        "deployment.kubernetes.io/desired-replicas": "2",
        "deployment.kubernetes.io/max-replicas": "3",
        "deployment.kubernetes.io/revision": "1",
    }
    made = pods(core_v1, namespace, "app=web")
    assert len(made) == 2
    assert all(
        p.metadata.name.startswith(f"web-{digest}-") and len(p.metadata.name) == len(f"web-{digest}-") + 5
        for p in made
    )
    assert all(p.metadata.owner_references[0].name == rs.metadata.name for p in made)


def test_rolling_update_never_exceeds_max_surge_and_ends_on_revision_two(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    apps_v1.create_namespaced_deployment(namespace, deployment("roll", replicas=3, strategy=strategy))
    eventually(lambda: apps_v1.read_namespaced_deployment("roll", namespace).status.available_replicas == 3)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
    apps_v1.patch_namespaced_deployment("roll", namespace, patch)
    most = 0

    def rolled() -> bool:
        nonlocal most
        live = [p for p in pods(core_v1, namespace, "app=roll") if not p.metadata.deletion_timestamp]
        most = max(most, len(live))
        d = apps_v1.read_namespaced_deployment("roll", namespace)
        observed = d.status.observed_generation == d.metadata.generation
        return observed and (d.status.updated_replicas, d.status.available_replicas, d.status.replicas) == (
            3,
            3,
            3,
        )

    eventually(rolled)
    assert most <= 3
    sets = {
        rs.metadata.annotations["deployment.kubernetes.io/revision"]: rs.spec.replicas
        for rs in apps_v1.list_namespaced_replica_set(namespace, label_selector="app=roll").items
    }
    assert sets == {"1": 0, "2": 3}


def test_a_deployment_that_never_becomes_ready_exceeds_its_progress_deadline(
    apps_v1: client.AppsV1Api, namespace: str
) -> None:
    body = deployment(
        "stuck", replicas=1, annotations={"sim.planner.dev/never-ready": "true"}, progressDeadlineSeconds=10
    )
    apps_v1.create_namespaced_deployment(namespace, body)
    stuck = eventually(
        lambda: (
            (d := apps_v1.read_namespaced_deployment("stuck", namespace))
            and conditions(d).get("Progressing") == ("False", "ProgressDeadlineExceeded")
            and d
        )
    )
    assert conditions(stuck)["Available"] == ("False", "MinimumReplicasUnavailable")


def test_pods_the_replica_set_cannot_create_show_as_replica_failure(
    apps_v1: client.AppsV1Api, namespace: str
) -> None:
    body = deployment("nosa", replicas=1)
    body["spec"]["template"]["spec"]["serviceAccountName"] = "missing"
    apps_v1.create_namespaced_deployment(namespace, body)
    failed = eventually(
        lambda: (
            (d := apps_v1.read_namespaced_deployment("nosa", namespace))
            and "ReplicaFailure" in conditions(d)
            and d
        )
    )
    assert conditions(failed)["ReplicaFailure"] == ("True", "FailedCreate")


def test_scaling_changes_the_pod_count(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("scaled", replicas=1))
    eventually(lambda: len(pods(core_v1, namespace, "app=scaled")) == 1)
    apps_v1.patch_namespaced_deployment_scale("scaled", namespace, {"spec": {"replicas": 3}})
    eventually(lambda: apps_v1.read_namespaced_deployment("scaled", namespace).status.ready_replicas == 3)
    apps_v1.patch_namespaced_deployment_scale("scaled", namespace, {"spec": {"replicas": 1}})
    eventually(lambda: len(pods(core_v1, namespace, "app=scaled")) == 1)


def test_a_replica_set_of_a_billion_pods_makes_them_500_a_sync_and_can_be_scaled_back(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    """The controller-manager's burstReplicas: all billion in one pass would hold the server for good."""
    apps_v1.create_namespaced_deployment(namespace, deployment("huge", replicas=10**9))
    eventually(lambda: len(pods(core_v1, namespace, "app=huge")) >= 500)
    apps_v1.patch_namespaced_deployment_scale("huge", namespace, {"spec": {"replicas": 0}})
    eventually(
        lambda: (
            not [p for p in pods(core_v1, namespace, "app=huge") if p.metadata.deletion_timestamp is None]
        ),
        timeout=60,
    )


# --- jobs ----------------------------------------------------------------------------------------------


def test_a_job_completes_and_counts_its_pod(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    batch_v1.create_namespaced_job(namespace, job("ok"))
    done = eventually(
        lambda: (j := batch_v1.read_namespaced_job("ok", namespace)).status.succeeded == 1 and j
    )
    assert conditions(done) == {
        "SuccessCriteriaMet": ("True", "CompletionsReached"),
        "Complete": ("True", "CompletionsReached"),
    }
    assert done.status.start_time and done.status.completion_time
    [pod] = pods(core_v1, namespace, "job-name=ok")
    assert pod.status.phase == "Succeeded"
    assert pod.metadata.name.startswith("ok-")
    eventually(lambda: not core_v1.read_namespaced_pod(pod.metadata.name, namespace).metadata.finalizers)


def test_a_failing_job_retries_then_fails_with_backoff_limit_exceeded(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    batch_v1.create_namespaced_job(
        namespace, job("bad", annotations={"sim.planner.dev/exit-code": "1"}, backoffLimit=1)
    )
    failed = eventually(
        lambda: (j := batch_v1.read_namespaced_job("bad", namespace)) and "Failed" in conditions(j) and j
    )
    assert conditions(failed) == {
        "FailureTarget": ("True", "BackoffLimitExceeded"),
        "Failed": ("True", "BackoffLimitExceeded"),
    }
    assert failed.status.failed == 2
    assert len(pods(core_v1, namespace, "job-name=bad")) == 2
    assert all(p.status.phase == "Failed" for p in pods(core_v1, namespace, "job-name=bad"))


def test_a_job_past_its_active_deadline_fails_and_its_pod_goes(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    batch_v1.create_namespaced_job(
        namespace, job("slow", annotations={"sim.planner.dev/run-seconds": "1000"}, activeDeadlineSeconds=10)
    )
    failed = eventually(
        lambda: (j := batch_v1.read_namespaced_job("slow", namespace)) and "Failed" in conditions(j) and j
    )
    assert conditions(failed)["Failed"] == ("True", "DeadlineExceeded")
    eventually(lambda: not pods(core_v1, namespace, "job-name=slow"))


def test_a_finished_job_is_deleted_after_its_ttl_foreground_its_pods_first(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    """As the TTL-after-finished controller does: `propagationPolicy: Foreground`. A finalizer on the
    Job and one in its pod template (copied to the pod, as the Job controller does) hold both; once
    they are removed, the Job is gone."""
    held = job("held", ttlSecondsAfterFinished=0)
    held["metadata"]["finalizers"] = ["example.com/hold"]
    held["spec"]["template"]["metadata"]["finalizers"] = ["example.com/hold"]
    batch_v1.create_namespaced_job(namespace, held)

    deleted = eventually(
        lambda: (j := batch_v1.read_namespaced_job("held", namespace)).metadata.deletion_timestamp and j
    )
    assert deleted.metadata.finalizers == ["example.com/hold", "foregroundDeletion"]
    (pod,) = eventually(
        lambda: [p for p in pods(core_v1, namespace, "job-name=held") if p.metadata.deletion_timestamp]
    )
    assert pod.metadata.finalizers == ["example.com/hold"]  # job-tracking dropped once counted
    release = [{"op": "remove", "path": "/metadata/finalizers/0"}]
    core_v1.patch_namespaced_pod(pod.metadata.name, namespace, release)
    batch_v1.patch_namespaced_job("held", namespace, release)
    eventually(lambda: not batch_v1.list_namespaced_job(namespace, field_selector="metadata.name=held").items)


# --- garbage collection --------------------------------------------------------------------------------


def test_background_delete_removes_replica_sets_and_pods(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("bg", replicas=2))
    eventually(lambda: len(pods(core_v1, namespace, "app=bg")) == 2)
    apps_v1.delete_namespaced_deployment("bg", namespace)
    eventually(lambda: not apps_v1.list_namespaced_replica_set(namespace, label_selector="app=bg").items)
    eventually(lambda: not pods(core_v1, namespace, "app=bg"))


def test_foreground_delete_keeps_the_owner_until_its_dependents_are_gone(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("fg", replicas=1))
    eventually(lambda: len(pods(core_v1, namespace, "app=fg")) == 1)
    # The apiserver answers with the Deployment itself, which the client hands back as a plain dict.
    deleted = apps_v1.delete_namespaced_deployment("fg", namespace, propagation_policy="Foreground")
    assert deleted["metadata"]["finalizers"] == ["foregroundDeletion"]
    eventually(
        lambda: not apps_v1.list_namespaced_deployment(namespace, field_selector="metadata.name=fg").items
    )
    assert not apps_v1.list_namespaced_replica_set(namespace, label_selector="app=fg").items
    eventually(lambda: not pods(core_v1, namespace, "app=fg"))


def test_orphan_delete_leaves_the_replica_set_without_its_owner(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("orph", replicas=1))
    eventually(lambda: len(pods(core_v1, namespace, "app=orph")) == 1)
    apps_v1.delete_namespaced_deployment("orph", namespace, propagation_policy="Orphan")
    eventually(
        lambda: not apps_v1.list_namespaced_deployment(namespace, field_selector="metadata.name=orph").items
    )
    [rs] = apps_v1.list_namespaced_replica_set(namespace, label_selector="app=orph").items
    assert not rs.metadata.owner_references
    assert len(pods(core_v1, namespace, "app=orph")) == 1


def test_namespace_teardown_empties_it_then_removes_it(
    core_v1: client.CoreV1Api, apps_v1: client.AppsV1Api
) -> None:
    name = "teardown-ns"
    core_v1.create_namespace({"metadata": {"name": name}})
    assert core_v1.read_namespace(name).spec.finalizers == ["kubernetes"]
    apps_v1.create_namespaced_deployment(name, deployment("web", replicas=1))
    core_v1.create_namespaced_config_map(name, {"metadata": {"name": "cfg"}})
    eventually(lambda: len(pods(core_v1, name, "app=web")) == 1)
    core_v1.delete_namespace(name)
    assert core_v1.read_namespace(name).status.phase == "Terminating"

    def gone() -> bool:
        try:
            core_v1.read_namespace(name)
        except ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone)


def test_a_namespace_being_deleted_refuses_creates_as_kube_apiserver_does(
    core_v1: client.CoreV1Api, api_client: client.ApiClient, namespace: str
) -> None:
    """NamespaceLifecycle: the body below is what kube-apiserver v1.28.7 answered the same requests
    (recorded on the real tier's control plane); updates of what is there still go through."""
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "held", "finalizers": ["x.io/y"]}})
    core_v1.delete_namespace(namespace)
    assert core_v1.read_namespace(namespace).status.phase == "Terminating"
    with pytest.raises(ApiException) as lease:
        client.CoordinationV1Api(api_client).create_namespaced_lease(
            namespace, {"metadata": {"name": "planner-lock-x"}, "spec": {}}
        )
    assert lease.value.status == 403
    assert json.loads(lease.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'leases.coordination.k8s.io "planner-lock-x" is forbidden: unable to create new content in '
        f"namespace {namespace} because it is being terminated",
        "reason": "Forbidden",
        "details": {
            "name": "planner-lock-x",
            "group": "coordination.k8s.io",
            "kind": "leases",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
        "code": 403,
    }
    with pytest.raises(ApiException) as generated:
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"generateName": "g-"}})
    body = json.loads(generated.value.body)
    assert body["message"].startswith('configmaps "g-" is forbidden: unable to create new content')
    assert body["details"]["kind"] == "configmaps" and "group" not in body["details"]
    core_v1.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})

    def gone() -> bool:
        try:
            core_v1.read_namespace(namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone)


def test_the_default_service_account_and_root_ca_come_back_when_deleted(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.delete_namespaced_service_account("default", namespace)
    core_v1.delete_namespaced_config_map("kube-root-ca.crt", namespace)
    eventually(
        lambda: (
            core_v1.list_namespaced_service_account(namespace, field_selector="metadata.name=default").items
        )
    )
    root_ca = eventually(
        lambda: (
            core_v1.list_namespaced_config_map(
                namespace, field_selector="metadata.name=kube-root-ca.crt"
            ).items
        )
    )
    assert list(root_ca[0].data) == ["ca.crt"]


# --- volumes -------------------------------------------------------------------------------------------


def claim(
    name: str, *, storage_class: str | None = "standard", mode: str = "Filesystem", source: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "volumeMode": mode,
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    if source:
        spec["dataSource"] = {"kind": "PersistentVolumeClaim", "name": source}
    return {"metadata": {"name": name}, "spec": spec}


def pod_using(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
    }


def phase_of(core_v1: client.CoreV1Api, namespace: str, name: str) -> str:
    return str(core_v1.read_namespaced_persistent_volume_claim(name, namespace).status.phase)


@pytest.mark.parametrize(
    "mode", ["Filesystem", "Block"], ids=["a filesystem claim binds", "a block claim binds"]
)
def test_an_immediate_claim_gets_a_bound_volume(core_v1: client.CoreV1Api, namespace: str, mode: str) -> None:
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("data", mode=mode))
    eventually(lambda: phase_of(core_v1, namespace, "data") == "Bound")
    bound = core_v1.read_namespaced_persistent_volume_claim("data", namespace)
    assert bound.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert bound.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    assert bound.status.capacity == {"storage": "1Gi"}
    volume = core_v1.read_persistent_volume(bound.spec.volume_name)
    assert (volume.spec.claim_ref.name, volume.spec.volume_mode, volume.status.phase) == (
        "data",
        mode,
        "Bound",
    )


def test_a_wait_for_first_consumer_claim_binds_once_a_pod_is_scheduled(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("late", storage_class="wait"))
    eventually(
        lambda: core_v1.list_namespaced_event(namespace, field_selector="reason=WaitForFirstConsumer").items
    )
    assert phase_of(core_v1, namespace, "late") == "Pending"
    core_v1.create_namespaced_pod(namespace, pod_using("consumer", "late"))
    eventually(lambda: phase_of(core_v1, namespace, "late") == "Bound")
    eventually(lambda: core_v1.read_namespaced_pod("consumer", namespace).status.phase == "Running")


def test_a_clone_binds_only_after_its_source(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("copy", source="origin"))
    eventually(
        lambda: core_v1.list_namespaced_event(namespace, field_selector="reason=ProvisioningFailed").items
    )
    assert phase_of(core_v1, namespace, "copy") == "Pending"
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("origin"))
    eventually(lambda: phase_of(core_v1, namespace, "copy") == "Bound")


def test_a_claim_of_a_missing_class_stays_pending_with_an_event(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("nowhere", storage_class="gold"))
    [event] = eventually(
        lambda: core_v1.list_namespaced_event(namespace, field_selector="reason=ProvisioningFailed").items
    )
    assert event.message == 'storageclass.storage.k8s.io "gold" not found'
    assert phase_of(core_v1, namespace, "nowhere") == "Pending"


def test_a_claim_in_use_is_protected_until_its_pod_goes(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_persistent_volume_claim(namespace, claim("used"))
    core_v1.create_namespaced_pod(namespace, pod_using("user", "used"))
    eventually(lambda: core_v1.read_namespaced_pod("user", namespace).status.phase == "Running")
    core_v1.delete_namespaced_persistent_volume_claim("used", namespace)
    still = core_v1.read_namespaced_persistent_volume_claim("used", namespace)
    assert still.metadata.deletion_timestamp and still.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    core_v1.delete_namespaced_pod("user", namespace)
    eventually(
        lambda: (
            not core_v1.list_namespaced_persistent_volume_claim(
                namespace, field_selector="metadata.name=used"
            ).items
        )
    )


# --- endpoints -----------------------------------------------------------------------------------------


def test_a_service_gets_endpoints_for_its_ready_pods(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    body = deployment("ep", replicas=2)
    body["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8080}]
    apps_v1.create_namespaced_deployment(namespace, body)
    service = {
        "metadata": {"name": "ep"},
        "spec": {"selector": {"app": "ep"}, "ports": [{"port": 80, "targetPort": "http"}]},
    }
    core_v1.create_namespaced_service(namespace, service)

    def listed() -> Any:
        found = core_v1.list_namespaced_endpoints(namespace, field_selector="metadata.name=ep").items
        return found and found[0].subsets and len(found[0].subsets[0].addresses or []) == 2 and found[0]

    endpoints = eventually(listed)
    [subset] = endpoints.subsets
    assert [(p.port, p.protocol) for p in subset.ports] == [(8080, "TCP")]
    pod_ips = {p.status.pod_ip for p in pods(core_v1, namespace, "app=ep")}
    assert {a.ip for a in subset.addresses} == pod_ips
    assert {a.target_ref.kind for a in subset.addresses} == {"Pod"}


def test_a_service_gets_an_endpoint_slice_owned_by_it(
    api_client: client.ApiClient, apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("eps", replicas=2))
    service = {
        "metadata": {"name": "eps"},
        "spec": {"selector": {"app": "eps"}, "ports": [{"port": 80, "name": "web"}]},
    }
    created = core_v1.create_namespaced_service(namespace, service)
    discovery = client.DiscoveryV1Api(api_client)

    def sliced() -> Any:
        found = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector="kubernetes.io/service-name=eps"
        ).items
        ready = [e for e in (found[0].endpoints or []) if e.conditions.ready] if found else []
        return len(ready) == 2 and found[0]

    endpoint_slice = eventually(sliced)
    assert endpoint_slice.metadata.name.startswith("eps-") and endpoint_slice.address_type == "IPv4"
    assert (
        endpoint_slice.metadata.labels["endpointslice.kubernetes.io/managed-by"]
        == "endpointslice-controller.k8s.io"
    )
    assert [(o.kind, o.uid) for o in endpoint_slice.metadata.owner_references] == [
        ("Service", created.metadata.uid)
    ]
    assert [(p.name, p.port, p.protocol) for p in endpoint_slice.ports] == [("web", 80, "TCP")]
    pod_ips = {p.status.pod_ip for p in pods(core_v1, namespace, "app=eps")}
    assert {a for e in endpoint_slice.endpoints for a in e.addresses} == pod_ips
    core_v1.delete_namespaced_service("eps", namespace)
    eventually(
        lambda: (
            not discovery.list_namespaced_endpoint_slice(
                namespace, label_selector="kubernetes.io/service-name=eps"
            ).items
        )
    )


def test_a_services_endpoint_slice_is_updated_in_place_as_its_pods_change(
    api_client: client.ApiClient, apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    """One slice per Service, whatever the syncs in between: a scale-up changes its endpoints, not the
    number of slices (the controller finds the Service's slice again on every sync)."""
    apps_v1.create_namespaced_deployment(namespace, deployment("grow", replicas=1))
    service = {"metadata": {"name": "grow"}, "spec": {"selector": {"app": "grow"}, "ports": [{"port": 80}]}}
    core_v1.create_namespaced_service(namespace, service)
    discovery = client.DiscoveryV1Api(api_client)

    def slices_with_ready(count: int) -> Any:
        found = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector="kubernetes.io/service-name=grow"
        ).items
        ready = [e for s in found for e in (s.endpoints or []) if e.conditions.ready]
        return len(ready) == count and found

    first = eventually(lambda: slices_with_ready(1))
    apps_v1.patch_namespaced_deployment_scale("grow", namespace, {"spec": {"replicas": 3}})
    grown = eventually(lambda: slices_with_ready(3))

    assert [s.metadata.name for s in first] == [s.metadata.name for s in grown]
    assert len(grown) == 1


def test_a_relabelled_pod_leaves_one_services_endpoints_and_joins_anothers(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    pod = {
        "metadata": {"name": "mover", "labels": {"role": "blue"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]},
    }
    core_v1.create_namespaced_pod(namespace, pod)
    for color in ("blue", "green"):
        service = {
            "metadata": {"name": color},
            "spec": {"selector": {"role": color}, "ports": [{"port": 80}]},
        }
        core_v1.create_namespaced_service(namespace, service)

    def addressed(name: str) -> list[str]:
        found = core_v1.list_namespaced_endpoints(namespace, field_selector=f"metadata.name={name}").items
        subsets = (found[0].subsets or []) if found else []
        return [a.target_ref.name for s in subsets for a in s.addresses or []]

    eventually(lambda: addressed("blue") == ["mover"])
    core_v1.patch_namespaced_pod("mover", namespace, {"metadata": {"labels": {"role": "green"}}})
    eventually(lambda: (addressed("blue"), addressed("green")) == ([], ["mover"]))


def test_slim_stats_count_each_components_passes_and_synced_keys(
    cluster: ClusterHandle, apps_v1: client.AppsV1Api, namespace: str
) -> None:
    def stats() -> dict[str, dict[str, int]]:
        with urlopen(cluster, "/slim/stats") as reply:
            found: dict[str, dict[str, int]] = json.load(reply)
            return found

    before = stats()
    apps_v1.create_namespaced_deployment(namespace, deployment("counted", replicas=1))
    eventually(
        lambda: (apps_v1.read_namespaced_deployment("counted", namespace).status.available_replicas or 0) == 1
    )
    after = stats()
    assert sorted(after) == [
        "ClusterRoleAggregator",
        "CronJobController",
        "DaemonSetController",
        "DeploymentController",
        "EndpointsController",
        "GarbageCollector",
        "HorizontalPodAutoscalerController",
        "JobController",
        "NamespaceController",
        "NodeAgent",
        "ReplicaSetController",
        "StatefulSetController",
        "VolumeController",
    ]
    assert all(set(counts) == {"passes", "synced", "full_resyncs"} for counts in after.values())

    def grew() -> set[str]:
        now = stats()
        return {name for name in now if now[name]["synced"] > before[name]["synced"]}

    # The garbage collector may take its turn after the Deployment is available: wait for it.
    expected = {"DeploymentController", "ReplicaSetController", "NodeAgent", "GarbageCollector"}
    eventually(lambda: expected <= grew())


def test_a_failed_job_pod_is_replaced_only_after_the_backoff(
    batch_v1: client.BatchV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    # backoff: 10 s × 0.05 = 0.5 s after the first failure, then 1 s after the second
    batch_v1.create_namespaced_job(
        namespace, job("retry", annotations={"sim.planner.dev/exit-code": "1"}, backoffLimit=2)
    )
    seen: dict[int, float] = {}

    def observe() -> bool:
        listed = pods(core_v1, namespace, "job-name=retry")
        failed = sum(1 for p in listed if p.status.phase == "Failed")
        seen.setdefault(len(listed) * 10 + failed, time.monotonic())
        return len(listed) == 3

    eventually(observe, interval=0.02)
    first_failed, second_created = seen[11], seen[21]
    assert second_created - first_failed >= 0.4


def test_container_restarts_of_an_on_failure_job_count_toward_its_backoff_limit(
    batch_v1: client.BatchV1Api, namespace: str
) -> None:
    body = job("inplace", annotations={"sim.planner.dev/exit-code": "1"}, backoffLimit=1)
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    batch_v1.create_namespaced_job(namespace, body)
    failed = eventually(
        lambda: (j := batch_v1.read_namespaced_job("inplace", namespace)) and "Failed" in conditions(j) and j,
        timeout=20,
    )
    assert conditions(failed)["Failed"] == ("True", "BackoffLimitExceeded")


def test_pods_count_as_available_only_after_min_ready_seconds(
    apps_v1: client.AppsV1Api, namespace: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, deployment("patient", replicas=1, minReadySeconds=40))
    ready = eventually(
        lambda: (
            (d := apps_v1.read_namespaced_deployment("patient", namespace)).status.ready_replicas == 1 and d
        )
    )
    assert not ready.status.available_replicas  # 40 s × 0.05 = 2 s after Ready
    eventually(
        lambda: apps_v1.read_namespaced_deployment("patient", namespace).status.available_replicas == 1
    )

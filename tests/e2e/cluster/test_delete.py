"""Deletion through the Python client: each propagation policy, client finalizers, preconditions,
Pod grace periods, deletecollection and namespace deletion.

The cluster is the bare API server, without the garbage collector, so nothing removes
`foregroundDeletion`/`orphan`: objects deleted with those policies wait with a deletionTimestamp until
a client removes the finalizer."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

MERGE = "application/merge-patch+json"
CONTAINER = {"name": "c", "image": "nginx:1.25"}
DEPLOYMENT = {
    "metadata": {"name": "d"},
    "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [CONTAINER]}},
    },
}
JOB = {
    "metadata": {"name": "j"},
    "spec": {"template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}}},
}


def _gone(read: object, *args: str) -> bool:
    try:
        read(*args)  # type: ignore[operator]
    except ApiException as exc:
        return exc.status == 404
    return False


def test_background_deletes_at_once(apps_v1: client.AppsV1Api, namespace: str) -> None:
    apps_v1.create_namespaced_deployment(namespace, DEPLOYMENT)
    reply = apps_v1.delete_namespaced_deployment("d", namespace, propagation_policy="Background")
    assert reply["status"] == "Success" and reply["details"]["kind"] == "deployments"
    assert _gone(apps_v1.read_namespaced_deployment, "d", namespace)


@pytest.mark.parametrize(
    ("policy", "finalizer"),
    [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")],
    ids=["foreground adds foregroundDeletion and waits", "orphan adds orphan and waits"],
)
def test_policy_finalizer_waits_for_a_client(
    apps_v1: client.AppsV1Api, namespace: str, policy: str, finalizer: str
) -> None:
    apps_v1.create_namespaced_deployment(namespace, DEPLOYMENT)
    reply = apps_v1.delete_namespaced_deployment("d", namespace, propagation_policy=policy)
    assert reply["metadata"]["finalizers"] == [finalizer]
    assert reply["metadata"]["deletionTimestamp"] and reply["metadata"]["deletionGracePeriodSeconds"] == 0
    assert reply["metadata"]["generation"] == 2
    waiting = apps_v1.read_namespaced_deployment("d", namespace)
    assert waiting.metadata.deletion_timestamp is not None
    apps_v1.patch_namespaced_deployment(
        "d", namespace, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    assert _gone(apps_v1.read_namespaced_deployment, "d", namespace)


def test_job_defaults_to_orphan(batch_v1: client.BatchV1Api, namespace: str) -> None:
    batch_v1.create_namespaced_job(namespace, JOB)
    reply = batch_v1.delete_namespaced_job("j", namespace)
    assert reply["metadata"]["finalizers"] == ["orphan"]


def test_job_with_background_goes_at_once(batch_v1: client.BatchV1Api, namespace: str) -> None:
    batch_v1.create_namespaced_job(namespace, JOB)
    batch_v1.delete_namespaced_job("j", namespace, propagation_policy="Background")
    assert _gone(batch_v1.read_namespaced_job, "j", namespace)


def test_client_finalizer_holds_the_object_until_removed(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    reply = core_v1.delete_namespaced_config_map("held", namespace)
    assert reply["metadata"]["finalizers"] == ["example.com/hold"]
    held = core_v1.read_namespaced_config_map("held", namespace)
    assert held.metadata.deletion_timestamp is not None
    core_v1.patch_namespaced_config_map(
        "held", namespace, {"metadata": {"finalizers": []}}, _content_type=MERGE
    )
    assert _gone(core_v1.read_namespaced_config_map, "held", namespace)


@pytest.mark.parametrize(
    "preconditions",
    [{"uid": "00000000-0000-0000-0000-000000000000"}, {"resourceVersion": "1"}],
    ids=["a uid precondition that does not match is a 409", "a stale resourceVersion precondition is a 409"],
)
def test_preconditions(core_v1: client.CoreV1Api, namespace: str, preconditions: dict[str, str]) -> None:
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "pre"}})
    body = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(
            **{"uid" if "uid" in preconditions else "resource_version": next(iter(preconditions.values()))}
        )
    )
    with pytest.raises(ApiException) as conflict:
        core_v1.delete_namespaced_config_map("pre", namespace, body=body)
    assert conflict.value.status == 409
    assert not _gone(core_v1.read_namespaced_config_map, "pre", namespace)


def test_matching_uid_precondition_deletes(core_v1: client.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "pre-ok"}})
    body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid))
    core_v1.delete_namespaced_config_map("pre-ok", namespace, body=body)
    assert _gone(core_v1.read_namespaced_config_map, "pre-ok", namespace)


def test_unscheduled_pod_is_deleted_at_once_and_returned(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, {"metadata": {"name": "p"}, "spec": {"containers": [CONTAINER]}})
    reply = core_v1.delete_namespaced_pod("p", namespace)
    assert reply.metadata.deletion_grace_period_seconds == 0 and reply.metadata.deletion_timestamp
    assert _gone(core_v1.read_namespaced_pod, "p", namespace)


def test_scheduled_pod_waits_for_its_grace_period_unless_forced(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(
        namespace, {"metadata": {"name": "p"}, "spec": {"containers": [CONTAINER], "nodeName": "n1"}}
    )
    reply = core_v1.delete_namespaced_pod("p", namespace)
    assert reply.metadata.deletion_grace_period_seconds == 30
    shorter = core_v1.delete_namespaced_pod("p", namespace, grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    assert not _gone(core_v1.read_namespaced_pod, "p", namespace)
    core_v1.delete_namespaced_pod("p", namespace, grace_period_seconds=0)
    assert _gone(core_v1.read_namespaced_pod, "p", namespace)


def test_delete_collection_by_label(core_v1: client.CoreV1Api, namespace: str) -> None:
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": {"app": app}}})
    core_v1.delete_collection_namespaced_config_map(namespace, label_selector="app=x")
    left = [c.metadata.name for c in core_v1.list_namespaced_config_map(namespace).items]
    assert left == ["c", "kube-root-ca.crt"]


def test_namespace_deletion_removes_its_objects(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "inside"}})
    core_v1.delete_namespace(namespace)
    assert _gone(core_v1.read_namespace, namespace)
    found = core_v1.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={namespace}").items
    assert found == []


def test_dry_run_delete_keeps_the_object(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "stay"}})
    core_v1.delete_namespaced_config_map("stay", namespace, dry_run="All")
    assert not _gone(core_v1.read_namespaced_config_map, "stay", namespace)

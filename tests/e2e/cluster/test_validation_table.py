"""The rejections the real apiserver makes, as one table: every error in tests/golden/k8s (expected body
taken from the recording, compared after the golden masks) plus the apiserver's other documented
rejections (expected status, reason and causes written by hand).

Each row runs in a fresh namespace; `setup` creates what the request needs first."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle
from tests.e2e.cluster.test_golden_replay import comparable, load
from tests.slimcluster import http

MERGE = "application/merge-patch+json"
CONTAINER = {"name": "c", "image": "nginx:1.25"}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}}
DEPLOY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [CONTAINER]}}
PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"ports": [{"port": 80}]},
}


def golden_request_body(name: str) -> Any:
    return load(name)["request"].get("body")


# --- rows from the recordings ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldenRow:
    file: str
    setup: tuple[
        str, ...
    ] = ()  # golden files whose requests create the needed objects (in the row's namespace)
    live: bool = False  # map the recorded uid (and resourceVersion unless stale) to the live object's
    stale: bool = False
    default_namespace: bool = False  # the recording's path names no namespace of ours (e.g. no-such-ns)


GOLDEN_ROWS = [
    GoldenRow("error_create_already_exists.json", setup=("deployment_create.json",)),
    GoldenRow("error_get_not_found.json"),
    GoldenRow("error_get_not_found_core.json"),
    GoldenRow("error_delete_not_found.json"),
    GoldenRow("error_patch_not_found.json"),
    GoldenRow("error_create_namespace_not_found.json", default_namespace=True),
    GoldenRow("error_patch_deployment_selector.json", setup=("deployment_create.json",)),
    GoldenRow("error_patch_deployment_selector_consistent.json", setup=("deployment_create.json",)),
    GoldenRow(
        "error_put_stale_resource_version.json", setup=("deployment_create.json",), live=True, stale=True
    ),
    GoldenRow("error_invalid_missing_image.json"),
    GoldenRow("error_invalid_multiple_causes.json"),
    GoldenRow("error_invalid_json_body.json"),
    GoldenRow("error_kind_mismatch.json"),
    GoldenRow("error_put_job_template_immutable.json", setup=("job_create.json",), live=True),
    GoldenRow("error_patch_job_completions.json", setup=("job_create.json",)),
    GoldenRow("error_put_service_cluster_ip.json", setup=("service_create.json",), live=True),
    GoldenRow("error_put_pvc_spec_immutable.json", setup=("pvc_create.json",), live=True),
    GoldenRow("error_secret_bad_base64.json"),
    GoldenRow("error_put_pod_spec_forbidden.json", setup=("pod_create.json",), live=True),
    GoldenRow("lease_put_renew_seconds_precision.json", setup=("lease_create.json",), live=True),
    GoldenRow("delete_precondition_uid_mismatch.json", setup=("deployment_create.json",)),
    GoldenRow("dry_run_get_after.json"),
    GoldenRow("error_list_too_old_resource_version_exact.json"),
    GoldenRow("error_list_continue_with_resource_version.json"),
    GoldenRow("error_list_bad_continue_token.json"),
    GoldenRow("ssa_missing_field_manager.json", setup=("deployment_create.json",)),
]


def _in_namespace(path: str, namespace: str) -> str:
    return path.replace("/namespaces/default/", f"/namespaces/{namespace}/")


def _live_body(cluster: ClusterHandle, path: str, body: Any, *, stale: bool) -> Any:
    live = http(cluster, "GET", path).body
    recorded_meta, live_meta = body["metadata"], live["metadata"]
    text = json.dumps(body).replace(recorded_meta["uid"], live_meta["uid"])
    body = json.loads(text)
    body["metadata"]["namespace"] = live_meta["namespace"]
    if not stale and "resourceVersion" in body["metadata"]:
        body["metadata"]["resourceVersion"] = live_meta["resourceVersion"]
    return body


@pytest.mark.parametrize(
    "row",
    GOLDEN_ROWS,
    ids=[f"{r.file} is rejected as recorded" for r in GOLDEN_ROWS],
)
def test_golden_rejections(cluster: ClusterHandle, namespace: str, row: GoldenRow) -> None:
    for setup in row.setup:
        request = load(setup)["request"]
        assert http(cluster, "POST", _in_namespace(request["path"], namespace), request["body"]).status == 201
    recorded = load(row.file)
    request = recorded["request"]
    path = request["path"] if row.default_namespace else _in_namespace(request["path"], namespace)
    body = copy.deepcopy(request.get("body"))
    if row.live:
        body = _live_body(cluster, path, body, stale=row.stale)
    if isinstance(body, dict) and body.get("metadata", {}).get("namespace") == "default":
        body["metadata"]["namespace"] = namespace
    content_type = request["headers"].get("Content-Type", "application/json")
    reply = http(cluster, request["method"], path, body, content_type=content_type)
    assert reply.status == recorded["response_status"]
    want, got = comparable(row.file, recorded["response_body"], reply.body)
    assert got == want


# --- rows written by hand -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rejection:
    why: str
    method: str
    path: str  # {ns} is the row's namespace
    body: Any
    status: int
    reason: str
    causes: tuple[tuple[str, str], ...] = ()  # (field, reason) of details.causes, in order
    message: str = ""  # expected message (exact) when given
    setup: tuple[tuple[str, Any], ...] = ()  # (collection path, body) created first
    content_type: str = "application/json"


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        target = out
        *parents, last = dotted.split("__")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return out


DEPLOYS = "/apis/apps/v1/namespaces/{ns}/deployments"
PODS = "/api/v1/namespaces/{ns}/pods"
SERVICES = "/api/v1/namespaces/{ns}/services"
PVCS = "/api/v1/namespaces/{ns}/persistentvolumeclaims"
CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j"},
    "spec": {"template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}}},
}
LONG = "x" * 64

REJECTIONS = [
    Rejection(
        "a Deployment without a selector",
        "POST",
        DEPLOYS,
        _with(DEPLOY, spec__selector=None),
        422,
        "Invalid",
        (("spec.selector", "FieldValueRequired"),),
    ),
    Rejection(
        "a Job whose pods restart Always",
        "POST",
        JOBS,
        _with(JOB, spec__template__spec__restartPolicy="Always"),
        422,
        "Invalid",
        (("spec.template.spec.restartPolicy", "FieldValueNotSupported"),),
        message='Job.batch "j" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": '
        'supported values: "OnFailure", "Never"',
    ),
    Rejection(
        "a Job with negative parallelism",
        "POST",
        JOBS,
        _with(JOB, spec__parallelism=-1),
        422,
        "Invalid",
        (("spec.parallelism", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Pod without containers",
        "POST",
        PODS,
        _with(POD, spec__containers=[]),
        422,
        "Invalid",
        (("spec.containers", "FieldValueRequired"),),
        message='Pod "p" is invalid: spec.containers: Required value',
    ),
    Rejection(
        "a Pod with an upper-case container name",
        "POST",
        PODS,
        _with(POD, spec__containers=[{"name": "Web", "image": "nginx"}]),
        422,
        "Invalid",
        (("spec.containers[0].name", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Pod with two containers of one name",
        "POST",
        PODS,
        _with(POD, spec__containers=[CONTAINER, CONTAINER]),
        422,
        "Invalid",
        (("spec.containers[1].name", "FieldValueDuplicate"),),
    ),
    Rejection(
        "a Pod mounting a volume it does not declare",
        "POST",
        PODS,
        _with(POD, spec__containers=[{**CONTAINER, "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]),
        422,
        "Invalid",
        (("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound"),),
    ),
    Rejection(
        "a Pod naming a RuntimeClass that does not exist",
        "POST",
        PODS,
        _with(POD, spec__runtimeClassName="gvisor"),
        403,
        "Forbidden",
        message='pods "p" is forbidden: pod rejected: RuntimeClass "gvisor" not found',
    ),
    Rejection(
        "a Pod whose service account does not exist",
        "POST",
        PODS,
        _with(POD, spec__serviceAccountName="robot"),
        403,
        "Forbidden",
    ),
    Rejection(
        "a Service whose name starts with a digit",
        "POST",
        SERVICES,
        _with(SERVICE, metadata__name="1web"),
        422,
        "Invalid",
        (("metadata.name", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Service without ports",
        "POST",
        SERVICES,
        _with(SERVICE, spec__ports=[]),
        422,
        "Invalid",
        (("spec.ports", "FieldValueRequired"),),
    ),
    Rejection(
        "a Service port 0",
        "POST",
        SERVICES,
        _with(SERVICE, spec__ports=[{"port": 0}]),
        422,
        "Invalid",
        (("spec.ports[0].port", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Service asking for a cluster IP outside the range",
        "POST",
        SERVICES,
        _with(SERVICE, spec__clusterIP="192.168.0.1"),
        422,
        "Invalid",
        (("spec.clusterIPs", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Namespace name with a dot",
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "a.b"}},
        422,
        "Invalid",
        (("metadata.name", "FieldValueInvalid"),),
    ),
    Rejection(
        "a label value of 64 characters",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c", "labels": {"k": LONG}}},
        422,
        "Invalid",
        (("metadata.labels", "FieldValueInvalid"),),
    ),
    Rejection(
        "a label key with a space",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c", "labels": {"bad key": "v"}}},
        422,
        "Invalid",
        (("metadata.labels", "FieldValueInvalid"),),
    ),
    Rejection(
        "annotations over 256 KiB",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c", "annotations": {"big": "x" * 262145}}},
        422,
        "Invalid",
        (("metadata.annotations", "FieldValueTooLong"),),
    ),
    Rejection(
        "no name and no generateName",
        "POST",
        CONFIGMAPS,
        {"metadata": {}},
        422,
        "Invalid",
        (("metadata.name", "FieldValueRequired"),),
        message='ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
    ),
    Rejection(
        "a create carrying a resourceVersion",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c", "resourceVersion": "5"}},
        500,
        "InternalError",
        message="resourceVersion should not be set on objects to be created",
    ),
    Rejection(
        "a body naming another namespace than the URL",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c", "namespace": "kube-system"}},
        400,
        "BadRequest",
        message="the namespace of the provided object does not match the namespace sent on the request",
    ),
    Rejection(
        "a PVC without access modes",
        "POST",
        PVCS,
        _with(PVC, spec__accessModes=[]),
        422,
        "Invalid",
        (("spec.accessModes", "FieldValueRequired"),),
    ),
    Rejection(
        "a PVC without a storage request",
        "POST",
        PVCS,
        _with(PVC, spec__resources={}),
        422,
        "Invalid",
        (("spec.resources[storage]", "FieldValueRequired"),),
    ),
    Rejection(
        "a ConfigMap key with a slash",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c"}, "data": {"a/b": "x"}},
        422,
        "Invalid",
        (("data[a/b]", "FieldValueInvalid"),),
    ),
    Rejection(
        "a Secret whose data is not base64",
        "POST",
        "/api/v1/namespaces/{ns}/secrets",
        {"metadata": {"name": "s"}, "data": {"k": "%%%%"}},
        400,
        "BadRequest",
        message='Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0',
    ),
    Rejection(
        "a ConfigMap holding more than 1 MiB of data and binaryData together",
        "POST",
        CONFIGMAPS,
        {
            "metadata": {"name": "c"},
            "data": {"a": "x" * 1048000},
            "binaryData": {"b": "eHh4" * 200},
        },  # 576 + 1
        422,
        "Invalid",
        (("[]", "FieldValueTooLong"),),
        message='ConfigMap "c" is invalid: []: Too long: must have at most 1048576 bytes',
    ),
    Rejection(
        "a Secret holding more than 1 MiB of decoded data (stringData included)",
        "POST",
        "/api/v1/namespaces/{ns}/secrets",
        {
            "metadata": {"name": "s"},
            "data": {"a": "eHh4" * 349525},
            "stringData": {"b": "xx"},
        },  # 1,048,575 + 2 bytes
        422,
        "Invalid",
        (("data", "FieldValueTooLong"),),
        message='Secret "s" is invalid: data: Too long: must have at most 1048576 bytes',
    ),
    Rejection(
        "a request body over 3 MiB",
        "POST",
        CONFIGMAPS,
        {"metadata": {"name": "c"}, "data": {f"k{i}": "x" * 1024 for i in range(3072)}},
        413,
        "RequestEntityTooLarge",
        message="Request entity too large: limit is 3145728",
    ),
    Rejection(
        "a quantity that is not one",
        "POST",
        DEPLOYS,
        _with(
            DEPLOY,
            spec__template__spec__containers=[{**CONTAINER, "resources": {"limits": {"memory": "2 GB"}}}],
        ),
        400,
        "BadRequest",
        message='Deployment in version "v1" cannot be handled as a Deployment: quantities must match the '
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    Rejection(
        "a quantity with a suffix that is not one (K is not kilo)",
        "POST",
        PVCS,
        _with(PVC, spec__resources={"requests": {"storage": "1K"}}),
        400,
        "BadRequest",
        message='PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: unable '
        "to parse quantity's suffix",
    ),
    Rejection(
        "a negative lease duration",
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": -1}},
        422,
        "Invalid",
        (("spec.leaseDurationSeconds", "FieldValueInvalid"),),
    ),
    Rejection(
        "a patch in an unknown media type",
        "PATCH",
        CONFIGMAPS + "/c",
        "{}",
        415,
        "UnsupportedMediaType",
        setup=((CONFIGMAPS, {"metadata": {"name": "c"}}),),
        content_type="text/plain",
    ),
    Rejection(
        "a PUT whose body names another object",
        "PUT",
        CONFIGMAPS + "/c",
        {"metadata": {"name": "d"}},
        400,
        "BadRequest",
        message="the name of the object (d) does not match the name on the URL (c)",
        setup=((CONFIGMAPS, {"metadata": {"name": "c"}}),),
    ),
    Rejection(
        "a PUT of an object that does not exist",
        "PUT",
        CONFIGMAPS + "/nope",
        {"metadata": {"name": "nope"}},
        404,
        "NotFound",
        message='configmaps "nope" not found',
    ),
    Rejection(
        "a RuntimeClass whose handler changes",
        "PUT",
        "/apis/node.k8s.io/v1/runtimeclasses/kata-qemu",
        {"metadata": {"name": "kata-qemu"}, "handler": "runc"},
        422,
        "Invalid",
        (("handler", "FieldValueInvalid"),),
    ),
    Rejection(
        "a StorageClass whose provisioner changes",
        "PUT",
        "/apis/storage.k8s.io/v1/storageclasses/wait",
        {"metadata": {"name": "wait"}, "provisioner": "other", "volumeBindingMode": "WaitForFirstConsumer"},
        422,
        "Invalid",
        (("provisioner", "FieldValueForbidden"),),
    ),
    Rejection(
        "a label selector that does not parse",
        "GET",
        CONFIGMAPS + "?labelSelector=a%20in%20b",
        None,
        400,
        "BadRequest",
    ),
    Rejection(
        "a path the server does not serve",
        "GET",
        "/apis/example.com/v1/widgets",
        None,
        404,
        "NotFound",
        message="the server could not find the requested resource",
    ),
    Rejection(
        "an unknown delete propagation policy",
        "DELETE",
        CONFIGMAPS + "/c",
        {"propagationPolicy": "Sideways"},
        400,
        "BadRequest",
        setup=((CONFIGMAPS, {"metadata": {"name": "c"}}),),
    ),
]


@pytest.mark.parametrize("row", REJECTIONS, ids=[f"{r.why} is rejected with {r.status}" for r in REJECTIONS])
def test_derived_rejections(cluster: ClusterHandle, namespace: str, row: Rejection) -> None:
    for collection, body in row.setup:
        assert http(cluster, "POST", collection.format(ns=namespace), body).status == 201
    reply = http(cluster, row.method, row.path.format(ns=namespace), row.body, content_type=row.content_type)
    assert (reply.status, reply.body["reason"], reply.body["code"]) == (row.status, row.reason, row.status)
    if row.causes:
        assert tuple((c["field"], c["reason"]) for c in reply.body["details"]["causes"]) == row.causes
    if row.message:
        assert reply.body["message"] == row.message


def test_table_has_at_least_twenty_derived_rows() -> None:
    assert len(REJECTIONS) >= 20


KEPT_QUANTITIES = [
    ("99999999999999999999999999Ei", "9223372036854775807", "a huge binary quantity is clamped at 2^63-1"),
    ("8Ei", "9223372036854775807", "8Ei is one past 2^63-1"),
    ("1e400", "10e399", "a huge decimal exponent is kept, its exponent a multiple of 3"),
    ("0.0000000001", "1n", "a value finer than 1n is rounded up to 1n"),
    ("1.5Gi", "1536Mi", "a binary fraction moves to a smaller suffix"),
]


@pytest.mark.parametrize(
    ("given", "stored"), [q[:2] for q in KEPT_QUANTITIES], ids=[q[2] for q in KEPT_QUANTITIES]
)
def test_quantities_are_stored_as_the_apiserver_stores_them(
    cluster: ClusterHandle, namespace: str, given: str, stored: str
) -> None:
    """apimachinery's ParseQuantity rounds to nano and clamps binary values; a 500 here made planner retry."""
    pod = _with(POD, spec__containers=[{**CONTAINER, "resources": {"limits": {"memory": given}}}])
    reply = http(cluster, "POST", PODS.format(ns=namespace), pod)
    assert reply.status == 201, reply.body
    assert reply.body["spec"]["containers"][0]["resources"]["limits"]["memory"] == stored


def test_exactly_1_mib_of_configmap_data_in_a_body_of_exactly_3_mib_is_accepted(
    cluster: ClusterHandle, namespace: str
) -> None:
    text = '{"metadata":{"name":"full"},"data":{"a":"' + "y" * 1048576 + '"}}'
    text += " " * (3 * 1024 * 1024 - len(text))  # JSON allows trailing spaces: exactly the body limit
    reply = http(cluster, "POST", CONFIGMAPS.format(ns=namespace), text)
    assert reply.status == 201, reply.body

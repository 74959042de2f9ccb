"""The kinds beyond workloads against the recordings of a real v1.28.7 apiserver
(tests/golden/apigroups/): each recorded create is replayed, its response compared (run-specific
values masked, as the golden replay does) and its `kubectl get` Table — columns exactly, the created
object's row with its ages masked — and the admission a user meets over
HTTP: quota usage written back, the eviction subresource, a CSR's approval."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.cluster.test_golden_replay import mask
from tests.paths import REPO
from tests.slimcluster import http

GOLDEN = REPO / "tests" / "golden" / "apigroups"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
PYTHON_REQUESTS = {"User-Agent": "python-requests/2.31.0"}
TABLES = sorted(
    path.name.removesuffix("_table.json")
    for path in GOLDEN.glob("*_table.json")
    if (GOLDEN / path.name.replace("_table.json", "_create.json")).exists()
)


def load(name: str) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    return recorded


@pytest.fixture(scope="module")
def replayed(cluster: ClusterHandle) -> ClusterHandle:
    """The cluster with the recorded namespaces."""
    for namespace in ("limits", "quota", "pdb", "pdb2"):
        http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    return cluster


AGES = ("Age", "Created At", "Last Seen", "First Seen")
# Cells a controller or the request's user fills in on a real server, which the embedded one has not
# (docs/embedded-cluster.md, deviations): masked on both sides.
NOT_COMPARED = {
    "csr": ("Requestor",),  # the requesting user: the recording's was an admin certificate
    "flowschema_v1beta3": ("MissingPL",),  # the APF configuration controller's Dangling condition
    "apiservice": ("Available",),  # the APIService availability controller
}


# Creates whose response differs from the recorded one, and why (docs/embedded-cluster.md, deviations).
CREATE_DEVIATIONS = {
    "csr": "the requester is this client, and the real response carried no managedFields",
    "events_v1_event": "managedFields name the fields of the core Event it is stored as",
    "prioritylevelconfiguration_v1beta2": "managedFields name the v1beta3 fields it is stored as",
    "resourcequota": "status is filled by the create (the real quota controller fills it a moment later)",
    "poddisruptionbudget": "status is filled by the create (the real disruption controller fills it later)",
}


def _masked_row(table: dict[str, Any], cells: list[Any], kind: str) -> list[Any]:
    masked = (*AGES, *NOT_COMPARED.get(kind, ()))
    columns = table["columnDefinitions"]
    return ["<masked>" if c["name"] in masked else cell for c, cell in zip(columns, cells, strict=True)]


@pytest.mark.parametrize("kind", TABLES)
def test_a_created_objects_table_is_the_real_servers(replayed: ClusterHandle, kind: str) -> None:
    create, recorded = load(f"{kind}_create"), load(f"{kind}_table")
    if create["response_status"] != 201:
        pytest.skip(f"the recorded create of {kind} was refused")
    request = create["request"]
    created = http(replayed, "POST", request["path"], request["body"], headers=PYTHON_REQUESTS)
    assert created.status == 201, created.body
    if kind not in CREATE_DEVIATIONS:
        assert mask(created.body, [], []) == mask(create["response_body"], [], [])
    served = http(replayed, "GET", recorded["request"]["path"], headers={"Accept": TABLE}).body
    want = recorded["response_body"]
    assert served["columnDefinitions"] == want["columnDefinitions"]
    name = create["response_body"]["metadata"]["name"]
    wanted = [
        _masked_row(want, r["cells"], kind) for r in want["rows"] if r["object"]["metadata"]["name"] == name
    ]
    if not wanted:
        pytest.skip(f"the recorded table of {kind} was taken before the create")
    rows = [
        _masked_row(served, r["cells"], kind)
        for r in served["rows"]
        if r["object"]["metadata"]["name"] == name
    ]
    assert rows == wanted


def _post(cluster: ClusterHandle, path: str, body: dict[str, Any]) -> Any:
    response = http(cluster, "POST", path, body)
    assert response.status == 201, response.body
    return response.body


def test_quota_usage_is_written_back_as_objects_come_and_go(cluster: ClusterHandle, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    _post(
        cluster, f"{base}/resourcequotas", {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "3"}}}
    )
    _post(cluster, f"{base}/configmaps", {"metadata": {"name": "a"}})
    _post(cluster, f"{base}/configmaps", {"metadata": {"name": "b"}})
    used = http(cluster, "GET", f"{base}/resourcequotas/q").body["status"]["used"]
    assert used == {"configmaps": "3"}  # kube-root-ca.crt, a, b
    refused = http(cluster, "POST", f"{base}/configmaps", {"metadata": {"name": "c"}})
    assert (refused.status, refused.body["message"]) == (
        403,
        'configmaps "c" is forbidden: exceeded quota: q, requested: configmaps=1, used: configmaps=3, '
        "limited: configmaps=3",
    )
    assert http(cluster, "DELETE", f"{base}/configmaps/a").status == 200
    assert http(cluster, "GET", f"{base}/resourcequotas/q").body["status"]["used"] == {"configmaps": "2"}
    _post(cluster, f"{base}/configmaps", {"metadata": {"name": "c"}})


def _ready_pod(cluster: ClusterHandle, namespace: str, name: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    _post(
        cluster,
        base,
        {
            "metadata": {"name": name, "labels": {"app": "w"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
        },
    )
    pod = http(cluster, "GET", f"{base}/{name}").body
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    assert http(cluster, "PUT", f"{base}/{name}/status", pod).status == 200


def test_an_eviction_takes_a_disruption_then_is_refused(cluster: ClusterHandle, namespace: str) -> None:
    for name in ("w0", "w1", "w2"):
        _ready_pod(cluster, namespace, name)
    budgets = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    _post(
        cluster,
        budgets,
        {"metadata": {"name": "w"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "w"}}}},
    )
    status = http(cluster, "GET", f"{budgets}/w").body["status"]
    assert {
        k: status[k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    } == {
        "disruptionsAllowed": 1,
        "currentHealthy": 3,
        "desiredHealthy": 2,
        "expectedPods": 3,
    }
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "w0"}}
    evicted = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/pods/w0/eviction", eviction)
    assert (evicted.status, evicted.body) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    pod = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods/w0").body
    assert pod["metadata"]["deletionTimestamp"]
    assert [c["reason"] for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"] == [
        "EvictionByEvictionAPI"
    ]
    refused = http(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/w1/eviction",
        {**eviction, "metadata": {"name": "w1"}},
    )
    assert refused.status == 429
    assert refused.body == load("pdb_eviction_blocked")["response_body"]


def test_a_csr_records_its_requester_and_is_approved_through_its_approval_subresource(
    cluster: ClusterHandle,
) -> None:
    recorded = load("csr_create")["request"]
    body = {**recorded["body"], "metadata": {"name": "approve-me"}}
    csr = _post(cluster, recorded["path"], {**body, "spec": {**body["spec"], "username": "someone-else"}})
    assert (csr["spec"]["username"], csr["spec"]["groups"]) == (
        "kubernetes-admin",
        ["system:masters", "system:authenticated"],
    )
    csr["status"] = {
        "conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove", "message": "ok"}]
    }
    approved = http(cluster, "PUT", f"{recorded['path']}/approve-me/approval", csr)
    assert approved.status == 200, approved.body
    table = http(cluster, "GET", f"{recorded['path']}/approve-me", headers={"Accept": TABLE}).body
    assert table["rows"][0]["cells"][5] == "Approved"


def test_deprecated_kinds_answer_with_the_apiservers_warning(cluster: ClusterHandle) -> None:
    statuses = http(cluster, "GET", "/api/v1/componentstatuses")
    assert statuses.warnings == ('299 - "v1 ComponentStatus is deprecated in v1.19+"',)
    assert [item["metadata"]["name"] for item in statuses.body["items"]] == [
        "controller-manager",
        "etcd-0",
        "scheduler",
    ]
    beta = http(cluster, "GET", "/apis/flowcontrol.apiserver.k8s.io/v1beta2/flowschemas")
    assert beta.warnings == (
        '299 - "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema is deprecated in v1.26+, unavailable in v1.29+; '
        'use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"',
    )
    assert http(cluster, "GET", "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas").warnings == ()


# Recorded requests replayed in their order; a refusal must be the recorded Status exactly, a success
# the recorded status code (the objects themselves are compared above).
ADMISSION_SEQUENCES = {
    "limit ranges": ("limitrange_create", "limitrange_pod_create", "limitrange_pod_over_max"),
    "quotas": (
        "resourcequota_create",
        "resourcequota_pod_no_requests",
        "resourcequota_pod_create",
        "resourcequota_pod_exceeded",
        "resourcequota_configmap_0",
        "resourcequota_configmap_1",
        "resourcequota_configmap_2",
    ),
    "priority classes": (
        "priorityclass_create",
        "priorityclass_pod_create",
        "priorityclass_pod_missing_class",
        "priorityclass_global_default_create",
        "priorityclass_second_global_default",
        "priorityclass_pod_global_default",
        "priorityclass_system_prefix",
        "priorityclass_value_too_high",
    ),
}


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[ClusterHandle]:
    """A cluster of its own: the sequences create what the table replays create too."""
    with running_cluster() as handle:
        yield handle


@pytest.mark.parametrize("sequence", sorted(ADMISSION_SEQUENCES))
def test_admission_answers_as_the_real_server_did(own_cluster: ClusterHandle, sequence: str) -> None:
    cluster = own_cluster
    namespace = {"limit ranges": "limits", "quotas": "quota", "priority classes": "default"}[sequence]
    if namespace != "default":
        http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    try:
        for name in ADMISSION_SEQUENCES[sequence]:
            recorded = load(name)
            request = recorded["request"]
            answer = http(
                cluster, request["method"], request["path"], request["body"], headers=PYTHON_REQUESTS
            )
            assert answer.status == recorded["response_status"], (name, answer.body)
            if recorded["response_body"].get("kind") == "Status":
                assert answer.body == recorded["response_body"], name
    finally:
        http(cluster, "DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/dflt")

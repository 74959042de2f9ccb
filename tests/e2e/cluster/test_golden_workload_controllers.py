"""Golden replay of the workload controllers: a StatefulSet (with a claim template), a DaemonSet, a
CronJob and an HPA on the StatefulSet, recorded on a real kube-apiserver v1.28.7 with its
controller-manager, scheduler and one simulated node (`tests/golden/controllers/`, written by
`scripts/record_k8s_goldens.py`), replayed in recording order against one embedded cluster with its
simulation running: each create's response, the object once its controller has settled (the HPA also
through autoscaling/v1) and the namespace's Table must equal the recording after the golden replay's
masking (uids, times, resourceVersions) and the masks below, each saying why. A GET is repeated until the controllers reach
the recorded state (at most SETTLE_SECONDS); the cluster runs at a time scale of 0.1, so the CronJob's
every-minute schedule comes round in 6 s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.cluster.test_golden_replay import RECORDING_USER_AGENT, mask
from tests.paths import REPO
from tests.slimcluster import Response, http

GOLDEN = REPO / "tests" / "golden" / "controllers"
INDEX = [entry["file"] for entry in json.loads((GOLDEN / "_index.json").read_text())]
SETTLE_SECONDS = 30.0

# Values that differ by construction, masked on both sides (docs/embedded-cluster.md, deviations).
MASKED_PATHS = {
    "status.currentRevision": "revision hashes are FNV over JSON, not over a Go dump of the template",
    "status.updateRevision": "revision hashes are FNV over JSON, not over a Go dump of the template",
    "status.lastScheduleTime": "the moment the schedule came round",
    "status.lastSuccessfulTime": "the moment the run finished",
}
MASKED_COLUMNS = {"Age": "the object's age", "Last Schedule": "the last run's age"}
# JSON inside strings whose value is masked (the key, group 1, stays).
MASKED_IN_STRINGS = {
    r'("lastTransitionTime":)"[^"]*"': "a condition's transition time in the JSON of autoscaling/v1's "
    "conditions annotation (the moment the HPA controller first wrote it)",
}


def load(name: str) -> dict[str, Any]:
    recorded: dict[str, Any] = json.loads((GOLDEN / name).read_text())
    return recorded


def comparable(body: Any) -> Any:
    patterns = [{"pattern": pattern, "with": r'\1"<masked>"'} for pattern in MASKED_IN_STRINGS]
    masked = mask(body, list(MASKED_PATHS), patterns)
    if isinstance(masked, dict) and masked.get("kind") == "Table":
        names = [column["name"] for column in masked["columnDefinitions"]]
        for row in masked["rows"]:
            row["cells"] = [
                "<masked>" if name in MASKED_COLUMNS else cell
                for name, cell in zip(names, row["cells"], strict=True)
            ]
    return masked


def send(cluster: ClusterHandle, name: str) -> Response:
    request = load(name)["request"]
    headers = {k: v for k, v in request["headers"].items() if k != "Content-Type"}
    headers["User-Agent"] = RECORDING_USER_AGENT
    return http(cluster, request["method"], request["path"], request.get("body"), headers=headers)


def matches(name: str, reply: Response) -> bool:
    recorded = load(name)
    return reply.status == recorded["response_status"] and comparable(reply.body) == comparable(
        recorded["response_body"]
    )


def settled(cluster: ClusterHandle, name: str) -> Response:
    """The reply, once it equals the recording (a GET is repeated while the controllers work)."""
    reply = send(cluster, name)
    deadline = time.monotonic() + SETTLE_SECONDS
    while load(name)["request"]["method"] == "GET" and not matches(name, reply):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
        reply = send(cluster, name)
    return reply


@pytest.fixture(scope="module")
def replayed() -> Iterator[dict[str, Response]]:
    with running_cluster(simulate=True, time_scale=0.1) as cluster:
        yield {name: settled(cluster, name) for name in INDEX}


def test_every_recorded_file_is_indexed() -> None:
    assert sorted(INDEX) == sorted(p.name for p in GOLDEN.glob("*.json") if p.name != "_index.json")


@pytest.mark.parametrize("name", INDEX, ids=[n.removesuffix(".json") for n in INDEX])
def test_the_embedded_controllers_answer_as_recorded(name: str, replayed: dict[str, Response]) -> None:
    recorded, reply = load(name), replayed[name]
    assert reply.status == recorded["response_status"], reply.body
    assert comparable(reply.body) == comparable(recorded["response_body"])

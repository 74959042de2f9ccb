"""Golden replay of the controller-written recordings, against a cluster whose controllers run and whose
node agent is paused (the recording cluster had no scheduler or kubelet, so its pods stayed Pending).

The files `golden_deviations.yaml` marks `controller_replay` are replayed here in
recording order, in their own fresh cluster: each waits (up to a few seconds) for the controllers to
reach the recorded state, then must equal the recording exactly after the same masking as the main
replay plus the file's own rules (the pod-template hash and generated pod suffixes, which differ by
construction). The foreground delete is observed with the controllers paused for a moment, as the
recording caught the owner before the garbage collector had finished.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.cluster.test_golden_replay import (
    DEVIATIONS,
    _run_before,
    comparable,
    deviation,
    load,
    replay_one,
)
from tests.slimcluster import Response

# (file, compared?) in recording order; the uncompared ones create what the compared ones read.
SEQUENCE = [
    ("deployment_create.json", False),
    ("deployment_get_after_controller.json", True),
    ("replicaset_list_for_deployment.json", True),
    ("pod_list_for_deployment.json", True),
    ("job_create.json", False),
    ("job_get_after_controller.json", True),
    ("pod_list_for_job.json", True),
    ("service_create.json", False),
    ("endpoints_get_for_service.json", True),
    ("delete_fg_setup_create.json", False),
    ("delete_foreground.json", True),
    ("delete_foreground_get_right_after.json", True),
    ("delete_foreground_get_later.json", True),
]
COMPARED = [name for name, compared in SEQUENCE if compared]
SETTLE_SECONDS = 10.0
PAUSED_AROUND = {"delete_foreground.json": "pause", "delete_foreground_get_right_after.json": "resume"}


OWNER_KEY = re.compile(r'^k:\{"uid":"[0-9a-f-]{36}"\}$')


def owner_keys(value: Any) -> Any:
    """managedFields name an ownerReference by its owner's uid in a *key*, which the value masks miss:
    the key's uid becomes `<uid>` on both sides (its contents are compared: an atomic `{}`)."""
    if isinstance(value, dict):
        return {('k:{"uid":"<uid>"}' if OWNER_KEY.match(k) else k): owner_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [owner_keys(v) for v in value]
    return value


def compared(name: str, reply: Response) -> tuple[Any, Any]:
    want, got = comparable(name, load(name)["response_body"], reply.body)
    return owner_keys(want), owner_keys(got)


def matches(name: str, reply: Response) -> bool:
    want, got = compared(name, reply)
    return reply.status == load(name)["response_status"] and got == want


def settled_reply(cluster: ClusterHandle, name: str) -> Response:
    """Replay `name` until the controllers have written the recorded state (a GET may be repeated)."""
    reply = replay_one(cluster, name)
    if load(name)["request"]["method"] != "GET":
        return reply
    deadline = time.monotonic() + SETTLE_SECONDS
    while not matches(name, reply) and time.monotonic() < deadline:
        time.sleep(0.1)
        reply = replay_one(cluster, name)
    return reply


@pytest.fixture(scope="module")
def replayed() -> Iterator[dict[str, Response]]:
    with running_cluster(simulate=True, paused=("nodeagent",)) as cluster:
        admin = SlimAdmin.of(cluster)
        _run_before(cluster, DEVIATIONS.get("setup", []))
        replies: dict[str, Response] = {}
        for name, _ in SEQUENCE:
            if PAUSED_AROUND.get(name) == "pause":
                time.sleep(1.0)  # the fg-web ReplicaSet and Pod exist before the delete, as recorded
                admin.pause("controllers")
            replies[name] = settled_reply(cluster, name)
            if PAUSED_AROUND.get(name) == "resume":
                admin.resume("controllers")
        yield replies


def test_every_compared_file_is_left_to_this_replay() -> None:
    for name in COMPARED:
        rules: dict[str, Any] = deviation(name)
        assert rules.get("controller_replay"), name


@pytest.mark.parametrize(
    "name", COMPARED, ids=[f"{n} replays exactly with the controllers running" for n in COMPARED]
)
def test_controller_written_response_equals_recording(name: str, replayed: dict[str, Response]) -> None:
    recorded = load(name)
    actual = replayed[name]
    assert actual.status == recorded["response_status"], actual.body
    want, got = compared(name, actual)
    assert got == want

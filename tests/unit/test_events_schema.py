"""Every event type's JSON line validates against `schemas/events.schema.json`, the documented stable
interface of `apply -o json` and `monitor -o json`, and the schema refuses what the events never say."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from planner import events
from tests.paths import REPO

T = 1_800_000_000.0
WEB = {"object": "deployment/shop/web", "runtime_id": "k8s-shop|deployment|web"}
TASK = "wait-ready deployment/shop/web"
EVENT_ID = "0" * 64

EVERY_KIND: list[events.Event] = [
    events.Planned(
        time=T,
        message=TASK,
        task=TASK,
        action="wait-ready",
        predecessors=("create deployment/shop/web",),
        **WEB,
    ),
    events.Applying(time=T, message="create", task="create deployment/shop/web", action="create", **WEB),
    events.Applied(time=T, message="created", task="create deployment/shop/web", action="create", **WEB),
    events.Waiting(time=T, message="waiting until ready", task=TASK, until="ready", timeout=300.0, **WEB),
    events.Waiting(
        time=T,
        message="still waiting until ready: ready 0/2",
        task=TASK,
        until="ready",
        timeout=300.0,
        reason="0/2 pods scheduled: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector",
        **WEB,
    ),
    events.Ready(time=T, message="ready 2/2", task=TASK, **WEB),
    events.Deleted(time=T, message="gone", task="wait-gone deployment/shop/web", **WEB),
    events.Skipped(
        time=T,
        message="wait-ready job/shop/migrate failed",
        task=TASK,
        because="wait-ready job/shop/migrate",
        **WEB,
    ),
    events.Skipped(
        time=T,
        message="not followed: wait-ready job/shop/migrate failed",
        task="watch k8s-shop|deployment|web",
        because="wait-ready job/shop/migrate",
        **WEB,
    ),
    events.Failed(time=T, message="timed out after 5m waiting until ready: x", task=TASK, reason="x", **WEB),
    events.Failed(time=T, message="forbidden", task="create deployment/shop/web", **WEB),
    events.Summary(
        time=T, message="1 done, 1 failed, 0 skipped", done=("a",), failed=(TASK,), reasons=((TASK, "x"),)
    ),
    events.ContainerStarted(time=T, message="ready 1/1", event_id=EVENT_ID, **WEB),
    events.ContainerExited(
        time=T, message="0", event_id=EVENT_ID, object="job/shop/m", runtime_id="k8s-shop|job|m"
    ),
    events.ContainerFailed(
        time=T,
        message="Job has reached the specified backoff limit",
        event_id=EVENT_ID,
        exit_code=3,
        object="job/shop/m",
        runtime_id="k8s-shop|job|m",
    ),
    events.ContainerDeleted(time=T, message="deployment shop/web is gone", event_id=EVENT_ID, **WEB),
]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads((REPO / "schemas" / "events.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize("event", EVERY_KIND, ids=lambda e: f"{type(e).__name__}: {e.message}")
def test_every_event_line_validates(validator: jsonschema.Draft7Validator, event: events.Event) -> None:
    line = json.loads(json.dumps(events.to_json_dict(event)))
    assert [error.message for error in validator.iter_errors(line)] == []


@pytest.mark.parametrize(
    "line",
    [
        {
            "time": "2026-11-29T12:00:00.000Z",
            "type": "Waiting",
            "message": "m",
            "task": TASK,
            "until": "soon",
        },
        {"time": "2026-11-29T12:00:00.000Z", "type": "Failed", "message": "m", "task": TASK, "reason": 3},
        {
            "time": "2026-11-29T12:00:00.000Z",
            "type": "ContainerStarted",
            "message": "m",
            **WEB,
            "event_id": "x",
            "exit_code": 1,
        },
        {"time": "yesterday", "type": "Ready", "message": "m", "task": TASK},
    ],
    ids=[
        "a wait until something else",
        "a reason that is not text",
        "an exit code on a start",
        "a time not RFC 3339",
    ],
)
def test_what_the_events_never_say_does_not_validate(
    validator: jsonschema.Draft7Validator, line: dict[str, Any]
) -> None:
    assert not validator.is_valid(line)


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1764584999.25, "2025-12-01T10:29:59.250Z"),
        (1764584999.9994, "2025-12-01T10:29:59.999Z"),
        # within half a microsecond of the next second: datetime rounds it up, and so does the stamp
        (1764584999.9999995, "2025-12-01T10:30:00.000Z"),
        (1764585000.0, "2025-12-01T10:30:00.000Z"),
    ],
)
def test_an_event_time_is_utc_to_the_millisecond_as_datetime_rounds_it(seconds: float, expected: str) -> None:
    assert events.rfc3339(seconds) == expected


def test_a_statefulsets_runtime_id_validates(validator: jsonschema.Draft7Validator) -> None:
    lines = [json.loads(json.dumps(events.to_json_dict(event))) for event in EVERY_KIND]
    line = next(line for line in lines if "runtime_id" in line)
    line["runtime_id"] = "k8s-shop|statefulset|db"
    assert [error.message for error in validator.iter_errors(line)] == []

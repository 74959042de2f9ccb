"""The controller's Events aggregated as client-go's EventCorrelator does, against a hand-written API
that records each request: a repeat within the window is a PATCH of the first Event's count."""

from __future__ import annotations

from typing import Any, cast

from planner.controller.recorder import FAILED_EVENT, EventCorrelator, EventRecorder
from planner.errors import NotFoundError
from planner.kube.client import KubeClient

PLAN = {
    "apiVersion": "planner.dev/v1",
    "kind": "Plan",
    "metadata": {"name": "web", "namespace": "team-a", "uid": "u1"},
}
EVENTS = "/api/v1/namespaces/team-a/events"


class Api:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.gone: set[str] = set()

    def request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        body = options.get("body")
        self.requests.append((method, path, body))
        if method == "PATCH" and path.rpartition("/")[2] in self.gone:
            raise NotFoundError("not found", status=404)
        return cast(dict[str, Any], body)

    def said(self) -> list[tuple[str, str, Any]]:
        """(method, the Event's name or the collection, its count) of each request."""
        return [
            (method, path.rpartition("/")[2] if method == "PATCH" else path, body["count"])
            for method, path, body in self.requests
        ]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorder(api: Api, clock: Clock) -> EventRecorder:
    correlator = EventCorrelator(window=600.0, clock=clock)
    return EventRecorder(cast(KubeClient, api), identity="c1", notice=lambda _: None, correlator=correlator)


def test_a_repeated_event_is_one_event_counting_up() -> None:
    api, clock = Api(), Clock()
    events = recorder(api, clock)
    for _ in range(3):
        events.on_plan(PLAN, FAILED_EVENT, "image pull failed")
        clock.now += 30.0
    events.on_plan(PLAN, FAILED_EVENT, "quota exceeded")  # another message: another Event
    events.on_plan(PLAN, ("Reconciled", "Normal"), "image pull failed")  # another reason, likewise

    first = api.requests[0][2]["metadata"]["name"]
    assert api.said() == [
        ("POST", EVENTS, 1),
        ("PATCH", first, 2),
        ("PATCH", first, 3),
        ("POST", EVENTS, 1),
        ("POST", EVENTS, 1),
    ]
    assert api.requests[1][2].keys() == {"count", "lastTimestamp"}


def test_a_repeat_after_the_window_or_of_a_vanished_event_is_a_new_event() -> None:
    api, clock = Api(), Clock()
    events = recorder(api, clock)
    events.on_plan(PLAN, FAILED_EVENT, "image pull failed")
    clock.now += 601.0
    events.on_plan(PLAN, FAILED_EVENT, "image pull failed")
    second = api.requests[1][2]["metadata"]["name"]
    api.gone.add(second)
    events.on_plan(PLAN, FAILED_EVENT, "image pull failed")
    events.on_plan(PLAN, FAILED_EVENT, "image pull failed")

    third = api.requests[3][2]["metadata"]["name"]
    assert api.said() == [
        ("POST", EVENTS, 1),
        ("POST", EVENTS, 1),
        ("PATCH", second, 2),
        ("POST", EVENTS, 1),
        ("PATCH", third, 2),
    ]


def test_the_same_message_on_two_plans_is_two_events() -> None:
    api, clock = Api(), Clock()
    events = recorder(api, clock)
    other = {**PLAN, "metadata": {"name": "api", "namespace": "team-a", "uid": "u2"}}
    events.on_plan(PLAN, FAILED_EVENT, "image pull failed")
    events.on_plan(other, FAILED_EVENT, "image pull failed")

    assert api.said() == [("POST", EVENTS, 1), ("POST", EVENTS, 1)]

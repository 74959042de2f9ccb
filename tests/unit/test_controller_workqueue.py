"""The controller's work queue with a hand-driven clock: dedup, no key twice at once, backoff."""

from __future__ import annotations

from planner.controller.workqueue import WorkQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_is_queued_once_however_often_it_is_added() -> None:
    queue = WorkQueue(clock=Clock())
    for key in ["plan:a", "pools:a", "plan:a"]:
        queue.add(key)

    assert queue.depth() == 2
    assert [queue.get(timeout=0), queue.get(timeout=0), queue.get(timeout=0)] == ["plan:a", "pools:a", None]


def test_a_key_added_while_processed_comes_back_only_when_done() -> None:
    queue = WorkQueue(clock=Clock())
    queue.add("plan:a")
    key = queue.get(timeout=0)

    queue.add("plan:a")

    assert queue.get(timeout=0) is None
    queue.done("plan:a")
    assert key == "plan:a" and queue.get(timeout=0) == "plan:a"


def test_retries_back_off_exponentially_to_the_cap_and_forget_resets() -> None:
    clock = Clock()
    queue = WorkQueue(base=0.5, cap=3.0, clock=clock)

    delays = [queue.retry("plan:a") for _ in range(5)]
    queue.forget("plan:a")

    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert queue.retry("plan:a") == 0.5


def test_a_retried_key_waits_for_its_delay() -> None:
    clock = Clock()
    queue = WorkQueue(base=2.0, clock=clock)
    queue.retry("reap")

    assert queue.get(timeout=0) is None
    clock.now += 2.0
    assert queue.get(timeout=0) == "reap"


def test_a_shut_queue_hands_out_nothing_more() -> None:
    queue = WorkQueue(clock=Clock())
    queue.shut_down()
    queue.add("plan:a")

    assert queue.get(timeout=1) is None

"""The work queue of the controller and the real-cluster node agent, with a hand-driven clock: dedup,
no key twice at once (whatever the number of workers), backoff, shutdown; and on real threads."""

from __future__ import annotations

import threading
import time
from collections import Counter

from planner.workqueue import WorkQueue


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


def test_a_key_added_after_a_delay_again_and_again_waits_once_until_the_earliest_time() -> None:
    """Each reconcile of a Plan queues its periodic key again: one pending entry, not one per reconcile."""
    clock = Clock()
    queue = WorkQueue(clock=clock)
    for _ in range(15):
        queue.add_after("periodic:a", 30.0)
        clock.now += 1.0
    queue.add_after("periodic:a", 5.0)  # earlier than the one pending (due at 130): it wins
    queue.add_after("periodic:b", 30.0)

    assert queue.depth() == 2
    clock.now = 120.0
    assert queue.get(timeout=0) == "periodic:a"
    queue.done("periodic:a")
    clock.now = 200.0
    handed = [queue.get(timeout=0), queue.get(timeout=0)]
    assert handed == ["periodic:b", None] and queue.depth() == 0


def test_a_shut_queue_hands_out_nothing_more() -> None:
    queue = WorkQueue(clock=Clock())
    queue.shut_down()
    queue.add("plan:a")

    assert queue.get(timeout=1) is None


def test_several_workers_get_different_keys_and_never_one_being_processed() -> None:
    queue = WorkQueue(clock=Clock())
    for key in ["plan:a", "plan:b", "plan:c"]:
        queue.add(key)
    first, second = queue.get(timeout=0), queue.get(timeout=0)

    queue.add("plan:a")  # a change of a plan in flight: queued again, not handed out
    third, fourth = queue.get(timeout=0), queue.get(timeout=0)

    assert (first, second, third, fourth) == ("plan:a", "plan:b", "plan:c", None)
    assert queue.processing() == 3
    queue.done("plan:b")
    assert queue.get(timeout=0) is None  # plan:b was not added again
    queue.done("plan:a")
    assert queue.get(timeout=0) == "plan:a" and queue.processing() == 2


def test_a_retry_that_comes_due_while_the_key_is_processed_waits_for_done() -> None:
    clock = Clock()
    queue = WorkQueue(base=1.0, clock=clock)
    queue.add("plan:a")
    assert queue.get(timeout=0) == "plan:a"
    queue.retry("plan:a")  # an earlier failure's retry, due while a worker holds the key
    clock.now += 1.0

    assert queue.get(timeout=0) is None
    queue.done("plan:a")
    assert queue.get(timeout=0) == "plan:a"
    queue.done("plan:a")
    assert queue.get(timeout=0) is None and queue.depth() == 0


def test_shutdown_wakes_a_waiting_worker_and_hands_out_no_queued_key() -> None:
    queue = WorkQueue(clock=Clock())
    got: list[str | None] = []
    waiting = threading.Thread(target=lambda: got.append(queue.get(timeout=3600)))
    queue.add_after("plan:c", 3600)  # the clock never moves: the waiter sleeps until woken
    waiting.start()
    queue.shut_down()
    waiting.join()

    busy = WorkQueue(clock=Clock())
    for key in ["plan:a", "plan:b"]:
        busy.add(key)
    assert busy.get(timeout=0) == "plan:a"
    busy.shut_down()
    busy.retry("plan:a")  # the worker finishing its key after the shutdown
    busy.done("plan:a")

    assert got == [None]
    assert busy.get(timeout=0) is None and busy.processing() == 0


Ref = tuple[str, str, str]


def test_workers_on_threads_never_hold_one_pod_at_once_and_see_every_change() -> None:
    """The node agent's use: its informers add pods while several workers sync them."""
    queue: WorkQueue[Ref] = WorkQueue()
    pods = [("Pod", "ns", f"app-{i}") for i in range(4)]
    lock = threading.Lock()
    holding: Counter[Ref] = Counter()
    overlaps: list[Ref] = []
    seen: dict[Ref, int] = {}  # the last change each pod's sync saw
    changes: dict[Ref, int] = dict.fromkeys(pods, 0)

    def work() -> None:
        while (pod := queue.get(timeout=60)) is not None:
            with lock:
                holding[pod] += 1
                if holding[pod] > 1:
                    overlaps.append(pod)
                seen[pod] = changes[pod]
            time.sleep(0.001)
            with lock:
                holding[pod] -= 1
            queue.done(pod)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for _ in range(200):
        for pod in pods:
            with lock:
                changes[pod] += 1
            queue.add(pod)
    while queue.depth() or queue.processing():
        time.sleep(0.01)
    queue.shut_down()
    for worker in workers:
        worker.join()

    assert overlaps == []
    assert seen == dict.fromkeys(pods, 200)

"""The work queue's keys and the workers that take them.

Three kinds of key go through one rate-limited work queue (`planner.workqueue`), taken by `--concurrent`
workers; the queue never hands a key to two workers at once, so different plans reconcile in parallel
and one plan never twice at once (and its run lock keeps other processes out):

- `plan:<key>` reconciles the plan as `planner reconcile` does (`planfiles`, `planobjects`);
  `periodic:<key>` is its periodic reconcile, which a Plan object's watch caches may answer.
- `pools:<key>` brings each of the plan's warm pools to its size (`warmpools`).
- `reap` pauses the idle sandboxes of the plans' namespaces (`reaper`).

A failure is retried with a per-key backoff. Only the leader takes keys off the queue: a standby lets
each go, to be queued again when it leads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from planner.controller.health import Heartbeat
from planner.errors import ApiError, PlannerError, UnreachableError
from planner.workqueue import WorkQueue

REAP = "reap"

Handler = Callable[[str], bool]  # a kind of key's work, given the key's plan; False: retry it


def plan_key(plan: str) -> str:
    return f"plan:{plan}"


def periodic_key(plan: str) -> str:
    """The plan's periodic reconcile (`--interval`, its own `reconcile.interval`): one a Plan object's
    watch caches may answer without a request."""
    return f"periodic:{plan}"


def pools_key(plan: str) -> str:
    return f"pools:{plan}"


class Workers:
    def __init__(
        self,
        queue: WorkQueue[str],
        *,
        count: int,
        handlers: Mapping[str, Handler],
        leading: Callable[[], bool],
        stopping: threading.Event,
        notice: Callable[[str], None],
    ) -> None:
        self.queue, self.handlers, self.notice = queue, handlers, notice
        self.leading, self.stopping = leading, stopping
        self.beats = [Heartbeat(f"worker {number + 1}") for number in range(count)]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._threads = [
            threading.Thread(
                target=self._work, args=(beat,), name=f"controller-{beat.name.replace(' ', '-')}", daemon=True
            )
            for beat in self.beats
        ]
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        """Wait for each worker to finish the key in hand (they end once `stopping` is set)."""
        for thread in self._threads:
            thread.join()

    def process(self, key: str) -> bool:
        """Do one key's work; False to retry it after its backoff."""
        kind, _, plan = key.partition(":")
        handler = self.handlers.get(kind)
        if handler is None:
            return True
        try:
            return handler(plan)
        except (ApiError, UnreachableError, PlannerError) as failure:
            self.notice(f"{key}: {failure}")
            return False

    def _work(self, beat: Heartbeat) -> None:
        while True:
            beat.beat()
            key = self.queue.get(timeout=0.5)
            beat.beat(key or "")
            if key is None:
                if self.stopping.is_set():
                    return
                continue
            try:
                if not self.leading():
                    self.queue.forget(key)  # the leader does it; queued again if this one leads
                    continue
                ok = self.process(key)
            finally:
                self.queue.done(key)
            if ok:
                self.queue.forget(key)
            elif not self.stopping.is_set():
                self.queue.retry(key)

"""A work queue, client-go's in small: each key at most once in the queue, never handed to two workers
at once (a key added while it is being processed is queued again when it is done), a key due again
later (`add_after`: a key waits once, until the earliest time it was asked for, as client-go's delaying
queue keeps it), and a failed key retried after a per-key exponential backoff (`base *
2**failures`, capped), which a success resets. Safe from any number of threads; once shut down it
hands out nothing more, so the workers stop after the key each is processing. The controller's keys
are strings (`plan:<file>`, `pools:<file>`, `reap`); the real-cluster node agent's are object refs."""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Clock = Callable[[], float]
Key = TypeVar("Key", bound=Hashable)


class WorkQueue(Generic[Key]):
    def __init__(self, *, base: float = 0.5, cap: float = 60.0, clock: Clock = time.monotonic) -> None:
        self.base, self.cap, self.clock = base, cap, clock
        self._ready: deque[Key] = deque()
        self._queued: set[Key] = set()
        self._processing: set[Key] = set()
        self._again: set[Key] = set()  # added while being processed
        self._delayed: list[tuple[float, Key]] = []  # a heap; an entry whose time is not `_due`'s is stale
        self._due: dict[Key, float] = {}  # each waiting key's one time: the earliest asked for
        self._failures: dict[Key, int] = {}
        self._shut = False
        self._changed = threading.Condition()

    def add(self, key: Key) -> None:
        with self._changed:
            if not self._shut:
                self._enqueue(key)

    def add_after(self, key: Key, delay: float) -> None:
        with self._changed:
            if self._shut:
                return
            if delay <= 0:
                self._enqueue(key)
                return
            due = self.clock() + delay
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            heapq.heappush(self._delayed, (due, key))
            self._changed.notify()

    def retry(self, key: Key) -> float:
        """Queue `key` again after its backoff; returns the delay."""
        with self._changed:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = float(min(self.cap, self.base * 2.0**failures))
        self.add_after(key, delay)
        return delay

    def forget(self, key: Key) -> None:
        with self._changed:
            self._failures.pop(key, None)

    def get(self, timeout: float) -> Key | None:
        """The next key to process (then `done(key)`), or None after `timeout` or once shut down."""
        deadline = self.clock() + timeout
        with self._changed:
            while not self._shut:
                self._promote()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                remaining = deadline - self.clock()
                if remaining <= 0:
                    return None
                wake = min(self._due.values()) - self.clock() if self._due else remaining
                self._changed.wait(max(0.0, min(remaining, wake)))
            return None

    def done(self, key: Key) -> None:
        with self._changed:
            self._processing.discard(key)
            if key in self._again:
                self._again.discard(key)
                self._enqueue(key)

    def processing(self) -> int:
        """Keys being processed now (by as many workers)."""
        with self._changed:
            return len(self._processing)

    def depth(self) -> int:
        """Keys waiting: ready now or backing off."""
        with self._changed:
            return len(self._ready) + len(self._due)

    def shut_down(self) -> None:
        with self._changed:
            self._shut = True
            self._changed.notify_all()

    def _promote(self) -> None:
        now = self.clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, key = heapq.heappop(self._delayed)
            if self._due.get(key) == due:
                del self._due[key]
                self._enqueue(key)

    def _enqueue(self, key: Key) -> None:
        """With the lock held: queue `key` unless it is queued already; one being processed is queued
        again when its worker is done."""
        if key in self._processing:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._changed.notify()

"""Fakes for the Protocols the executor is given: a Writer, a StatusSource, an EventSink and a Clock.

Each fake is typed against its Protocol (see `_conforms` at the bottom, checked by mypy), records what it
was asked, and can be scripted per object. `Concurrency` counts how many writes are in flight at once.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from planner.events import Clock, Event, EventSink
from planner.execute import Answer, Progress, StatusSource, Until, Writer
from planner.objects import Manifest, ObjectRef
from planner.state.applyset import ParentRecord
from planner.wait.readiness import Readiness


class Concurrency:
    """Counts calls in flight; `peak` is the most seen at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self._lock:
            self.current += 1
            self.peak = max(self.peak, self.current)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.current -= 1


class FakeClock:
    """Time moves only when told (`advance`, `sleep`)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._lock = threading.Lock()
        self._now = start

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


class RecordingSink:
    """Keeps every event; `hooks` run on each one as it is emitted (to react at a chosen moment)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.hooks: list[Callable[[Event], None]] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)
        for hook in self.hooks:
            hook(event)

    def of_type(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]


def _name(manifest: Manifest) -> str:
    metadata = manifest["metadata"]
    scope = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{str(manifest['kind']).lower()}/{scope}{metadata['name']}"


Hook = Callable[[str], None]


@dataclass
class FakeWriter:
    """Records every write as `"<method> <object>"`. `failures` maps such a call to the exception it
    raises; `hooks` maps it to a function run during the call (to block, or to signal)."""

    concurrency: Concurrency = field(default_factory=Concurrency)
    failures: dict[str, Exception] = field(default_factory=dict)
    hooks: dict[str, Hook] = field(default_factory=dict)
    delay: float = 0.0
    calls: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _call(self, call: str) -> None:
        with self.concurrency:
            with self._lock:
                self.calls.append(call)
            if call in self.hooks:
                self.hooks[call](call)
            if self.delay:
                threading.Event().wait(self.delay)
            if call in self.failures:
                raise self.failures[call]

    def ensure_namespace(self, name: str) -> tuple[Manifest, bool]:
        self._call(f"ensure namespace/{name}")
        return {"kind": "Namespace", "metadata": {"name": name}}, True

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        self._call(f"parent {ref}")
        return {"kind": "Secret", "metadata": {"name": ref.name, "namespace": ref.namespace}}

    def create(self, manifest: Manifest) -> Manifest:
        self._call(f"create {_name(manifest)}")
        return {
            **manifest,
            "metadata": {**manifest["metadata"], "uid": f"uid-{manifest['metadata']['name']}"},
        }

    def apply(self, manifest: Manifest) -> Manifest:
        self._call(f"apply {_name(manifest)}")
        return manifest

    def delete(self, ref: ObjectRef, *, propagation: str) -> None:
        self._call(f"delete {ref} ({propagation})")

    def record_run(self, parent: ObjectRef, job: Manifest) -> Manifest:
        self._call(f"record-run {_name(job)} uid={job['metadata'].get('uid')} in {parent}")
        return {"kind": "Secret", "metadata": {"name": parent.name}}


READY = Readiness(status="Current", message="ready")
GONE = Readiness(status="NotFound", message="not found")

Script = Answer | Callable[[Until, float], Answer]


@dataclass
class ScriptedStatus:
    """Answers `watch` from a script keyed by `"<until> <object>"` (`"ready job/shop/migrate"`): a
    Readiness (or an error), or a function of (until, timeout). Unscripted objects are at once ready,
    or gone. `still` returns a readiness that never arrives: the fake clock moves by the timeout and the
    last readiness comes back, as a real source does when its wait times out. `progress` maps a key
    to the verdicts its wait reports as progress before it is answered. Keys passed to `hold` are not
    answered until the test calls `release` (from any thread, e.g. a writer hook); `report` reports
    progress on a held wait."""

    clock: FakeClock
    script: dict[str, Script] = field(default_factory=dict)
    progress: dict[str, list[Readiness]] = field(default_factory=dict)
    waits: list[tuple[str, float]] = field(default_factory=list)
    holding: set[str] = field(default_factory=set)
    held: dict[str, Callable[[Answer], None]] = field(default_factory=dict)
    reporting: dict[str, Progress] = field(default_factory=dict)
    cancelled: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def watch(
        self,
        ref: ObjectRef,
        *,
        until: Until,
        timeout: float,
        done: Callable[[Answer], None],
        progress: Progress | None = None,
    ) -> Callable[[], None]:
        key = f"{until} {ref}"
        for verdict in self.progress.get(key, []):
            if progress is not None:
                progress(verdict)
        with self._lock:
            self.waits.append((key, timeout))
            if key in self.holding:
                self.held[key] = done
                if progress is not None:
                    self.reporting[key] = progress
                return lambda: self._cancel(key)
        scripted = self.script.get(key)
        if scripted is None:
            done(READY if until == "ready" else GONE)
        else:
            done(scripted(until, timeout) if callable(scripted) else scripted)
        return lambda: None

    def hold(self, *keys: str) -> None:
        with self._lock:
            self.holding.update(keys)

    def pending(self) -> list[str]:
        with self._lock:
            return sorted(self.held)

    def release(self, key: str, answer: Answer = READY) -> None:
        with self._lock:
            done = self.held.pop(key)
            self.reporting.pop(key, None)
        done(answer)

    def report(self, key: str, verdict: Readiness) -> None:
        with self._lock:
            progress = self.reporting[key]
        progress(verdict)

    def _cancel(self, key: str) -> None:
        with self._lock:
            if self.held.pop(key, None) is not None:
                self.cancelled.append(key)

    def still(self, readiness: Readiness) -> Script:
        def times_out(until: Until, timeout: float) -> Readiness:
            if not math.isinf(timeout):
                self.clock.advance(timeout)
            return readiness

        return times_out


def _conforms() -> tuple[Writer, StatusSource, EventSink, Clock]:
    clock = FakeClock()
    return FakeWriter(), ScriptedStatus(clock=clock), RecordingSink(), clock

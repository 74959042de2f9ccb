"""Where an apply stands, from its events alone: how many tasks are done of those announced, how long it
has run, which writes are in flight and what each pending wait is held up by.

`ApplyProgress` is fed every executor event (the same ones JSON lines print) and answers the text
lines' `[done/total elapsed]` prefix; `ProgressView` draws it for the live display on a terminal. Time
is the events' own (`Event.time`), and the view's "now" is passed in, so both are tested with
hand-written times. Every Summary closes its plan's count (the plans of one apply run at once, so
others may still be counting): its tasks that ended without an event of their own (waits `--no-wait`
leaves unwaited) count as done there, and events about no announced task (the `Skipped` of a workload
`apply --watch` does not follow) count for nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from planner import events

MAX_WAIT_ROWS = 10
_FINISHING = (events.Applied, events.Ready, events.Deleted, events.Failed, events.Skipped)


def clock(seconds: float) -> str:
    """`0:05`, `12:34`, `1:02:03`: elapsed time as a stopwatch shows it."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@dataclass(kw_only=True)
class PendingWait:
    task: str
    object: str
    until: str
    since: float
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    started: float | None
    done: int
    total: int
    writes: tuple[str, ...]  # objects being written, in the order their writes started
    waits: tuple[PendingWait, ...]  # oldest first


class ApplyProgress:
    """The counts and what is pending, updated by `observe` from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self._done = 0
        self._total = 0
        self._outstanding: Counter[str] = Counter()  # announced task ids not finished yet
        self._writes: dict[str, str] = {}
        self._waits: dict[str, PendingWait] = {}

    def observe(self, event: events.Event) -> None:
        with self._lock:
            if self._started is None:
                self._started = event.time
            if isinstance(event, events.Planned):
                self._total += 1
                self._outstanding[event.task] += 1
            elif isinstance(event, events.Applying):
                self._writes[event.task] = event.object or event.task
            elif isinstance(event, events.Waiting):
                self._waiting(event)
            elif isinstance(event, _FINISHING) and self._outstanding[event.task] > 0:
                self._outstanding[event.task] -= 1
                self._done += 1
                self._writes.pop(event.task, None)
                self._waits.pop(event.task, None)
            elif isinstance(event, events.Summary):
                self._close(event)

    def _close(self, summary: events.Summary) -> None:
        """The end of one plan (others may run on): each of its tasks not counted yet is done now."""
        for task in (*summary.done, *summary.failed, *summary.skipped):
            if self._outstanding[task] > 0:
                self._outstanding[task] -= 1
                self._done += 1
                self._writes.pop(task, None)
                self._waits.pop(task, None)

    def _waiting(self, event: events.Waiting) -> None:
        pending = self._waits.get(event.task)
        if pending is None:
            self._waits[event.task] = PendingWait(
                task=event.task,
                object=event.object or event.task,
                until=event.until,
                since=event.time,
                reason=event.reason,
            )
        elif event.reason is not None:
            pending.reason = event.reason

    def snapshot(self) -> Snapshot:
        with self._lock:
            waits = sorted(self._waits.values(), key=lambda wait: wait.since)
            return Snapshot(
                started=self._started,
                done=self._done,
                total=self._total,
                writes=tuple(self._writes.values()),
                waits=tuple(PendingWait(**vars(wait)) for wait in waits),
            )

    def all_done(self) -> bool:
        """Whether every task announced so far has ended (no plan is still running)."""
        with self._lock:
            return self._done >= self._total

    def prefix(self, now: float) -> str:
        """`[12/40 0:42]`: tasks done of those announced, and the time since the first event."""
        shot = self.snapshot()
        elapsed = 0.0 if shot.started is None else now - shot.started
        return f"[{shot.done}/{shot.total} {clock(elapsed)}]"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class ProgressView:
    """The live display: one headline, then the pending waits, oldest first, each with how long it has
    waited and what holds it up (at most `MAX_WAIT_ROWS`, then how many more)."""

    def __init__(self, progress: ApplyProgress, now: Callable[[], float]) -> None:
        self.progress, self.now = progress, now

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        shot, now = self.progress.snapshot(), self.now()
        elapsed = 0.0 if shot.started is None else now - shot.started
        headline = Text.assemble(
            (f"{shot.done}/{shot.total} tasks done", "bold"),
            f" · {clock(elapsed)} · {_plural(len(shot.writes), 'write')} in flight"
            f" · {_plural(len(shot.waits), 'wait')} pending",
        )
        yield self._fitted(headline, options.max_width)
        shown = shot.waits[:MAX_WAIT_ROWS]
        names = max((len(wait.object) for wait in shown), default=0)
        times = max((len(clock(now - wait.since)) for wait in shown), default=0)
        for wait in shown:
            why = (wait.reason, "yellow") if wait.reason else (f"waiting until {wait.until}", "dim")
            row = Text.assemble(f"  {wait.object:<{names}}  {clock(now - wait.since):>{times}}  ", why)
            yield self._fitted(row, options.max_width)
        hidden = len(shot.waits) - MAX_WAIT_ROWS
        if hidden > 0:
            yield Text(f"  … and {_plural(hidden, 'more wait')}")

    @staticmethod
    def _fitted(line: Text, width: int) -> Text:
        """One terminal line: cut at its edge with an ellipsis, never wrapped."""
        line.truncate(width, overflow="ellipsis")
        line.no_wrap = True
        return line

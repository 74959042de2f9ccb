"""Printers for what happens while planner works: the executor's events during `apply` and the
monitor's lifecycle events.

Each prints docs/design.md §5 JSON lines with `-o json` (one object per line, a stable interface) or one line of
text per event. `apply --watch` sends both kinds to one printer, the monitor's from the informers'
threads, so every printer writes whole lines under a lock: lines never interleave.

Text lines of `apply` start with `[done/total elapsed]` (`output.progress`), and a pending wait whose
reason changed prints it (`not ready yet: …`; the status source reports a change at most every 10 s per
wait). On a terminal the same lines scroll above a live display of the counts, the writes in flight and
every pending wait with what holds it up (`LiveApplyPrinter`); in a pipe, a log that has said nothing
for a while (`REMIND_SECONDS`) while waits are pending gets a line saying how far the apply got and what
it still waits for, so a stuck wait never leaves a CI log silent until its timeout. Colour is dropped entirely (no styles at
all) with `no_color`, which the CLI sets from `--no-color` or `NO_COLOR`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.live import Live
from rich.markup import escape

from planner import events
from planner.output.lines import LinePrinter
from planner.output.progress import ApplyProgress, ProgressView

REMIND_SECONDS = 30.0
MAX_REMINDED = 3  # objects a reminder names; the rest are counted

if TYPE_CHECKING:
    from planner.app.applying import AppliedPlan


def console_for(stream: TextIO, *, no_color: bool) -> Console:
    """A rich console on `stream`: coloured when it is a terminal, never with `no_color`. Whether it is
    one is asked once: rich would ask the stream again on every line (three `isatty` calls per print)."""
    terminal = stream.isatty() if hasattr(stream, "isatty") else False
    return Console(
        file=stream,
        highlight=False,
        soft_wrap=True,
        force_terminal=terminal,
        color_system=None if no_color else "auto",
    )


class ApplyPrinter(LinePrinter):
    """The executor's events as they happen: JSON lines, or one line per write, wait, reason and outcome
    through rich, each after `[done/total elapsed]`. Text leaves out the task announcements and the
    Summary event, which `apply` prints per plan at the end with the reasons (`summary`).

    With `remind_every` (text only), a thread calls `tick` that often until `close`: a reminder is
    printed at each tick that finds no line printed since the previous one and waits pending, so a
    silent stretch lasts at most twice that."""

    def __init__(
        self,
        output: str,
        stream: TextIO | None = None,
        *,
        no_color: bool = False,
        console: Console | None = None,
        now: Callable[[], float] = time.time,
        remind_every: float | None = None,
    ) -> None:
        super().__init__(output, stream)
        self.console = console or console_for(self.stream, no_color=no_color)
        self.progress = ApplyProgress()
        self.now = now
        self._spoke = False  # a line was printed since the last tick
        self._closed = threading.Event()
        self._reminder: threading.Thread | None = None
        if remind_every is not None and output == "text":
            self._reminder = threading.Thread(
                target=self._remind, args=(remind_every,), name="planner-apply-reminder", daemon=True
            )
            self._reminder.start()

    def emit(self, event: events.Event) -> None:
        self.progress.observe(event)
        if self.output == "json":
            self.write_json(events.to_json_dict(event))
            return
        line = self.line(event)
        if line is not None:
            with self._lock:
                self.console.print(line)
                self._spoke = True

    def close(self) -> None:
        """Done printing events: no more reminders (and on a terminal, the live display ends)."""
        self._closed.set()
        if self._reminder is not None:
            self._reminder.join()

    def _remind(self, interval: float) -> None:
        while not self._closed.wait(interval):
            self.tick()

    def tick(self) -> None:
        """Print a reminder (`reminder`) unless a line was printed since the last tick."""
        with self._lock:
            spoke, self._spoke = self._spoke, False
        line = None if spoke else self.reminder(self.now())
        if line is not None:
            with self._lock:
                self.console.print(line)

    def reminder(self, now: float) -> str | None:
        """`[12/40 2:30] still waiting for 2: deployment/shop/web, job/shop/migrate` (oldest first, then
        how many more), or None when no wait is pending."""
        waits = self.progress.snapshot().waits
        if not waits:
            return None
        names = ", ".join(escape(wait.object) for wait in waits[:MAX_REMINDED])
        more = f", … and {len(waits) - MAX_REMINDED} more" if len(waits) > MAX_REMINDED else ""
        prefix = escape(self.progress.prefix(now))
        return f"{prefix} [dim]still waiting for {len(waits)}:[/dim] {names}{more}"

    def line(self, event: events.Event) -> str | None:
        if isinstance(event, events.MonitorEvent):
            return f"  {escape(event.runtime_id or '')}: {type(event).__name__} {escape(event.message)}"
        told = self.told(event)
        return None if told is None else f"{escape(self.progress.prefix(event.time))} {told}"

    def told(self, event: events.Event) -> str | None:
        """What a text line says about one executor event (None: nothing)."""
        subject, message = escape(event.object or ""), escape(event.message)
        if isinstance(event, events.Applied | events.Deleted):
            return f"{subject}: {message}"
        if isinstance(event, events.Waiting) and event.reason is not None:
            return f"{subject}: [yellow]not {escape(event.until)} yet:[/yellow] {escape(event.reason)}"
        if isinstance(event, events.Waiting):
            return f"{subject}: [dim]waiting until {escape(event.until)}[/dim]"
        if isinstance(event, events.Ready):
            return f"{subject}: [green]ready[/green] ({message})"
        if isinstance(event, events.Failed):
            return f"{subject}: [bold red]failed[/bold red] {escape(event.task)}: {message}"
        if isinstance(event, events.Skipped):
            return f"{subject}: [yellow]skipped[/yellow] {escape(event.task)} ({message})"
        return None

    def summary(self, applied: AppliedPlan) -> None:
        result, changeset = applied.result, applied.planned.changeset
        title = f"Plan {escape(changeset.plan)} (namespace {escape(changeset.namespace)})"
        if not applied.execution.tasks:
            self.console.print(f"{title}: no changes")
            return
        counts = f"{len(result.done)} done, {len(result.failed)} failed, {len(result.skipped)} skipped"
        colour = "green" if result.ok else "red"
        self.console.print(f"{title}: [{colour}]{counts}[/{colour}]")
        for outcome in (*result.failed, *result.skipped):
            self.console.print(f"  {outcome.status} {escape(outcome.task)}: {escape(outcome.message)}")


class LiveApplyPrinter(ApplyPrinter):
    """On a terminal: the same lines, scrolling above a live display (`ProgressView`) redrawn a few times
    a second while plans' tasks run; it goes when the Summary of the last plan still running comes (and
    on `close`), so the summary, warnings and `--watch`'s lifecycle lines print below the lines, as in
    a pipe."""

    _live: Live | None = None  # the display, while it shows

    def emit(self, event: events.Event) -> None:
        if isinstance(event, events.ExecutorEvent) and not isinstance(event, events.Summary):
            self._show()
        super().emit(event)
        if isinstance(event, events.Summary) and self.progress.all_done():
            self._hide()

    def _show(self) -> None:
        with self._lock:
            if self._live is None:
                view = ProgressView(self.progress, self.now)
                self._live = Live(view, console=self.console, refresh_per_second=4, transient=True)
                self._live.start()

    def _hide(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            live.stop()

    def close(self) -> None:
        self._hide()
        super().close()


def apply_printer(output: str, *, no_color: bool = False, stream: TextIO | None = None) -> ApplyPrinter:
    """`apply`'s printer: the live display when text goes to a terminal, else plain lines (with
    reminders through silent stretches) or JSON."""
    stream = stream or sys.stdout
    if output == "text" and stream.isatty():
        return LiveApplyPrinter(output, stream, no_color=no_color)
    return ApplyPrinter(output, stream, no_color=no_color, remind_every=REMIND_SECONDS)


class MonitorPrinter(LinePrinter):
    """Container* events as JSON lines, or one line each: time, type, runtime ID, message."""

    def emit(self, event: events.Event) -> None:
        if self.output == "json":
            self.write_json(events.to_json_dict(event))
            return
        stamp = events.rfc3339(event.time)
        self.write_line(f"{stamp}  {type(event).__name__:<16}  {event.runtime_id}  {event.message}")

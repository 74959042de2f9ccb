"""Printers for what happens while planner works: the executor's events during `apply` and the
monitor's lifecycle events.

Each prints DESIGN §5 JSON lines with `-o json` (one object per line, a stable interface) or one line of
text per event. `apply --watch` sends both kinds to one printer, the monitor's from the informers'
threads, so every printer writes whole lines under a lock: lines never interleave.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.markup import escape

from planner import events
from planner.output.lines import LinePrinter

if TYPE_CHECKING:
    from planner.app.applying import AppliedPlan


class ApplyPrinter(LinePrinter):
    """The executor's events as they happen: JSON lines, or one line per write, wait and outcome through
    rich (coloured on a TTY, plain in a pipe). Text leaves out the task announcements and the Summary
    event, which `apply` prints per plan at the end with the reasons (`summary`)."""

    def __init__(self, output: str, stream: TextIO | None = None) -> None:
        super().__init__(output, stream)
        self.console = Console(file=self.stream, highlight=False, soft_wrap=True)

    def emit(self, event: events.Event) -> None:
        if self.output == "json":
            self.write_json(events.to_json_dict(event))
            return
        line = self.line(event)
        if line is not None:
            with self._lock:
                self.console.print(line)

    def line(self, event: events.Event) -> str | None:
        subject, message = escape(event.object or ""), escape(event.message)
        if isinstance(event, events.Applied | events.Deleted):
            return f"  {subject}: {message}"
        if isinstance(event, events.Waiting):
            return f"  {subject}: [dim]waiting until {event.until}[/dim]"
        if isinstance(event, events.Ready):
            return f"  {subject}: [green]ready[/green] ({message})"
        if isinstance(event, events.Failed):
            return f"  {subject}: [bold red]failed[/bold red] {escape(event.task)}: {message}"
        if isinstance(event, events.Skipped):
            return f"  {subject}: [yellow]skipped[/yellow] {escape(event.task)} ({message})"
        if isinstance(event, events.MonitorEvent):
            return f"  {escape(event.runtime_id or '')}: {type(event).__name__} {message}"
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


class MonitorPrinter(LinePrinter):
    """Container* events as JSON lines, or one line each: time, type, runtime ID, message."""

    def emit(self, event: events.Event) -> None:
        if self.output == "json":
            self.write_json(events.to_json_dict(event))
            return
        stamp = events.rfc3339(event.time)
        self.write_line(f"{stamp}  {type(event).__name__:<16}  {event.runtime_id}  {event.message}")

"""Printers for what happens while planner works: the executor's events during `apply`, the monitor's
lifecycle events, `planner status` rows and lifecycle outcomes.

Each prints DESIGN §5 JSON lines with `-o json` (one object per line, a stable interface) or one line of
text per event. Events arrive from several threads (the executor's pool, the informers), so every
printer writes whole lines under a lock: lines never interleave.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.markup import escape

from planner import events
from planner.monitor.lifecycle import Outcome
from planner.monitor.status import StatusRow

if TYPE_CHECKING:
    from planner.app import AppliedPlan

STATUS_COLUMNS = ("RUNTIME ID", "STATE", "READY", "RESTARTS", "STATUS", "AGE", "MESSAGE")


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _LinePrinter:
    def __init__(self, output: str, stream: TextIO | None = None) -> None:
        self.output = output
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def write_line(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def write_json(self, record: Mapping[str, object]) -> None:
        self.write_line(json.dumps(record))


class ApplyPrinter(_LinePrinter):
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


class MonitorPrinter(_LinePrinter):
    """Container* events as JSON lines, or one line each: time, type, runtime ID, message."""

    def emit(self, event: events.Event) -> None:
        if self.output == "json":
            self.write_json(events.to_json_dict(event))
            return
        stamp = events.rfc3339(event.time)
        self.write_line(f"{stamp}  {type(event).__name__:<16}  {event.runtime_id}  {event.message}")


def print_outcome(outcome: Outcome, output: str, stream: TextIO | None = None) -> None:
    """A lifecycle operation's result (`scaled deployment shop/web to 1`)."""
    printer = _LinePrinter(output, stream)
    if output == "json":
        record = {"time": now_rfc3339(), "type": "Lifecycle", "runtime_id": outcome.runtime_id}
        printer.write_json(record | {"action": outcome.action, "message": outcome.message})
    else:
        printer.write_line(f"{outcome.runtime_id}: {outcome.action}: {outcome.message}")


def _status_cells(row: StatusRow) -> tuple[str, ...]:
    restarts = "-" if row.restarts is None else str(row.restarts)
    return (row.runtime_id, row.state, row.ready or "-", restarts, row.status or "-", row.age, row.message)


def print_status(rows: Sequence[StatusRow], output: str, stream: TextIO | None = None) -> None:
    """`planner status`: aligned columns like kubectl's, the message last and unpadded; or JSON lines."""
    printer = _LinePrinter(output, stream)
    if output == "json":
        for row in rows:
            printer.write_json({"time": now_rfc3339(), "type": "Status"} | dataclasses.asdict(row))
        return
    table = [STATUS_COLUMNS, *(_status_cells(row) for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(STATUS_COLUMNS) - 1)]
    for line in table:
        cells = "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        printer.write_line(cells + "   " + line[-1])

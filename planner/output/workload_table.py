"""Printers for the commands on runtime IDs: a lifecycle operation's outcome, `inspect`, and the
`planner status` table. Text for people, or docs/design.md §5 JSON lines with `-o json`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TextIO

from planner.monitor.lifecycle import Inspection, Outcome
from planner.monitor.pool_members import PoolStatus
from planner.monitor.status import StatusRow
from planner.output.lines import LinePrinter, aligned, now_rfc3339

STATUS_COLUMNS = ("RUNTIME ID", "STATE", "READY", "RESTARTS", "STATUS", "AGE", "MESSAGE")
INSPECT_LABELS = {
    "runtime_id": "RuntimeID",
    "kind": "Kind",
    "namespace": "Namespace",
    "name": "Name",
    "ip_address": "IPAddress",
    "node_name": "NodeName",
    "pod": "Pod",
    "pvcs": "PVCs",
    "generation": "Generation",
    "state": "State",
}


def print_outcome(outcome: Outcome, output: str, stream: TextIO | None = None) -> None:
    """A lifecycle operation's result (`scaled deployment shop/web to 1`)."""
    printer = LinePrinter(output, stream)
    if output == "json":
        record = {"time": now_rfc3339(), "type": "Lifecycle", "runtime_id": outcome.runtime_id}
        printer.write_json(record | {"action": outcome.action, "message": outcome.message})
    else:
        printer.write_line(f"{outcome.runtime_id}: {outcome.action}: {outcome.message}")


def print_inspection(found: Inspection, output: str, stream: TextIO | None = None) -> None:
    """`inspect`: one `Label: value` line per known field (lists joined by commas), or one JSON object."""
    printer = LinePrinter(output, stream)
    fields = {key: value for key, value in dataclasses.asdict(found).items() if value is not None}
    if output == "json":
        printer.write_json({key: list(v) if isinstance(v, tuple) else v for key, v in fields.items()})
        return
    for key, value in fields.items():
        shown = ", ".join(value) if isinstance(value, tuple) else value
        printer.write_line(f"{INSPECT_LABELS[key]}: {shown}")


SCHEDULE_COLUMNS = ("SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE")


def _status_cells(row: StatusRow, *, schedules: bool) -> tuple[str, ...]:
    restarts = "-" if row.restarts is None else str(row.restarts)
    cells: tuple[str, ...] = (row.runtime_id, row.state, row.ready or "-", restarts, row.status or "-")
    if schedules:
        s = row.schedule
        cells += (s.schedule, s.suspend, str(s.active), s.last_schedule) if s else ("-",) * 4
    return (*cells, row.age, row.message)


def print_status(rows: Sequence[StatusRow], output: str, stream: TextIO | None = None) -> None:
    """`planner status`: aligned columns like kubectl's, the message last and unpadded; or JSON lines."""
    printer = LinePrinter(output, stream)
    if output == "json":
        for row in rows:
            printer.write_json({"time": now_rfc3339(), "type": "Status"} | dataclasses.asdict(row))
        return
    schedules = any(row.schedule is not None for row in rows)
    header = (*STATUS_COLUMNS[:5], *SCHEDULE_COLUMNS, *STATUS_COLUMNS[5:]) if schedules else STATUS_COLUMNS
    for line in aligned([header, *(_status_cells(row, schedules=schedules) for row in rows)]):
        printer.write_line(line)


def pool_line(status: PoolStatus) -> str:
    """`plan`'s line for a warm pool: its members now, which the controller keeps, not apply."""
    return f"warm pool {status.namespace}/{status.pool}: {pool_counts(status)} (kept by planner controller)"


def pool_counts(status: PoolStatus) -> str:
    return (
        f"{status.ready} ready, {status.unclaimed} unclaimed of size {status.size}, {status.claimed} claimed"
    )


def pool_record(status: PoolStatus) -> dict[str, str | int]:
    """A warm pool in `plan -o json`'s Summary record (`warmPools`)."""
    return {
        "name": status.pool,
        "namespace": status.namespace,
        "size": status.size,
        "ready": status.ready,
        "unclaimed": status.unclaimed,
        "claimed": status.claimed,
    }

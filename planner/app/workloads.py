"""The lifecycle commands on one runtime ID: `start`, `stop`, `pause`, `resume`, `delete`, `logs` and
`inspect`. Each runtime ID is parsed before any request, so a malformed one fails without a cluster."""

from __future__ import annotations

from collections.abc import Iterator

from planner.app.target import Target
from planner.monitor import lifecycle
from planner.monitor.lifecycle import LogOptions
from planner.render.identity import RuntimeID

LIFECYCLE_OPERATIONS = {
    "start": lifecycle.start,
    "stop": lifecycle.stop,
    "pause": lifecycle.pause,
    "resume": lifecycle.resume,
}


def run_lifecycle(operation: str, runtime_id: str, *, target: Target) -> lifecycle.Outcome:
    """`start`, `stop`, `pause` or `resume` one runtime ID (parsed before any request: exit 1 if malformed)."""
    rid = RuntimeID.parse(runtime_id)
    return LIFECYCLE_OPERATIONS[operation](target.client, rid)


def delete_workload(runtime_id: str, *, target: Target, allow_data_loss: bool) -> lifecycle.Outcome:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.delete(target.client, rid, allow_data_loss=allow_data_loss)


def workload_logs(runtime_id: str, *, target: Target, options: LogOptions) -> Iterator[str]:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.logs(target.client, rid, options)


def inspect_workload(runtime_id: str, *, target: Target) -> lifecycle.Inspection:
    rid = RuntimeID.parse(runtime_id)
    return lifecycle.inspect(target.client, rid)

"""Rules of `kind: cronjob` the schema cannot state: a schedule is required and must parse as the CronJob
controller reads it (`planner.cron`, the parser the embedded cluster uses too), in a time zone it knows;
`TZ=` inside the schedule is refused as the API server refuses it; and the name leaves room for the
11 characters the controller appends to name each run's Job (52 at most, as the API server checks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from planner import cron
from planner.errors import Diagnostic
from planner.plan.raw import Node, workload_kind
from planner.plan.source import ParsedFile

MAX_CRONJOB_NAME = 52


def cronjob_diagnostics(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    if workload_kind(workload) != "cronjob":
        return
    yield from _name(workload, parsed)
    schedule = workload.data.get("schedule")
    if schedule is None:
        message = "a cronjob needs a schedule (cron's five fields, as `0 3 * * *`, or `@daily`)"
        yield parsed.diagnostic(workload.at("kind"), message, at_value=False)
    elif isinstance(schedule, str):
        yield from _schedule(workload, schedule, parsed)
    time_zone = workload.data.get("timeZone")
    if isinstance(time_zone, str):
        try:
            cron.zone(time_zone)
        except cron.CronError:
            message = f"unknown time zone {json.dumps(time_zone)}: expected an IANA name as `Europe/Berlin`"
            yield parsed.diagnostic(workload.at("timeZone"), message)


def _schedule(workload: Node, schedule: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    if "TZ" in schedule:
        message = "TZ= or CRON_TZ= in the schedule is refused by Kubernetes: use timeZone instead"
        yield parsed.diagnostic(workload.at("schedule"), message)
        return
    try:
        cron.parse(schedule)
    except cron.CronError as exc:
        message = (
            f"bad schedule {json.dumps(schedule)}: {exc} (expected cron's five fields or a macro as @daily)"
        )
        yield parsed.diagnostic(workload.at("schedule"), message)


def _name(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    name = workload.text("name")
    if name is not None and MAX_CRONJOB_NAME < len(name) <= 63:
        message = (
            f"name is {len(name)} characters, too long for a cronjob: at most {MAX_CRONJOB_NAME}, so that "
            "the Job of each run (`<name>-<minutes since the epoch>`) fits in 63"
        )
        yield parsed.diagnostic(workload.at("name"), message)

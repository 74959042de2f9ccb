"""A plan's top-level `reconcile:` section: how `planner controller` reconciles it as a Plan object
(suspend, interval, prune, timeout, dependsOn, allowDataLoss, driftCorrection; docs/controller.md). The one-shot commands
ignore it. Read from the plan's data once the schema has judged it; a value of the wrong type (a Plan
being deleted that no longer loads) reads as its default.

Its durations have floors (`reconcile_diagnostics`, at `validate`): an `interval` of `0s` would have the
controller reconcile the Plan without pause, so `interval` is at least MIN_INTERVAL, and `timeout` at
least MIN_TIMEOUT; what reads a section clamps to them too, for a Plan that did not pass `validate`. A
`dependsOn` naming the Plan itself is refused there as well."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planner.errors import Diagnostic
from planner.plan.durations import format_duration, parse_duration
from planner.plan.raw import Node
from planner.plan.source import ParsedFile

MIN_INTERVAL = 10.0  # seconds
MIN_TIMEOUT = 1.0  # seconds

DriftCorrection = Literal["immediate", "interval", "off"]
DRIFT_CORRECTIONS: dict[str, DriftCorrection] = {
    "immediate": "immediate",
    "interval": "interval",
    "off": "off",
}


@dataclass(frozen=True, kw_only=True)
class ReconcileSection:
    suspend: bool = False
    interval: float | None = None  # seconds; None: the controller's --interval
    prune: bool = True
    timeout: float | None = None  # seconds; None: the controller's --timeout
    depends_on: tuple[str, ...] = ()
    allow_data_loss: bool = False
    drift_correction: DriftCorrection | None = None  # None: the controller's --drift-correction


def reconcile_section(plan: Mapping[str, Any]) -> ReconcileSection:
    section = plan.get("reconcile")
    if not isinstance(section, Mapping):
        return ReconcileSection()
    depends = section.get("dependsOn")
    return ReconcileSection(
        suspend=section.get("suspend") is True,
        interval=_at_least(_duration(section.get("interval")), MIN_INTERVAL),
        prune=section.get("prune") is not False,
        timeout=_at_least(_duration(section.get("timeout")), MIN_TIMEOUT),
        depends_on=tuple(
            str(each["name"])
            for each in (depends if isinstance(depends, list) else [])
            if isinstance(each, Mapping) and isinstance(each.get("name"), str)
        ),
        allow_data_loss=section.get("allowDataLoss") is True,
        drift_correction=DRIFT_CORRECTIONS.get(str(section.get("driftCorrection"))),
    )


def _duration(text: object) -> float | None:
    try:
        return parse_duration(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _at_least(seconds: float | None, floor: float) -> float | None:
    return None if seconds is None else max(seconds, floor)


def reconcile_diagnostics(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    """Durations below their floor in the `reconcile:` section, and a `dependsOn` naming the Plan itself
    (it would wait for itself for ever; a longer cycle spans Plans, which the controller finds)."""
    section = plan.child("reconcile")
    if section is None:
        return
    metadata = plan.child("metadata")
    name = metadata.text("name") if metadata is not None else None
    for dependency in section.items("dependsOn"):
        if name and dependency.text("name") == name:
            yield parsed.diagnostic(
                dependency.at("name"),
                f"{name} is this Plan: a Plan cannot depend on itself (it would wait for itself for ever)",
            )
    floors = (
        ("interval", MIN_INTERVAL, "the controller would reconcile the Plan without pause"),
        ("timeout", MIN_TIMEOUT, "no reconcile could wait for anything"),
    )
    for field, floor, because in floors:
        seconds = _duration(section.text(field))
        if seconds is not None and seconds < floor:
            yield parsed.diagnostic(
                section.at(field),
                f"{section.text(field)} is too short: at least {format_duration(floor)} ({because})",
            )

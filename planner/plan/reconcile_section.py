"""A plan's top-level `reconcile:` section: how `planner controller` reconciles it as a Plan object
(suspend, interval, prune, timeout, dependsOn, allowDataLoss, driftCorrection; docs/controller.md). The one-shot commands
ignore it. Read from the plan's data once the schema has judged it; a value of the wrong type (a Plan
being deleted that no longer loads) reads as its default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planner.plan.durations import parse_duration

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
        interval=_duration(section.get("interval")),
        prune=section.get("prune") is not False,
        timeout=_duration(section.get("timeout")),
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

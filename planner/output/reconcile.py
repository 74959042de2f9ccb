"""What `reconcile` prints, and the metrics file it writes for node_exporter's textfile collector.

Text: a table (PLAN, NAMESPACE, RESULT, CHANGES, DURATION, MESSAGE) once every plan is done, then for
each plan with changes one line per change naming its cause (drift or pending), under it each field that
differs as `plan` shows it, and the whole message of each failure. JSON: one `Reconciled` record per plan as it finishes, then one `ReconcileSummary`.

Metrics (Prometheus text format, labels `plan` and `namespace`; a plan file that did not load is
labelled with its path and an empty namespace): `planner_reconcile_last_run_timestamp_seconds`,
`planner_reconcile_last_success_timestamp_seconds` (carried over from the previous file for a plan that
did not succeed this time, and for every plan of a `--check` run, which reconciles nothing, so "no
success for 2 h" can be alerted on), `planner_reconcile_drift_objects`,
`planner_reconcile_pending_objects`, `planner_reconcile_failed` (1 or 0) and
`planner_reconcile_duration_seconds`. prometheus-client writes the file atomically (a temporary file
renamed over it), so the collector never reads half of one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile
from prometheus_client.parser import text_string_to_metric_families

from planner.app import PlanOutcome
from planner.app.reconciling import Result
from planner.output.changes import ACTIONS, SYMBOLS, VERBS, field_line
from planner.output.lines import LinePrinter, aligned, now_rfc3339

COLUMNS = ("PLAN", "NAMESPACE", "RESULT", "CHANGES", "DURATION", "MESSAGE")
RESULTS: tuple[Result, ...] = ("unchanged", "applied", "changes", "locked", "failed")
SUCCEEDED = ("unchanged", "applied", "changes")
LABELS = ("plan", "namespace")
LAST_SUCCESS = "planner_reconcile_last_success_timestamp_seconds"


def _changes_cell(outcome: PlanOutcome) -> str:
    if outcome.changeset is None or not outcome.changeset.has_changes:
        return "-"
    return f"{outcome.drift} drift, {outcome.pending} pending"


def _row(outcome: PlanOutcome) -> tuple[str, ...]:
    first_line = outcome.message.splitlines()[0] if outcome.message else ""
    return (
        outcome.plan or outcome.file,
        outcome.namespace or "-",
        outcome.result,
        _changes_cell(outcome),
        f"{outcome.duration:.1f}s",
        first_line,
    )


def _change_lines(outcome: PlanOutcome) -> list[str]:
    changeset = outcome.changeset
    if changeset is None:
        return []
    lines = []
    for change in changeset.changes:
        if change.cause is None:
            continue
        reason = f" ({change.reason})" if change.reason else ""
        symbol = SYMBOLS[change.action].rjust(3)
        cause = "+".join(change.causes)
        lines.append(f"  {cause:<7} {symbol} {VERBS[change.action]} {change.ref}{reason}")
        lines += [f"              {field_line(change, field)}" for field in change.fields]
    return lines


def _record(outcome: PlanOutcome) -> dict[str, Any]:
    changes = []
    for change in outcome.changeset.changes if outcome.changeset else ():
        if change.cause is not None:
            changes.append(
                {
                    "object": str(change.ref),
                    "actions": ACTIONS[change.action],
                    "cause": change.cause,
                    "reason": change.reason,
                }
            )
    return {
        "time": now_rfc3339(datetime.fromtimestamp(outcome.finished, UTC)),
        "type": "Reconciled",
        "file": outcome.file,
        "plan": outcome.plan,
        "namespace": outcome.namespace,
        "result": outcome.result,
        "drift": outcome.drift,
        "pending": outcome.pending,
        "changes": changes,
        "duration_seconds": round(outcome.duration, 3),
        "message": outcome.message,
    }


def summary_message(outcomes: Sequence[PlanOutcome]) -> str:
    tally = Counter(outcome.result for outcome in outcomes)
    counted = ", ".join(f"{tally[result]} {result}" for result in RESULTS if tally[result])
    plans = "plan" if len(outcomes) == 1 else "plans"
    return f"{len(outcomes)} {plans}: {counted or 'none'}"


class ReconcilePrinter(LinePrinter):
    """`outcome` as each plan finishes (JSON prints it at once; text waits for the table), `finish`
    once every plan is done."""

    def outcome(self, outcome: PlanOutcome) -> None:
        if self.output == "json":
            self.write_json(_record(outcome))

    def finish(self, outcomes: Sequence[PlanOutcome], *, exit_code: int) -> None:
        if self.output == "json":
            tally = Counter(outcome.result for outcome in outcomes)
            record: dict[str, Any] = {
                "time": now_rfc3339(),
                "type": "ReconcileSummary",
                "plans": len(outcomes),
            }
            record |= {result: tally[result] for result in RESULTS}
            record |= {
                "drift": sum(outcome.drift for outcome in outcomes),
                "pending": sum(outcome.pending for outcome in outcomes),
                "exit_code": exit_code,
                "message": summary_message(outcomes),
            }
            self.write_json(record)
            return
        for line in aligned([COLUMNS, *(_row(outcome) for outcome in outcomes)]):
            self.write_line(line.rstrip())
        for outcome in outcomes:
            self._details(outcome)
        self.write_line(summary_message(outcomes))

    def _details(self, outcome: PlanOutcome) -> None:
        changes = _change_lines(outcome)
        multi_line = outcome.result == "failed" and "\n" in outcome.message
        if not changes and not multi_line:
            return
        self.write_line("")
        self.write_line(f"{outcome.plan or outcome.file} (namespace {outcome.namespace or '-'}):")
        for line in changes:
            self.write_line(line)
        if multi_line:
            for line in outcome.message.splitlines():
                self.write_line(f"  {line}")


# --- the metrics file --------------------------------------------------------------------------------


def _labels(outcome: PlanOutcome) -> tuple[str, str]:
    return (outcome.plan or outcome.file, outcome.namespace)


def previous_successes(path: Path) -> dict[tuple[str, str], float]:
    """The last-success timestamps a previous metrics file holds, by (plan, namespace); none when there
    is no readable file."""
    try:
        text = path.read_text()
        families = list(text_string_to_metric_families(text))
    except (OSError, ValueError):
        return {}
    return {
        (sample.labels.get("plan", ""), sample.labels.get("namespace", "")): sample.value
        for family in families
        for sample in family.samples
        if sample.name == LAST_SUCCESS
    }


def write_metrics(path: Path, outcomes: Sequence[PlanOutcome], *, check: bool = False) -> None:
    """The metrics of this run (see the module docstring), written atomically over `path`; `check`: the
    run only looked, so no plan's last success moves."""
    registry = CollectorRegistry()

    def gauge(name: str, documentation: str) -> Gauge:
        return Gauge(name, documentation, LABELS, registry=registry)

    last_run = gauge("planner_reconcile_last_run_timestamp_seconds", "When the plan was last reconciled.")
    last_success = gauge(LAST_SUCCESS, "When the plan was last reconciled without failing.")
    drift = gauge("planner_reconcile_drift_objects", "Objects that drifted from what was applied.")
    pending = gauge("planner_reconcile_pending_objects", "Objects whose plan changed since the last apply.")
    failed = gauge("planner_reconcile_failed", "1 when the plan's last reconcile failed, else 0.")
    duration = gauge("planner_reconcile_duration_seconds", "How long the plan's last reconcile took.")
    before = previous_successes(path)
    for outcome in outcomes:
        labels = _labels(outcome)
        last_run.labels(*labels).set(outcome.finished)
        succeeded = outcome.finished if outcome.result in SUCCEEDED and not check else before.get(labels)
        if succeeded is not None:
            last_success.labels(*labels).set(succeeded)
        drift.labels(*labels).set(outcome.drift)
        pending.labels(*labels).set(outcome.pending)
        failed.labels(*labels).set(1 if outcome.result == "failed" else 0)
        duration.labels(*labels).set(outcome.duration)
    write_to_textfile(str(path), registry)


__all__ = ["ReconcilePrinter", "previous_successes", "summary_message", "write_metrics"]

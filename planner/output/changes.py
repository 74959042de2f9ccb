"""How one change reads, whatever the format: its symbol and verb, its notes, its field lines and the
summary of a plan, shared by the text and JSON printers (`output/plan.py`) and the pull-request comment
(`output/comment.py`), so the formats say the same facts in the same words.

Secret field values are suppressed here (the diff already marks them), so a reader sees which key of a
Secret changed but never what it holds. A Job's run-key is a 64-hex digest nobody can read; its line says
what it means instead (`new run: template changed`), naming what the run-key is computed from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from planner.changeset import ChartChange, ValueChange
from planner.dataloss import destroys_data, losses, needs_consent, refused
from planner.diff import Change, ChangeSet, FieldChange
from planner.kinds import SECRET
from planner.objects import ANNOTATION_RUN_KEY
from planner.output.masking import MASK

ACTIONS: dict[str, list[str]] = {
    "create": ["create"],
    "update": ["update"],
    "replace": ["delete", "create"],
    "delete": ["delete"],
    "noop": ["no-op"],
}
SYMBOLS = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "noop": "="}
VERBS = {
    "create": "create",
    "update": "update",
    "replace": "replace",
    "delete": "delete",
    "noop": "unchanged",
}
DESTROYS_DATA = "destroys data"

RUN_KEY_PATH = f'.metadata.annotations["{ANNOTATION_RUN_KEY}"]'
# What a Job's run-key is computed from (render/identity.py), as the field paths a diff names.
_RUN_KEY_INPUTS = {
    ".spec.template": "template",
    ".spec.completions": "completions",
    ".spec.parallelism": "parallelism",
}


def shown(changeset: ChangeSet) -> list[Change]:
    """The changes worth showing: every real change, plus named no-ops (a Job that already ran) and
    unchanged objects that are not ready."""
    return [
        c for c in changeset.changes if c.action != "noop" or c.transition or c.reason or c.unready or c.unmet
    ]


def counts(changeset: ChangeSet) -> dict[str, int]:
    tally = dict.fromkeys(("create", "update", "replace", "delete"), 0)
    for change in changeset.changes:
        if change.action in tally:
            tally[change.action] += 1
    return tally


def cause_counts(changeset: ChangeSet) -> dict[str, int]:
    return {cause: len(changeset.caused_by(cause)) for cause in ("drift", "pending")}


def not_ready(changeset: ChangeSet) -> str:
    """`1 not ready`: how many unchanged objects apply would wait for."""
    return f"{len(changeset.unready)} not ready"


def summary_line(changeset: ChangeSet) -> str:
    unready = len(changeset.unready)
    if not changeset.has_changes:
        if unready:
            waits = "it" if unready == 1 else "them"
            return f"No changes, but {not_ready(changeset)}: apply waits for {waits}, and fails if it cannot."
        if unmet := len(changeset.unmet):
            return (
                f"No changes planner makes, but the cluster differs from plan {changeset.plan} at "
                f"{objects(unmet)} (see above)."
            )
        return f"No changes. The cluster matches plan {changeset.plan}."
    n = counts(changeset) | cause_counts(changeset)
    also = f"; {not_ready(changeset)}" if unready else ""
    return (
        f"Plan: {n['create']} to create, {n['update']} to update, {n['replace']} to replace, "
        f"{n['delete']} to delete ({n['drift']} drift, {n['pending']} pending{also})."
    )


def notes(change: Change, *, drift: bool = True) -> list[str]:
    """What a change's headline says in parentheses: transition, reason, drift (unless the format shows
    the cause on its own, `drift=False`), and data loss."""
    # A reason that starts with the transition's name (`rebase g1→g2`) says it already.
    transition = change.transition if not change.reason.startswith(change.transition or "") else None
    drifted = "drift" if drift and change.drift else ""
    unready = f"not ready: {change.unready}" if change.unready else ""
    found = [note for note in (transition, change.reason, drifted, unready, change.unmet) if note]
    if destroys_data(change):
        found.append(DESTROYS_DATA if needs_consent(change) else f"{DESTROYS_DATA}, declared by the rebase")
    return found


def headline(change: Change) -> str:
    words = f"{VERBS[change.action]} {change.ref}"
    return f"{words} ({'; '.join(found)})" if (found := notes(change)) else words


def _value(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def field_line(change: Change, field: FieldChange) -> str:
    if field.is_takeover:
        return f"{field.path}: takes over from {field.manager}"
    if is_new_run(field.path, field.before, field.after):
        return f"{field.path}: {new_run(f.path for f in change.fields)}"
    before, after = (
        (MASK, MASK) if change.ref.kind == SECRET.kind else (_value(field.before), _value(field.after))
    )
    owner = f" (now owned by {field.manager})" if field.manager else ""
    origin = f" (from {field.origin})" if field.origin else ""
    return f"{field.path}: {before} → {after}{owner}{origin}"


def is_new_run(path: str, before: Any, after: Any) -> bool:
    """Whether a field difference is a Job's run-key moving from one digest to another."""
    return path == RUN_KEY_PATH and before is not None and after is not None


def new_run(paths: Iterable[str]) -> str:
    """`new run: template changed`: what changed among the inputs of a Job's run-key, from the paths
    of the object's changed fields."""
    changed = {
        what
        for path in paths
        for prefix, what in _RUN_KEY_INPUTS.items()
        if path == prefix or path.startswith((f"{prefix}.", f"{prefix}["))
    }
    ordered = [what for what in _RUN_KEY_INPUTS.values() if what in changed]
    return f"new run: {' and '.join(ordered)} changed" if ordered else "new run"


def data_loss_consent(changesets: list[ChangeSet]) -> str | None:
    """When any plan destroys data, whether `--allow-data-loss` was given and what that means for
    `apply`, in one clause; None when nothing is lost."""
    if not any(losses(changeset) for changeset in changesets):
        return None
    if any(changeset.allow_data_loss for changeset in changesets):
        return "--allow-data-loss was given: apply deletes it for good"
    if any(refused(changeset) for changeset in changesets):
        return "--allow-data-loss was not given, so apply refuses this plan"
    return "--allow-data-loss was not given, and none is needed: a sandbox's generation bump declares it"


def objects(count: int) -> str:
    return f"{count:,} object{'' if count == 1 else 's'}"


def generation_line(changeset: ChangeSet) -> str | None:
    """`cluster is at generation 7 of plan shop (converged)`; None before any apply was recorded."""
    at = changeset.generation
    if at is None:
        return None
    result = f" ({at.result})" if at.result else ""
    return f"cluster is at generation {at.number} of plan {changeset.plan}{result}"


NOT_RECORDED = "values of the applied generation not recorded"


def chart_headline(chart: ChartChange) -> str:
    """`chart/web: version 1.0.0 → 1.1.0`, `chart/web: values changed`, `chart/web: added (version 1.0.0)`,
    `chart/web: removed (was version 1.0.0)`, or, for a generation that recorded no values, that they
    were not."""
    if chart.version_after is None:
        return f"{chart.handle}: removed (was version {chart.version_before})"
    if chart.version_before is None:
        return f"{chart.handle}: added (version {chart.version_after})"
    if chart.version_before != chart.version_after:
        return f"{chart.handle}: version {chart.version_before} → {chart.version_after}"
    return f"{chart.handle}: {'values changed' if chart.values else NOT_RECORDED}"


def chart_details(chart: ChartChange) -> list[str]:
    """What a chart's headline leaves out: a line per changed value (a secret one says only that it
    changed), whether the applied generation recorded values (when the headline does not say)."""
    found = [value_line(value) for value in chart.values]
    if (
        not chart.recorded
        and chart.version_after is not None
        and not chart_headline(chart).endswith(NOT_RECORDED)
    ):
        found.append(NOT_RECORDED)
    return found


def value_line(value: ValueChange) -> str:
    """`values .replicaCount: 1 → 3 (from envs/prod.yaml:12:7)`; `secretValues .auth.password: changed`."""
    if value.secret:
        return f"secretValues {value.path}: changed (value not shown)"
    origin = f" (from {value.origin})" if value.origin else ""
    return f"values {value.path}: {_value(value.before)} → {_value(value.after)}{origin}"


def chart_objects(chart: ChartChange) -> str:
    """`changes 2 objects`: how many of the objects the chart renders the plan changes (`deletes 2
    objects`: of those a removed chart rendered, how many the plan deletes)."""
    verb = "deletes" if chart.version_after is None else "changes"
    return f"{verb} {objects(len(chart.objects))}" if chart.objects else f"{verb} no object"

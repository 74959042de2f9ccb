"""How a ChangeSet reads: as text like `terraform plan`, as JSON lines, or as a pull-request comment.

Every format shows the same facts in the same order: each change's action, object, reason, transition,
cause (drift: the cluster moved away from what was applied; pending: the plan changed since) and
field-level detail, then one summary line. Secret values never reach these printers in clear (the diff
marks them) and Secret field values are suppressed here as well, so a reviewer sees which key changed but
never what it holds.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape

from planner.diff import Change, ChangeSet, FieldChange
from planner.kinds import SECRET
from planner.objects import ANNOTATION_RUNTIME_ID, annotations_of
from planner.output.lines import now_rfc3339
from planner.output.masking import MASK

ACTIONS: dict[str, list[str]] = {
    "create": ["create"],
    "update": ["update"],
    "replace": ["delete", "create"],
    "delete": ["delete"],
    "noop": ["no-op"],
}
SYMBOLS = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "noop": "="}
COLOURS = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red", "noop": "dim"}
VERBS = {
    "create": "create",
    "update": "update",
    "replace": "replace",
    "delete": "delete",
    "noop": "unchanged",
}


def shown(changeset: ChangeSet) -> list[Change]:
    """The changes worth showing: every real change, plus named no-ops (a Job that already ran)."""
    return [c for c in changeset.changes if c.action != "noop" or c.transition or c.reason]


def counts(changeset: ChangeSet) -> dict[str, int]:
    tally = dict.fromkeys(("create", "update", "replace", "delete"), 0)
    for change in changeset.changes:
        if change.action in tally:
            tally[change.action] += 1
    return tally


def cause_counts(changeset: ChangeSet) -> dict[str, int]:
    return {cause: len(changeset.caused_by(cause)) for cause in ("drift", "pending")}


def summary_line(changeset: ChangeSet) -> str:
    if not changeset.has_changes:
        return f"No changes. The cluster matches plan {changeset.plan}."
    n = counts(changeset) | cause_counts(changeset)
    return (
        f"Plan: {n['create']} to create, {n['update']} to update, {n['replace']} to replace, "
        f"{n['delete']} to delete ({n['drift']} drift, {n['pending']} pending)."
    )


def _value(value: Any) -> str:
    return "(absent)" if value is None else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _field_line(change: Change, field: FieldChange) -> str:
    if field.is_takeover:
        return f"{field.path}: takes over from {field.manager}"
    before, after = (
        (MASK, MASK) if change.ref.kind == SECRET.kind else (_value(field.before), _value(field.after))
    )
    owner = f" (now owned by {field.manager})" if field.manager else ""
    return f"{field.path}: {before} → {after}{owner}"


def _headline(change: Change) -> str:
    parts = [f"{VERBS[change.action]} {change.ref}"]
    notes = [note for note in (change.transition, change.reason, "drift" if change.drift else "") if note]
    if notes:
        parts.append(f"({'; '.join(notes)})")
    return " ".join(parts)


def _text_lines(changeset: ChangeSet) -> Iterator[tuple[Change | None, str]]:
    for change in shown(changeset):
        yield change, _headline(change)
        for field in change.fields:
            yield None, "      " + _field_line(change, field)


def to_text(changeset: ChangeSet, *, colour: bool = False) -> str:
    """Terraform-style text; colour only when asked (the CLI asks when stdout is a TTY)."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=colour, no_color=not colour, highlight=False, width=200)
    console.print(f"Plan {changeset.plan} (namespace {changeset.namespace})", markup=False)
    for change, line in _text_lines(changeset):
        if change is None:
            console.print(escape(line))
            continue
        symbol = SYMBOLS[change.action].rjust(3)
        console.print(f"[{COLOURS[change.action]}]{escape(symbol)}[/] {escape(line)}")
    for conflict in _unattached_conflicts(changeset):
        console.print(f"[red]{escape('  !')}[/] {escape(conflict)}")
    console.print(summary_line(changeset), markup=False)
    return buffer.getvalue()


def _unattached_conflicts(changeset: ChangeSet) -> list[str]:
    """Conflicts no shown change names as its reason (a Secret holding the parent's name)."""
    reasons = {change.reason for change in shown(changeset)}
    return [conflict for conflict in changeset.conflicts if conflict not in reasons]


def _fields_json(change: Change) -> list[dict[str, Any]]:
    secret = change.ref.kind == SECRET.kind
    return [
        {
            "path": f.path,
            "before": MASK if secret else f.before,
            "after": MASK if secret else f.after,
            **({"manager": f.manager} if f.manager else {}),
        }
        for f in change.fields
    ]


def _runtime_id(change: Change) -> str | None:
    value = annotations_of(change.desired or change.live).get(ANNOTATION_RUNTIME_ID)
    return str(value) if value else None


def planned_records(changeset: ChangeSet, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """The JSON-lines records: one `Planned` per shown change, then one `Summary` (DESIGN §5)."""
    time = now_rfc3339(now)
    records: list[dict[str, Any]] = []
    for change in shown(changeset):
        record: dict[str, Any] = {"time": time, "type": "Planned"}
        if runtime_id := _runtime_id(change):
            record["runtime_id"] = runtime_id
        record |= {"object": str(change.ref), "actions": ACTIONS[change.action]}
        if change.transition:
            record["transition"] = change.transition
        if change.cause:
            record["cause"] = change.cause
        record |= {"drift": change.drift, "reason": change.reason, "fields": _fields_json(change)}
        record["message"] = _headline(change)
        records.append(record)
    summary: dict[str, Any] = {
        "time": time,
        "type": "Summary",
        "plan": changeset.plan,
        "namespace": changeset.namespace,
    }
    summary |= counts(changeset) | cause_counts(changeset) | {"conflicts": list(changeset.conflicts)}
    records.append(summary | {"message": summary_line(changeset)})
    return records


def to_json_lines(changeset: ChangeSet, *, now: datetime | None = None) -> str:
    return "".join(
        json.dumps(record, sort_keys=False) + "\n" for record in planned_records(changeset, now=now)
    )


def _markdown_rows(changes: Sequence[Change]) -> Iterable[str]:
    for change in changes:
        note = "; ".join(n for n in (change.transition, change.reason) if n)
        cause = change.cause or ""
        yield f"| `{SYMBOLS[change.action]}` | {VERBS[change.action]} | {cause} | `{change.ref}` | {note} |"


def to_markdown(changeset: ChangeSet) -> str:
    """A pull-request comment: the summary, a table of changes, and the field detail folded away."""
    lines = [
        f"### planner plan `{changeset.plan}` (namespace `{changeset.namespace}`)",
        "",
        f"**{summary_line(changeset)}**",
    ]
    changes = shown(changeset)
    if changes:
        lines += [
            "",
            "| | action | cause | object | notes |",
            "|---|---|---|---|---|",
            *_markdown_rows(changes),
        ]
    conflicts = list(changeset.conflicts)
    if conflicts:
        lines += ["", "**Ownership conflicts:**", "", *(f"- {c}" for c in conflicts)]
    detailed = [c for c in changes if c.fields]
    if detailed:
        lines += ["", "<details><summary>Field changes</summary>", "", "```diff"]
        for change in detailed:
            lines.append(f"{SYMBOLS[change.action]} {change.ref}")
            lines += [f"    {_field_line(change, field)}" for field in change.fields]
        lines += ["```", "", "</details>"]
    return "\n".join(lines) + "\n"


def formatted(changeset: ChangeSet, output: str, *, colour: bool = False) -> str:
    """The ChangeSet in the `-o` format `plan` was given: `text` (coloured when asked), `json` lines or
    `markdown`."""
    if output == "json":
        return to_json_lines(changeset)
    if output == "markdown":
        return to_markdown(changeset)
    return to_text(changeset, colour=colour)

"""How a ChangeSet reads: as text like `terraform plan`, as JSON lines, or as a pull-request comment
(`output/comment.py`), in the `-o` format `plan` was given.

Every format shows the same facts in the same order, in the words of `output/changes.py`: each change's
action, object, reason, transition, cause (drift: the cluster moved away from what was applied;
pending: the plan changed since), whether it destroys data, and field-level detail, then one summary
line and the members of each warm pool the plan declares (which apply never creates); a plan that
destroys data says so first, and whether `--allow-data-loss` was given. Secret values never reach
these printers in clear (the diff marks them) and Secret field values are suppressed as well, so a
reader sees which key changed but never what it holds.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape

from planner.changeset import ValueChange
from planner.dataloss import destroys_data, losses
from planner.diff import Change, ChangeSet
from planner.kinds import SECRET
from planner.monitor.pool_members import PoolStatus
from planner.objects import ANNOTATION_RUNTIME_ID, annotations_of
from planner.output.changes import (
    ACTIONS,
    DESTROYS_DATA,
    SYMBOLS,
    cause_counts,
    chart_details,
    chart_headline,
    chart_objects,
    counts,
    data_loss_consent,
    field_line,
    generation_line,
    headline,
    objects,
    shown,
    summary_line,
)
from planner.output.comment import to_markdown
from planner.output.lines import now_rfc3339
from planner.output.masking import MASK
from planner.output.workload_table import pool_line, pool_record

COLOURS = {"create": "green", "update": "yellow", "replace": "magenta", "delete": "red", "noop": "dim"}


def _text_lines(changeset: ChangeSet) -> Iterator[tuple[Change | None, str]]:
    for change in shown(changeset):
        yield change, headline(change)
        for field in change.fields:
            yield None, "      " + field_line(change, field)


def to_text(changeset: ChangeSet, *, colour: bool = False, pools: Sequence[PoolStatus] = ()) -> str:
    """Terraform-style text, then a line per warm pool; colour only when asked (the CLI asks when stdout
    is a TTY)."""
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=colour, no_color=not colour, highlight=False, width=200)
    console.print(f"Plan {changeset.plan} (namespace {changeset.namespace})", markup=False)
    if at := generation_line(changeset):
        console.print(f"  {at}", markup=False)
    for line in _chart_lines(changeset):
        console.print(line, markup=False)
    if consent := data_loss_consent([changeset]):
        lost = objects(len(losses(changeset)))
        warning = f"this plan destroys data ({lost} marked {DESTROYS_DATA} below); {consent}"
        console.print(f"[red]{escape('  !')}[/] {escape(warning)}")
    for change, line in _text_lines(changeset):
        if change is None:
            console.print(escape(line))
            continue
        symbol = SYMBOLS[change.action].rjust(3)
        console.print(f"[{COLOURS[change.action]}]{escape(symbol)}[/] {escape(line)}")
    for conflict in _unattached_conflicts(changeset):
        console.print(f"[red]{escape('  !')}[/] {escape(conflict)}")
    console.print(summary_line(changeset), markup=False)
    for pool in pools:
        console.print(pool_line(pool), markup=False)
    return buffer.getvalue()


def _chart_lines(changeset: ChangeSet) -> Iterator[str]:
    """Each chart whose inputs changed, what changed, and the objects it changed."""
    for chart in changeset.charts:
        yield f"  {chart_headline(chart)}"
        yield from (f"      {line}" for line in chart_details(chart))
        yield f"      {chart_objects(chart)}{':' if chart.objects else ''}"
        yield from (f"        {SYMBOLS[c.action]} {c.ref}" for c in chart.objects)


def _charts_json(changeset: ChangeSet) -> list[dict[str, Any]]:
    return [
        {
            "chart": chart.handle,
            "version": {"before": chart.version_before, "after": chart.version_after},
            "recorded": chart.recorded,
            "values": [_value_json(value) for value in chart.values],
            "objects": [str(change.ref) for change in chart.objects],
            "message": chart_headline(chart),
        }
        for chart in changeset.charts
    ]


def _value_json(value: ValueChange) -> dict[str, Any]:
    if value.secret:
        return {"path": value.path, "before": MASK, "after": MASK, "secret": True}
    return {
        "path": value.path,
        "before": value.before,
        "after": value.after,
        **({"origin": value.origin} if value.origin else {}),
    }


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
            **({"origin": f.origin} if f.origin else {}),
        }
        for f in change.fields
    ]


def _runtime_id(change: Change) -> str | None:
    value = annotations_of(change.desired or change.live).get(ANNOTATION_RUNTIME_ID)
    return str(value) if value else None


def planned_records(
    changeset: ChangeSet, *, now: datetime | None = None, pools: Sequence[PoolStatus] = ()
) -> list[dict[str, Any]]:
    """The JSON-lines records: one `Planned` per shown change, then one `Summary` (docs/design.md §5), which
    lists the plan's warm pools (`warmPools`)."""
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
        if change.unready:
            record["unready"] = change.unready
        if change.unmet:
            record["unmet"] = change.unmet
        record |= {"destroys_data": destroys_data(change), "message": headline(change)}
        records.append(record)
    summary: dict[str, Any] = {
        "time": time,
        "type": "Summary",
        "plan": changeset.plan,
        "namespace": changeset.namespace,
        "generation": changeset.generation.number if changeset.generation else None,
    }
    summary |= counts(changeset) | cause_counts(changeset) | {"unready": len(changeset.unready)}
    summary |= {"conflicts": list(changeset.conflicts)}
    summary |= {"destroys_data": len(losses(changeset)), "allow_data_loss": changeset.allow_data_loss}
    summary |= {"warmPools": [pool_record(pool) for pool in pools], "charts": _charts_json(changeset)}
    records.append(summary | {"message": summary_line(changeset)})
    return records


def to_json_lines(
    changeset: ChangeSet, *, now: datetime | None = None, pools: Sequence[PoolStatus] = ()
) -> str:
    records = planned_records(changeset, now=now, pools=pools)
    return "".join(json.dumps(record, sort_keys=False) + "\n" for record in records)


def formatted(
    changesets: Sequence[ChangeSet],
    output: str,
    *,
    colour: bool = False,
    graphs: Sequence[str] = (),
    pools: Sequence[Sequence[PoolStatus]] = (),
    saved: str | None = None,
    cluster: str | None = None,
) -> str:
    """The ChangeSets of one `plan` run in its `-o` format: `text` (coloured when asked) or `json` lines,
    each plan followed by its task list when `graphs` are given (`--graph`), or `markdown`: one
    pull-request comment for them all (`saved` names the `--out` file it points to when it is cut,
    `cluster` the cluster it was planned against). Each plan shows its warm pools' members, `pools[i]`
    for `changesets[i]`."""
    if output == "markdown":
        return to_markdown(changesets, graphs=graphs, pools=pools, saved=saved, cluster=cluster)
    printed = [
        to_json_lines(c, pools=pooled) if output == "json" else to_text(c, colour=colour, pools=pooled)
        for c, pooled in zip(changesets, _padded(pools, len(changesets)), strict=True)
    ]
    return "".join(
        chunk for index, text in enumerate(printed) for chunk in (text, *graphs[index : index + 1])
    )


def _padded(pools: Sequence[Sequence[PoolStatus]], count: int) -> list[Sequence[PoolStatus]]:
    return [pools[i] if i < len(pools) else () for i in range(count)]

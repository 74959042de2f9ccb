"""What `history`, `history --show` and `diff-generations` print (docs/history.md).

No Secret value, and no Secret hash, is ever printed: a recorded Secret shows as its name with its
values and hash `***` (`output.masking`), and a Secret that changed between two generations is only
"changed". A Job's run-key moving reads as `plan` says it (`new run: template changed`), never as
two digests, in text and markdown; JSON keeps the digests. The plan files a record keeps had their
literal secret values masked when the loader read them (`planner.plan.redact`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from planner.app.history import GenerationDiff, History
from planner.app.rollingback import RollbackResult
from planner.generations import FieldDelta, Generation, Listed, ObjectDelta, charts_text
from planner.output.changes import is_new_run, new_run
from planner.output.lines import aligned
from planner.output.masking import MASK, mask_manifest
from planner.render.confighash import ANNOTATION_CONFIG_HASH

HISTORY_COLUMNS = ("GEN", "WHEN", "RESULT", "REVISION", "WHO", "CHANGES")
CHANGE_SYMBOLS = {"added": "+", "removed": "-", "changed": "~"}
SECRET_PREFIX = "secret/"
REVISION_DIGITS = 12


def _changes_cell(listed: Listed) -> str:
    back = f"rollback to {listed.rolled_back_from}: " if listed.rolled_back_from is not None else ""
    return back + (listed.changes or "-")


def _row(listed: Listed, current: int | None, *, charts: bool) -> tuple[str, ...]:
    marker = "*" if listed.number == current else ""
    return (*_cells(listed, marker), *((listed.charts or "-",) if charts else ()))


def _cells(listed: Listed, marker: str) -> tuple[str, ...]:
    return (
        f"{listed.number}{marker}",
        listed.started or "-",
        listed.result or "-",
        listed.revision[:REVISION_DIGITS] or "-",
        listed.who or "-",
        _changes_cell(listed),
    )


def history_text(shown: History) -> str:
    if not shown.generations:
        return f"plan {shown.plan} has no recorded generations in namespace {shown.namespace}\n"
    current = shown.current.number if shown.current else None
    charts = any(g.charts for g in shown.generations)  # a CHARTS column only for a plan that has had charts
    header = (*HISTORY_COLUMNS, *(("CHARTS",) if charts else ()))
    lines = aligned([header, *(_row(g, current, charts=charts) for g in shown.generations)])
    if current is not None:
        lines.append(f"cluster is at generation {current} of plan {shown.plan} (namespace {shown.namespace})")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def history_json(shown: History) -> str:
    current = shown.current.number if shown.current else None
    document = {
        "plan": shown.plan,
        "namespace": shown.namespace,
        "current": current,
        "generations": [
            {
                "generation": g.number,
                "started": g.started or None,
                "result": g.result,
                "revision": g.revision or None,
                "who": g.who or None,
                "changes": g.changes,
                "rolledBackFrom": g.rolled_back_from,
                "charts": dict(part.split("=", 1) for part in g.charts.split(",") if "=" in part),
            }
            for g in shown.generations
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def rollback_line(result: RollbackResult) -> str:
    """`plan shop rolled back to generation 1 (rev-1), recorded as generation 4`."""
    back = result.generation
    revision = f" ({back.revision})" if back.revision else ""
    recorded = f", recorded as generation {result.recorded.number}" if result.recorded else ""
    verb = "rolled back" if result.ok else "failed to roll back"
    return f"plan {back.plan} {verb} to generation {back.number}{revision}{recorded}"


# --- one generation -----------------------------------------------------------------------------------


def _masked_hashes(hashes: Mapping[str, str]) -> dict[str, str]:
    return {key: MASK if key.startswith(SECRET_PREFIX) else value for key, value in sorted(hashes.items())}


def _facts(generation: Generation) -> list[tuple[str, str]]:
    facts = [
        ("Generation", f"{generation.number} of plan {generation.plan} (namespace {generation.namespace})"),
        ("Result", generation.result),
        ("Started", generation.started),
        ("Finished", generation.finished),
        ("Who", str(generation.who)),
        ("Revision", generation.revision or "-"),
    ]
    if generation.charts:
        facts.append(("Charts", charts_text(generation.charts)))
    if generation.rolled_back_from is not None:
        facts.append(("Rolled back to", f"generation {generation.rolled_back_from}"))
    if generation.failed_tasks:
        facts.append(("Failed", ", ".join(generation.failed_tasks)))
    if generation.message:
        facts.append(("Message", generation.message))
    if not generation.secret_data:
        facts.append(("Secret data", "not kept (--no-secret-history)"))
    if not generation.complete:
        facts.append(("Closure", "too big for the record: only hashes kept (no rollback to it)"))
    return facts


def generation_text(generation: Generation) -> str:
    lines = [f"{name + ':':<16}{value}" for name, value in _facts(generation)]
    lines += ["", f"Changes ({generation.summary}):"]
    for change in generation.changes:
        lines.append(f"  {change.get('action')} {change.get('object')}")
        for field in change.get("fields") or ():
            lines.append(
                f"      {field.get('path')}: {_value(field.get('before'))} → {_value(field.get('after'))}"
            )
    lines += ["", "Closure:"]
    lines += [f"  {key}  {digits}" for key, digits in _masked_hashes(generation.hashes).items()]
    if generation.inputs:
        lines += ["", "Inputs:"]
        lines += [f"  {path}  sha256:{digits}" for path, digits in generation.inputs.items()]
    for path, text in sorted(generation.sources.items()):
        lines += ["", f"Plan file {path}:", *(f"  {line}" for line in text.splitlines())]
    return "\n".join(lines) + "\n"


def generation_json(generation: Generation) -> str:
    document: dict[str, Any] = generation.document()
    document["closure"] = [mask_manifest(m) for m in generation.closure]
    document["hashes"] = _masked_hashes(generation.hashes)
    document.pop("runs", None)
    # Keyed digests of secret chart values: of no use to a reader, so not printed where logs keep them.
    document["chartInputs"] = {
        release: {key: value for key, value in inputs.items() if key != "secretDigests"}
        for release, inputs in generation.chart_inputs.items()
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# --- two generations ----------------------------------------------------------------------------------


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _delta_lines(delta: ObjectDelta) -> list[str]:
    secret = delta.object.startswith(SECRET_PREFIX)
    head = f"{CHANGE_SYMBOLS[delta.change]} {delta.object}"
    if secret and delta.change == "changed":
        head += " (sensitive)"
    if delta.note:
        head += f" ({delta.note})"
    fields = [] if secret else delta.fields
    return [head, *(f"    {f.path}: {_field_text(delta, f)}" for f in fields)]


def _field_text(delta: ObjectDelta, field: FieldDelta, quote: str = "") -> str:
    """`before → after`, or what a digest moving means: a Job's run-key (`new run: template changed`), a
    pod template's config-hash (the ConfigMaps or Secrets it reads changed)."""
    if is_new_run(field.path, field.before, field.after):
        return new_run(f.path for f in delta.fields)
    if ANNOTATION_CONFIG_HASH in field.path:
        return "the ConfigMaps or Secrets it reads changed"
    return f"{quote}{_value(field.before)}{quote} → {quote}{_value(field.after)}{quote}"


def diff_text(compared: GenerationDiff) -> str:
    title = f"plan {compared.plan} (namespace {compared.namespace}): generation {compared.old.number} → {compared.new.number}"
    lines = [title]
    lines += [f"  input {how}: {path}" for path, how in compared.inputs]
    for delta in compared.objects:
        lines += [f"  {line}" for line in _delta_lines(delta)]
    if not compared.objects:
        lines.append("  no differences")
    return "\n".join(lines) + "\n"


def diff_json(compared: GenerationDiff) -> str:
    document = {
        "plan": compared.plan,
        "namespace": compared.namespace,
        "from": compared.old.number,
        "to": compared.new.number,
        "inputs": [{"file": path, "change": how} for path, how in compared.inputs],
        "objects": [
            {
                "object": d.object,
                "change": d.change,
                "fields": []
                if d.object.startswith(SECRET_PREFIX)
                else [{"path": f.path, "before": f.before, "after": f.after} for f in d.fields],
                **({"note": d.note} if d.note else {}),
            }
            for d in compared.objects
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def diff_markdown(compared: GenerationDiff) -> str:
    lines = [
        f"### planner generations `{compared.plan}` {compared.old.number} → {compared.new.number} "
        f"(namespace `{compared.namespace}`)",
        "",
    ]
    lines += [f"Input {how}: `{path}`  " for path, how in compared.inputs] + ([""] if compared.inputs else [])
    if not compared.objects:
        return "\n".join([*lines, "No differences."]) + "\n"
    lines += ["| | object | fields |", "|---|---|---|"]
    for delta in compared.objects:
        secret = delta.object.startswith(SECRET_PREFIX)
        cells = ["(sensitive)"] if secret and delta.change == "changed" else []
        cells += [] if secret else [f"`{f.path}`: {_field_text(delta, f, quote='`')}" for f in delta.fields]
        cells += [delta.note] if delta.note else []
        lines.append(f"| `{CHANGE_SYMBOLS[delta.change]}` | `{delta.object}` | {'<br>'.join(cells)} |")
    return "\n".join(lines) + "\n"


def formatted_diff(compared: GenerationDiff, output: str) -> str:
    if output == "json":
        return diff_json(compared)
    if output == "markdown":
        return diff_markdown(compared)
    return diff_text(compared)

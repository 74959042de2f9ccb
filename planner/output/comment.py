"""The pull-request comment (`plan -o markdown`): what a reviewer must see first, then as much of the
rest as a comment can hold.

One comment for all the plans of a run: a caution first when any change destroys data (each such object,
and whether `--allow-data-loss` was given), the cluster it was planned against (server URL and
kubeconfig context, so a reviewer sees a plan made against the wrong cluster), then per plan a heading, the generation the cluster is at
(once one was recorded), its summary line, its warm pools' members, a table of changes — a create with
its key fields (images, replicas, ports, resources, sizes, data keys; never a value of a Secret) — its
ownership conflicts, and its field changes (and `--graph`'s Mermaid chart of the tasks) folded in `<details>`. Parts are
joined by blank lines: a heading right after an HTML block such as `</details>` would be read as part
of that block and show as literal text.

GitHub refuses a comment over 65,536 characters, so past `LIMIT` the comment is cut, least important
first: the field changes, then table rows from the end; a plan's chart (small: large graphs are drawn
collapsed) is kept unless it alone does not fit. Headings, generations,
summaries, the caution and the conflicts always stay, and a note at the top says what was left out and
where the whole plan is.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planner.dataloss import loss, losses, needs_consent
from planner.diff import Change, ChangeSet
from planner.graph import pod_spec
from planner.kinds import (
    CONFIG_MAP,
    CRON_JOB,
    DEPLOYMENT,
    HORIZONTAL_POD_AUTOSCALER,
    INGRESS,
    JOB,
    PERSISTENT_VOLUME_CLAIM,
    SECRET,
    SERVICE,
    STATEFUL_SET,
)
from planner.monitor.pool_members import PoolStatus
from planner.objects import Manifest
from planner.output.changes import (
    DESTROYS_DATA,
    SYMBOLS,
    VERBS,
    chart_details,
    chart_headline,
    chart_objects,
    data_loss_consent,
    field_line,
    generation_line,
    notes,
    objects,
    shown,
    summary_line,
)
from planner.output.workload_table import pool_counts

LIMIT = 60_000
# Room kept for the note about a cut and the lines that wrap each plan's table and folded blocks.
_NOTE_ROOM = 1_000
_WRAPPING = 200
_CAUTION_NAMES = 20  # objects the caution names before it says how many more

Lines = tuple[str, ...]


def to_markdown(
    changesets: Sequence[ChangeSet],
    *,
    graphs: Sequence[str] = (),
    pools: Sequence[Sequence[PoolStatus]] = (),
    saved: str | None = None,
    cluster: str | None = None,
    limit: int = LIMIT,
) -> str:
    """The comment for these plans (with each plan's Mermaid chart when `graphs` are given, its warm pools'
    members from `pools`), at most `limit` characters long; `saved` is the saved plan (`--out`) that the
    note about a cut points to; `cluster` says which cluster it was planned against."""
    plans = [
        _Plan.of(
            changeset,
            graphs[i] if i < len(graphs) else "",
            tuple(pools[i]) if i < len(pools) else (),
        )
        for i, changeset in enumerate(changesets)
    ]
    caution = _caution(changesets)
    against = [f"*planned against the cluster at {cluster}*"] if cluster else []
    room = limit - _NOTE_ROOM - _size(caution) - _size(against)
    room -= sum(_size(plan.fixed) + _WRAPPING for plan in plans)
    # A chart is bounded (large graphs are drawn collapsed) and sums up every change, so it goes first;
    # one too big to fit is left out without taking the tables' room.
    tasks = _Fill(room, [[plan.graph] if plan.graph else [] for plan in plans])
    rows = _Fill(tasks.room, [[(row,) for row in plan.rows] for plan in plans])
    details = rows.then([list(plan.details) for plan in plans])
    kept = zip(plans, rows.kept, details.kept, tasks.kept, strict=True)
    parts = [caution, _note(plans, rows.kept, details.kept, tasks.kept, saved), against]
    parts += [plan.markdown(rows=r, details=d, graph=bool(t)) for plan, r, d, t in kept]
    return "\n\n".join("\n".join(part) for part in parts if part) + "\n"


@dataclass(frozen=True)
class _Plan:
    """One plan's part of the comment, in pieces that can be left out one by one."""

    changeset: ChangeSet
    changes: tuple[Change, ...]  # those shown, one table row each
    rows: Lines
    details: tuple[Lines, ...]  # the field changes of each changed object
    graph: Lines  # the Mermaid chart of the tasks (`--graph`), empty without it
    pools: tuple[PoolStatus, ...]

    @classmethod
    def of(cls, changeset: ChangeSet, graph: str, pools: tuple[PoolStatus, ...]) -> _Plan:
        changes = tuple(shown(changeset))
        details = tuple(_details(change) for change in changes if change.fields)
        rows = tuple(_row(c) for c in changes)
        return cls(changeset, changes, rows, details, tuple(graph.splitlines()), pools)

    @property
    def head(self) -> Lines:
        changeset = self.changeset
        heading = f"### planner plan `{changeset.plan}` (namespace `{changeset.namespace}`)"
        at = generation_line(changeset)
        generation = ("", f"*{at}*") if at else ()
        return (
            heading,
            *generation,
            "",
            f"**{summary_line(changeset)}**",
            *self.pool_lines,
            *self.chart_lines,
        )

    @property
    def chart_lines(self) -> Lines:
        """A list item per chart whose inputs changed, its changed values nested, and the objects it
        changed."""
        charts = self.changeset.charts
        if not charts:
            return ()
        lines = ["", "**Charts whose inputs changed:**", ""]
        for chart in charts:
            changed = ", ".join(f"`{c.ref}`" for c in chart.objects)
            lines.append(
                f"- {_code(chart_headline(chart))}; {chart_objects(chart)}{': ' if changed else ''}{changed}"
            )
            lines += [f"  - {_code(line)}" for line in chart_details(chart)]
        return tuple(lines)

    @property
    def pool_lines(self) -> Lines:
        """A line per warm pool: its members now, which `planner controller` keeps (apply creates none)."""
        if not self.pools:
            return ()
        return (
            "",
            *(
                f"- warm pool `{p.namespace}/{p.pool}`: {pool_counts(p)} (kept by `planner controller`)"
                for p in self.pools
            ),
        )

    @property
    def table_head(self) -> Lines:
        return ("", "| | action | cause | object | notes |", "|---|---|---|---|---|") if self.rows else ()

    @property
    def conflicts(self) -> Lines:
        conflicts = self.changeset.conflicts
        return ("", "**Ownership conflicts:**", "", *(f"- {c}" for c in conflicts)) if conflicts else ()

    @property
    def fixed(self) -> Lines:
        """What always stays: the heading, the summary, the table's head and the conflicts."""
        return self.head + self.table_head + self.conflicts

    def markdown(self, *, rows: int, details: int, graph: bool) -> Lines:
        lines = self.head + self.table_head + self.rows[:rows]
        if rows < len(self.rows):
            left = _changes(self.changes[rows:], more=True)
            lines += ("", f"*… and {left}, left out: see the note at the top.*")
        lines += self.conflicts
        if details:
            fields = [line for block in self.details[:details] for line in block]
            lines += ("", *_folded("Field changes", fields, "diff"))
        if graph:
            lines += ("", *_folded("Graph (what apply runs, in order)", self.graph, "mermaid"))
        return lines


def _changes(changes: Sequence[Change], *, more: bool = False) -> str:
    """`1,588 changes (1,500 create, 88 update)`, or `1,588 more changes (…)`."""
    tally = ", ".join(f"{n:,} {verb}" for verb, n in Counter(VERBS[c.action] for c in changes).items())
    return f"{len(changes):,} {'more ' if more else ''}changes ({tally})"


def _row(change: Change) -> str:
    found = [f"**{n}**" if n.startswith(DESTROYS_DATA) else n for n in notes(change, drift=False)]
    if change.action == "create":
        found += key_fields(change.desired)
    elif change.action in ("update", "replace"):
        found += key_changes(change)
    symbol, verb, cause = f"`{SYMBOLS[change.action]}`", VERBS[change.action], ", ".join(change.causes)
    cells = (symbol, verb, cause, f"`{change.ref}`", "; ".join(found))
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _cell(text: str) -> str:
    """Text safe in a table cell: a `|` would end the cell, a line break the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def _details(change: Change) -> Lines:
    return (
        f"{SYMBOLS[change.action]} {change.ref}",
        *(f"    {field_line(change, f)}" for f in change.fields),
    )


def _code(text: str) -> str:
    """`text` as inline code, delimited by more backticks than any run in it."""
    fence = "`" * (_backtick_run([text]) + 1)
    padding = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{padding}{text}{padding}{fence}"


def _folded(summary: str, lines: Sequence[str], info: str) -> Lines:
    """`lines` in a code block inside `<details>`, fenced by more backticks than any run in them."""
    fence = "`" * max(3, _backtick_run(lines) + 1)
    return (f"<details><summary>{summary}</summary>", "", fence + info, *lines, fence, "", "</details>")


def _backtick_run(lines: Sequence[str]) -> int:
    longest = 0
    for line in lines:
        run = 0
        for char in line:
            run = run + 1 if char == "`" else 0
            longest = max(longest, run)
    return longest


# --- what a create declares ----------------------------------------------------------------------------


def key_fields(manifest: Manifest | None) -> list[str]:
    """What a reviewer checks first in a new object: replicas, each container's image, ports and
    resources, a Service's ports, a claim's size, the keys (never the values) of a ConfigMap or Secret."""
    if not manifest:
        return []
    kind, spec = manifest.get("kind"), manifest.get("spec") or {}
    found = [f"{key} {spec[key]}" for key in _COUNTS.get(str(kind), ()) if spec.get(key) is not None]
    pod = pod_spec(manifest)
    if isinstance(pod, dict):
        found += [_container(c, init=True) for c in pod.get("initContainers") or []]
        found += [_container(c, init=False) for c in pod.get("containers") or []]
    if kind == SERVICE.kind:
        found += _listed("ports", [_service_port(port) for port in spec.get("ports") or []])
    if kind == PERSISTENT_VOLUME_CLAIM.kind:
        found += _claim(spec)
    if kind == INGRESS.kind:
        found += _listed(
            "routes", [_route(rule, path) for rule in spec.get("rules") or [] for path in _paths(rule)]
        )
        found += _listed("tls", [str(tls.get("secretName")) for tls in spec.get("tls") or []])
    for template in spec.get("volumeClaimTemplates") or [] if kind == STATEFUL_SET.kind else []:
        found += [f"claim template {template['metadata']['name']}: {', '.join(_claim(template['spec']))}"]
    if kind in (CONFIG_MAP.kind, SECRET.kind):
        keys = sorted(
            {key for field in ("data", "binaryData", "stringData") for key in manifest.get(field) or {}}
        )
        found += _listed("keys", keys)
    return found


# What a reviewer decides on in an update, by the field path a diff names: `(container) label`.
_KEY_CHANGE = re.compile(
    r"^\.spec(?:\.jobTemplate\.spec)?(?:\.template\.spec)?\.(?:(?P<list>containers|initContainers)"
    r"\[name=(?P<container>[^\]]+)\]\.)?(?P<what>image|replicas|resources\.(?:limits|requests)\.\w+|"
    r"env\[name=(?P<env>[^\]]+)\]\.value)$"
)


def key_changes(change: Change) -> list[str]:
    """The changed fields a reviewer decides on, one phrase each: `image web: nginx:1.28 → nginx:1.29`,
    `replicas 2 → 3`, `resources web: limits.cpu 500m → 1`, `env web: LOG_LEVEL info → debug` (never a
    Secret's values; an env value only when the plan writes it literally)."""
    if change.ref.kind == SECRET.kind:
        return []
    found = []
    for field in change.fields:
        matched = _KEY_CHANGE.match(field.path)
        if matched is None or field.is_takeover:
            continue
        what, container, env = matched["what"], matched["container"], matched["env"]
        if container is None and what != "replicas" and what != "image":
            continue  # a claim's `resources.requests.storage` reads well as its field line
        before, after = _shown(field.before), _shown(field.after)
        if env is not None:
            found.append(f"env {container}: {env} {before} → {after}")
        elif what.startswith("resources."):
            found.append(f"resources {container}: {what.removeprefix('resources.')} {before} → {after}")
        else:
            found.append(f"{what}{f' {container}' if container else ''}: {before} → {after}")
    return found


def _shown(value: Any) -> str:
    return "(none)" if value is None else str(value)


_COUNTS = {
    DEPLOYMENT.kind: ("replicas",),
    STATEFUL_SET.kind: ("replicas",),
    HORIZONTAL_POD_AUTOSCALER.kind: ("minReplicas", "maxReplicas"),
    JOB.kind: ("completions", "parallelism"),
    CRON_JOB.kind: ("schedule", "timeZone"),
}


def _paths(rule: dict[str, Any]) -> list[dict[str, Any]]:
    return list((rule.get("http") or {}).get("paths") or [])


def _route(rule: dict[str, Any], path: dict[str, Any]) -> str:
    service = (path.get("backend") or {}).get("service") or {}
    port = service.get("port") or {}
    return f"`{rule.get('host') or '*'}{path.get('path', '')}` → {service.get('name')}:{port.get('number') or port.get('name')}"


def _listed(what: str, items: Sequence[str]) -> list[str]:
    return [f"{what} {', '.join(items)}"] if items else []


def _container(container: dict[str, Any], *, init: bool) -> str:
    bits = [f"image `{container.get('image')}`"]
    bits += _listed("ports", [_container_port(port) for port in container.get("ports") or []])
    resources = container.get("resources") or {}
    for which in ("requests", "limits"):
        if values := resources.get(which):
            bits.append(f"{which} " + " ".join(f"{name}={value}" for name, value in sorted(values.items())))
    return f"{'init ' if init else ''}{container.get('name')}: {', '.join(bits)}"


def _container_port(port: dict[str, Any]) -> str:
    return f"{port.get('containerPort')}{_protocol(port)}"


def _service_port(port: dict[str, Any]) -> str:
    target = port.get("targetPort")
    arrow = f"→{target}" if target is not None and target != port.get("port") else ""
    return f"{port.get('port')}{arrow}{_protocol(port)}"


def _protocol(port: dict[str, Any]) -> str:
    protocol = port.get("protocol") or "TCP"
    return "" if protocol == "TCP" else f"/{protocol}"


def _claim(spec: dict[str, Any]) -> list[str]:
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    found = [f"size {size}"] if size else []
    if mode := spec.get("volumeMode"):
        found.append(f"volumeMode {mode}")
    if storage_class := spec.get("storageClassName"):
        found.append(f"storageClass {storage_class}")
    return found


# --- what comes first ----------------------------------------------------------------------------------


def _caution(changesets: Sequence[ChangeSet]) -> Lines:
    """A GitHub caution naming every object the plans' changes destroy, and what `--allow-data-loss`
    (given or not) means for `apply`."""
    consent = data_loss_consent(list(changesets))
    if consent is None:
        return ()
    several = len(changesets) > 1
    lost = [(changeset, change) for changeset in changesets for change in losses(changeset)]
    consent = consent.replace("--allow-data-loss", "`--allow-data-loss`")
    lines = ["> [!CAUTION]", f"> **This plan destroys data** ({objects(len(lost))}): {consent}."]
    for changeset, change in lost[:_CAUTION_NAMES]:
        where = f" (plan `{changeset.plan}`)" if several else ""
        declared = "" if needs_consent(change) else ", declared by the sandbox's generation bump"
        lines.append(f"> - `{change.ref}`{where}: {loss(change)}{declared}")
    if len(lost) > _CAUTION_NAMES:
        lines.append(f"> - and {len(lost) - _CAUTION_NAMES:,} more, marked in the tables")
    return tuple(lines)


def _note(
    plans: Sequence[_Plan],
    rows: Sequence[int],
    details: Sequence[int],
    tasks: Sequence[int],
    saved: str | None,
) -> Lines:
    """What a cut left out, and where the whole plan is; nothing when nothing was cut."""
    left: list[str] = []
    rows_out = [change for plan, kept in zip(plans, rows, strict=True) for change in plan.changes[kept:]]
    if rows_out:
        left.append(f"{_changes(rows_out)} from the tables")
    if details_out := sum(len(plan.details) - kept for plan, kept in zip(plans, details, strict=True)):
        left.append(f"the field changes of {objects(details_out)}")
    if tasks_out := sum(bool(plan.graph) and not kept for plan, kept in zip(plans, tasks, strict=True)):
        left.append(f"the graph of {tasks_out} plan{'' if tasks_out == 1 else 's'}")
    if not left:
        return ()
    whole = "`planner plan -o text` prints the whole plan"
    if saved:
        whole += f"; the saved plan `{saved}` holds every change (`planner apply {saved}` applies exactly it)"
    return ("> [!NOTE]", f"> This comment was cut to fit: left out {', '.join(left)}. {whole}.")


# --- fitting ---------------------------------------------------------------------------------------------


def _size(lines: Sequence[str]) -> int:
    return sum(len(line) + 1 for line in lines)


class _Fill:
    """Pieces kept in order while they fit `room` characters: the first that does not fit ends the
    fill, so what stays is a prefix of each plan's pieces and nothing later is kept out of order."""

    def __init__(self, room: int, pieces: Sequence[Sequence[Lines]]) -> None:
        self.kept: list[int] = []
        self.complete = True
        for group in pieces:
            count = 0
            for piece in group:
                if not self.complete or _size(piece) > room:
                    self.complete = False
                    break
                room -= _size(piece)
                count += 1
            self.kept.append(count)
        self.room = room

    def then(self, pieces: Sequence[Sequence[Lines]]) -> _Fill:
        """The next, less important pieces: kept only when everything before them was."""
        return _Fill(self.room if self.complete else -1, pieces)

"""Generation records: what one apply of a plan did, kept in the cluster so it can be listed, compared
and rolled back to (docs/history.md).

Every apply that wrote anything records generation N+1 of its plan as a Secret `planner.<plan>.g<N+1>`
in the plan's namespace (type `planner.dev/generation.v1`, as Helm keeps its releases). Its one data
entry, `generation`, is base64 of gzip (no timestamp) of canonical JSON: the plan files as rendered
input (literal secret values masked: `planner.plan.redact`), the rendered closure (every object with
its hash; Secrets' data too unless the apply ran with `--no-secret-history`), the changes applied, the
result, start and end time, who and the source revision. Labels (`planner.dev/plan`,
`planner.dev/generation`, `planner.dev/result`) and a few annotations repeat what `planner history`
lists, so a listing needs the records' metadata only.

The rest, and why: docs/architecture.md ("Module notes", generations.py).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import gzip
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Literal

from planner.canonical import Difference, format_path, render_differences
from planner.changeset import Action, Change
from planner.kinds import SECRET
from planner.objects import ANNOTATION_HASH, Manifest, ObjectRef, metadata_of, ref_of, sandbox_of
from planner.plan.model import RawManifest
from planner.plan.names import rootfs_generation
from planner.state.applyset import RunRecord, encode_run_record, run_records, short_hash

RECORD_TYPE = "planner.dev/generation.v1"
DATA_KEY = "generation"
LABEL_PLAN = "planner.dev/plan"
LABEL_GENERATION = "planner.dev/generation"
LABEL_RESULT = "planner.dev/result"
ANNOTATION_STARTED = "planner.dev/started"
ANNOTATION_REVISION = "planner.dev/revision"
ANNOTATION_WHO = "planner.dev/who"
ANNOTATION_CHANGES = "planner.dev/changes"
ANNOTATION_ROLLED_BACK_FROM = "planner.dev/rolled-back-from"
ANNOTATION_CHARTS = "planner.dev/charts"
# The API refuses a Secret whose data exceeds 1 MiB; the rest of the object (metadata) needs room too.
MAX_ENCODED_BYTES = 1_000_000
DEFAULT_HISTORY_MAX = 10

Result = Literal["converged", "failed"]
CONVERGED: Result = "converged"
FAILED: Result = "failed"


def record_name(plan: str, number: int) -> str:
    return f"planner.{plan}.g{number}"


def record_selector(plan: str) -> str:
    """The label selector that lists one plan's generation records."""
    return f"{LABEL_PLAN}={plan},{LABEL_GENERATION}"


@dataclass(frozen=True, kw_only=True)
class Who:
    user: str  # the kubeconfig context's user ("" in-cluster or when it names none)
    host: str

    def __str__(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host


@dataclass(frozen=True, kw_only=True)
class Generation:
    """One generation of a plan. `closure` holds the rendered objects (a Secret without its data when
    `secret_data` is False); `hashes` every object's hash, always; `complete` is False when the closure
    did not fit the record (then only `hashes` are kept and no rollback is possible)."""

    plan: str
    namespace: str
    number: int
    result: Result
    started: str
    finished: str
    who: Who
    revision: str | None = None
    rolled_back_from: int | None = None
    failed_tasks: tuple[str, ...] = ()
    message: str = ""
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    # sha256 of each input plan file's text as `sources` holds it (secret values masked), by name: kept
    # when a record too large drops `sources`, so which input changed is still told.
    inputs: Mapping[str, str] = field(default_factory=dict)
    timeouts: Mapping[str, float] = field(default_factory=dict)
    closure: tuple[Manifest, ...] = field(default=(), repr=False)
    hashes: Mapping[str, str] = field(default_factory=dict)
    changes: tuple[Mapping[str, Any], ...] = field(default=(), repr=False)
    # The runs of the closure's Jobs that had run when the apply ended, as the parent recorded them
    # (run-key → `applyset.encode_run_record`): a rollback does not run them again.
    runs: Mapping[str, str] = field(default_factory=dict)
    # The plan's Helm charts: release name → `<chart>-<version>` (Helm's own spelling, `web-1.2.0`).
    charts: Mapping[str, str] = field(default_factory=dict)
    # Each chart's inputs by release (`planner.provenance.recorded_charts`): version, values as given,
    # keyed digests of its secret values; what the next `plan` compares a chart's values with.
    chart_inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)
    secret_data: bool = True
    complete: bool = True

    @property
    def name(self) -> str:
        return record_name(self.plan, self.number)

    @property
    def summary(self) -> str:
        """The changes in one phrase: `2 created, 1 updated, 1 deleted`."""
        return changes_summary(str(change.get("action")) for change in self.changes)

    def document(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "namespace": self.namespace,
            "generation": self.number,
            "result": self.result,
            "failedTasks": list(self.failed_tasks),
            "message": self.message,
            "started": self.started,
            "finished": self.finished,
            "who": {"user": self.who.user, "host": self.who.host},
            "revision": self.revision,
            "rolledBackFrom": self.rolled_back_from,
            "sources": dict(self.sources),
            "inputs": dict(self.inputs),
            "timeouts": dict(self.timeouts),
            "secretData": self.secret_data,
            "complete": self.complete,
            "hashes": dict(self.hashes),
            "closure": list(self.closure),
            "changes": list(self.changes),
            "runs": dict(self.runs),
            "charts": dict(self.charts),
            "chartInputs": dict(self.chart_inputs),
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Generation:
        who = document.get("who") or {}
        return cls(
            plan=str(document["plan"]),
            namespace=str(document["namespace"]),
            number=int(document["generation"]),
            result=FAILED if document.get("result") == FAILED else CONVERGED,
            failed_tasks=tuple(str(t) for t in document.get("failedTasks") or ()),
            message=str(document.get("message") or ""),
            started=str(document.get("started") or ""),
            finished=str(document.get("finished") or ""),
            who=Who(user=str(who.get("user") or ""), host=str(who.get("host") or "")),
            revision=document.get("revision") or None,
            rolled_back_from=document.get("rolledBackFrom"),
            sources={str(k): str(v) for k, v in (document.get("sources") or {}).items()},
            inputs={str(k): str(v) for k, v in (document.get("inputs") or {}).items()},
            timeouts={str(k): float(v) for k, v in (document.get("timeouts") or {}).items()},
            secret_data=bool(document.get("secretData")),
            complete=bool(document.get("complete")),
            hashes={str(k): str(v) for k, v in (document.get("hashes") or {}).items()},
            closure=tuple(document.get("closure") or ()),
            changes=tuple(document.get("changes") or ()),
            runs={str(k): str(v) for k, v in (document.get("runs") or {}).items()},
            charts={str(k): str(v) for k, v in (document.get("charts") or {}).items()},
            chart_inputs={
                str(k): v for k, v in (document.get("chartInputs") or {}).items() if isinstance(v, dict)
            },
        )


# --- building ---------------------------------------------------------------------------------------


def closure_of(manifests: Iterable[Manifest], *, secret_data: bool) -> tuple[Manifest, ...]:
    """The rendered objects as a record keeps them: without Secrets' data unless `secret_data`."""
    return tuple(m if secret_data or not _is_secret(m) else _without_data(m) for m in manifests)


def input_hashes(sources: Mapping[str, str]) -> dict[str, str]:
    """`{file: sha256}` of each input plan file's recorded text (Nix's closure of a derivation's
    inputs). The masked text is hashed, not the file: a hash of a file holding a short literal secret
    would let it be guessed, so a change to such a value alone does not change its file's hash."""
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sources.items()}


def manifest_file_hashes(manifests: Iterable[RawManifest], plan_files: Set[str]) -> dict[str, str]:
    """`{file: sha256}` of each manifest file the plan read (not the plan files in `plan_files`): of its
    objects as JSON with sorted keys, a Secret's `data` and `stringData` left out for the reason
    `input_hashes` masks them."""
    by_file: dict[str, list[Manifest]] = {}
    for manifest in manifests:
        if manifest.file not in plan_files:
            obj = dict(manifest.object)
            by_file.setdefault(manifest.file, []).append(_without_data(obj) if _is_secret(obj) else obj)
    return {
        file: hashlib.sha256(json.dumps(objects, sort_keys=True).encode()).hexdigest()
        for file, objects in by_file.items()
    }


def changed_inputs(old: Generation, new: Generation) -> list[tuple[str, str]]:
    """(file, how) for each input file whose hash differs between two generations: `added`,
    `removed` or `changed`, by file name (none when either recorded no inputs)."""
    if not old.inputs or not new.inputs:
        return []
    found = []
    for name in sorted({*old.inputs, *new.inputs}):
        before, after = old.inputs.get(name), new.inputs.get(name)
        if before != after:
            found.append((name, "added" if before is None else "removed" if after is None else "changed"))
    return found


def hashes_of(manifests: Iterable[Manifest]) -> dict[str, str]:
    return {str(ref_of(m)): short_hash(m) for m in manifests}


def changes_of(changes: Iterable[Change]) -> tuple[dict[str, Any], ...]:
    """The changes an apply set out to make, as a record keeps them (a Secret's fields are already
    `(sensitive)` in a ChangeSet)."""
    return tuple(
        {
            "object": str(change.ref),
            "action": change.action,
            **({"reason": change.reason} if change.reason else {}),
            "fields": [{"path": f.path, "before": f.before, "after": f.after} for f in change.fields],
        }
        for change in changes
        if change.action != "noop"
    )


WRITTEN_EARLIER = "written by an earlier run that recorded no generation"


def written_changes(
    changes: Iterable[Change], written: Set[ObjectRef], previous: Mapping[str, str] | None
) -> tuple[Change, ...]:
    """What this generation changed in the cluster, as its record counts it: each planned change whose
    object was written (`written`: a task that never started wrote nothing), and each object the plan
    finds unchanged although no earlier generation recorded it as it is now (`previous`: the last
    record's hashes, None when there is none) — an earlier run wrote it and died before recording,
    as a leader killed in the middle of an apply does — as a create or update of this generation."""
    made = []
    for change in changes:
        if change.action != "noop":
            if change.ref in written:
                made.append(change)
        elif change.transition == "already-ran":
            continue  # its Job ran once and stays as it is: the rendering it would have is not live
        elif change.desired is not None and (previous or {}).get(str(change.ref)) != short_hash(
            change.desired
        ):
            action: Action = "update" if str(change.ref) in (previous or {}) else "create"
            made.append(dataclasses.replace(change, action=action, reason=WRITTEN_EARLIER))
    return tuple(made)


def changes_summary(actions: Iterable[str]) -> str:
    counted: dict[str, int] = {}
    for action in actions:
        counted[action] = counted.get(action, 0) + 1
    words = {"create": "created", "update": "updated", "replace": "replaced", "delete": "deleted"}
    parts = [f"{counted[a]} {word}" for a, word in words.items() if counted.get(a)]
    return ", ".join(parts) or "nothing"


# --- encoding ---------------------------------------------------------------------------------------


def encode(document: Mapping[str, Any]) -> str:
    packed = gzip.compress(json.dumps(document, sort_keys=True, separators=(",", ":")).encode(), mtime=0)
    return base64.b64encode(packed).decode("ascii")


def decode(value: str) -> dict[str, Any] | None:
    """The document an encoded record holds; None when it does not decode to one."""
    try:
        document = json.loads(gzip.decompress(base64.b64decode(value, validate=True)))
    except (binascii.Error, OSError, EOFError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def fitted(generation: Generation, limit: int = MAX_ENCODED_BYTES) -> tuple[Generation, str]:
    """The generation as it fits a record, and its encoding: whole; else without the closure's
    objects (hashes kept); else without the plan files and changes too. A cut record is not
    `complete`: it cannot be rolled back to."""
    candidates = [
        generation,
        dataclasses.replace(generation, closure=(), complete=False),
        dataclasses.replace(generation, closure=(), sources={}, changes=(), complete=False),
    ]
    for candidate in candidates:
        encoded = encode(candidate.document())
        if len(encoded) * 3 // 4 <= limit:  # the stored bytes: the gzip the base64 spells
            return candidate, encoded
    return candidates[-1], encode(candidates[-1].document())


def record_manifest(generation: Generation, encoded: str) -> Manifest:
    """The Secret that records `generation` (`encoded` from `fitted`)."""
    annotations = {
        ANNOTATION_STARTED: generation.started,
        ANNOTATION_WHO: str(generation.who),
        ANNOTATION_CHANGES: generation.summary,
    }
    if generation.revision:
        annotations[ANNOTATION_REVISION] = generation.revision
    if generation.rolled_back_from is not None:
        annotations[ANNOTATION_ROLLED_BACK_FROM] = str(generation.rolled_back_from)
    if generation.charts:
        annotations[ANNOTATION_CHARTS] = charts_text(generation.charts)
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": {
            "name": generation.name,
            "namespace": generation.namespace,
            "labels": {
                LABEL_PLAN: generation.plan,
                LABEL_GENERATION: str(generation.number),
                LABEL_RESULT: generation.result,
            },
            "annotations": annotations,
        },
        "type": RECORD_TYPE,
        "data": {DATA_KEY: encoded},
    }


def generation_of(secret: Manifest) -> Generation | None:
    """The generation a record Secret holds; None for another Secret or one that does not decode."""
    if secret.get("type") != RECORD_TYPE:
        return None
    value = (secret.get("data") or {}).get(DATA_KEY)
    document = decode(str(value)) if value else None
    if document is None:
        return None
    try:
        return Generation.from_document(document)
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True, kw_only=True)
class Listed:
    """A generation as its record's metadata tells it (what `planner history` lists without reading
    any record's data)."""

    number: int
    result: str
    started: str
    revision: str
    who: str
    changes: str
    rolled_back_from: int | None
    charts: str = ""  # `web=web-1.2.0,api=api-0.3.1`: each chart's release and version


def charts_text(charts: Mapping[str, str]) -> str:
    """The charts of a generation as its record's annotation and `planner history` spell them."""
    return ",".join(f"{release}={version}" for release, version in sorted(charts.items()))


def listed_of(secret: Manifest) -> Listed | None:
    metadata = metadata_of(secret)
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    number = str(labels.get(LABEL_GENERATION) or "")
    if not number.isdigit():
        return None
    back = str(annotations.get(ANNOTATION_ROLLED_BACK_FROM) or "")
    return Listed(
        number=int(number),
        result=str(labels.get(LABEL_RESULT) or ""),
        started=str(annotations.get(ANNOTATION_STARTED) or ""),
        revision=str(annotations.get(ANNOTATION_REVISION) or ""),
        who=str(annotations.get(ANNOTATION_WHO) or ""),
        changes=str(annotations.get(ANNOTATION_CHANGES) or ""),
        rolled_back_from=int(back) if back.isdigit() else None,
        charts=str(annotations.get(ANNOTATION_CHARTS) or ""),
    )


# --- retention and rollback targets -------------------------------------------------------------------


def expired(numbers: Iterable[int], keep: int, *, converged: Iterable[int] = ()) -> list[int]:
    """The generations retention removes: all but the `keep` newest (failed ones count too), and never
    the newest of the `converged` ones, so a run of failures cannot take away what rollback goes back to."""
    ordered = sorted(set(numbers))
    last_good = max(converged, default=None)
    return [n for n in ordered[: max(0, len(ordered) - max(keep, 1))] if n != last_good]


def rollback_target(listed: Sequence[Listed], current: int | None) -> int | None:
    """The generation `rollback` goes back to by default: the newest converged one before the current
    (the newest recorded when the cluster names none); None when there is none."""
    newest = max((g.number for g in listed), default=None)
    at = current if current is not None else newest
    if at is None:
        return None
    earlier = [g.number for g in listed if g.number < at and g.result == CONVERGED]
    return max(earlier, default=None)


# --- rolling back ------------------------------------------------------------------------------------


def recorded_runs(generation: Generation, parent: Manifest | None) -> tuple[RunRecord, ...]:
    """The runs the generation recorded that the parent no longer records as ran (it keeps only the
    current closure's): a rollback adds them, so a Job that ran then is not run again."""
    known = run_records(parent)
    recorded = run_records({"data": dict(generation.runs)})
    return tuple(
        run for key, run in sorted(recorded.items()) if run.ran and not (key in known and known[key].ran)
    )


def parent_with_runs(parent: Manifest, runs: Iterable[RunRecord]) -> Manifest:
    """The parent as the diff should read it: with `runs` among its run records (never written so: the
    parent task writes them through `ChangeSet.unrecorded`)."""
    data = {**(parent.get("data") or {}), **{run.run_key: encode_run_record(run) for run in runs}}
    return {**parent, "data": data}


@dataclass(frozen=True, kw_only=True)
class RootfsMove:
    sandbox: str
    before: int
    after: int


def rootfs_moves_back(changes: Iterable[Change]) -> list[RootfsMove]:
    """Sandboxes whose rootfs generation a change set takes backwards (a g1 created while g2 goes): the
    earlier generation's disk is created afresh, not restored."""
    created: dict[str, int] = {}
    deleted: dict[str, int] = {}
    for change in changes:
        manifest = change.desired or change.live
        sandbox = sandbox_of(manifest)
        number = rootfs_generation(change.ref.name, sandbox) if sandbox else None
        if sandbox is None or number is None:
            continue
        if change.action == "create":
            created[sandbox] = number
        elif change.action == "delete":
            deleted[sandbox] = max(number, deleted.get(sandbox, 0))
    return [
        RootfsMove(sandbox=name, before=deleted[name], after=created[name])
        for name in sorted(created)
        if name in deleted and created[name] < deleted[name]
    ]


def secrets_without_data(generation: Generation, changes: Iterable[Change]) -> list[str]:
    """The Secrets a rollback to `generation` would have to write, though the record kept no data for
    them (`--no-secret-history`)."""
    return [
        str(change.ref)
        for change in changes
        if change.action in ("create", "update", "replace")
        and change.desired is not None
        and _is_secret(change.desired)
        and "data" not in change.desired
        and not generation.secret_data
    ]


# --- comparing two closures --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FieldDelta:
    path: str
    before: Any
    after: Any


@dataclass(frozen=True, kw_only=True)
class ObjectDelta:
    """One object's difference between two generations: `added`, `removed` or `changed` (with the
    fields that changed when both records keep the object; a Secret's never)."""

    object: str
    change: Literal["added", "removed", "changed"]
    fields: tuple[FieldDelta, ...] = ()
    note: str = ""


def diff_closures(old: Generation, new: Generation) -> list[ObjectDelta]:
    """What changed from `old`'s closure to `new`'s, objects in name order; a sandbox whose rootfs
    generation moved is one `changed` line (`rootfs g1 → g2`) rather than a PVC removed and added."""
    old_objects = {str(ref_of(m)): m for m in old.closure}
    new_objects = {str(ref_of(m)): m for m in new.closure}
    deltas: dict[str, ObjectDelta] = {}
    for key in sorted(set(old.hashes) | set(new.hashes)):
        if key not in new.hashes:
            deltas[key] = ObjectDelta(object=key, change="removed")
        elif key not in old.hashes:
            deltas[key] = ObjectDelta(object=key, change="added")
        elif old.hashes[key] != new.hashes[key]:
            fields = _field_deltas(old_objects.get(key), new_objects.get(key))
            deltas[key] = ObjectDelta(object=key, change="changed", fields=fields)
    _fold_rootfs(deltas, old_objects, new_objects)
    return [deltas[key] for key in sorted(deltas)]


_IGNORED_PATHS = frozenset({("metadata", "annotations", ANNOTATION_HASH)})


def _field_deltas(old: Manifest | None, new: Manifest | None) -> tuple[FieldDelta, ...]:
    if old is None or new is None or _is_secret(old) or _is_secret(new):
        return ()
    found = [d for d in render_differences(old, new) if d.path not in _IGNORED_PATHS]
    return tuple(_field_delta(d) for d in sorted(found, key=lambda d: format_path(d.path)))


def _field_delta(difference: Difference) -> FieldDelta:
    return FieldDelta(path=format_path(difference.path), before=difference.before, after=difference.after)


def _fold_rootfs(
    deltas: dict[str, ObjectDelta], old: Mapping[str, Manifest], new: Mapping[str, Manifest]
) -> None:
    def rootfs(objects: Mapping[str, Manifest], change: str) -> dict[str, tuple[str, int]]:
        found = {}
        for key, delta in deltas.items():
            manifest = objects.get(key)
            sandbox = sandbox_of(manifest) if delta.change == change else None
            number = rootfs_generation(ref_of(manifest).name, sandbox) if manifest and sandbox else None
            if sandbox and number is not None:
                found[sandbox] = (key, number)
        return found

    removed, added = rootfs(old, "removed"), rootfs(new, "added")
    for sandbox in sorted(set(removed) & set(added)):
        (gone, before), (came, after) = removed[sandbox], added[sandbox]
        del deltas[gone]
        note = "" if after > before else "disk contents are not restored"
        deltas[came] = ObjectDelta(
            object=came,
            change="changed",
            fields=(FieldDelta(path=f"sandbox {sandbox} rootfs", before=f"g{before}", after=f"g{after}"),),
            note=note,
        )


# --- helpers ----------------------------------------------------------------------------------------


def _is_secret(manifest: Manifest) -> bool:
    return manifest.get("kind") == SECRET.kind and manifest.get("apiVersion") == SECRET.api_version


def _without_data(secret: Manifest) -> Manifest:
    return {key: value for key, value in secret.items() if key not in ("data", "stringData")}


__all__ = [
    "ANNOTATION_CHANGES",
    "ANNOTATION_REVISION",
    "ANNOTATION_ROLLED_BACK_FROM",
    "ANNOTATION_STARTED",
    "ANNOTATION_WHO",
    "CONVERGED",
    "DATA_KEY",
    "DEFAULT_HISTORY_MAX",
    "FAILED",
    "LABEL_GENERATION",
    "LABEL_PLAN",
    "LABEL_RESULT",
    "MAX_ENCODED_BYTES",
    "RECORD_TYPE",
    "FieldDelta",
    "Generation",
    "Listed",
    "ObjectDelta",
    "RootfsMove",
    "Who",
    "changes_of",
    "changes_summary",
    "closure_of",
    "decode",
    "diff_closures",
    "encode",
    "expired",
    "fitted",
    "generation_of",
    "hashes_of",
    "listed_of",
    "parent_with_runs",
    "record_manifest",
    "record_name",
    "record_selector",
    "recorded_runs",
    "rollback_target",
    "rootfs_moves_back",
    "secrets_without_data",
    "written_changes",
]

"""A plan's ApplySet (KEP-3659): the parent Secret that says what the plan manages, and what planner
records in it (docs/design.md §3 and §6; docs/architecture.md "Parent Secret").

Like cli-utils' `pkg/inventory`, one module owns the object that makes prune safe: the part-of label's
id, the scope (group-kinds and namespaces) the reader LISTs, which only widens while an apply runs and
narrows after one converged, the Job run records (pending, ran, with their outcome), the applied
closure that tells drift from pending, the digest key and the current generation. Everything here is
pure: what to write, computed from what was read; `planner.live` reads and `planner.writes` writes. Every Job planner
creates holds the finalizer `planner.dev/run-record` (`with_run_finalizer`), removed only after its
outcome is recorded (`run_finalizer_removal`), so a Job cannot vanish unrecorded.

The rest, and why: docs/architecture.md ("Module notes", state/applyset.py).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from planner import __version__
from planner.errors import OwnershipError, PlannerError
from planner.kinds import JOB, NAMESPACE, SECRET, KindInfo, by_group_kind
from planner.objects import (
    ANNOTATION_HASH,
    ANNOTATION_PLAN,
    ANNOTATION_RUN_KEY,
    ANNOTATION_RUNTIME_ID,
    Manifest,
    ObjectRef,
    annotations_of,
    canonical_json,
    labels_of,
    metadata_of,
    ref_of,
)

LABEL_PART_OF = "applyset.kubernetes.io/part-of"
LABEL_APPLYSET_ID = "applyset.kubernetes.io/id"
ANNOTATION_TOOLING = "applyset.kubernetes.io/tooling"
ANNOTATION_CONTAINS_GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
ANNOTATION_ADDITIONAL_NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
PARENT_TYPE = "planner.dev/applyset"
TOOLING = f"planner/{__version__}"
# The parent's data keys planner reserves beside the run records (whose keys are 64 hex digits): every
# parent write keeps them as they are.
RESERVED_PREFIX = "planner."
DIGEST_KEY = "planner.digest-key"


# --- identity ----------------------------------------------------------------------------------------


def applyset_id(plan: str, namespace: str) -> str:
    """KEP-3659 id of the plan's parent Secret `<plan>` in `namespace` (the core group is empty)."""
    digest = hashlib.sha256(f"{plan}.{namespace}.{SECRET.kind}.{SECRET.group}".encode()).digest()
    encoded = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
    return f"applyset-{encoded}-v1"


def parent_ref(plan: str, namespace: str) -> ObjectRef:
    return ObjectRef.of(SECRET, plan, namespace)


def member_selector(plan: str, namespace: str) -> str:
    """The label selector that finds the plan's members."""
    return f"{LABEL_PART_OF}={applyset_id(plan, namespace)}"


def same_applyset(manifest: Manifest, existing: Manifest) -> bool:
    """Whether `existing` is a member of the ApplySet `manifest` is rendered for."""
    wanted = labels_of(manifest).get(LABEL_PART_OF)
    return bool(wanted) and labels_of(existing).get(LABEL_PART_OF) == wanted


def not_managed(ref: ObjectRef, plan: str, existing: Manifest | None = None) -> str:
    """The sentence for a same-named object outside the plan's ApplySet: whose it is, when it says, and
    how to take it over (a Plan object's objects too: the ApplySet is the plan's, whoever applies it)."""
    owner = f" ({held_by(existing)})" if existing is not None and held_by(existing) else ""
    return (
        f"{ref.described} exists and is not managed by plan {plan}{owner}: `planner apply --adopt` of "
        "this plan takes it over"
    )


def held_by(existing: Manifest) -> str:
    """`it is plan web's`, `another ApplySet holds it`, `written by kubectl-create`, or "" (no trace)."""
    other = str(annotations_of(existing).get(ANNOTATION_PLAN) or "")
    if other and labels_of(existing).get(LABEL_PART_OF):
        return f"it is plan {other}'s"
    if labels_of(existing).get(LABEL_PART_OF):
        return "another ApplySet holds it"
    entries = metadata_of(existing).get("managedFields") or []
    # A status writer (a controller reporting on it) did not make the object.
    managers = sorted({str(e["manager"]) for e in entries if e.get("manager") and not e.get("subresource")})
    return f"written by {', '.join(managers)}" if managers else ""


def is_planners(parent: Manifest) -> bool:
    """Whether an ApplySet parent was written by planner (rather than another ApplySet tool)."""
    return str(annotations_of(parent).get(ANNOTATION_TOOLING, "")).startswith("planner/")


def is_parent(ref: ObjectRef, live: Manifest) -> bool:
    """Whether `live`, the Secret at the parent's place `ref`, is the plan's ApplySet parent."""
    found = labels_of(live).get(LABEL_APPLYSET_ID)
    return live.get("type") == PARENT_TYPE and found == applyset_id(ref.name, ref.namespace or "")


def not_the_parent(ref: ObjectRef) -> str:
    """The sentence for a same-named Secret at the parent's place that is not the plan's parent."""
    return (
        f"{ref.described} exists and is not the ApplySet parent of plan {ref.name}; "
        "rename the plan or move that secret"
    )


def check_parent(ref: ObjectRef, live: Manifest) -> None:
    """A same-named Secret that is not this plan's parent is never overwritten."""
    if not is_parent(ref, live):
        raise OwnershipError(not_the_parent(ref))


# --- scope -------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Scope:
    """The group-kinds (`Deployment.apps`, `Secret`) and namespaces an ApplySet's members span.

    Namespaces that hold members are scope, not members: `Scope.of` leaves Namespace objects out, as
    the parent's annotations do."""

    group_kinds: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()

    @classmethod
    def of(cls, refs: Iterable[ObjectRef]) -> Scope:
        members = [ref for ref in refs if ref.kind != NAMESPACE.kind]
        return cls(
            group_kinds=frozenset(ref.group_kind for ref in members),
            namespaces=frozenset(ref.namespace for ref in members if ref.namespace),
        )

    def __or__(self, other: Scope) -> Scope:
        return Scope(
            group_kinds=self.group_kinds | other.group_kinds, namespaces=self.namespaces | other.namespaces
        )

    def __le__(self, other: Scope) -> bool:
        return self.group_kinds <= other.group_kinds and self.namespaces <= other.namespaces

    def without_namespace(self, namespace: str | None) -> Scope:
        return Scope(group_kinds=self.group_kinds, namespaces=self.namespaces - {namespace or ""})

    @property
    def kinds(self) -> Iterator[KindInfo]:
        """The listed kinds planner writes; another ApplySet tool's kinds are not planner's to diff."""
        for group_kind in sorted(self.group_kinds):
            try:
                yield by_group_kind(group_kind)
            except KeyError:
                continue


def _listed(value: object) -> frozenset[str]:
    return frozenset(item for item in str(value or "").split(",") if item)


def listed_scope(parent: Manifest | None) -> Scope:
    """What a parent Secret lists: its group-kinds and its additional namespaces (its own is implied)."""
    annotations = annotations_of(parent)
    return Scope(
        group_kinds=_listed(annotations.get(ANNOTATION_CONTAINS_GROUP_KINDS)),
        namespaces=_listed(annotations.get(ANNOTATION_ADDITIONAL_NAMESPACES)),
    )


def narrowed(parent: Manifest | None, *, written: Scope, remaining: Scope, namespace: str) -> Scope | None:
    """After an apply converged: the scope the parent should list now (`remaining`: the closure and the
    members a keep annotation held back), or None when the parent lists nothing more than that — what it
    listed before the apply plus what the apply wrote (`written`). None, too, for a plan never applied
    that wrote nothing: there is no parent to narrow. KEP-3659 allows narrowing only once nothing
    outside is left, which a converged apply guarantees."""
    if parent is None and not written.group_kinds:
        return None
    listed = (listed_scope(parent) | written).without_namespace(namespace)
    return None if listed <= remaining.without_namespace(namespace) else remaining


def _with_scope(annotations: Mapping[str, object], scope: Scope, namespace: str | None) -> dict[str, object]:
    others = sorted(scope.namespaces - {namespace or ""})
    listed = {**annotations, ANNOTATION_CONTAINS_GROUP_KINDS: ",".join(sorted(scope.group_kinds))}
    listed.pop(ANNOTATION_ADDITIONAL_NAMESPACES, None)
    return listed | ({ANNOTATION_ADDITIONAL_NAMESPACES: ",".join(others)} if others else {})


def _without_managed_fields(live: Manifest | None) -> dict[str, object]:
    return {key: value for key, value in metadata_of(live).items() if key != "managedFields"}


# --- the parent Secret -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ParentRecord:
    """What an apply writes into the parent before any member: group-kinds and namespaces covering
    every object of its ChangeSet, desired or live (merged with what the parent lists, the superset
    KEP-3659 asks for), the run-keys of the current closure's Jobs, to which the run record is
    trimmed, and the `runs` to record: pending ones for the Jobs the apply creates, and the runs of
    Jobs found live with no record (an apply killed between a create and its record)."""

    group_kinds: tuple[str, ...]
    namespaces: tuple[str, ...]
    run_keys: tuple[str, ...]
    runs: tuple[RunRecord, ...] = ()
    digest_key: bytes | None = field(default=None, repr=False)  # for a parent without one (else new)

    @classmethod
    def covering(
        cls,
        refs: Iterable[ObjectRef],
        closure: Iterable[Manifest],
        *,
        runs: Iterable[RunRecord] = (),
        digest_key: bytes | None = None,
    ) -> ParentRecord:
        scope = Scope.of(refs)
        return cls(
            group_kinds=tuple(sorted(scope.group_kinds)),
            namespaces=tuple(sorted(scope.namespaces)),
            run_keys=tuple(sorted(run_keys_of(closure))),
            runs=tuple(sorted(runs, key=lambda run: run.run_key)),
            digest_key=digest_key,
        )

    @property
    def scope(self) -> Scope:
        return Scope(group_kinds=frozenset(self.group_kinds), namespaces=frozenset(self.namespaces))


def parent_manifest(ref: ObjectRef, live: Manifest | None, record: ParentRecord) -> Manifest:
    """The parent Secret to write: `live` (if any) with planner's label and annotations, listing the
    union of its scope and `record`'s, `record.runs` merged into its run record (`merged_runs`), which
    is trimmed to `record.run_keys`; planner's reserved entries (the digest key) stay as they are."""
    if live is not None:
        check_parent(ref, live)
    metadata = _without_managed_fields(live)
    annotations = _with_scope(annotations_of(live), listed_scope(live) | record.scope, ref.namespace)
    annotations |= {ANNOTATION_TOOLING: TOOLING, ANNOTATION_PLAN: ref.name}
    labels = {**labels_of(live), LABEL_APPLYSET_ID: applyset_id(ref.name, ref.namespace or "")}
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": metadata
        | {"name": ref.name, "namespace": ref.namespace, "labels": labels, "annotations": annotations},
        "type": (live or {}).get("type") or PARENT_TYPE,
        "data": _reserved(live)
        | trimmed_run_records(merged_runs(run_records(live), record.runs), record.run_keys),
    }


def _reserved(live: Manifest | None) -> dict[str, str]:
    data = (live or {}).get("data") or {}
    return {key: str(value) for key, value in data.items() if key.startswith(RESERVED_PREFIX)}


def settled_parent(
    ref: ObjectRef, live: Manifest | None, *, scope: Scope | None, applied: AppliedClosure
) -> Manifest:
    """The parent `live` after a converged apply: recording `applied` as the applied closure, and
    listing exactly `scope` when given (the plan's own namespace is implied, never listed)."""
    if live is None:
        raise PlannerError(f"{ref.described} is missing: nothing to settle")
    check_parent(ref, live)
    metadata = _without_managed_fields(live)
    if scope is not None:
        metadata |= {"annotations": _with_scope(annotations_of(live), scope, ref.namespace)}
    data = {**(live.get("data") or {}), APPLIED_KEY: applied.encoded()}
    return {**live, "metadata": metadata, "data": data}


def unchanged(live: Manifest, body: Manifest) -> bool:
    """Whether writing `body` would change nothing planner manages on the parent."""
    return (
        labels_of(live) == labels_of(body)
        and annotations_of(live) == annotations_of(body)
        and (live.get("data") or {}) == (body.get("data") or {})
    )


# --- the run record ----------------------------------------------------------------------------------

RunResult = Literal["succeeded", "failed"]
RESULT_SUCCEEDED: RunResult = "succeeded"
RESULT_FAILED: RunResult = "failed"
RUN_FINALIZER = "planner.dev/run-record"
REASON_DELETED = "Deleted"


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """How a recorded Job ended: `succeeded`, or `failed` with its `Failed` condition's reason and
    message and, when one of its pods still showed it, the exit code of the container that failed."""

    result: RunResult
    reason: str = ""
    message: str = ""
    exit_code: int | None = None

    def encoded(self) -> dict[str, object]:
        document: dict[str, object] = {"result": self.result}
        if self.reason:
            document["reason"] = self.reason
        if self.message:
            document["message"] = self.message
        if self.exit_code is not None:
            document["exitCode"] = self.exit_code
        return document

    @classmethod
    def decoded(cls, document: object) -> RunOutcome | None:
        """The outcome of a record's `outcome` entry; None when absent or not understood."""
        if not isinstance(document, dict) or document.get("result") not in (RESULT_SUCCEEDED, RESULT_FAILED):
            return None
        code = document.get("exitCode")
        return cls(
            result=RESULT_SUCCEEDED if document["result"] == RESULT_SUCCEEDED else RESULT_FAILED,
            reason=str(document.get("reason") or ""),
            message=str(document.get("message") or ""),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        )


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A Job run of one run-key: parent Secret data key = the run-key, value = base64 of canonical JSON
    `{"name","namespace","runtimeId","uid","outcome"}`.

    A record without `uid` is **pending**: written with the parent before the Job's create, so a kill
    between the create and the record leaves a trace; it counts as not run (the Job is created when
    absent) until the uid confirms it. `outcome` is added by whoever saw the Job finish. Records older
    than these lack `runtimeId` (the monitor then assumes runtime `k8s`) or `outcome`."""

    run_key: str
    namespace: str
    name: str
    uid: str = ""
    runtime_id: str = ""
    outcome: RunOutcome | None = None

    @property
    def ran(self) -> bool:
        """Whether a Job of this run-key was created (its uid is recorded)."""
        return bool(self.uid)


def encode_run_record(record: RunRecord) -> str:
    document: dict[str, object] = {"name": record.name, "namespace": record.namespace}
    if record.uid:
        document["uid"] = record.uid
    if record.runtime_id:
        document["runtimeId"] = record.runtime_id
    if record.outcome is not None:
        document["outcome"] = record.outcome.encoded()
    return base64.b64encode(canonical_json(document).encode()).decode("ascii")


def _decoded_run_record(key: str, value: object) -> RunRecord | None:
    try:
        document = json.loads(base64.b64decode(str(value), validate=True))
        return RunRecord(
            run_key=key,
            namespace=str(document["namespace"]),
            name=str(document["name"]),
            uid=str(document.get("uid") or ""),
            runtime_id=str(document.get("runtimeId") or ""),
            outcome=RunOutcome.decoded(document.get("outcome")),
        )
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError):
        return None


def run_records(parent: Manifest | None) -> dict[str, RunRecord]:
    """The run-keys recorded in the parent Secret, ran or pending; planner's reserved entries and entries
    that do not decode are left out (another tool's data, or a hand edit), so a bad entry at worst
    re-runs a Job."""
    records: dict[str, RunRecord] = {}
    for key, value in ((parent or {}).get("data") or {}).items():
        if not key.startswith(RESERVED_PREFIX) and (record := _decoded_run_record(key, value)) is not None:
            records[key] = record
    return records


def run_keys_of(closure: Iterable[Manifest]) -> set[str]:
    """The run-keys the closure's Jobs (and chart hooks that run once per run-key) carry."""
    keys = (annotations_of(m).get(ANNOTATION_RUN_KEY) for m in closure)
    return {str(key) for key in keys if key}


def trimmed_run_records(records: Mapping[str, RunRecord], run_keys: Iterable[str]) -> dict[str, str]:
    """The run records of these run-keys only, encoded, so the parent never outgrows the plan."""
    kept = set(run_keys)
    return {key: encode_run_record(records[key]) for key in sorted(records) if key in kept}


def merged_runs(records: Mapping[str, RunRecord], runs: Iterable[RunRecord]) -> dict[str, RunRecord]:
    """`records` with `runs` written over them: a pending run replaces whatever its run-key recorded (it
    is about to run again: a create, a replace, `--rerun`); a run that ran fills in a run-key recorded
    only as pending or not at all, and never overwrites one that ran (which may hold its outcome)."""
    merged = dict(records)
    for run in runs:
        known = merged.get(run.run_key)
        if not run.ran or known is None or not known.ran:
            merged[run.run_key] = run
    return merged


def _run_of(job: Manifest, *, uid: str) -> RunRecord:
    key = str(annotations_of(job).get(ANNOTATION_RUN_KEY) or "")
    ref = ref_of(job)
    if not key:
        raise PlannerError(f"{ref.described} has no run-key annotation to record")
    runtime_id = str(annotations_of(job).get(ANNOTATION_RUNTIME_ID) or "")
    return RunRecord(
        run_key=key, namespace=ref.namespace or "", name=ref.name, uid=uid, runtime_id=runtime_id
    )


def pending_runs(created: Iterable[Manifest]) -> list[RunRecord]:
    """The pending records of the objects among `created` (rendered manifests about to be created, so
    no uid yet) that carry a run-key: Jobs, and chart hooks that run once per run-key."""
    runs = (m for m in created if annotations_of(m).get(ANNOTATION_RUN_KEY))
    return [_run_of(run, uid="") for run in runs]


def run_record_of(job: Manifest) -> RunRecord:
    """The record of a Job that exists: its run-key annotation, uid and runtime ID."""
    uid = str(metadata_of(job).get("uid") or "")
    if not uid:
        raise PlannerError(f"{ref_of(job).described} has no run-key annotation or uid to record")
    return _run_of(job, uid=uid)


def with_run_record(ref: ObjectRef, live: Manifest | None, record: RunRecord) -> Manifest:
    """The parent `live` with `record` (a created Job's run) added to its data; a record of the same
    uid already there is kept as it is (it may hold the outcome already)."""
    if live is None:
        raise PlannerError(f"{ref.described} is missing: cannot record the run of {record.name}")
    check_parent(ref, live)
    known = run_records(live).get(record.run_key)
    if known is not None and known.uid == record.uid:
        return live
    return {**live, "data": {**(live.get("data") or {}), record.run_key: encode_run_record(record)}}


def _condition(obj: Manifest, kind: str) -> Mapping[str, object] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _failed_exit_code(pods: Iterable[Manifest]) -> int | None:
    """The non-zero exit code of the newest failed container among a Job's pods, if any pod shows one."""
    by_age = sorted(pods, key=lambda p: str(metadata_of(p).get("creationTimestamp") or ""), reverse=True)
    for pod in by_age:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in (status.get("state") or {}, status.get("lastState") or {}):
                code = (state.get("terminated") or {}).get("exitCode")
                if isinstance(code, int) and code != 0:
                    return code
    return None


def run_outcome(job: Manifest, pods: Iterable[Manifest] = ()) -> RunOutcome | None:
    """How `job` ended, None while it runs: `Complete` is success; `Failed` is failure with the
    condition's reason and message and the exit code `pods` (the Job's) show."""
    if _condition(job, "Complete") is not None:
        return RunOutcome(result=RESULT_SUCCEEDED)
    failed = _condition(job, "Failed")
    if failed is None:
        return None
    return RunOutcome(
        result=RESULT_FAILED,
        reason=str(failed.get("reason") or ""),
        message=str(failed.get("message") or ""),
        exit_code=_failed_exit_code(pods),
    )


def with_run_outcome(ref: ObjectRef, live: Manifest | None, run: RunRecord, outcome: RunOutcome) -> Manifest:
    """The parent `live` with `outcome` recorded for `run` (a Job that exists or existed, with its uid).
    Only the run the parent records is changed: pending (then `run` confirms it, unless the Job was
    deleted before it finished: a replaced Job never confirms its successor's pending record) or of the
    same uid; a run-key it does not record, or records with another uid, is left alone, as is an
    outcome already there — so every observer may call this as often as it likes."""
    if live is None:
        raise PlannerError(f"{ref.described} is missing: cannot record how {run.name} ended")
    check_parent(ref, live)
    known = run_records(live).get(run.run_key)
    if known is None or (known.ran and known.uid != run.uid) or known.outcome == outcome:
        return live
    if not known.ran and outcome.reason == REASON_DELETED:
        return live
    done = dataclasses.replace(run, outcome=outcome)
    return {**live, "data": {**(live.get("data") or {}), run.run_key: encode_run_record(done)}}


# --- the run-record finalizer ------------------------------------------------------------------------


def is_recorded_job(obj: Manifest) -> bool:
    """Whether `obj` is a Job planner records the run of (it carries a run-key)."""
    return obj.get("kind") == JOB.kind and bool(annotations_of(obj).get(ANNOTATION_RUN_KEY))


def with_run_finalizer(manifest: Manifest) -> Manifest:
    """`manifest` as created: a recorded Job, and each pod its template makes, holds the run-record
    finalizer, so neither its TTL nor anyone else removes it before its outcome is recorded. The pods
    hold it too because the TTL controller deletes a finished Job with Foreground propagation: the
    garbage collector deletes its pods first, and with them the failed container's exit code
    (docs/design.md §6). Any other object is returned as it is."""
    metadata = metadata_of(manifest)
    if not is_recorded_job(manifest) or RUN_FINALIZER in (metadata.get("finalizers") or []):
        return manifest
    spec = manifest.get("spec") or {}
    template = spec.get("template") or {}
    return {
        **manifest,
        "metadata": _holding(metadata),
        "spec": {**spec, "template": {**template, "metadata": _holding(template.get("metadata") or {})}},
    }


def _holding(metadata: Mapping[str, Any]) -> dict[str, Any]:
    finalizers = [f for f in metadata.get("finalizers") or [] if f != RUN_FINALIZER]
    return {**metadata, "finalizers": [*finalizers, RUN_FINALIZER]}


def holds_run_finalizer(obj: Manifest) -> bool:
    return RUN_FINALIZER in (metadata_of(obj).get("finalizers") or [])


def run_finalizer_removal(job: Manifest) -> list[dict[str, object]] | None:
    """The JSON patch removing the run-record finalizer from `job` as read — a `test` of the entry
    first, so a list changed since is refused rather than the wrong entry removed — or None when it
    holds none."""
    finalizers = list(metadata_of(job).get("finalizers") or [])
    if RUN_FINALIZER not in finalizers:
        return None
    path = f"/metadata/finalizers/{finalizers.index(RUN_FINALIZER)}"
    return [{"op": "test", "path": path, "value": RUN_FINALIZER}, {"op": "remove", "path": path}]


def final_outcome(job: Manifest, pods: Iterable[Manifest] = ()) -> RunOutcome | None:
    """How a recorded Job ended for good: as `run_outcome` says, or — deleted before it finished — a
    failure `Deleted`; None while it runs."""
    outcome = run_outcome(job, pods)
    if outcome is None and metadata_of(job).get("deletionTimestamp"):
        return RunOutcome(result=RESULT_FAILED, reason=REASON_DELETED, message="deleted before it finished")
    return outcome


# --- the digest key ----------------------------------------------------------------------------------

DIGEST_KEY_BYTES = 32


def digest_key(parent: Manifest | None) -> bytes | None:
    """The parent's key for digesting Secret values in saved plans; None when it has none (yet)."""
    value = ((parent or {}).get("data") or {}).get(DIGEST_KEY)
    try:
        key = base64.b64decode(str(value), validate=True) if value else b""
    except binascii.Error:
        return None
    return key if len(key) == DIGEST_KEY_BYTES else None


def with_digest_key(parent: Manifest, key: bytes) -> Manifest:
    """`parent` holding a digest key: its own when it has one, else `key` (random, from the writer)."""
    if digest_key(parent) is not None:
        return parent
    encoded = base64.b64encode(key).decode("ascii")
    return {**parent, "data": {**(parent.get("data") or {}), DIGEST_KEY: encoded}}


# --- the current generation --------------------------------------------------------------------------

ANNOTATION_GENERATION = "planner.dev/generation"
ANNOTATION_GENERATION_RESULT = "planner.dev/generation-result"


@dataclass(frozen=True)
class CurrentGeneration:
    """The generation the plan's last recorded apply made (`planner.generations`), as its parent names
    it: the number and the result (`converged` or `failed`)."""

    number: int
    result: str


def current_generation(parent: Manifest | None) -> CurrentGeneration | None:
    """The generation a parent names; None when it names none (never recorded) or cannot be read."""
    annotations = annotations_of(parent)
    number = str(annotations.get(ANNOTATION_GENERATION) or "")
    if not number.isdigit() or int(number) < 1:
        return None
    return CurrentGeneration(int(number), str(annotations.get(ANNOTATION_GENERATION_RESULT) or ""))


def with_generation(ref: ObjectRef, live: Manifest | None, generation: CurrentGeneration) -> Manifest:
    """The parent `live` naming `generation` as the plan's current one; a parent that names a later one
    already keeps it (numbers only grow)."""
    if live is None:
        raise PlannerError(f"{ref.described} is missing: cannot record generation {generation.number}")
    check_parent(ref, live)
    known = current_generation(live)
    if known is not None and known.number > generation.number:
        return live
    annotations = {
        **annotations_of(live),
        ANNOTATION_GENERATION: str(generation.number),
        ANNOTATION_GENERATION_RESULT: generation.result,
    }
    return {**live, "metadata": {**_without_managed_fields(live), "annotations": annotations}}


# --- the applied closure ------------------------------------------------------------------------------

APPLIED_KEY = "planner.applied-closure"
APPLIED_HASH_DIGITS = 16  # enough to tell one render from another; the hash is no secret's guard here


@dataclass(frozen=True)
class AppliedClosure:
    """What the last converged apply applied: `<kind>/<namespace>/<name>` → the first 16 hex digits of
    the rendered object's `planner.dev/hash`."""

    hashes: Mapping[str, str]

    @classmethod
    def of(cls, closure: Iterable[Manifest]) -> AppliedClosure:
        return cls({str(ref_of(m)): short_hash(m) for m in closure})

    def encoded(self) -> str:
        """Base64 of gzip (no timestamp, so equal closures encode equally) of canonical JSON."""
        packed = gzip.compress(canonical_json(dict(self.hashes)).encode(), mtime=0)
        return base64.b64encode(packed).decode("ascii")

    def applied(self, ref: ObjectRef) -> bool:
        return str(ref) in self.hashes

    def applied_as(self, ref: ObjectRef, manifest: Manifest) -> bool:
        """Whether `manifest`, as rendered now, is what the last converged apply applied for `ref`."""
        return self.hashes.get(str(ref)) == short_hash(manifest)


def short_hash(manifest: Manifest) -> str:
    return str(annotations_of(manifest).get(ANNOTATION_HASH) or "")[:APPLIED_HASH_DIGITS]


def applied_closure(parent: Manifest | None) -> AppliedClosure | None:
    """The applied closure a parent records; None when it records none (never converged since planner
    began recording, or an entry that does not decode: then nothing can be called drift by it)."""
    value = ((parent or {}).get("data") or {}).get(APPLIED_KEY)
    if not value:
        return None
    try:
        document = json.loads(gzip.decompress(base64.b64decode(str(value), validate=True)))
    except (binascii.Error, OSError, EOFError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    return AppliedClosure({str(key): str(digits) for key, digits in document.items()})


__all__ = [
    "ANNOTATION_ADDITIONAL_NAMESPACES",
    "ANNOTATION_CONTAINS_GROUP_KINDS",
    "ANNOTATION_GENERATION",
    "ANNOTATION_GENERATION_RESULT",
    "ANNOTATION_TOOLING",
    "APPLIED_KEY",
    "DIGEST_KEY",
    "DIGEST_KEY_BYTES",
    "LABEL_APPLYSET_ID",
    "LABEL_PART_OF",
    "PARENT_TYPE",
    "REASON_DELETED",
    "RESERVED_PREFIX",
    "RESULT_FAILED",
    "RESULT_SUCCEEDED",
    "RUN_FINALIZER",
    "AppliedClosure",
    "CurrentGeneration",
    "ParentRecord",
    "RunOutcome",
    "RunRecord",
    "RunResult",
    "Scope",
    "applied_closure",
    "applyset_id",
    "check_parent",
    "current_generation",
    "digest_key",
    "encode_run_record",
    "final_outcome",
    "holds_run_finalizer",
    "is_parent",
    "is_planners",
    "is_recorded_job",
    "listed_scope",
    "member_selector",
    "merged_runs",
    "narrowed",
    "not_managed",
    "not_the_parent",
    "parent_manifest",
    "parent_ref",
    "pending_runs",
    "run_finalizer_removal",
    "run_keys_of",
    "run_outcome",
    "run_record_of",
    "run_records",
    "same_applyset",
    "settled_parent",
    "short_hash",
    "trimmed_run_records",
    "unchanged",
    "with_digest_key",
    "with_generation",
    "with_run_finalizer",
    "with_run_outcome",
    "with_run_record",
]

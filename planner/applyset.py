"""A plan's ApplySet (KEP-3659): the parent Secret that says what the plan manages, and what planner
records in it (DESIGN §3; docs/architecture.md "Parent Secret").

Like cli-utils' `pkg/inventory`, one module owns the object that makes prune safe. Every object a plan
renders carries the part-of label with the ApplySet's id; the parent Secret `<plan>` in the plan's
namespace carries the id label and lists, in two annotations, the group-kinds and the other namespaces
its members span (its `Scope`), so the reader knows where to LIST without reading anything else. The
parent's `data` is planner's record of the Jobs that ran (run-key → `RunRecord`), so a Job runs once
per run-key even after TTL cleanup deleted it.

The scope only ever widens while an apply runs: before any member is written, the parent lists the
union of what it listed and everything the ChangeSet touches (`parent_manifest`), so an apply killed
half-way never hides a member from the next prune; only after an apply converged does it narrow to what
remains (`narrowed`, `settled_parent`).

The same converged apply records its closure as applied (`AppliedClosure`: object → the first 16 hex
digits of its `planner.dev/hash`, gzipped JSON under the data key `applied-closure`, which no 64-hex
run-key can collide with). The diff reads it to tell **drift** (the cluster moved away from what was
applied: a recorded object deleted, an object that joined the ApplySet outside the plan) from
**pending** changes (the plan changed since). Recorded only after convergence, it always names a
closure that was applied completely, and it is replaced, never merged, so it follows prune.

Everything here is pure: what to write, computed from what was read. The reader (`planner.live`) GETs
the parent and LISTs the members in its scope; the writer (`planner.writes`) writes these manifests
under a resourceVersion precondition and reads again on a conflict.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

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


def not_managed(ref: ObjectRef, plan: str) -> str:
    """The sentence for a same-named object outside the plan's ApplySet."""
    return f"{ref.described} exists and is not managed by plan {plan} (use --adopt to take it over)"


def is_planners(parent: Manifest) -> bool:
    """Whether an ApplySet parent was written by planner (rather than another ApplySet tool)."""
    return str(annotations_of(parent).get(ANNOTATION_TOOLING, "")).startswith("planner/")


def check_parent(ref: ObjectRef, live: Manifest) -> None:
    """A same-named Secret that is not this plan's parent is never overwritten."""
    found = labels_of(live).get(LABEL_APPLYSET_ID)
    if live.get("type") != PARENT_TYPE or found != applyset_id(ref.name, ref.namespace or ""):
        raise OwnershipError(
            f"{ref.described} exists and is not the ApplySet parent of plan {ref.name}; "
            "rename the plan or move that secret"
        )


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
    KEP-3659 asks for), and the run-keys of the current closure's Jobs, to which the run record is
    trimmed."""

    group_kinds: tuple[str, ...]
    namespaces: tuple[str, ...]
    run_keys: tuple[str, ...]

    @classmethod
    def covering(cls, refs: Iterable[ObjectRef], closure: Iterable[Manifest]) -> ParentRecord:
        scope = Scope.of(refs)
        return cls(
            group_kinds=tuple(sorted(scope.group_kinds)),
            namespaces=tuple(sorted(scope.namespaces)),
            run_keys=tuple(sorted(run_keys_of(closure))),
        )

    @property
    def scope(self) -> Scope:
        return Scope(group_kinds=frozenset(self.group_kinds), namespaces=frozenset(self.namespaces))


def parent_manifest(ref: ObjectRef, live: Manifest | None, record: ParentRecord) -> Manifest:
    """The parent Secret to write: `live` (if any) with planner's label and annotations, listing the
    union of its scope and `record`'s, its run record trimmed to `record.run_keys`."""
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
        "data": trimmed_run_records(run_records(live), record.run_keys) | _applied_entry(live),
    }


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


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A Job that ran: parent Secret data key = its run-key, value = base64 of canonical JSON
    `{"name","namespace","runtimeId","uid"}` (`runtimeId` is absent from records older than it; the
    monitor then assumes runtime `k8s`)."""

    run_key: str
    namespace: str
    name: str
    uid: str
    runtime_id: str = ""


def encode_run_record(record: RunRecord) -> str:
    document = {"name": record.name, "namespace": record.namespace, "uid": record.uid}
    if record.runtime_id:
        document["runtimeId"] = record.runtime_id
    return base64.b64encode(canonical_json(document).encode()).decode("ascii")


def run_records(parent: Manifest | None) -> dict[str, RunRecord]:
    """The run-keys recorded in the parent Secret; entries that do not decode are ignored (another
    tool's data, or a hand edit), so a bad entry at worst re-runs a Job."""
    records: dict[str, RunRecord] = {}
    for key, value in ((parent or {}).get("data") or {}).items():
        try:
            document = json.loads(base64.b64decode(str(value), validate=True))
            records[key] = RunRecord(
                run_key=key,
                namespace=str(document["namespace"]),
                name=str(document["name"]),
                uid=str(document["uid"]),
                runtime_id=str(document.get("runtimeId") or ""),
            )
        except (binascii.Error, ValueError, KeyError, TypeError):
            continue
    return records


def run_keys_of(closure: Iterable[Manifest]) -> set[str]:
    """The run-keys the closure's Jobs carry."""
    keys = (annotations_of(m).get(ANNOTATION_RUN_KEY) for m in closure if m.get("kind") == JOB.kind)
    return {str(key) for key in keys if key}


def trimmed_run_records(records: Mapping[str, RunRecord], run_keys: Iterable[str]) -> dict[str, str]:
    """The parent Secret's `data`: the records of these run-keys only, so it never outgrows the plan."""
    kept = set(run_keys)
    return {key: encode_run_record(records[key]) for key in sorted(records) if key in kept}


def run_record_of(job: Manifest) -> RunRecord:
    """The record of a Job just created: its run-key annotation, uid and runtime ID."""
    key = str(annotations_of(job).get(ANNOTATION_RUN_KEY) or "")
    uid = str(metadata_of(job).get("uid") or "")
    ref = ref_of(job)
    if not key or not uid:
        raise PlannerError(f"{ref.described} has no run-key annotation or uid to record")
    runtime_id = str(annotations_of(job).get(ANNOTATION_RUNTIME_ID) or "")
    return RunRecord(
        run_key=key, namespace=ref.namespace or "", name=ref.name, uid=uid, runtime_id=runtime_id
    )


# --- the applied closure ------------------------------------------------------------------------------

APPLIED_KEY = "applied-closure"
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


def _applied_entry(live: Manifest | None) -> dict[str, str]:
    value = ((live or {}).get("data") or {}).get(APPLIED_KEY)
    return {APPLIED_KEY: str(value)} if value else {}


def with_run_record(ref: ObjectRef, live: Manifest | None, record: RunRecord) -> Manifest:
    """The parent `live` with `record` added to its data."""
    if live is None:
        raise PlannerError(f"{ref.described} is missing: cannot record the run of {record.name}")
    check_parent(ref, live)
    return {**live, "data": {**(live.get("data") or {}), record.run_key: encode_run_record(record)}}


__all__ = [
    "ANNOTATION_ADDITIONAL_NAMESPACES",
    "ANNOTATION_CONTAINS_GROUP_KINDS",
    "ANNOTATION_TOOLING",
    "APPLIED_KEY",
    "LABEL_APPLYSET_ID",
    "LABEL_PART_OF",
    "PARENT_TYPE",
    "AppliedClosure",
    "ParentRecord",
    "RunRecord",
    "Scope",
    "applied_closure",
    "applyset_id",
    "check_parent",
    "encode_run_record",
    "is_planners",
    "listed_scope",
    "member_selector",
    "narrowed",
    "not_managed",
    "parent_manifest",
    "parent_ref",
    "run_keys_of",
    "run_record_of",
    "run_records",
    "same_applyset",
    "settled_parent",
    "short_hash",
    "trimmed_run_records",
    "unchanged",
    "with_run_record",
]

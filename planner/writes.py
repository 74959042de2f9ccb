"""The executor's writes against a real cluster (DESIGN §3): creates, server-side applies, deletes,
Namespaces, and the ApplySet parent Secret with its run record.

**Creates are POSTs, then an apply.** A POST is the only atomic "create if absent": a 409
AlreadyExists tells a retry after a partial apply (the object carries this plan's part-of label:
success, the existing object is returned) from a same-named object someone else owns (an
`OwnershipError` naming it, and the object is left untouched). A server-side apply create cannot tell
the two apart: with `force` it would silently take over the foreign object. But a POST leaves only an
`Update` entry in managedFields, which also owns every field the server defaulted, and a field owned
by any entry survives later applies — so a field the plan later drops would never go. So right after
the POST, planner applies the same manifest (its `Apply` entry now owns exactly the declared fields)
and removes the create's `Update` entry with a JSON patch guarded by `test` operations. Three requests
per create, once per object's life; the object ends with the managedFields an apply-create would give.
When the server records no managedFields the last step is skipped.

**Updates** are server-side applies as `planner` with `force=true`: the plan is the truth for the
fields it declares; fields it does not declare (an HPA's replicas) stay with their owners.

**The parent Secret** (`<plan>`, type `planner.dev/applyset`) is written with a resourceVersion
precondition and re-read on a 409 Conflict, so two writers never lose each other's run records: its
group-kinds and namespaces become the union of what it lists and what the new ChangeSet touches
(KEP-3659's superset, so an interrupted apply never hides objects from the next prune), and its run
record is trimmed to the current closure's run-keys. `record_run` adds one run-key → uid the same way.

**Tightening.** Only after an apply converged completely does `tighten_parent` set the group-kinds
and namespaces to exactly what remains (the closure plus members kept by a keep annotation); an apply
that fails or is killed leaves the superset, so the next run still lists — and prunes — every member.

**Crash points (test-only).** `PLANNER_TEST_CRASH_AT` makes the process SIGKILL itself at one point,
read in `_crash_if_asked` only, so crash-safety tests are deterministic: `after-parent` (the parent's
superset is written, no member yet), `after-writes:N` (after the N-th member create or apply),
`after-deletes:N` (after the N-th delete, e.g. mid-prune). Never set it outside tests.

Every write reports the resourceVersion it produced to `WrittenVersions`, which the status source uses
to ignore cached copies older than planner's own write (a wait must not see yesterday's "ready").
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Mapping
from typing import Any

from planner import __version__
from planner.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    OwnershipError,
    PlannerError,
)
from planner.graph import ParentRecord
from planner.kinds import NAMESPACE, SECRET, KindInfo, by_kind, for_manifest
from planner.kube.client import KubeClient, resource_path
from planner.objects import (
    ANNOTATION_PLAN,
    ANNOTATION_RUN_KEY,
    ANNOTATION_RUNTIME_ID,
    FIELD_MANAGER,
    Manifest,
    ObjectRef,
    annotations_of,
    labels_of,
    metadata_of,
    ref_of,
)
from planner.render.identity import (
    ANNOTATION_ADDITIONAL_NAMESPACES,
    ANNOTATION_CONTAINS_GROUP_KINDS,
    ANNOTATION_TOOLING,
    APPLYSET_PARENT_TYPE,
    LABEL_APPLYSET_ID,
    LABEL_PART_OF,
    applyset_id,
)
from planner.runrecords import RunRecord, encode_run_record, run_records

JSON_PATCH = "application/json-patch+json"
PRECONDITION_ATTEMPTS = 8
CRASH_ENV = "PLANNER_TEST_CRASH_AT"


def _crash_if_asked(point: str, count: int = 0) -> None:
    """SIGKILL this process at the crash point named in PLANNER_TEST_CRASH_AT (test-only, see above)."""
    wanted = os.environ.get(CRASH_ENV)
    if wanted and wanted in (point, f"{point}:{count}"):
        os.kill(os.getpid(), signal.SIGKILL)


class WrittenVersions:
    """The resourceVersion of planner's last write per object, shared by the writer and the waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: dict[ObjectRef, str] = {}

    def record(self, written: Mapping[str, Any]) -> None:
        version = str(metadata_of(written).get("resourceVersion") or "")
        if version:
            with self._lock:
                self._versions[ref_of(written)] = version

    def get(self, ref: ObjectRef) -> str | None:
        with self._lock:
            return self._versions.get(ref)


def _listed(value: str | None) -> set[str]:
    return {item for item in (value or "").split(",") if item}


class KubeWriter:
    """`execute.Writer` over a KubeClient (thread-safe: the executor calls it from its pool)."""

    def __init__(self, client: KubeClient, *, written: WrittenVersions | None = None) -> None:
        self.client = client
        self.written = written or WrittenVersions()
        self._counts = {"after-writes": 0, "after-deletes": 0}
        self._count_lock = threading.Lock()

    def _counted(self, point: str) -> None:
        with self._count_lock:
            self._counts[point] += 1
            count = self._counts[point]
        _crash_if_asked(point, count)

    # --- members ---

    def create(self, manifest: Manifest) -> Manifest:
        kind, ref = for_manifest(manifest), ref_of(manifest)
        try:
            created = self.client.request(
                "POST",
                resource_path(kind, ref.namespace),
                query={"fieldManager": FIELD_MANAGER},
                body=manifest,
                verb="create",
            )
        except AlreadyExistsError:
            existing = self._get(kind, ref)
            if existing is None:  # deleted in between: try once more from the top
                return self.create(manifest)
            self._check_owned(manifest, existing)
            return self._recorded(existing)
        applied = self._apply(manifest)
        done = self._recorded(self._without_create_entry(kind, ref, applied) or created)
        self._counted("after-writes")
        return done

    def apply(self, manifest: Manifest) -> Manifest:
        applied = self._apply(manifest)
        self._counted("after-writes")
        return applied

    def _apply(self, manifest: Manifest) -> Manifest:
        applied = self.client.server_side_apply(
            for_manifest(manifest), manifest, field_manager=FIELD_MANAGER, force=True
        )
        return self._recorded(applied)

    def delete(self, ref: ObjectRef, *, propagation: str) -> None:
        kind = by_kind(ref.kind)
        try:
            self.client.request(
                "DELETE",
                resource_path(kind, ref.namespace, ref.name),
                body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation},
                verb="delete",
            )
        except NotFoundError:
            return
        self._counted("after-deletes")

    def ensure_namespace(self, name: str) -> Manifest:
        ref = ObjectRef.of(NAMESPACE, name)
        existing = self._get(NAMESPACE, ref)
        if existing is not None:
            return existing
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            return self.client.request(
                "POST",
                resource_path(NAMESPACE),
                query={"fieldManager": FIELD_MANAGER},
                body=body,
                verb="create",
            )
        except AlreadyExistsError:
            return self._get(NAMESPACE, ref) or body

    # --- the ApplySet parent ---

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        def updated(live: Manifest | None) -> Manifest:
            return parent_manifest(ref, record, live)

        written = self._precondition_loop(ref, updated)
        _crash_if_asked("after-parent")
        return written

    def tighten_parent(self, ref: ObjectRef, *, group_kinds: set[str], namespaces: set[str]) -> Manifest:
        """Set the parent's group-kinds and namespaces to exactly these (after a converged apply only)."""

        def updated(live: Manifest | None) -> Manifest:
            if live is None:
                raise PlannerError(f"{ref.described} is missing: nothing to tighten")
            _check_parent(ref, live)
            return tightened_parent(live, ref, group_kinds=group_kinds, namespaces=namespaces)

        return self._precondition_loop(ref, updated)

    def record_run(self, parent: ObjectRef, job: Manifest) -> Manifest:
        key = str(annotations_of(job).get(ANNOTATION_RUN_KEY) or "")
        uid = str(metadata_of(job).get("uid") or "")
        if not key or not uid:
            raise PlannerError(f"{ref_of(job).described} has no run-key annotation or uid to record")
        job_ref = ref_of(job)
        runtime_id = str(annotations_of(job).get(ANNOTATION_RUNTIME_ID) or "")
        record = RunRecord(
            run_key=key, namespace=job_ref.namespace or "", name=job_ref.name, uid=uid, runtime_id=runtime_id
        )
        entry = encode_run_record(record)

        def updated(live: Manifest | None) -> Manifest:
            if live is None:
                raise PlannerError(f"{parent.described} is missing: cannot record the run of {job_ref.name}")
            _check_parent(parent, live)
            return {**live, "data": {**(live.get("data") or {}), key: entry}}

        return self._precondition_loop(parent, updated)

    def _precondition_loop(self, ref: ObjectRef, updated: Callable[[Manifest | None], Manifest]) -> Manifest:
        """Read, change, write with the read's resourceVersion; on a conflict read again."""
        for _ in range(PRECONDITION_ATTEMPTS):
            live = self._get(SECRET, ref)
            body = updated(live)
            if live is not None and _unchanged(live, body):
                return live
            try:
                if live is None:
                    path = resource_path(SECRET, ref.namespace)
                    return self.client.request(
                        "POST", path, query={"fieldManager": FIELD_MANAGER}, body=body, verb="create"
                    )
                path = resource_path(SECRET, ref.namespace, ref.name)
                return self.client.request(
                    "PUT", path, query={"fieldManager": FIELD_MANAGER}, body=body, verb="update"
                )
            except ConflictError:  # AlreadyExists included: someone wrote first; read theirs
                continue
        raise PlannerError(f"{ref.described}: still conflicting after {PRECONDITION_ATTEMPTS} attempts")

    # --- helpers ---

    def _get(self, kind: KindInfo, ref: ObjectRef) -> Manifest | None:
        try:
            return self.client.request("GET", resource_path(kind, ref.namespace, ref.name), verb="get")
        except NotFoundError:
            return None

    def _recorded(self, written: Manifest) -> Manifest:
        self.written.record(written)
        return written

    def _check_owned(self, manifest: Manifest, existing: Manifest) -> None:
        wanted = labels_of(manifest).get(LABEL_PART_OF)
        found = labels_of(existing).get(LABEL_PART_OF)
        if wanted and found == wanted:
            return
        plan = annotations_of(manifest).get(ANNOTATION_PLAN, "")
        raise OwnershipError(
            f"{ref_of(manifest).described} exists and is not managed by plan {plan} "
            "(use --adopt to take it over)"
        )

    def _without_create_entry(self, kind: KindInfo, ref: ObjectRef, applied: Manifest) -> Manifest | None:
        """Drop the POST's `Update` entry of `planner` (see the module docstring); None when there is
        none, or when the object changed in between (then the entry stays: harmless until a field is
        dropped, and the next create-less apply leaves it as it is)."""
        entries = metadata_of(applied).get("managedFields") or []
        index = next(
            (
                i
                for i, entry in enumerate(entries)
                if entry.get("manager") == FIELD_MANAGER
                and entry.get("operation") == "Update"
                and not entry.get("subresource")
            ),
            None,
        )
        if index is None:
            return None
        where = f"/metadata/managedFields/{index}"
        operations = [
            {
                "op": "test",
                "path": "/metadata/resourceVersion",
                "value": metadata_of(applied)["resourceVersion"],
            },
            {"op": "test", "path": f"{where}/manager", "value": FIELD_MANAGER},
            {"op": "test", "path": f"{where}/operation", "value": "Update"},
            {"op": "remove", "path": where},
        ]
        try:
            return self.client.request(
                "PATCH",
                resource_path(kind, ref.namespace, ref.name),
                body=operations,
                content_type=JSON_PATCH,
                verb="patch",
            )
        except (InvalidError, ConflictError):
            return None


def parent_manifest(ref: ObjectRef, record: ParentRecord, live: Manifest | None) -> Manifest:
    """The parent Secret to write: `live` (if any) with planner's label and annotations, the union of
    listed group-kinds and namespaces, and its run record trimmed to `record.run_keys`."""
    if live is not None:
        _check_parent(ref, live)
    metadata = {k: v for k, v in metadata_of(live).items() if k != "managedFields"}
    annotations = dict(metadata.get("annotations") or {})
    group_kinds = _listed(annotations.get(ANNOTATION_CONTAINS_GROUP_KINDS)) | set(record.group_kinds)
    namespaces = _listed(annotations.get(ANNOTATION_ADDITIONAL_NAMESPACES)) | set(record.namespaces)
    namespaces.discard(ref.namespace or "")
    annotations |= {
        ANNOTATION_TOOLING: f"planner/{__version__}",
        ANNOTATION_CONTAINS_GROUP_KINDS: ",".join(sorted(group_kinds)),
        ANNOTATION_PLAN: ref.name,
    }
    if namespaces:
        annotations[ANNOTATION_ADDITIONAL_NAMESPACES] = ",".join(sorted(namespaces))
    labels = {**(metadata.get("labels") or {}), LABEL_APPLYSET_ID: applyset_id(ref.name, ref.namespace or "")}
    records = run_records(live)
    kept = {key: encode_run_record(records[key]) for key in sorted(records) if key in set(record.run_keys)}
    new_metadata = {**metadata, "name": ref.name, "namespace": ref.namespace, "labels": labels}
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": new_metadata | {"annotations": annotations},
        "type": (live or {}).get("type") or APPLYSET_PARENT_TYPE,
        "data": kept,
    }


def tightened_parent(
    live: Manifest, ref: ObjectRef, *, group_kinds: set[str], namespaces: set[str]
) -> Manifest:
    """`live` listing exactly `group_kinds` and `namespaces` (the plan's own namespace is implied)."""
    metadata = {k: v for k, v in metadata_of(live).items() if k != "managedFields"}
    annotations = dict(metadata.get("annotations") or {})
    annotations[ANNOTATION_CONTAINS_GROUP_KINDS] = ",".join(sorted(group_kinds))
    others = sorted(namespaces - {ref.namespace or ""})
    annotations.pop(ANNOTATION_ADDITIONAL_NAMESPACES, None)
    if others:
        annotations[ANNOTATION_ADDITIONAL_NAMESPACES] = ",".join(others)
    return {**live, "metadata": {**metadata, "annotations": annotations}}


def listed_in_parent(parent: Manifest | None) -> tuple[set[str], set[str]]:
    """The group-kinds and additional namespaces a parent Secret lists."""
    annotations = metadata_of(parent).get("annotations") or {}
    return (
        _listed(annotations.get(ANNOTATION_CONTAINS_GROUP_KINDS)),
        _listed(annotations.get(ANNOTATION_ADDITIONAL_NAMESPACES)),
    )


def _unchanged(live: Manifest, body: Manifest) -> bool:
    """Whether writing `body` would change nothing planner manages on the parent."""
    return all(
        metadata_of(live).get(key) == metadata_of(body).get(key) for key in ("labels", "annotations")
    ) and (live.get("data") or {}) == (body.get("data") or {})


def _check_parent(ref: ObjectRef, live: Manifest) -> None:
    """A same-named Secret that is not this plan's parent is never overwritten."""
    found = (metadata_of(live).get("labels") or {}).get(LABEL_APPLYSET_ID)
    if live.get("type") != APPLYSET_PARENT_TYPE or found != applyset_id(ref.name, ref.namespace or ""):
        raise OwnershipError(
            f"{ref.described} exists and is not the ApplySet parent of plan {ref.name}; "
            "rename the plan or move that secret"
        )


__all__ = [
    "CRASH_ENV",
    "FIELD_MANAGER",
    "KubeWriter",
    "WrittenVersions",
    "listed_in_parent",
    "parent_manifest",
    "tightened_parent",
]

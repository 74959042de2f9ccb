"""The executor's writes against a real cluster (docs/design.md §3): creates, server-side applies, deletes,
Namespaces, and the ApplySet parent Secret with its run record.

A create is a server-side apply that only creates (a resourceVersion no object has: an existing one
fails it with 409 before anything is written, so a foreign object is never taken over), one request;
a recorded Job, which holds the run-record finalizer outside planner's fields, is a POST and one
guarded JSON patch that leaves planner's `Apply` entry owning exactly the declared fields. An update is
a server-side apply with force. The parent is written as `planner.state.applyset` computes it, under a
resourceVersion precondition, read again on a conflict, and keeps planner's reserved data entries.
`PLANNER_TEST_CRASH_AT` (tests only) kills the process at a named point. Every write reports the
resourceVersion it produced to `WrittenVersions`, so a wait never trusts an older cached copy.

A Job is created holding the finalizer `planner.dev/run-record`, outside the fields planner's
`Apply` entry owns, and `release_run` removes it once the run's outcome is recorded.
The rules in full, and why, are in docs/architecture.md ("Module notes", writes.py).
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
from collections.abc import Callable, Mapping
from typing import Any

from planner.canonical import applied_part
from planner.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    OwnershipError,
    PlannerError,
    namespace_terminating,
)
from planner.kinds import JOB, NAMESPACE, SECRET, KindInfo
from planner.kube.client import KubeClient, resource_path
from planner.kube.discovery import Kinds
from planner.monitor.lifecycle import release_run_finalizer
from planner.objects import (
    ANNOTATION_PLAN,
    FIELD_MANAGER,
    Manifest,
    ObjectRef,
    annotations_of,
    metadata_of,
    namespace_manifest,
    ref_of,
)
from planner.state.applyset import (
    DIGEST_KEY_BYTES,
    AppliedClosure,
    CurrentGeneration,
    ParentRecord,
    RunOutcome,
    Scope,
    check_parent,
    digest_key,
    is_parent,
    not_managed,
    parent_manifest,
    run_record_of,
    same_applyset,
    settled_parent,
    unchanged,
    with_digest_key,
    with_generation,
    with_run_finalizer,
    with_run_outcome,
    with_run_record,
)

JSON_PATCH = "application/json-patch+json"
PRECONDITION_ATTEMPTS = 8
# etcd's first write is at revision 2, so no object is ever at 1 (the embedded cluster's first object,
# a bootstrap Namespace, is; planner never creates one by apply)
CREATE_ONLY_VERSION = "1"
CRASH_ENV = "PLANNER_TEST_CRASH_AT"


def new_digest_key() -> bytes:
    """A fresh random key for a parent that has none (`applyset.with_digest_key` keeps an existing one)."""
    return secrets.token_bytes(DIGEST_KEY_BYTES)


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


def _create_as_planner(client: KubeClient, kind: KindInfo, namespace: str | None, body: Manifest) -> Manifest:
    """POST `body` into `kind`'s collection in `namespace` (None: cluster-scoped), as planner's field
    manager: the one create every write here makes."""
    return client.request(
        "POST",
        resource_path(kind, namespace),
        query={"fieldManager": FIELD_MANAGER},
        body=body,
        verb="create",
    )


def create_namespace(client: KubeClient, name: str) -> Manifest | None:
    """Create the empty Namespace `name`: it as created, None when it exists already."""
    try:
        return _create_as_planner(client, NAMESPACE, None, namespace_manifest(name))
    except AlreadyExistsError:
        return None


class GenerationTaken(PlannerError):
    """A generation record's name is taken: another run recorded that number, or an earlier plan of
    the same name left its records."""


class KubeWriter:
    """`execute.Writer` over a KubeClient (thread-safe: the executor calls it from its pool)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        written: WrittenVersions | None = None,
    ) -> None:
        self.client = client
        self.kinds = Kinds(client)  # resolved at write time: a CRD created earlier in the run serves now
        self.written = written or WrittenVersions()
        self._counts = {"after-writes": 0, "after-deletes": 0}
        self._parents: dict[ObjectRef, Manifest | None] = {}  # as last written or read; None: absent
        self._count_lock = threading.Lock()

    def _counted(self, point: str) -> None:
        with self._count_lock:
            self._counts[point] += 1
            count = self._counts[point]
        _crash_if_asked(point, count)

    # --- members ---

    def create(self, manifest: Manifest) -> Manifest:
        kind, ref = self.kinds.for_manifest(manifest), ref_of(manifest)
        held = with_run_finalizer(manifest)
        try:
            if held is manifest:
                done = self._recorded(self._apply_creating(kind, manifest))
            else:  # the run-record finalizer must stay outside planner's `Apply` entry
                created = _create_as_planner(self.client, kind, ref.namespace, held)
                owned = self._create_entry_as_applied(kind, ref, manifest, created)
                done = self._recorded(owned or self._applied_after_create(kind, ref, manifest))
        except ConflictError:  # AlreadyExists, or the create-only apply's precondition: it exists
            existing = self._get(kind, ref)
            if existing is None:  # deleted in between: try once more from the top
                return self.create(manifest)
            self._check_owned(manifest, existing)
            return self._recorded(existing)
        self._counted("after-writes")
        return done

    def _apply_creating(self, kind: KindInfo, manifest: Manifest) -> Manifest:
        """A server-side apply that only creates: it carries a resourceVersion no object has, so an
        existing object fails the precondition with 409 before anything is written (a foreign one is
        never taken over), while the apiserver's create through its update path ignores it."""
        metadata = {**metadata_of(manifest), "resourceVersion": CREATE_ONLY_VERSION}
        return self.client.server_side_apply(
            kind, {**manifest, "metadata": metadata}, field_manager=FIELD_MANAGER, force=False
        )

    def apply(self, manifest: Manifest) -> Manifest:
        applied = self._apply(manifest)
        self._counted("after-writes")
        return applied

    def _apply(self, manifest: Manifest) -> Manifest:
        applied = self.client.server_side_apply(
            self.kinds.for_manifest(manifest), manifest, field_manager=FIELD_MANAGER, force=True
        )
        return self._recorded(applied)

    def delete(self, ref: ObjectRef, *, propagation: str) -> None:
        kind = self.kinds.of_group_kind(ref.group_kind)
        if kind is None:  # its kind is served no more (its CRD went first): nothing is left of it
            return
        try:
            self.client.request(
                "DELETE",
                resource_path(kind, ref.namespace, ref.name),
                body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation},
                verb="delete",
            )
        except NotFoundError:
            return
        if kind == JOB and (job := self._get(JOB, ref)) is not None:
            release_run_finalizer(self.client, job)  # a Job planner deletes has nothing left to record
        self._counted("after-deletes")

    def release_run(self, job: Manifest) -> None:
        """Let a recorded Job go once its outcome is in its run record: remove its run-record finalizer."""
        release_run_finalizer(self.client, job)

    def ensure_namespace(self, name: str) -> tuple[Manifest, bool]:
        ref = ObjectRef.of(NAMESPACE, name)
        existing = self._get(NAMESPACE, ref)
        if existing is not None:
            return existing, False
        created = create_namespace(self.client, name)
        if created is None:  # created meanwhile, by another run
            return self._get(NAMESPACE, ref) or namespace_manifest(name), False
        return created, True

    # --- the ApplySet parent (what to write is planner.state.applyset's; here it is written) ---

    def remember_parent(self, ref: ObjectRef, live: Manifest | None) -> None:
        """The parent as the caller just read it (None: there was none), for this writer's first write
        of it to start from instead of reading it again."""
        self._parents[ref] = live

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        """The parent's superset, pending runs and a digest key (kept when it has one, else new)."""
        _crash_if_asked("before-parent")
        written = self._precondition_loop(
            ref,
            lambda live: with_digest_key(
                parent_manifest(ref, live, record), record.digest_key or new_digest_key()
            ),
        )
        _crash_if_asked("after-parent")
        return written

    def ensure_digest_key(self, ref: ObjectRef, wanted: bytes | None = None) -> bytes:
        """The parent's digest key, added (`wanted`, else a new one) when it has none; a parent that does
        not exist yet is created holding only the key (and listing no members)."""
        empty = ParentRecord(group_kinds=(), namespaces=(), run_keys=())

        def keyed(live: Manifest | None) -> Manifest:
            body = live if live is not None else parent_manifest(ref, None, empty)
            check_parent(ref, body)
            return with_digest_key(body, wanted or new_digest_key())

        key = digest_key(self._precondition_loop(ref, keyed))
        if key is None:  # cannot happen: the body written holds one
            raise PlannerError(f"{ref.described} holds no digest key after writing one")
        return key

    def settle_parent(self, ref: ObjectRef, scope: Scope | None, applied: AppliedClosure) -> Manifest:
        """Record `applied` as the applied closure and, when given, make the parent list exactly `scope`
        (after a converged apply only)."""
        return self._precondition_loop(
            ref, lambda live: settled_parent(ref, live, scope=scope, applied=applied)
        )

    # --- generation records (what to write is planner.generations'; here it is written) ---

    def record_generation(self, record: Manifest) -> Manifest | None:
        """Create a generation record; None when its namespace does not exist or is being deleted
        (nothing was written: there is no history left to keep)."""
        ref = ref_of(record)
        try:
            return _create_as_planner(self.client, SECRET, ref.namespace, record)
        except NotFoundError:
            return None
        except ForbiddenError as refused:
            if namespace_terminating(refused):
                return None
            raise
        except AlreadyExistsError as taken:
            raise GenerationTaken(
                f"{ref.described} already exists: another run recorded that generation (the run lock "
                "was lost or taken over)"
            ) from taken

    def forget_generation(self, ref: ObjectRef) -> None:
        """Delete a generation record retention no longer keeps (gone already is fine)."""
        try:
            self.client.request("DELETE", resource_path(SECRET, ref.namespace, ref.name), verb="delete")
        except NotFoundError:
            return

    def parent(self, ref: ObjectRef) -> Manifest | None:
        """The parent as this writer last wrote or was told of it (the run lock makes it the only
        writer), else as read now."""
        if ref not in self._parents:
            self._parents[ref] = self._get(SECRET, ref)
        return self._parents[ref]

    def mark_generation(
        self,
        ref: ObjectRef,
        generation: CurrentGeneration,
        *,
        read: Manifest | None = None,
        settling: Callable[[Manifest], Manifest] | None = None,
    ) -> Manifest | None:
        """Name `generation` as the plan's current one on its parent, after `settling` it when given
        (one write for both); None when there is no parent (or a Secret at its place that is not the
        plan's parent: an ownership conflict the apply reported). `read`: the parent as the caller read
        it since its last write, else the copy this writer remembers, else a fresh read (a newer one
        fails the write's precondition, and is read then)."""

        def marked(live: Manifest | None) -> Manifest:
            settled = settling(live) if settling is not None and live is not None else live
            return with_generation(ref, settled, generation)

        remembered = self._parents.get(ref) if read is None else None
        if remembered is not None and is_parent(ref, remembered):
            try:
                return self._precondition_loop(ref, marked)
            except PlannerError:  # gone or replaced since: judged on a fresh read, as without a copy
                pass
        live = read if read is not None else self._get(SECRET, ref)
        if live is None or not is_parent(ref, live):
            return None
        return self._precondition_loop(ref, marked, read=live)

    def record_run(self, parent: ObjectRef, job: Manifest) -> Manifest:
        record = run_record_of(job)
        written = self._precondition_loop(parent, lambda live: with_run_record(parent, live, record))
        _crash_if_asked("after-record-run")
        return written

    def record_outcome(self, parent: ObjectRef, job: Manifest, outcome: RunOutcome) -> Manifest | None:
        """Record how `job` ended in its run record (see `applyset.with_run_outcome`: idempotent); None
        when the parent is gone (its namespace being deleted: there is nothing left to record into)."""
        run = run_record_of(job)
        live = self._get(SECRET, parent)
        if live is None:
            return None
        return self._precondition_loop(
            parent, lambda live: with_run_outcome(parent, live, run, outcome), read=live
        )

    def _precondition_loop(
        self, ref: ObjectRef, updated: Callable[[Manifest | None], Manifest], *, read: Manifest | None = None
    ) -> Manifest:
        """Read, change, write with the read's resourceVersion; on a conflict read again. The first read
        is `read` when the caller just read it, else the copy this writer last wrote or was told of, if
        any: a hint only. A newer Secret fails the write's precondition (a create of one that exists
        now, as AlreadyExists); what a remembered copy would settle without writing (no change needed,
        or a refusal) is settled only on a fresh read."""
        remembered = read is None and ref in self._parents
        live = read if read is not None else self._parents[ref] if remembered else self._get(SECRET, ref)
        for _attempt in range(PRECONDITION_ATTEMPTS):
            try:
                body = updated(live)
            except PlannerError:
                if not remembered:
                    raise
                live, remembered = self._get(SECRET, ref), False
                continue
            if live is not None and unchanged(live, body):
                if not remembered:
                    return live
                live, remembered = self._get(SECRET, ref), False
                continue
            try:
                written = self._write_secret(ref, live, body)
            except ConflictError:  # AlreadyExists included: someone wrote first; read theirs
                live, remembered = self._get(SECRET, ref), False
                continue
            self._parents[ref] = written
            return written
        raise PlannerError(f"{ref.described}: still conflicting after {PRECONDITION_ATTEMPTS} attempts")

    def _write_secret(self, ref: ObjectRef, live: Manifest | None, body: Manifest) -> Manifest:
        """Create `body` when there was no `live` Secret, else replace it (under `body`'s resourceVersion)."""
        if live is None:
            return _create_as_planner(self.client, SECRET, ref.namespace, body)
        path = resource_path(SECRET, ref.namespace, ref.name)
        return self.client.request(
            "PUT", path, query={"fieldManager": FIELD_MANAGER}, body=body, verb="update"
        )

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
        if not same_applyset(manifest, existing):
            plan = str(annotations_of(manifest).get(ANNOTATION_PLAN, ""))
            raise OwnershipError(not_managed(ref_of(manifest), plan, existing))

    def _create_entry_as_applied(
        self, kind: KindInfo, ref: ObjectRef, manifest: Manifest, created: Manifest
    ) -> Manifest | None:
        """Replace the POST's `Update` entry of `planner` with its `Apply` entry for the declared
        fields (see the module docstring); None when there is no such entry, nothing of it is
        declared, or the entry itself changed in between. The apiserver sorts entries by operation,
        second and manager, so a controller's status entry written in the same second comes first and
        moves planner's one place down: the patch is tried there next, and only then is the object
        read for where the entry went."""
        found = _create_entry(created)
        if found is None:
            return None
        index, entry = found
        fields = applied_part(entry.get("fieldsV1") or {}, manifest)
        if not fields:
            return None
        applied = {**entry, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": fields}
        for position in (index, index + 1):
            patched = self._replace_create_entry(kind, ref, position, entry, applied)
            if patched is not None:
                return patched
        current = self._get(kind, ref)
        moved = _create_entry(current) if current is not None else None
        if moved is None or moved[1].get("fieldsV1") != entry.get("fieldsV1"):
            return None
        return self._replace_create_entry(kind, ref, moved[0], moved[1], applied)

    def _replace_create_entry(
        self, kind: KindInfo, ref: ObjectRef, index: int, entry: Mapping[str, Any], applied: Manifest
    ) -> Manifest | None:
        replace = {"op": "replace", "path": f"/metadata/managedFields/{index}", "value": applied}
        return self._patch_create_entry(kind, ref, index, entry, replace)

    def _applied_after_create(self, kind: KindInfo, ref: ObjectRef, manifest: Manifest) -> Manifest:
        """The three-request way: apply the manifest, then remove the POST's `Update` entry."""
        applied = self._apply(manifest)
        found = _create_entry(applied)
        if found is None:
            return applied
        index, entry = found
        remove = {"op": "remove", "path": f"/metadata/managedFields/{index}"}
        return self._patch_create_entry(kind, ref, index, entry, remove) or applied

    def _patch_create_entry(
        self, kind: KindInfo, ref: ObjectRef, index: int, entry: Mapping[str, Any], change: dict[str, Any]
    ) -> Manifest | None:
        """One JSON patch of the create's entry at `index`, only if it is still `entry`: planner's
        `Update` owning the same fields. Other writes in between (a controller's status, another
        manager's entry) do not matter; None when the entry itself changed."""
        where = f"/metadata/managedFields/{index}"
        operations = [
            {"op": "test", "path": f"{where}/manager", "value": FIELD_MANAGER},
            {"op": "test", "path": f"{where}/operation", "value": "Update"},
            {"op": "test", "path": f"{where}/fieldsV1", "value": entry.get("fieldsV1") or {}},
            change,
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


def _create_entry(obj: Manifest) -> tuple[int, dict[str, Any]] | None:
    """The position and content of the `Update` entry a POST by `planner` recorded, if any."""
    entries = metadata_of(obj).get("managedFields") or []
    return next(
        (
            (i, entry)
            for i, entry in enumerate(entries)
            if entry.get("manager") == FIELD_MANAGER
            and entry.get("operation") == "Update"
            and not entry.get("subresource")
        ),
        None,
    )


__all__ = ["CRASH_ENV", "GenerationTaken", "KubeWriter", "WrittenVersions"]

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

**The parent Secret** (`<plan>`) is written as `planner.applyset` computes it from the copy just
read, with that copy's resourceVersion as precondition, and read again on a 409 Conflict, so two
writers never lose each other's run records: `write_parent` writes the superset before any member,
`record_run` adds one run-key → uid, and `settle_parent`, only after an apply converged completely,
records the closure as applied and narrows the listed scope to what remains; an apply that fails or is
killed leaves the superset (and the previous applied closure), so the next run still lists — and
prunes — every member.

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

from planner.applyset import (
    AppliedClosure,
    ParentRecord,
    Scope,
    not_managed,
    parent_manifest,
    run_record_of,
    same_applyset,
    settled_parent,
    unchanged,
    with_run_record,
)
from planner.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    OwnershipError,
    PlannerError,
)
from planner.kinds import NAMESPACE, SECRET, KindInfo, by_kind, for_manifest
from planner.kube.client import KubeClient, resource_path
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
        body = namespace_manifest(name)
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

    # --- the ApplySet parent (what to write is planner.applyset's; here it is written) ---

    def write_parent(self, ref: ObjectRef, record: ParentRecord) -> Manifest:
        written = self._precondition_loop(ref, lambda live: parent_manifest(ref, live, record))
        _crash_if_asked("after-parent")
        return written

    def settle_parent(self, ref: ObjectRef, scope: Scope | None, applied: AppliedClosure) -> Manifest:
        """Record `applied` as the applied closure and, when given, make the parent list exactly `scope`
        (after a converged apply only)."""
        return self._precondition_loop(
            ref, lambda live: settled_parent(ref, live, scope=scope, applied=applied)
        )

    def record_run(self, parent: ObjectRef, job: Manifest) -> Manifest:
        record = run_record_of(job)
        return self._precondition_loop(parent, lambda live: with_run_record(parent, live, record))

    def _precondition_loop(self, ref: ObjectRef, updated: Callable[[Manifest | None], Manifest]) -> Manifest:
        """Read, change, write with the read's resourceVersion; on a conflict read again."""
        for _ in range(PRECONDITION_ATTEMPTS):
            live = self._get(SECRET, ref)
            body = updated(live)
            if live is not None and unchanged(live, body):
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
        if not same_applyset(manifest, existing):
            plan = str(annotations_of(manifest).get(ANNOTATION_PLAN, ""))
            raise OwnershipError(not_managed(ref_of(manifest), plan))

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


__all__ = ["CRASH_ENV", "KubeWriter", "WrittenVersions"]

"""Which fields a watch event shows drifted, and who wrote them: the pure half of the controller's
event-driven drift correction (`driftwatch`; docs/controller.md, "Drift correction").

A field has drifted when planner declares it (the object as the Plan rendered it: create-only fields,
such as an autoscaled workload's `replicas`, and `status` are not declared), the live object holds
another value there, and planner's field manager no longer owns it: another manager's write took it
(`kubectl scale`, `kubectl set image`, a second controller), or removed it. A field planner still owns
holds planner's own write (of a newer rendering than this one); a field another manager added beside
planner's is not planner's at all. The writer is the manager that owns the field now, else (the field
was removed) the manager whose write to the object is the latest, if that write is as recent as the
watch event (a removal leaves its writer no entry of its own: an older write is someone else's);
planner's own managers never count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from planner.canonical import (
    ManagedEntry,
    Path,
    covers,
    declared,
    differences,
    format_path,
    managed_entries,
    owners,
    pattern_of,
    with_server_forms,
)
from planner.changeset import ChangeSet
from planner.monitor.lifecycle import FIELD_MANAGER as LIFECYCLE_MANAGER
from planner.objects import (
    ANNOTATION_HASH,
    FIELD_MANAGER,
    Manifest,
    ObjectRef,
    annotations_of,
    create_only_fields,
    ref_of,
    without_create_only,
)

PLANNER_MANAGERS = frozenset({FIELD_MANAGER, LIFECYCLE_MANAGER})
UNKNOWN_WRITER = "unknown"
DELETED_PATH = "(deleted)"  # the "field" of an object someone deleted (who did, the watch cannot say)
_IDENTITY_KEYS = frozenset({"apiVersion", "kind"})
_HASH_PATH: Path = ("metadata", "annotations", ANNOTATION_HASH)


@dataclass(frozen=True, order=True)
class DriftedField:
    """`object` as `ObjectRef`'s text names it (`deployment/shop/web`), `path` as the diff spells it
    (`.spec.template.spec.containers[name=web].image`), `writer` the field manager that wrote it."""

    object: str
    path: str
    writer: str

    def describe(self) -> str:
        if self.path == DELETED_PATH and self.writer == UNKNOWN_WRITER:
            return f"{self.object} {DELETED_PATH}"
        return f"{self.object} {self.path} (written by {self.writer})"


@dataclass(frozen=True)
class DeclaredObject:
    """One object as a Plan rendered it, reduced once to what a watch event is compared with."""

    ref: ObjectRef
    fields: Mapping[str, Any]  # the declared fields in the server's form, create-only ones left out
    create_only: tuple[str, ...]
    hash: str


def declared_object(desired: Manifest) -> DeclaredObject:
    server_form = without_create_only(with_server_forms(desired))
    fields = {k: v for k, v in declared(server_form).items() if k not in _IDENTITY_KEYS}
    return DeclaredObject(
        ref=ref_of(desired),
        fields=fields,
        create_only=create_only_fields(desired),
        hash=str(annotations_of(desired).get(ANNOTATION_HASH, "")),
    )


# How far a removal's watch event may come after the write that made it for that write's manager to be
# named as its writer (managedFields times are the server's, to the second).
RECENT_WRITE = timedelta(seconds=10)


def drifted_fields(
    declared_object: DeclaredObject, live: Manifest, *, now: datetime | None = None
) -> tuple[DriftedField, ...]:
    """The declared fields `live` (a watch event's object, with its managedFields) holds otherwise than
    planner applied them, each with its writer; none when planner did not apply this object (no apply
    entry of planner's: another's object, or one served without managedFields), or applied another
    rendering of it (its hash annotation differs: a reconcile is under way, or another planner run)."""
    if str(annotations_of(live).get(ANNOTATION_HASH, "")) != declared_object.hash:
        return ()
    entries = managed_entries(live)
    if not any(e.manager == FIELD_MANAGER and e.operation == "Apply" for e in entries):
        return ()
    found: list[DriftedField] = []
    for difference in differences(declared_object.fields, live):
        path = difference.path
        if path == _HASH_PATH or _create_only(path, declared_object.create_only):
            continue
        now_owned_by = owners(entries, path)
        if FIELD_MANAGER in now_owned_by:
            continue
        writer = next((m for m in now_owned_by if m not in PLANNER_MANAGERS), None)
        found.append(
            DriftedField(
                object=str(declared_object.ref),
                path=format_path(path),
                writer=writer or latest_writer(entries, now or datetime.now(UTC)),
            )
        )
    return tuple(found)


def unlike_applied(declared_object: DeclaredObject, cached: Manifest | None) -> str | None:
    """How a cached object (no managedFields) differs from what planner applied: missing, of another
    rendering, or a declared field holding another value (create-only fields aside); None when it is
    as applied."""
    if cached is None:
        return f"{declared_object.ref} is not in the watch cache"
    if str(annotations_of(cached).get(ANNOTATION_HASH, "")) != declared_object.hash:
        return f"{declared_object.ref} holds another rendering"
    for difference in differences(declared_object.fields, cached):
        if difference.path != _HASH_PATH and not _create_only(difference.path, declared_object.create_only):
            return f"{declared_object.ref} {format_path(difference.path)} differs"
    return None


def latest_writer(entries: Sequence[ManagedEntry], now: datetime) -> str:
    """The manager of the newest write to the object's spec or metadata (not its status), planner's
    own aside, when that write is `RECENT_WRITE` old at most: who removed a field, which then nobody
    owns. An older newest write is not the removal's (its writer may set nothing, and keep no entry)."""
    times = {
        entry.manager: entry.time
        for entry in entries
        if entry.subresource != "status" and entry.manager not in PLANNER_MANAGERS
    }
    if not times:
        return UNKNOWN_WRITER
    latest = max(times, key=lambda manager: (times[manager], manager))
    return latest if _recent(times[latest], now) else UNKNOWN_WRITER


def _recent(stamp: str, now: datetime) -> bool:
    try:
        written = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return abs(now - written) <= RECENT_WRITE


def _create_only(path: Path, create_only: tuple[str, ...]) -> bool:
    return any(covers(field, pattern_of(path)) for field in create_only)


def corrected_fields(changeset: ChangeSet | None, seen: Sequence[DriftedField]) -> tuple[DriftedField, ...]:
    """The drift a reconcile's `changeset` found, field by field, each with its writer: the manager the
    diff names, else the one the watch saw write it (`seen`), else unknown. An object found deleted
    (created again) is one entry, `(deleted)`."""
    if changeset is None:
        return ()
    writers = {(each.object, each.path): each.writer for each in seen}
    found: list[DriftedField] = []
    for change in changeset.caused_by("drift"):
        obj = str(change.ref)
        whole = DELETED_PATH if change.action == "create" else f"({change.action})"
        paths = [(f.path, f.manager) for f in change.fields] or [(whole, None)]
        for path, manager in paths:
            writer = manager if manager and manager not in PLANNER_MANAGERS else None
            found.append(DriftedField(obj, path, writer or writers.get((obj, path), UNKNOWN_WRITER)))
    return tuple(sorted(set(found)))

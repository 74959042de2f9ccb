"""Desired against live: which objects change, how, and why (docs/design.md §4). Pure: no I/O.

Each desired object against its live copy is a noop (same hash, declared fields a subset of live), an
update (hash differs), drift (hash agrees, a declared field differs: someone else changed it), or a
replace (an immutable field differs); live members the plan no longer declares are deleted unless kept.
Every change is drift or pending (the plan changed), told apart by the ApplySet parent's applied
closure. Sandboxes get named transitions, Jobs whose run-key ran are `already-ran`, foreign same-named
objects are ownership conflicts. The ChangeSet's types live in `planner.changeset`.

The rules in full, and why, are in docs/architecture.md ("Module notes", diff.py).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from planner.canonical import (
    Difference,
    ManagedEntry,
    Path,
    covers,
    declared,
    differences,
    dropped,
    format_path,
    leaves,
    lookup,
    managed_entries,
    owners,
    pattern_of,
    quantity,
    render_differences,
    with_server_forms,
)
from planner.changeset import SENSITIVE, Action, Cause, Change, ChangeSet, FieldChange, Transition
from planner.dataloss import (
    claim_deletes,
    claims_note,
    deletes_claims,
    resized_template_note,
    unresized_claims,
)
from planner.kinds import JOB, NAMESPACE, KindInfo, MutableField, known
from planner.live import LiveState
from planner.objects import (
    ANNOTATION_HASH,
    ANNOTATION_POD_SPEC,
    ANNOTATION_RUN_KEY,
    FIELD_MANAGER,
    HOOK_DELETE_POLICY,
    Manifest,
    ObjectRef,
    annotations_of,
    create_only_fields,
    metadata_of,
    namespace_manifest,
    owner_of,
    ref_of,
    with_create_only_of,
    without_create_only,
    without_field,
)
from planner.render.identity import content_hash
from planner.state.applyset import (
    RunRecord,
    applied_closure,
    current_generation,
    not_managed,
    not_the_parent,
    parent_ref,
    run_record_of,
    run_records,
)
from planner.transitions import name_sandbox_transitions

# The ChangeSet types are defined in `planner.changeset`; the diff is where its readers look for them.
__all__ = [
    "SENSITIVE",
    "Action",
    "Cause",
    "Change",
    "ChangeSet",
    "FieldChange",
    "Transition",
    "diff",
    "server_predicted",
]

# Annotations that protect an object from prune (docs/design.md §3; cli-utils, Helm, Flux spellings).
KEEP_ANNOTATIONS: Mapping[str, str] = {
    "client.lifecycle.config.k8s.io/deletion": "detach",
    "helm.sh/resource-policy": "keep",
    "cli-utils.sigs.k8s.io/on-remove": "keep",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}
UNRECORDED = "its run is not recorded yet; apply records it"
RUNS_AGAIN = "its last run failed (hook-failed deleted it): it runs again"
# The hash decides update or not; listing it as a changed field on every update would only be noise.
_HASH_PATH: Path = ("metadata", "annotations", ANNOTATION_HASH)
_IDENTITY_KEYS = frozenset({"apiVersion", "kind"})
_POD_SPEC_PATH: Path = ("metadata", "annotations", ANNOTATION_POD_SPEC)


# --- small readers ---


def _kind_info(ref: ObjectRef) -> KindInfo | None:
    return known(ref.group, ref.kind)


# --- comparing one object ---


@dataclass(frozen=True, kw_only=True)
class _Comparison:
    fields: tuple[FieldChange, ...]
    forced_by: str | None
    hash_equal: bool
    planner_owned: bool


def _is_create_only(path: Path, desired: Manifest) -> bool:
    return any(covers(p, pattern_of(path)) for p in create_only_fields(desired))


def _change_allowed(mutable: MutableField, difference: Difference) -> bool:
    if mutable.change == "increase":
        before, after = quantity(difference.before), quantity(difference.after)
        return before is not None and after is not None and after > before
    if mutable.change == "additions":
        had, has = difference.before or [], difference.after or []
        return isinstance(has, list) and all(item in has for item in had)
    return True


def _forcing_field(difference: Difference, info: KindInfo | None) -> str | None:
    """The immutable field this difference changes, None when the change is allowed in place. A kind
    whose whole `spec` is immutable names the changed field itself, which says more."""
    if info is None:
        return None
    pattern = pattern_of(difference.path)
    immutable = next((p for p in info.immutable_fields if covers(p, pattern)), None)
    if immutable is None:
        return None
    for mutable in info.mutable_fields:
        if covers(mutable.path, pattern):
            return None if _change_allowed(mutable, difference) else format_path(difference.path).lstrip(".")
    return format_path(difference.path).lstrip(".") if immutable == "spec" else immutable


def _dropped_by_plan(desired: Manifest, live: Manifest, entries: Sequence[ManagedEntry]) -> list[Difference]:
    paths: dict[Path, None] = {}
    for entry in entries:
        # Only apply entries: a create's Update entry also owns every field the server defaulted.
        if entry.manager == FIELD_MANAGER and entry.operation == "Apply":
            paths.update(dict.fromkeys(dropped(entry.fields, desired)))
    return [
        Difference(path=path, before=before, after=None)
        for path in paths
        if (before := lookup(live, path)) is not None
    ]


def _dropped_since(previous: Manifest | None, declared_desired: Manifest, live: Manifest) -> list[Difference]:
    if previous is None:
        return []
    earlier = {k: v for k, v in declared(previous).items() if k not in _IDENTITY_KEYS}
    stale = differences(earlier, declared_desired)
    return [
        Difference(path=d.path, before=before, after=None)
        for d in stale
        if lookup(declared_desired, d.path) is None and (before := lookup(live, d.path)) is not None
    ]


def _takeovers(
    declared_desired: Manifest, live: Manifest, entries: Sequence[ManagedEntry], seen: set[Path]
) -> list[FieldChange]:
    found: list[FieldChange] = []
    for path in leaves(declared_desired):
        managers = owners(entries, path)
        if path in seen or not managers or FIELD_MANAGER in managers:
            continue
        value = lookup(live, path)
        found.append(FieldChange(path=format_path(path), before=value, after=value, manager=managers[0]))
    return found


def _mask(change: FieldChange, info: KindInfo | None) -> FieldChange:
    if info is None or not info.sensitive:
        return change
    sensitive = change.path.startswith((".data", ".stringData")) or ANNOTATION_HASH in change.path
    if not sensitive:
        return change
    before = None if change.before is None else SENSITIVE
    after = None if change.after is None else SENSITIVE
    return dataclasses.replace(change, before=before, after=after)


def _expand_recorded_pod(difference: Difference) -> list[Difference]:
    """A sandbox's recorded pod (`planner.dev/pod-spec`, canonical JSON) as the fields inside it that
    differ, so a reviewer reads `claimName: g1 → g2` instead of two long JSON strings. Both sides are
    planner's own renders, so they are compared both ways, exactly."""
    if difference.path != _POD_SPEC_PATH:
        return [difference]
    try:
        old, new = json.loads(difference.before), json.loads(difference.after)
    except (TypeError, ValueError):
        return [difference]
    return render_differences(old, new, _POD_SPEC_PATH) or [difference]


def _field_change(difference: Difference, entries: Sequence[ManagedEntry]) -> FieldChange:
    others = [m for m in owners(entries, difference.path) if m != FIELD_MANAGER]
    return FieldChange(
        path=format_path(difference.path),
        before=difference.before,
        after=difference.after,
        manager=others[0] if others else None,
    )


def compare(
    desired: Manifest, live: Manifest, info: KindInfo | None, *, previous: Manifest | None = None
) -> _Comparison:
    """How `live` differs from `desired` in what `desired` declares (see the module docstring).

    `previous` is planner's own earlier render of the object when the cluster records one (a sandbox
    Pod, kept on its workspace PVC): what it declared and `desired` no longer does is removed too."""
    server_form = without_create_only(with_server_forms(desired))
    # Identity was matched by ObjectRef already; LIST items even come without kind and apiVersion.
    declared_desired = {k: v for k, v in declared(server_form).items() if k not in _IDENTITY_KEYS}
    entries = managed_entries(live)
    hash_equal = _same_derivation(desired, live)
    found = differences(declared_desired, live)
    if not hash_equal:
        seen = {d.path for d in found}
        removed = _dropped_by_plan(server_form, live, entries) + _dropped_since(
            previous, declared_desired, live
        )
        for difference in removed:
            if difference.path not in seen:
                seen.add(difference.path)
                found.append(difference)
    found = [d for d in found if not _is_create_only(d.path, desired) and d.path != _HASH_PATH]
    found = [inner for d in found for inner in _expand_recorded_pod(d)]
    forced_by = next((f for d in found if (f := _forcing_field(d, info))), None)
    if forced_by is None and _run_key_changed(desired, live):
        forced_by = "spec.template"
    changes = [_field_change(d, entries) for d in found]
    if found and forced_by is None:
        changes += _takeovers(declared_desired, live, entries, {d.path for d in found})
    return _Comparison(
        fields=tuple(_mask(c, info) for c in changes),
        forced_by=forced_by,
        hash_equal=hash_equal,
        planner_owned=any(e.manager == FIELD_MANAGER and e.operation == "Apply" for e in entries),
    )


def _same_derivation(desired: Manifest, live: Manifest) -> bool:
    """Whether `live` carries `desired`'s hash, create-only fields aside: a fork's `dataSource` naming
    its source's new rootfs generation is no change, since it is never written after creation."""
    live_hash = annotations_of(live).get(ANNOTATION_HASH)
    if annotations_of(desired).get(ANNOTATION_HASH) == live_hash:
        return True
    as_created = with_create_only_of(desired, live)
    return as_created != desired and content_hash(as_created) == live_hash


def _run_key_changed(desired: Manifest, live: Manifest) -> bool:
    if desired.get("kind") != JOB.kind:
        return False
    before = annotations_of(live).get(ANNOTATION_RUN_KEY)
    return before is not None and before != annotations_of(desired).get(ANNOTATION_RUN_KEY)


# --- the whole set ---


class _Differ:
    """One diff run: the live state and options every object's judgement needs."""

    def __init__(
        self,
        live: LiveState,
        *,
        plan: str,
        adopt: bool,
        rerun: frozenset[str],
        allow_cluster_scoped: bool = False,
        allow_data_loss: bool = False,
    ) -> None:
        self.live = live
        self.allow_data_loss = allow_data_loss
        self.allow_cluster_scoped = allow_cluster_scoped
        self.plan = plan
        self.adopt = adopt
        self.rerun = rerun
        self.records = run_records(live.parent)
        self.applied = applied_closure(live.parent)
        self.recorded = _recorded_renders(live.members.values())
        self.conflicts: list[str] = []

    def desired_change(self, ref: ObjectRef, desired: Manifest) -> Change:
        if (live := self.live.members.get(ref)) is not None:
            return self.against_live(ref, desired, live)
        if (foreign := self.live.foreign.get(ref)) is not None:
            return self.against_foreign(ref, desired, foreign)
        return self.absent(ref, desired)

    def against_live(self, ref: ObjectRef, desired: Manifest, live: Manifest) -> Change:
        base = Change(ref=ref, action="noop", desired=desired, live=live, owner=owner_of(desired))
        if ref.kind == JOB.kind and ref.name in self.rerun:
            return dataclasses.replace(base, action="replace", reason="rerun requested")
        if ref.kind == JOB.kind and _run_key_changed(desired, live) and (ran := self.ran(desired)):
            return dataclasses.replace(base, reason=ran, transition="already-ran")
        result = compare(desired, live, _kind_info(ref), previous=self.recorded.get(ref))
        drift = result.hash_equal and bool(result.fields)
        if result.forced_by:
            kept = claims_note(live, None, deleted=False)
            sized = resized_template_note(live, desired)
            reason = "; ".join(filter(None, (f"forced by {result.forced_by}", kept, sized)))
            return dataclasses.replace(
                base, action="replace", fields=result.fields, reason=reason, drift=drift
            )
        if drift:
            return _with_claim_loss(
                dataclasses.replace(
                    base,
                    action="update",
                    fields=result.fields,
                    reason=_drift_reason(result.fields),
                    drift=True,
                )
            )
        if result.hash_equal:
            unmet = unresized_claims(desired, self.live.claims.get(ref, ()))
            return base if unmet is None else dataclasses.replace(base, unmet=unmet)
        reason = "" if result.planner_owned else "plan changed"
        update = dataclasses.replace(base, action="update", fields=result.fields, reason=reason)
        foreign = [f for f in result.fields if f.manager and not f.is_takeover]
        if foreign and result.planner_owned:  # the plan changed, and someone changed what it declares
            drifted = _join(reason, _drift_reason(foreign))
            update = dataclasses.replace(update, reason=drifted, drift=True, pending_too=True)
        return _with_claim_loss(update)

    def against_foreign(self, ref: ObjectRef, desired: Manifest, foreign: Manifest) -> Change:
        owner = owner_of(desired)
        if not self.adopt:
            message = not_managed(ref, self.plan, foreign)
            self.conflicts.append(message)
            return Change(
                ref=ref, action="create", desired=desired, live=foreign, reason=message, owner=owner
            )
        result = compare(desired, foreign, _kind_info(ref))
        action: Action = "replace" if result.forced_by else "update"
        adopted = f"adopted into plan {self.plan}"
        reason = f"{adopted}; forced by {result.forced_by}" if result.forced_by else adopted
        return Change(
            ref=ref,
            action=action,
            desired=desired,
            live=foreign,
            fields=result.fields,
            reason=reason,
            transition="adopt",
            owner=owner,
        )

    def ran(self, desired: Manifest) -> str | None:
        """How the run-key of a Job (or of a chart hook run once per run-key) already ran (the reason of
        an `already-ran` no-op); None if it did not, or it has none."""
        record = self.records.get(str(annotations_of(desired).get(ANNOTATION_RUN_KEY, "")))
        if record is None or not record.ran:
            return None
        what = str(desired.get("kind", "")).lower()
        return f"run-key already ran as {what} {record.namespace}/{record.name} (uid {record.uid})"

    def absent(self, ref: ObjectRef, desired: Manifest) -> Change:
        owner = owner_of(desired)
        if ref.kind == JOB.kind and self.failed_and_deleted(desired):
            return Change(
                ref=ref, action="create", desired=desired, live=None, reason=RUNS_AGAIN, owner=owner
            )
        reason = self.ran(desired)
        if reason is not None:
            if ref.kind == JOB.kind and ref.name in self.rerun:
                return Change(ref=ref, action="create", desired=desired, live=None, reason="rerun requested")
            return Change(
                ref=ref,
                action="noop",
                desired=desired,
                live=None,
                reason=reason,
                transition="already-ran",
                owner=owner,
            )
        if self.applied is not None and self.applied.applied_as(ref, desired):
            reason = "deleted outside the plan"
            return Change(
                ref=ref, action="create", desired=desired, live=None, reason=reason, drift=True, owner=owner
            )
        return Change(ref=ref, action="create", desired=desired, live=None, owner=owner)

    def failed_and_deleted(self, job: Manifest) -> bool:
        """Whether the Job is a chart's hook whose recorded run failed and that its `hook-failed` policy
        deleted: it runs again, as Helm runs a failed hook again on the next upgrade (a failed Job that
        stays is waited for again, and fails the apply again, until it is fixed or re-run)."""
        policies = str(annotations_of(job).get(HOOK_DELETE_POLICY) or "").split(",")
        record = self.records.get(str(annotations_of(job).get(ANNOTATION_RUN_KEY, "")))
        outcome = record.outcome if record is not None else None
        return (
            "hook-failed" in (p.strip() for p in policies)
            and outcome is not None
            and outcome.result == "failed"
        )

    def unrecorded(self, changes: Iterable[Change]) -> tuple[RunRecord, ...]:
        """The runs of live Jobs that keep their run-key but that the parent does not record as ran."""
        found = []
        for change in changes:
            if change.ref.kind != JOB.kind or change.action not in ("noop", "update") or not change.live:
                continue
            key = annotations_of(change.live).get(ANNOTATION_RUN_KEY)
            record = self.records.get(str(key))
            kept = key is not None and key == annotations_of(change.desired).get(ANNOTATION_RUN_KEY)
            if kept and (record is None or not record.ran) and metadata_of(change.live).get("uid"):
                found.append(run_record_of(change.live))
        return tuple(sorted(found, key=lambda run: run.run_key))

    def removed_change(self, ref: ObjectRef, live: Manifest) -> Change:
        marks = annotations_of(live)
        owner = owner_of(live)
        if ref.namespace is None and ref.kind != NAMESPACE.kind and not self.allow_cluster_scoped:
            reason = "kept: cluster-scoped, and the plan does not set allowClusterScoped"
            return Change(ref=ref, action="noop", desired=None, live=live, reason=reason, owner=owner)
        for key, value in KEEP_ANNOTATIONS.items():
            if marks.get(key) == value:
                reason = f"kept: annotated {key}: {value}"
                return Change(ref=ref, action="noop", desired=None, live=live, reason=reason, owner=owner)
        joined = self.applied is not None and not self.applied.applied(ref)
        why = (
            "not in the plan: it joined the plan's ApplySet outside the plan"
            if joined
            else "no longer in the plan"
        )
        claims = claims_note(live, self.live.claims.get(ref, ()), deleted=self.allow_data_loss)
        reason = "; ".join(filter(None, (why, claims)))
        return Change(
            ref=ref, action="delete", desired=None, live=live, reason=reason, drift=joined, owner=owner
        )

    def claim_deletes(self, changes: Mapping[ObjectRef, Change]) -> list[Change]:
        """With `--allow-data-loss`, the deletes of the PVCs each pruned StatefulSet's templates made."""
        if not self.allow_data_loss:
            return []
        return [
            claim
            for ref, claims in self.live.claims.items()
            if ref in changes
            for claim in claim_deletes(changes[ref], claims)
            if claim.ref not in changes
        ]


def _recorded_renders(members: Iterable[Manifest]) -> dict[ObjectRef, Manifest]:
    """The sandbox Pods recorded on live workspace PVCs, by the Pod's ref (unreadable records skipped)."""
    found: dict[ObjectRef, Manifest] = {}
    for member in members:
        text = annotations_of(member).get(ANNOTATION_POD_SPEC)
        try:
            pod = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if isinstance(pod, dict):
            found[ref_of(pod)] = pod
    return found


def _with_claim_loss(change: Change) -> Change:
    """An update whose scale-down deletes PVCs (a StatefulSet's `whenScaled: Delete`) says so."""
    how = deletes_claims(change)
    return dataclasses.replace(change, reason=_join(change.reason, how)) if how else change


def _drift_reason(fields: Iterable[FieldChange]) -> str:
    managers = sorted({f.manager for f in fields if f.manager and not f.is_takeover})
    return f"changed outside the plan by {', '.join(managers)}" if managers else "changed outside the plan"


def _missing_namespaces(desired: Sequence[Manifest], live: LiveState) -> list[Change]:
    if live.namespaces is None:
        return []
    declared_namespaces = {ref_of(m).name for m in desired if m.get("kind") == NAMESPACE.kind}
    used = {ref.namespace for ref in map(ref_of, desired) if ref.namespace}
    missing = sorted(used - live.namespaces - declared_namespaces)
    return [
        Change(
            ref=ObjectRef.of(NAMESPACE, name),
            action="create",
            desired=namespace_manifest(name),
            live=None,
            reason="namespace does not exist",
        )
        for name in missing
    ]


# Fields a write changes by itself (bookkeeping), never worth showing as a server-predicted change.
_SERVER_BOOKKEEPING: tuple[tuple[str, ...], ...] = (
    ("metadata", "managedFields"),
    ("metadata", "resourceVersion"),
    ("metadata", "generation"),
    ("metadata", "creationTimestamp"),
    ("metadata", "uid"),
    ("status",),
)


def _without_bookkeeping(obj: Manifest) -> Manifest:
    trimmed = dict(obj)
    for path in _SERVER_BOOKKEEPING:
        trimmed = without_field(trimmed, path)
    return trimmed


def server_predicted(change: Change, result: Manifest) -> Change:
    """`change` with its fields replaced by what a server-side dry run returned (`--server-dry-run`):
    every difference between the live object and `result`, both ways, bookkeeping aside."""
    if change.live is None:
        return change
    after, before = _without_bookkeeping(result), _without_bookkeeping(change.live)
    found = {d.path: d for d in differences(declared(after), before)}
    for gone in differences(declared(before), after):
        found.setdefault(gone.path, Difference(path=gone.path, before=gone.after, after=gone.before))
    info = _kind_info(change.ref)
    entries = managed_entries(change.live)
    fields = tuple(
        _mask(_field_change(found[path], entries), info) for path in sorted(found, key=format_path)
    )
    return dataclasses.replace(change, fields=fields, reason=_join(change.reason, "server dry run"))


def _join(*notes: str) -> str:
    return "; ".join(note for note in notes if note)


def _order(change: Change) -> tuple[str, str, str]:
    return (change.ref.namespace or "", change.ref.kind, change.ref.name)


def diff(
    desired: Sequence[Manifest],
    live: LiveState,
    *,
    plan: str,
    namespace: str,
    allow_data_loss: bool = False,
    adopt: bool = False,
    rerun: frozenset[str] = frozenset(),
    allow_cluster_scoped: bool = False,
) -> ChangeSet:
    """The ChangeSet that makes `live` what `desired` declares (see the module docstring).

    `allow_data_loss` is recorded in the ChangeSet, for the printers and `dataloss.refuse_data_loss`.
    A cluster-scoped member no longer declared (a Namespace aside) is pruned only with
    `allow_cluster_scoped` (the plan's `allowClusterScoped`).
    """
    differ = _Differ(
        live,
        plan=plan,
        adopt=adopt,
        rerun=rerun,
        allow_cluster_scoped=allow_cluster_scoped,
        allow_data_loss=allow_data_loss,
    )
    wanted = {ref_of(manifest): manifest for manifest in desired}
    changes = {ref: differ.desired_change(ref, manifest) for ref, manifest in wanted.items()}
    for ref, obj in live.members.items():
        if ref not in wanted:
            changes[ref] = differ.removed_change(ref, obj)
    changes.update({c.ref: c for c in differ.claim_deletes(changes)})
    changes.update({c.ref: c for c in _missing_namespaces(desired, live)})
    name_sandbox_transitions(changes)
    parent = parent_ref(plan, namespace)
    if parent in live.foreign:
        differ.conflicts.append(not_the_parent(parent))
    unrecorded = differ.unrecorded(changes.values())
    for run in unrecorded:
        ref = ObjectRef.of(JOB, run.name, run.namespace)
        if changes[ref].action == "noop":
            changes[ref] = dataclasses.replace(changes[ref], reason=UNRECORDED)
    return ChangeSet(
        plan=plan,
        namespace=namespace,
        changes=tuple(sorted(changes.values(), key=_order)),
        conflicts=tuple(sorted(differ.conflicts)),
        unrecorded=unrecorded,
        allow_data_loss=allow_data_loss,
        generation=current_generation(live.parent),
    )

"""Which changes destroy data: replacing or deleting a PersistentVolumeClaim or a Namespace (docs/design.md §4).

Two questions with different answers. *Does it destroy data?* — every such replace or delete, a sandbox
rebase's old rootfs included: every plan printer marks them, so a reviewer sees the loss whatever the
flags. *Does applying it need `--allow-data-loss`?* — all of them but the rebase's old rootfs, whose
loss the plan's own generation bump declares. `diff` records in the ChangeSet whether the flag was given;
`refuse_data_loss` is the one check, made before anything is written (and by `plan` after it printed
the plan, so the plan is seen before it is refused). Pure: no I/O.

A StatefulSet's claim templates make PVCs planner never renders; Kubernetes keeps them when the set goes,
and so does planner unless `--allow-data-loss` is given: then a pruned StatefulSet's PVCs are deleted
after it (`claim_deletes`), data loss like any other. `claims_note` says which in the set's reason. A
set whose `persistentVolumeClaimRetentionPolicy` says Delete has Kubernetes delete them when it goes or
scales down (`deletes_claims`): that delete, replace or update destroys data too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planner.canonical import quantity
from planner.changeset import Change, ChangeSet
from planner.errors import DataLossError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM
from planner.objects import Manifest, claim_templates, metadata_of, ref_of

_DATA_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.kind, NAMESPACE.kind})


def destroys_data(change: Change) -> bool:
    """Whether applying `change` deletes a PVC's volume or a Namespace with everything in it — also
    through a StatefulSet's claim retention policy (`deletes_claims`)."""
    if change.ref.kind in _DATA_KINDS and change.action in ("replace", "delete"):
        return True
    return deletes_claims(change) is not None


def _retention(stateful_set: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return ((stateful_set or {}).get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}


def _replicas(stateful_set: Mapping[str, Any] | None) -> int:
    wanted = ((stateful_set or {}).get("spec") or {}).get("replicas")
    return 1 if wanted is None else int(wanted)


def deletes_claims(change: Change) -> str | None:
    """How a StatefulSet change deletes the PVCs its claim templates made, through its
    `persistentVolumeClaimRetentionPolicy` (Kubernetes deletes them, not planner); None when it does
    not. A delete or replace of a set whose `whenDeleted` is Delete deletes them all (a replace's new
    set makes them again, empty); scaling down a set whose `whenScaled` is Delete deletes those of the
    ordinals removed."""
    live, desired = change.live, change.desired
    if not claim_templates(live):
        return None
    if change.action in ("delete", "replace") and _retention(live).get("whenDeleted") == "Delete":
        again = " and made again empty" if change.action == "replace" else ""
        return (
            f"its PVCs are deleted with it{again} (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)"
        )
    if change.action == "update" and _retention(desired).get("whenScaled") == "Delete":
        before, after = _replicas(live), _replicas(desired)
        if after < before:
            ordinals = str(after) if after == before - 1 else f"{after}-{before - 1}"
            return (
                f"scaling from {before} to {after} deletes the PVCs of ordinal {ordinals} "
                "(persistentVolumeClaimRetentionPolicy.whenScaled: Delete)"
            )
    return None


def needs_consent(change: Change) -> bool:
    """Whether `change` destroys data the plan did not itself declare it may: a rebase's old rootfs goes by
    the plan's generation bump, which is the user's consent; everything else needs `--allow-data-loss`."""
    return destroys_data(change) and not (change.transition == "rebase" and change.action == "delete")


def losses(changeset: ChangeSet) -> list[Change]:
    """The changes of `changeset` that destroy data, in its order."""
    return [change for change in changeset.changes if destroys_data(change)]


def loss(change: Change) -> str:
    """How `change` destroys data, in a few words: `replaced (forced by spec.resources.requests.storage)`."""
    how = {"replace": "replaced", "delete": "deleted"}.get(change.action, "updated")
    return f"{how} ({change.reason})" if change.reason else how


def refused(changeset: ChangeSet) -> list[Change]:
    """The changes that destroy data without consent: none when `--allow-data-loss` was given."""
    return [] if changeset.allow_data_loss else [c for c in changeset.changes if needs_consent(c)]


def refuse_data_loss(changesets: Iterable[ChangeSet], *, consent: str | None = None) -> None:
    """Raise DataLossError naming every change of every plan that would destroy data without consent
    (`consent`: how to give it, when not `--allow-data-loss`)."""
    found = [(str(change.ref), f"would be {loss(change)}") for cs in changesets for change in refused(cs)]
    if found:
        raise DataLossError(found) if consent is None else DataLossError(found, consent=consent)


def claims_note(live: Mapping[str, Any] | None, claims: Sequence[Manifest] | None, *, deleted: bool) -> str:
    """What happens to the PVCs of a live StatefulSet that goes: "" for anything else. `claims` are the
    ones found (`live.read_stateful_claims`; None when not read, for a replace, whose new set mounts them
    again); `deleted` when they go after it (`--allow-data-loss`)."""
    templates = claim_templates(live)
    if not templates or claims == ():
        return ""
    policy_deletes = _retention(live).get("whenDeleted") == "Delete"
    if claims is None:
        name = metadata_of(live).get("name")
        named = ", ".join(f"{template}-{name}-*" for template in templates)
        if policy_deletes:
            return (
                f"its PVCs {named} are deleted with it and made again empty "
                "(persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)"
            )
        return f"its PVCs {named} are kept (its new pods mount them again)"
    named = ", ".join(str(metadata_of(claim).get("name")) for claim in claims)
    if policy_deletes:
        return (
            f"its PVCs {named} are deleted with it (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)"
        )
    if deleted:
        return f"its PVCs {named} are deleted after it (--allow-data-loss)"
    return (
        f"its PVCs {named} are kept (Kubernetes keeps a StatefulSet's claims; --allow-data-loss deletes them)"
    )


def _storage(spec: Mapping[str, Any] | None) -> str | None:
    value = (((spec or {}).get("resources") or {}).get("requests") or {}).get("storage")
    return None if value is None else str(value)


def _template_storage(stateful_set: Mapping[str, Any] | None) -> dict[str, str | None]:
    templates = ((stateful_set or {}).get("spec") or {}).get("volumeClaimTemplates") or []
    return {str(metadata_of(t).get("name")): _storage(t.get("spec")) for t in templates}


def unresized_claims(stateful_set: Mapping[str, Any] | None, claims: Sequence[Manifest]) -> str | None:
    """The PVCs a StatefulSet's templates made that request another size than the template now asks
    for, in a sentence; None when there are none. Kubernetes applies a claim template to new claims
    only: resizing an existing claim is a change of the claim itself (where its StorageClass allows
    expansion), which planner does not make, so the plan says so rather than that the cluster matches."""
    sizes = _template_storage(stateful_set)
    name = metadata_of(stateful_set).get("name")
    differing = []
    for claim in claims:
        claim_name = str(metadata_of(claim).get("name"))
        template = next((t for t in sizes if claim_name.startswith(f"{t}-{name}-")), None)
        wanted, has = sizes.get(template or ""), _storage(claim.get("spec"))
        if wanted is not None and has is not None and quantity(wanted) != quantity(has):
            differing.append(f"{claim_name} requests {has}, its template {wanted}")
    if not differing:
        return None
    return (
        f"PVC {'; '.join(differing)}: claim templates apply to new claims only; resize an existing claim "
        "itself (kubectl patch pvc, where its StorageClass allows expansion)"
    )


def resized_template_note(live: Mapping[str, Any] | None, desired: Mapping[str, Any] | None) -> str:
    """For a StatefulSet replaced because its claim templates changed size: its existing claims keep
    theirs ("" when no template's size changed)."""
    before, after = _template_storage(live), _template_storage(desired)
    if not any(after.get(t) not in (None, size) for t, size in before.items()):
        return ""
    return "its existing PVCs keep their size (claim templates apply to new claims only)"


def claim_deletes(removed: Change, claims: Sequence[Manifest]) -> list[Change]:
    """The deletes of the PVCs a pruned StatefulSet's claim templates made, each after the set is gone
    (`graph` orders them); the caller asks only with `--allow-data-loss`."""
    if removed.action != "delete":
        return []
    reason = f"claim of {removed.ref.described}, deleted after it"
    return [
        Change(
            ref=ref_of(claim), action="delete", desired=None, live=claim, reason=reason, owner=removed.owner
        )
        for claim in claims
    ]

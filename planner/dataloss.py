"""Which changes destroy data: replacing or deleting a PersistentVolumeClaim or a Namespace (docs/design.md §4).

Two questions with different answers. *Does it destroy data?* — every such replace or delete, a sandbox
rebase's old rootfs included: every plan printer marks them, so a reviewer sees the loss whatever the
flags. *Does applying it need `--allow-data-loss`?* — all of them but the rebase's old rootfs, whose
loss the plan's own generation bump declares. `diff` records in the ChangeSet whether the flag was given;
`refuse_data_loss` is the one check, made before anything is written (and by `plan` after it printed
the plan, so the plan is seen before it is refused). Pure: no I/O.

A StatefulSet's claim templates make PVCs planner never renders; Kubernetes keeps them when the set goes,
and so does planner unless `--allow-data-loss` is given: then a pruned StatefulSet's PVCs are deleted
after it (`claim_deletes`), data loss like any other. `claims_note` says which in the set's reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planner.changeset import Change, ChangeSet
from planner.errors import DataLossError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM
from planner.objects import Manifest, claim_templates, metadata_of, ref_of

_DATA_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.kind, NAMESPACE.kind})


def destroys_data(change: Change) -> bool:
    """Whether applying `change` deletes a PVC's volume or a Namespace with everything in it."""
    return change.ref.kind in _DATA_KINDS and change.action in ("replace", "delete")


def needs_consent(change: Change) -> bool:
    """Whether `change` destroys data the plan did not itself declare it may: a rebase's old rootfs goes by
    the plan's generation bump, which is the user's consent; everything else needs `--allow-data-loss`."""
    return destroys_data(change) and not (change.transition == "rebase" and change.action == "delete")


def losses(changeset: ChangeSet) -> list[Change]:
    """The changes of `changeset` that destroy data, in its order."""
    return [change for change in changeset.changes if destroys_data(change)]


def loss(change: Change) -> str:
    """How `change` destroys data, in a few words: `replaced (forced by spec.resources.requests.storage)`."""
    how = "replaced" if change.action == "replace" else "deleted"
    return f"{how} ({change.reason})" if change.reason else how


def refused(changeset: ChangeSet) -> list[Change]:
    """The changes that destroy data without consent: none when `--allow-data-loss` was given."""
    return [] if changeset.allow_data_loss else [c for c in changeset.changes if needs_consent(c)]


def refuse_data_loss(changesets: Iterable[ChangeSet]) -> None:
    """Raise DataLossError naming every change of every plan that would destroy data without consent."""
    found = [(str(change.ref), f"would be {loss(change)}") for cs in changesets for change in refused(cs)]
    if found:
        raise DataLossError(found)


def claims_note(live: Mapping[str, Any] | None, claims: Sequence[Manifest] | None, *, deleted: bool) -> str:
    """What happens to the PVCs of a live StatefulSet that goes: "" for anything else. `claims` are the
    ones found (`live.read_stateful_claims`; None when not read, for a replace, whose new set mounts them
    again); `deleted` when they go after it (`--allow-data-loss`)."""
    templates = claim_templates(live)
    if not templates or claims == ():
        return ""
    if claims is None:
        name = metadata_of(live).get("name")
        named = ", ".join(f"{template}-{name}-*" for template in templates)
        return f"its PVCs {named} are kept (its new pods mount them again)"
    named = ", ".join(str(metadata_of(claim).get("name")) for claim in claims)
    if deleted:
        return f"its PVCs {named} are deleted after it (--allow-data-loss)"
    return (
        f"its PVCs {named} are kept (Kubernetes keeps a StatefulSet's claims; --allow-data-loss deletes them)"
    )


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

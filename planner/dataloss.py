"""Which changes destroy data: replacing or deleting a PersistentVolumeClaim or a Namespace (DESIGN §4).
`diff` refuses them with DataLossError unless `--allow-data-loss`. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable

from planner.changeset import Change
from planner.errors import DataLossError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM

_DATA_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.kind, NAMESPACE.kind})


def destroys_data(change: Change) -> bool:
    if change.ref.kind not in _DATA_KINDS or change.action not in ("replace", "delete"):
        return False
    # A rebase's old rootfs goes by the plan's own generation bump, which is the user's consent.
    return not (change.transition == "rebase" and change.action == "delete")


def check_data_loss(changes: Iterable[Change]) -> None:
    """Raise DataLossError naming every change that would destroy data, all at once."""
    losses = [
        (str(c.ref), f"would be {'replaced' if c.action == 'replace' else 'deleted'} ({c.reason})")
        for c in changes
        if destroys_data(c)
    ]
    if losses:
        raise DataLossError(losses)

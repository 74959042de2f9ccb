"""PersistentVolumeClaims: the plan's `volumeClaims`, and the claim spec sandboxes and StatefulSet claim
templates share.

A claim's spec is immutable but for a growing storage request, so `kinds.py` makes any other change a
replace, and `planner.dataloss` refuses that replace (and a delete) without `--allow-data-loss`.
`dataSource` is read only when the claim is created.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.kinds import PERSISTENT_VOLUME_CLAIM
from planner.objects import Manifest, present
from planner.plan.model import Claim, DataSource, Plan, VolumeClaim
from planner.render.identity import Stamp
from planner.render.pods import Fields

SNAPSHOT_GROUP = "snapshot.storage.k8s.io"


def claim_spec(
    claim: Claim,
    *,
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    volume_mode: str | None = None,
    data_source: Fields | None = None,
) -> Fields:
    return {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": claim.size}},
        **present(storageClassName=claim.storage_class, volumeMode=volume_mode, dataSource=data_source),
    }


def data_source(source: DataSource | None) -> Fields | None:
    if source is None:
        return None
    group = SNAPSHOT_GROUP if source.kind == "VolumeSnapshot" else None
    return {**present(apiGroup=group), "kind": source.kind, "name": source.name}


def volume_claim(claim: VolumeClaim, *, stamp: Stamp, namespace: str) -> Manifest:
    spec = claim_spec(
        claim,
        access_modes=claim.access_modes,
        volume_mode=claim.volume_mode,
        data_source=data_source(claim.data_source),
    )
    return {
        "apiVersion": PERSISTENT_VOLUME_CLAIM.api_version,
        "kind": PERSISTENT_VOLUME_CLAIM.kind,
        "metadata": stamp.metadata(name=claim.name, namespace=namespace),
        "spec": spec,
    }


def render_claims(plan: Plan, *, stamp: Stamp, namespace: str) -> list[Manifest]:
    """The plan's PersistentVolumeClaims, in plan order."""
    return [volume_claim(claim, stamp=stamp, namespace=namespace) for claim in plan.volume_claims]

"""The finalizer `planner.dev/prune` on a Plan object: added before the controller's first write for the
Plan, so a deletion of the Plan prunes its objects first — everything but its PVCs (sandbox disks
included) and Namespaces, those too with `reconcile.allowDataLoss` — then trims its generation records
to the `--history-max` newest (the prune's own counted), so a Plan re-created under the name can still
be rolled back while the records of a deleted one stop piling up. Then the finalizer is removed and the
deletion finishes. `reconciler` runs these steps; here is what each does.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence

from planner.app.history import current, read_generation, trim_generations
from planner.app.planning import recorded_plan
from planner.app.reconciling import ReconcileOptions
from planner.app.rendering import RenderedPlan
from planner.controller.planref import object_key, patch_plan, plan_path, source_name
from planner.diff import ChangeSet
from planner.errors import ApiError, ConflictError, NotFoundError, PlannerError, UnreachableError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM
from planner.kube.client import KubeClient
from planner.objects import Manifest, ObjectRef, metadata_of
from planner.plan.load import plan_object_source
from planner.state.runlock import holding

FINALIZER = "planner.dev/prune"
KEPT_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.kind, NAMESPACE.kind})  # without allowDataLoss
KEPT_WITHOUT_DATA_LOSS = "PVCs and Namespaces are kept without reconcile.allowDataLoss"
LISTED_OBJECTS = 10  # a Pruned Event names this many objects of each list, then says how many more


def being_deleted(plan: Manifest) -> bool:
    """Deleted, and waiting for this controller to prune its objects."""
    metadata = metadata_of(plan)
    return bool(metadata.get("deletionTimestamp")) and has_finalizer(plan)


def has_finalizer(plan: Manifest) -> bool:
    return FINALIZER in (metadata_of(plan).get("finalizers") or ())


def set_finalizer(
    client: KubeClient, plan: Manifest, *, present: bool, notice: Callable[[str], None], again: bool = True
) -> bool:
    """Add or remove `planner.dev/prune` (a merge patch carrying the resourceVersion it read, so a
    concurrent change of the list is never lost; on a conflict, once more from the Plan read again);
    whether that was done."""
    metadata = metadata_of(plan)
    others = [f for f in metadata.get("finalizers") or () if f != FINALIZER]
    patch = {
        "metadata": {
            "finalizers": [*others, FINALIZER] if present else others,
            "resourceVersion": metadata.get("resourceVersion"),
        }
    }
    path = plan_path(plan)
    try:
        patch_plan(client, path, patch)
    except ConflictError:
        if not again:
            return False  # the next reconcile tries again
        try:
            fresh = client.request("GET", path, verb="get")
        except (ApiError, UnreachableError):
            return False
        return set_finalizer(client, fresh, present=present, notice=notice, again=False)
    except NotFoundError:
        return False  # gone meanwhile
    except (ApiError, UnreachableError) as failure:
        notice(f"{source_name(object_key(plan))}: could not update its finalizers: {failure}")
        return False
    return True


def left_standing(rendered: RenderedPlan, *, allow_data_loss: bool) -> RenderedPlan:
    """The plan as its prune applies it: no object at all with `allowDataLoss`, else its PVCs and
    Namespaces only (so they are kept)."""
    kept = tuple(m for m in rendered.manifests if m.get("kind") in KEPT_KINDS)
    return dataclasses.replace(rendered, manifests=() if allow_data_loss else kept, fixed=True)


def last_applied(client: KubeClient, plan: str, namespace: str) -> RenderedPlan | None:
    """What the Plan applied last, as its current generation recorded it, for a prune that cannot read
    the Plan's source (an unsigned head, a fetch failing, the file gone): what stands in the cluster is
    what that generation wrote. None when no generation is recorded."""
    named = current(client, plan, namespace)
    if named is None:
        return None
    generation = read_generation(client, plan, namespace, named.number)
    return dataclasses.replace(recorded_plan(generation), recorded=None)  # a prune, not a rollback


def trim_history(
    client: KubeClient,
    rendered: RenderedPlan,
    *,
    options: ReconcileOptions,
    notice: Callable[[str], None],
    stop: threading.Event,
) -> str | None:
    """The deleted Plan's generation records past `--history-max` deleted, under its run lock (its
    prune recorded the newest, when it deleted anything): a sentence for the Event, or None when the
    lock is held or the records could not be read (then the deletion is retried)."""
    plan, namespace = rendered.plan.name, rendered.namespace
    keep = options.apply.history.keep
    try:
        with holding(client, [(plan, namespace)], options=options.apply.lock, notice=notice, stop=stop):
            gone = trim_generations(client, plan, namespace, keep=keep)
    except (PlannerError, ApiError, UnreachableError) as failure:
        notice(f"{plan_object_source(namespace, plan)}: its generations were not trimmed: {failure}")
        return None
    return f"; deleted {len(gone)} generation records past --history-max {keep}" if gone else ""


def pruned_message(changeset: ChangeSet, *, allow_data_loss: bool) -> str:
    """What a deleted Plan's prune did, for its Event: each object deleted, and each kept with why."""
    deleted = [c.ref for c in changeset.changes if c.action == "delete"]
    kept = [c for c in changeset.changes if c.action == "noop" and c.live is not None]
    said = f"deleted {len(deleted)} objects: {_listed(deleted)}" if deleted else "deleted no object"
    if not kept:
        return f"{said}; kept none"
    reasons = sorted({c.reason or KEPT_WITHOUT_DATA_LOSS for c in kept})
    return f"{said}; kept {len(kept)}: {_listed([c.ref for c in kept])} ({'; '.join(reasons)})"


def _listed(refs: Sequence[ObjectRef]) -> str:
    names = ", ".join(str(ref) for ref in refs[:LISTED_OBJECTS])
    more = f" and {len(refs) - LISTED_OBJECTS} more" if len(refs) > LISTED_OBJECTS else ""
    return f"{names}{more}"

"""Sandboxes beside a plan, in the cluster: warm-pool members (fill, shrink, claim, release) and the
idle reaper's pass. The decisions are `planner.sandboxes`'; this module reads and writes.

A member is a sandbox rendered from its pool's template whose objects carry `planner.dev/pool` and
`planner.dev/claimed` (and no ApplySet label: prune never sees them). Its workspace PVC is the one
object every decision reads and the one a claim writes, with its resourceVersion as precondition: two
concurrent claims of one member cannot both succeed, and a shrink deletes the workspace PVC first with
the resourceVersion it decided on, so it can never delete a member claimed in between.

Creates treat 409 AlreadyExists as done, deletes treat 404 as done: every pass is idempotent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from planner.errors import (
    AlreadyExistsError,
    ConflictError,
    NotFoundError,
    PlannerError,
    WorkloadNotFoundError,
)
from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD, SECRET, KindInfo, by_kind
from planner.kube.client import KubeClient, resource_path
from planner.live import list_objects
from planner.monitor import lifecycle
from planner.monitor.mapping import pod_ready, sandbox_state
from planner.objects import (
    ANNOTATION_IDLE_TIMEOUT,
    ANNOTATION_LAST_ACTIVITY,
    ANNOTATION_PLAN,
    ANNOTATION_RUNTIME_ID,
    LABEL_CLAIMED,
    LABEL_OWNER,
    LABEL_POOL,
    LABEL_WORKLOAD,
    Manifest,
    annotations_of,
    labels_of,
    metadata_of,
)
from planner.plan.model import Plan, WarmPool
from planner.plan.names import workspace_pvc_name
from planner.render.identity import RuntimeID, plan_namespace
from planner.render.sandbox_objects import render_pool_member
from planner.sandboxes.idle import Activity, format_timestamp, idle_sandboxes, is_idle, parse_timestamp
from planner.sandboxes.pool_sizing import Member, PoolChanges, pool_changes

FIELD_MANAGER = "planner-controller"
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True, kw_only=True)
class PoolStatus:
    """A pool's members right now: unclaimed ones whose Pod is Ready, unclaimed ones, claimed ones; and
    the size the plan declares (the unclaimed members the controller keeps)."""

    namespace: str
    pool: str
    size: int
    ready: int
    unclaimed: int
    claimed: int


def is_workspace(claim: Manifest) -> bool:
    """Whether a PVC is a sandbox's workspace PVC, the one that carries its state."""
    workload = labels_of(claim).get(LABEL_WORKLOAD)
    return workload is not None and metadata_of(claim).get("name") == workspace_pvc_name(str(workload))


def cached_pool_counts(
    claims: Iterable[Manifest], pods: Iterable[Manifest]
) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Each pool's (ready, unclaimed, claimed) members by (namespace, pool), from a watch cache's PVCs
    and Pods (no request): what `/metrics` and the controller's web view show."""
    ready_pods = {
        (str(metadata_of(p).get("namespace")), str(labels_of(p).get(LABEL_WORKLOAD)))
        for p in pods
        if pod_ready(p)
    }
    counts: dict[tuple[str, str], tuple[int, int, int]] = {}
    for workspace in claims:
        labels = labels_of(workspace)
        pool = labels.get(LABEL_POOL)
        if pool is None or not is_workspace(workspace):
            continue
        namespace = str(metadata_of(workspace).get("namespace"))
        ready, unclaimed, claimed = counts.get((namespace, str(pool)), (0, 0, 0))
        if labels.get(LABEL_CLAIMED) == "true":
            claimed += 1
        else:
            unclaimed += 1
            ready += (namespace, str(labels.get(LABEL_WORKLOAD))) in ready_pods
        counts[(namespace, str(pool))] = (ready, unclaimed, claimed)
    return counts


def workspaces(client: KubeClient, namespace: str, selector: str) -> list[Manifest]:
    """The workspace PVCs (one per sandbox) matching a label selector, those being deleted left out
    (a PVC waits for its Pod to go first): they are no longer members to count, claim or delete."""
    return _current_workspaces(
        list_objects(client, PERSISTENT_VOLUME_CLAIM, namespace, label_selector=selector), namespace
    )


def _member(workspace: Manifest, pods: frozenset[str] | None = None) -> Member:
    """A member as its workspace PVC says; `pods` are the names of the members whose Pod exists (None:
    not read, every member counted as having one)."""
    name = str(labels_of(workspace)[LABEL_WORKLOAD])
    return Member(
        name=name,
        claimed=labels_of(workspace).get(LABEL_CLAIMED) == "true",
        created=str(metadata_of(workspace).get("creationTimestamp", "")),
        has_pod=pods is None or name in pods,
    )


def pool_status(client: KubeClient, namespace: str, pool: WarmPool) -> PoolStatus:
    members = [_member(w) for w in workspaces(client, namespace, f"{LABEL_POOL}={pool.name}")]
    selector = f"{LABEL_POOL}={pool.name},{LABEL_CLAIMED}=false"
    pods = list_objects(client, POD, namespace, label_selector=selector)
    ready_pods = {str(labels_of(p).get(LABEL_WORKLOAD)) for p in pods if pod_ready(p)}
    unclaimed = [m for m in members if not m.claimed]
    return PoolStatus(
        namespace=namespace,
        pool=pool.name,
        size=pool.size,
        ready=sum(1 for m in unclaimed if m.name in ready_pods),
        unclaimed=len(unclaimed),
        claimed=len(members) - len(unclaimed),
    )


# --- keeping a pool's size -------------------------------------------------------------------------


def maintain_pool(client: KubeClient, plan: Plan, pool: WarmPool, *, default_namespace: str) -> PoolChanges:
    """Create or delete unclaimed members until the pool has `size` of them, and create again the Pod
    of an unclaimed member that lost it; returns what it did."""
    namespace = plan_namespace(plan, default_namespace)
    found = {
        str(labels_of(w)[LABEL_WORKLOAD]): w
        for w in workspaces(client, namespace, f"{LABEL_POOL}={pool.name}")
        if annotations_of(w).get(ANNOTATION_PLAN) == plan.name
    }
    unclaimed = f"{LABEL_POOL}={pool.name},{LABEL_CLAIMED}=false"
    pods = frozenset(
        str(labels_of(p).get(LABEL_WORKLOAD))
        for p in list_objects(client, POD, namespace, label_selector=unclaimed)
        if not metadata_of(p).get("deletionTimestamp")
    )
    changes = pool_changes(pool.name, pool.size, (_member(w, pods) for w in found.values()))
    for name in (*changes.create, *changes.repair):
        # A repair creates every object of the member again: those still there answer 409, the Pod not.
        for manifest in render_pool_member(plan, pool, name, default_namespace=default_namespace):
            _create(client, manifest)
    deleted = tuple(name for name in changes.delete if _delete_member(client, found[name]))
    return PoolChanges(create=changes.create, delete=deleted, repair=changes.repair)


def remove_undeclared_pools(
    client: KubeClient, plan: Plan, claims: Iterable[Manifest], *, default_namespace: str
) -> tuple[str, ...]:
    """Delete the unclaimed members of this plan's pools that the plan no longer declares, found among
    `claims` (PVCs as last seen, a watch cache: a stale one fails its delete's precondition, harmlessly)."""
    namespace = plan_namespace(plan, default_namespace)
    declared = {pool.name for pool in plan.warm_pools}
    removed = []
    for workspace in _current_workspaces(claims, namespace):
        labels = labels_of(workspace)
        ours = annotations_of(workspace).get(ANNOTATION_PLAN) == plan.name and LABEL_POOL in labels
        undeclared = ours and labels[LABEL_POOL] not in declared and labels.get(LABEL_CLAIMED) == "false"
        if undeclared and _delete_member(client, workspace):
            removed.append(str(labels[LABEL_WORKLOAD]))
    return tuple(removed)


def _current_workspaces(claims: Iterable[Manifest], namespace: str) -> list[Manifest]:
    return [
        c
        for c in claims
        if metadata_of(c).get("namespace") == namespace
        and is_workspace(c)
        and not metadata_of(c).get("deletionTimestamp")
    ]


def listed_claims(client: KubeClient, namespaces: Iterable[str]) -> list[Manifest]:
    """Every PVC of `namespaces`, one LIST each: what a run without a watch cache hands the functions
    that take `claims`."""
    return [
        c
        for namespace in sorted(set(namespaces))
        for c in list_objects(client, PERSISTENT_VOLUME_CLAIM, namespace)
    ]


def _create(client: KubeClient, manifest: Manifest) -> None:
    kind = by_kind(str(manifest["kind"]))
    namespace = str(metadata_of(manifest)["namespace"])
    # AlreadyExists is ours from an earlier pass: member names are random, so nobody else's.
    with contextlib.suppress(AlreadyExistsError):
        client.request(
            "POST",
            resource_path(kind, namespace),
            query={"fieldManager": FIELD_MANAGER},
            body=manifest,
            verb="create",
        )


def _delete_member(client: KubeClient, workspace: Manifest) -> bool:
    """Delete an unclaimed member, its workspace PVC first under the resourceVersion it was read with:
    False (and nothing deleted) when a claim changed it since."""
    meta = metadata_of(workspace)
    namespace, name = str(meta["namespace"]), str(labels_of(workspace)[LABEL_WORKLOAD])
    preconditions = {"resourceVersion": str(meta.get("resourceVersion", ""))}
    try:
        _delete(client, PERSISTENT_VOLUME_CLAIM, namespace, str(meta["name"]), preconditions=preconditions)
    except ConflictError:
        return False
    _delete_workload_objects(client, namespace, name)
    return True


def _delete_workload_objects(client: KubeClient, namespace: str, name: str) -> None:
    selector = f"{LABEL_WORKLOAD}={name}"
    for kind in (POD, PERSISTENT_VOLUME_CLAIM, SECRET):
        for obj in list_objects(client, kind, namespace, label_selector=selector):
            _delete(client, kind, namespace, str(metadata_of(obj)["name"]))


def _delete(
    client: KubeClient,
    kind: KindInfo,
    namespace: str,
    name: str,
    *,
    preconditions: dict[str, str] | None = None,
) -> None:
    body: dict[str, object] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    if preconditions:
        body["preconditions"] = preconditions
    with contextlib.suppress(NotFoundError):
        client.request("DELETE", resource_path(kind, namespace, name), body=body, verb="delete")


# --- claim and release -----------------------------------------------------------------------------


def claim(client: KubeClient, namespace: str, pool: str, owner: str) -> RuntimeID:
    """Take one unclaimed member of `pool` for `owner` (oldest first; a lost race moves on to the next)
    and return its runtime ID. PlannerError when `owner` already holds a sandbox or none is free."""
    if workspaces(client, namespace, f"{LABEL_OWNER}={owner}"):
        raise PlannerError(f"{owner!r} already holds a sandbox in namespace {namespace}; release it first")
    free = workspaces(client, namespace, f"{LABEL_POOL}={pool},{LABEL_CLAIMED}=false")
    for workspace in sorted(
        free, key=lambda w: (str(metadata_of(w).get("creationTimestamp")), str(metadata_of(w)["name"]))
    ):
        if _take(client, workspace, owner):
            name = str(labels_of(workspace)[LABEL_WORKLOAD])
            _relabel_rest(client, namespace, name, owner)
            return RuntimeID.parse(str(annotations_of(workspace)[ANNOTATION_RUNTIME_ID]))
    raise PlannerError(f"warm pool {pool!r} in namespace {namespace} has no unclaimed sandbox")


def _claim_labels(owner: str) -> dict[str, str]:
    return {LABEL_CLAIMED: "true", LABEL_OWNER: owner}


def _take(client: KubeClient, workspace: Manifest, owner: str) -> bool:
    meta = metadata_of(workspace)
    body = {
        "metadata": {
            "resourceVersion": meta.get("resourceVersion"),
            "labels": _claim_labels(owner),
            "annotations": {ANNOTATION_LAST_ACTIVITY: format_timestamp(datetime.now(UTC))},
        }
    }
    try:
        _merge_patch(client, PERSISTENT_VOLUME_CLAIM, str(meta["namespace"]), str(meta["name"]), body)
    except (ConflictError, NotFoundError):
        return False
    return True


def _merge_patch(client: KubeClient, kind: KindInfo, namespace: str, name: str, body: Manifest) -> None:
    path = resource_path(kind, namespace, name)
    query = {"fieldManager": FIELD_MANAGER}
    client.request("PATCH", path, query=query, body=body, content_type=MERGE_PATCH, verb="patch")


def _relabel_rest(client: KubeClient, namespace: str, name: str, owner: str) -> None:
    """Mark the member's other objects claimed too, so label selectors agree with the workspace PVC."""
    body = {"metadata": {"labels": _claim_labels(owner)}}
    for kind in (POD, PERSISTENT_VOLUME_CLAIM, SECRET):
        for obj in list_objects(
            client, kind, namespace, label_selector=f"{LABEL_WORKLOAD}={name},{LABEL_CLAIMED}=false"
        ):
            with contextlib.suppress(NotFoundError):
                _merge_patch(client, kind, namespace, str(metadata_of(obj)["name"]), body)


def _runtime_id(found: list[Manifest], missing: str) -> RuntimeID:
    if not found:
        raise WorkloadNotFoundError(missing)
    return RuntimeID.parse(str(annotations_of(found[0])[ANNOTATION_RUNTIME_ID]))


def claimed_by(client: KubeClient, namespace: str, owner: str) -> RuntimeID:
    """The runtime ID of the sandbox `owner` claimed; WorkloadNotFoundError (exit 4) otherwise."""
    found = workspaces(client, namespace, f"{LABEL_OWNER}={owner}")
    return _runtime_id(found, f"no sandbox claimed by {owner!r} in namespace {namespace}")


def release(client: KubeClient, namespace: str, owner: str, *, allow_data_loss: bool) -> lifecycle.Outcome:
    """Delete the sandbox `owner` claimed: its Pod, and with `allow_data_loss` its PVCs and env Secret
    (else the PVCs stay, marked paused, as `planner delete` leaves a sandbox)."""
    rid = claimed_by(client, namespace, owner)
    if allow_data_loss:
        _delete_workload_objects(client, namespace, rid.name)
        return lifecycle.Outcome(
            runtime_id=str(rid),
            action="released",
            message=f"deleted sandbox {namespace}/{rid.name} and its PVCs",
        )
    return lifecycle.delete(client, rid, allow_data_loss=False)


def sandbox_named(client: KubeClient, namespace: str, name: str) -> RuntimeID:
    """A sandbox by the name a user knows it by: the owner a pool member was claimed for, else its own."""
    claimed = workspaces(client, namespace, f"{LABEL_OWNER}={name}")
    found = claimed or workspaces(client, namespace, f"{LABEL_WORKLOAD}={name}")
    return _runtime_id(found, f"no sandbox {name!r} in namespace {namespace}")


# --- the idle reaper -------------------------------------------------------------------------------


def _activity(workspace: Manifest) -> Activity:
    annotations = annotations_of(workspace)
    stamp = annotations.get(ANNOTATION_LAST_ACTIVITY) or metadata_of(workspace).get("creationTimestamp")
    timeout = annotations.get(ANNOTATION_IDLE_TIMEOUT)
    return Activity(
        name=str(labels_of(workspace)[LABEL_WORKLOAD]),
        running=sandbox_state(workspace) == "running",
        last_activity=parse_timestamp(str(stamp)),
        idle_timeout=timedelta(seconds=float(timeout)) if timeout else None,
    )


def reap_idle(
    client: KubeClient, claims: Iterable[Manifest], namespaces: Iterable[str], *, now: datetime | None = None
) -> list[str]:
    """Pause (reason `idle`) every running sandbox in `namespaces` idle past its timeout, judged from
    `claims` (PVCs as last seen; a watch cache costs no request); the runtime IDs it paused. Unclaimed
    pool members are waiting to be claimed, not idle: never reaped."""
    moment = now or datetime.now(UTC)
    reaped = []
    for namespace in sorted(set(namespaces)):
        candidates = {
            str(labels_of(w)[LABEL_WORKLOAD]): w
            for w in _current_workspaces(claims, namespace)
            if ANNOTATION_IDLE_TIMEOUT in annotations_of(w) and labels_of(w).get(LABEL_CLAIMED) != "false"
        }
        for name in idle_sandboxes((_activity(w) for w in candidates.values()), moment):
            rid = RuntimeID.parse(str(annotations_of(candidates[name])[ANNOTATION_RUNTIME_ID]))
            # Judged again on the object as it is now: a cache a moment behind must not pause a
            # sandbox touched since, nor count one it already paused.
            if is_idle(_activity(lifecycle.primary(client, rid)), moment):
                lifecycle.pause_idle(client, rid)
                reaped.append(str(rid))
    return reaped

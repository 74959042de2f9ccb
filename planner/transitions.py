"""Sandbox transitions (docs/design.md §4): a sandbox's creates, deletes and updates renamed as the
move they realise — pause, resume, rebase gN→gN+1, fork — so `plan` says what happens to the sandbox
rather than listing bare prunes. `diff` calls `name_sandbox_transitions` on its changes; a rebase's old
rootfs then needs no `--allow-data-loss` (`planner.dataloss`). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from planner.changeset import Change, Transition
from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD
from planner.objects import (
    ANNOTATION_HASH,
    ANNOTATION_LAST_ACTIVITY,
    ANNOTATION_PAUSE_REASON,
    ANNOTATION_SANDBOX_STATE,
    PAUSE_REASON_IDLE,
    Manifest,
    ObjectRef,
    annotations_of,
    sandbox_of,
)
from planner.plan.names import rootfs_generation, workspace_pvc_name

_STATE_FIELD = f'.metadata.annotations["{ANNOTATION_SANDBOX_STATE}"]'

_POD_MOVES: Mapping[str, str] = {
    "pause": "pause: the pod goes, its PVCs stay",
    "resume": "resume: the pod is recreated",
}


def name_sandbox_transitions(changes: dict[ObjectRef, Change]) -> None:
    """Rename the creates, deletes and updates of each sandbox as the transition they realise."""
    by_sandbox: dict[str, list[ObjectRef]] = {}
    for ref, change in changes.items():
        sandbox = sandbox_of(change.desired or change.live)
        if sandbox is not None:
            by_sandbox.setdefault(sandbox, []).append(ref)
    for sandbox, refs in by_sandbox.items():
        _name_sandbox(sandbox, {ref: changes[ref] for ref in refs}, changes)


def _state(manifest: Manifest | None) -> str | None:
    value = annotations_of(manifest).get(ANNOTATION_SANDBOX_STATE)
    return str(value) if value else None


def _name_sandbox(sandbox: str, own: dict[ObjectRef, Change], changes: dict[ObjectRef, Change]) -> None:
    workspace = next(
        (
            c
            for r, c in own.items()
            if r.kind == PERSISTENT_VOLUME_CLAIM.kind and r.name == workspace_pvc_name(sandbox)
        ),
        None,
    )
    if workspace is None or workspace.desired is None:
        return  # the sandbox left the plan: its objects are plain prunes
    pod = next((c for r, c in own.items() if r.kind == POD.kind and r.name == sandbox), None)
    _name_pause_resume(workspace, pod, changes)
    rootfs = [c for r, c in own.items() if rootfs_generation(r.name, sandbox) is not None]
    _name_rebase(sandbox, rootfs, [workspace, pod], changes)
    for change in own.values():
        source = ((change.desired or {}).get("spec") or {}).get("dataSource") or {}
        if change.action == "create" and change.ref.kind == PERSISTENT_VOLUME_CLAIM.kind and source:
            changes[change.ref] = dataclasses.replace(
                change, transition="fork", reason=f"fork of {source.get('name')}"
            )


def _hold_idle_pause(workspace: Change, pod: Change | None, changes: dict[ObjectRef, Change]) -> bool:
    """A plan's `running` is an upper bound for the idle reaper: a sandbox it paused for idleness stays
    paused — no pod create, its state left as it is — until it is touched or resumed (which clears the
    reason). True when it held one."""
    live = annotations_of(workspace.live)
    if _state(workspace.desired) != "running" or _state(workspace.live) != "paused":
        return False
    if live.get(ANNOTATION_PAUSE_REASON) != PAUSE_REASON_IDLE:
        return False
    since = live.get(ANNOTATION_LAST_ACTIVITY) or "?"
    fields = tuple(f for f in workspace.fields if f.path != _STATE_FIELD)
    if workspace.action == "update":
        desired = workspace.desired or {}
        metadata = desired.get("metadata") or {}
        held = {**metadata, "annotations": {**annotations_of(desired), ANNOTATION_SANDBOX_STATE: "paused"}}
        unchanged = not fields and annotations_of(desired).get(ANNOTATION_HASH) == live.get(ANNOTATION_HASH)
        changes[workspace.ref] = dataclasses.replace(
            workspace,
            action="noop" if unchanged else "update",
            reason="" if unchanged else workspace.reason,
            desired={**desired, "metadata": held},
            fields=fields,
            drift=workspace.drift and not unchanged and bool(fields),
        )
    if pod is not None and pod.action == "create":
        changes[pod.ref] = dataclasses.replace(pod, action="noop", reason=f"paused (idle since {since})")
    return True


def _name_pause_resume(workspace: Change, pod: Change | None, changes: dict[ObjectRef, Change]) -> None:
    if _hold_idle_pause(workspace, pod, changes):
        return
    wanted, current = _state(workspace.desired), _state(workspace.live)
    if workspace.live is None or wanted not in ("paused", "running"):
        return
    transition: Transition = "pause" if wanted == "paused" else "resume"
    pod_moves = pod is not None and pod.action == ("delete" if wanted == "paused" else "create")
    if current == wanted and not pod_moves:
        return
    # The plan is the truth: when its own record of the state did not change, someone else moved it.
    out_of_band = annotations_of(workspace.desired).get(ANNOTATION_HASH) == annotations_of(
        workspace.live
    ).get(ANNOTATION_HASH)
    if workspace.action != "noop":
        changes[workspace.ref] = dataclasses.replace(workspace, transition=transition)
    if pod is not None and pod_moves:
        reason = _POD_MOVES[transition] + ("; moved outside the plan" if out_of_band else "")
        changes[pod.ref] = dataclasses.replace(pod, transition=transition, reason=reason, drift=out_of_band)


def _name_rebase(
    sandbox: str, rootfs: list[Change], companions: list[Change | None], changes: dict[ObjectRef, Change]
) -> None:
    created = [c for c in rootfs if c.action == "create"]
    deleted = [c for c in rootfs if c.action == "delete"]
    if not created or not deleted:
        return
    old = sorted(rootfs_generation(c.ref.name, sandbox) or 0 for c in deleted)
    new = rootfs_generation(created[0].ref.name, sandbox)
    reason = f"rebase g{old[-1]}→g{new}"
    for change in [*rootfs, *companions]:
        current = changes.get(change.ref) if change else None
        if current is not None and current.action != "noop" and current.transition is None:
            changes[current.ref] = dataclasses.replace(current, transition="rebase", reason=reason)

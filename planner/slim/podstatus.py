"""A Pod's status: how the kubelet writes it, and how kubectl reads it back as READY/STATUS/RESTARTS.

Writing (`pod_status`, for the node agent): phase, the five conditions, hostIP/podIP, startTime and
full `containerStatuses`/`initContainerStatuses` (state, lastState, ready, started, restartCount,
image, imageID, containerID), built from the simulated timeline (`podsim.PodView`). Condition
transition times are carried over from the previous status while a condition keeps its value, so
recomputing an unchanged pod writes nothing.

Reading (`pod_status_cells`, for the Pod Table's columns): kubectl's server-side printer algorithm —
init containers (`Init:N/M`, `Init:<reason>`), restartable sidecars counted in READY, waiting and
terminated reasons, `Completed` turned back into `Running`/`NotReady` while a container still runs,
`Terminating`, `Unknown` for a lost node, and restarts with the time since the last one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from planner.slim.columns import human_duration, parse_time
from planner.slim.meta import rfc3339
from planner.slim.podsim import ContainerView, PodView, Run

Obj = dict[str, Any]


def qualified_image(image: str) -> str:
    """`nginx` → `docker.io/library/nginx:latest`, as containerd reports it."""
    name, tag = image, "latest"
    last = image.rsplit("/", 1)[-1]
    if "@" in image:
        return image
    if ":" in last:
        name, tag = image.rsplit(":", 1)
    if "/" not in name:
        name = f"library/{name}"
    first = name.split("/", 1)[0]
    if "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    return f"{name}:{tag}"


def image_id(image: str) -> str:
    repository = qualified_image(image).rsplit(":", 1)[0]
    return f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def container_id(pod_uid: str, name: str, run_index: int) -> str:
    return f"containerd://{hashlib.sha256(f'{pod_uid}/{name}/{run_index}'.encode()).hexdigest()}"


def _terminated(run: Run, cid: str) -> Obj:
    assert run.end is not None
    return {
        "exitCode": run.exit_code,
        "reason": run.reason,
        "startedAt": rfc3339(run.start),
        "finishedAt": rfc3339(run.end),
        "containerID": cid,
    }


def container_status(container: Obj, view: ContainerView, *, pod_uid: str, now: float, init: bool) -> Obj:
    image = str(container.get("image", ""))
    # imageID is "" on a real waiting container, but the core prunes empty strings and the Python
    # client requires the field, so it is always the resolved digest here.
    status: Obj = {
        "name": view.name,
        "image": qualified_image(image),
        "imageID": image_id(image),
        "ready": False,
    }
    status["restartCount"] = view.restart_count
    finished = [r for r in view.runs if r.end is not None and r.end <= now]
    current = view.current
    if view.waiting_reason is not None:
        waiting: Obj = {"reason": view.waiting_reason}
        if view.waiting_message:
            waiting["message"] = view.waiting_message
        status["state"] = {"waiting": waiting}
        status["started"] = False
        previous = finished[-1] if finished else None
        status["lastState"] = (
            {"terminated": _terminated(previous, _cid(pod_uid, view, previous))} if previous else {}
        )
    else:
        assert current is not None
        cid = _cid(pod_uid, view, current)
        status["containerID"] = cid
        earlier = [r for r in finished if r is not current]
        status["lastState"] = (
            {"terminated": _terminated(earlier[-1], _cid(pod_uid, view, earlier[-1]))} if earlier else {}
        )
        if view.running(now):
            status["state"] = {"running": {"startedAt": rfc3339(current.start)}}
            status["ready"] = view.ready(now)
            status["started"] = True
        else:
            status["state"] = {"terminated": _terminated(current, cid)}
            status["ready"] = init and current.exit_code == 0
            status["started"] = False
    return status


def _cid(pod_uid: str, view: ContainerView, run: Run) -> str:
    return container_id(pod_uid, view.name, view.runs.index(run))


def phase(view: PodView, now: float) -> str:
    if view.failed:
        return "Failed"
    if view.init_done_at is None:
        return "Pending"
    if view.main and all(c.done for c in view.main):
        codes = [c.runs[-1].exit_code for c in view.main]
        return "Succeeded" if all(code == 0 for code in codes) else "Failed"
    if any(c.runs for c in view.main):
        return "Running"
    return "Pending"


def conditions(view: PodView, *, pod_phase: str, created: bool, now: float, old: list[Obj]) -> list[Obj]:
    previous = {c.get("type"): c for c in old}
    sidecars = [c for c in view.init if c.name in view.sidecars]
    unready = [c.name for c in (*sidecars, *view.main) if not c.ready(now)]
    pending_init = [c.name for c in view.init if not view.initialized(c)]
    finished = pod_phase in ("Succeeded", "Failed")
    ready_reason = "PodCompleted" if finished else "ContainersNotReady"
    ready = not unready and not finished
    wanted: list[tuple[str, bool, str, str]] = [
        ("PodReadyToStartContainers", created, "", ""),
        (
            "Initialized",
            not pending_init,
            "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(pending_init)}]",
        ),
        ("Ready", ready, ready_reason, f"containers with unready status: [{' '.join(unready)}]"),
        ("ContainersReady", ready, ready_reason, f"containers with unready status: [{' '.join(unready)}]"),
    ]
    if finished:
        wanted[2] = ("Ready", False, "PodCompleted", "")
        wanted[3] = ("ContainersReady", False, "PodCompleted", "")
    out = [
        _condition(kind, ok, reason, message, previous.get(kind), now) for kind, ok, reason, message in wanted
    ]
    scheduled = previous.get("PodScheduled")
    if scheduled:
        out.append(scheduled)
    return out


def _condition(kind: str, ok: bool, reason: str, message: str, old: Obj | None, now: float) -> Obj:
    status = "True" if ok else "False"
    condition: Obj = {"type": kind, "status": status, "lastProbeTime": None}
    unchanged = old is not None and old.get("status") == status
    condition["lastTransitionTime"] = old.get("lastTransitionTime") if unchanged and old else rfc3339(now)
    if not ok and reason:
        condition["reason"] = reason
        if message:
            condition["message"] = message
    return condition


def pod_status(pod: Obj, view: PodView, *, t0: float, now: float, host_ip: str, pod_ip: str) -> Obj:
    spec = pod.get("spec") or {}
    old = pod.get("status") or {}
    uid = str(pod["metadata"].get("uid", ""))
    created = any(c.runs or c.waiting_reason != "ContainerCreating" for c in view.main)
    pod_phase = phase(view, now)
    status: Obj = {
        "phase": pod_phase,
        "conditions": conditions(
            view, pod_phase=pod_phase, created=created, now=now, old=old.get("conditions") or []
        ),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": rfc3339(t0),
    }
    by_name = {c.get("name"): c for c in spec.get("initContainers") or []}
    if view.init:
        status["initContainerStatuses"] = [
            container_status(by_name[v.name], v, pod_uid=uid, now=now, init=v.name not in view.sidecars)
            for v in view.init
        ]
    by_name = {c.get("name"): c for c in spec.get("containers") or []}
    status["containerStatuses"] = [
        container_status(by_name[v.name], v, pod_uid=uid, now=now, init=False) for v in view.main
    ]
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    return status


# --- kubectl's reading: READY, STATUS and RESTARTS ----------------------------------------------------


def _is_restartable(container: dict[str, Any] | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _finished_at(status: dict[str, Any]) -> datetime | None:
    return parse_time(((status.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))


def _later(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None:
        return current
    return candidate if current is None or candidate > current else current


@dataclass
class _PodTally:
    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: datetime | None = None
    sidecar_restarts: int = 0
    last_sidecar_restart: datetime | None = None


def pod_status_cells(pod: dict[str, Any], now: datetime) -> tuple[str, str, str]:
    """READY, STATUS and RESTARTS of a pod, as kubectl's server-side printer computes them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs.values() if _is_restartable(c))
    tally = _PodTally(reason=_initial_reason(status))
    initializing = _tally_init_containers(status, init_specs, tally)
    if not initializing or _condition_true(status, "Initialized"):
        _tally_containers(status, tally)
    reason = _terminal_override(pod, status, tally.reason)
    restarts = str(tally.restarts)
    if tally.restarts and tally.last_restart is not None:
        restarts = f"{tally.restarts} ({human_duration(now - tally.last_restart)} ago)"
    return f"{tally.ready}/{total}", reason, restarts


def _initial_reason(status: dict[str, Any]) -> str:
    reason = status.get("reason") or status.get("phase") or ""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return str(reason)


def _tally_init_containers(status: dict[str, Any], specs: dict[str, Any], tally: _PodTally) -> bool:
    """Count init containers; returns True while the pod is still initializing."""
    statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(statuses):
        restartable = _is_restartable(specs.get(container.get("name")))
        tally.restarts += int(container.get("restartCount") or 0)
        tally.last_restart = _later(tally.last_restart, _finished_at(container))
        if restartable:
            tally.sidecar_restarts += int(container.get("restartCount") or 0)
            tally.last_sidecar_restart = _later(tally.last_sidecar_restart, _finished_at(container))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if restartable and container.get("started"):
            tally.ready += 1 if container.get("ready") else 0
            continue
        tally.reason = _init_reason(terminated, waiting, index, len(specs))
        return True
    return False


def _init_reason(
    terminated: dict[str, Any] | None, waiting: dict[str, Any] | None, index: int, count: int
) -> str:
    if terminated is not None:
        if terminated.get("reason"):
            return f"Init:{terminated['reason']}"
        if terminated.get("signal"):
            return f"Init:Signal:{terminated['signal']}"
        return f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
    if waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
        return f"Init:{waiting['reason']}"
    return f"Init:{index}/{count}"


def _tally_containers(status: dict[str, Any], tally: _PodTally) -> None:
    tally.restarts = tally.sidecar_restarts
    tally.last_restart = tally.last_sidecar_restart
    has_running = False
    for container in reversed(status.get("containerStatuses") or []):
        tally.restarts += int(container.get("restartCount") or 0)
        tally.last_restart = _later(tally.last_restart, _finished_at(container))
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting is not None and waiting.get("reason"):
            tally.reason = waiting["reason"]
        elif terminated is not None and terminated.get("reason"):
            tally.reason = terminated["reason"]
        elif terminated is not None:
            signal = terminated.get("signal")
            tally.reason = (
                f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
            )
        elif container.get("ready") and state.get("running") is not None:
            has_running = True
            tally.ready += 1
    if tally.reason == "Completed" and has_running:
        tally.reason = "Running" if _condition_true(status, "Ready") else "NotReady"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _terminal_override(pod: dict[str, Any], status: dict[str, Any], reason: str) -> str:
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return reason
    if status.get("reason") == "NodeLost":
        return "Unknown"
    if status.get("phase") not in ("Succeeded", "Failed"):
        return "Terminating"
    return reason

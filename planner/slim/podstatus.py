"""A Pod's status as the kubelet writes it, built from the simulated timeline (`podsim.PodView`).

Phase, the five conditions, hostIP/podIP, startTime and full `containerStatuses`/
`initContainerStatuses` (state, lastState, ready, started, restartCount, image, imageID,
containerID). Condition transition times are carried over from the previous status while a
condition keeps its value, so recomputing an unchanged pod writes nothing.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from planner.slim.podsim import ContainerView, PodView, Run

Obj = dict[str, Any]


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    unready = [c.name for c in view.main if not c.ready(now)]
    pending_init = [c.name for c in view.init if not (c.done and c.runs and c.runs[-1].exit_code == 0)]
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
            container_status(by_name[v.name], v, pod_uid=uid, now=now, init=True) for v in view.init
        ]
    by_name = {c.get("name"): c for c in spec.get("containers") or []}
    status["containerStatuses"] = [
        container_status(by_name[v.name], v, pod_uid=uid, now=now, init=False) for v in view.main
    ]
    if old.get("qosClass"):
        status["qosClass"] = old["qosClass"]
    return status

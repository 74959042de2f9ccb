"""The lifecycle operations on one runtime ID: start, stop, pause, resume, delete, logs, inspect.

Each operation writes only what it changes, as field manager `planner-lifecycle` (docs/design.md §3): a
Deployment's replicas through its `/scale` subresource, a sandbox's state annotation on its workspace
PVC, a sandbox Pod recreated from the spec that PVC records, or a delete. Nothing else on the object is
touched, so the plan's own fields stay with `planner` and the next `plan` shows exactly what a lifecycle
command changed (a stopped Deployment whose plan declares replicas, a paused sandbox whose plan says
running: drift that the next apply restores).

What each does is its kind's (`planner.workloads`, each module's docstring); a sandbox's, here: start
and resume recreate the Pod from the spec its workspace PVC records and mark it `running`; stop and pause
mark it `paused`, delete the Pod and keep the PVCs; delete deletes the Pod, then the PVCs only with
`allow_data_loss` (else they stay and the state is `paused`).

Every sandbox operation also stamps `planner.dev/last-activity` (now) on the workspace PVC, which the
idle reaper reads; `touch` stamps only that. The reaper pauses with reason `idle`
(`planner.dev/paused-reason`), which any later operation clears.

A malformed runtime ID is a RuntimeIDError (exit 1) before any request; a workload that does not exist
is a WorkloadNotFoundError (exit 4).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner import workloads
from planner.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    PlannerError,
    WorkloadNotFoundError,
)
from planner.kinds import (
    HORIZONTAL_POD_AUTOSCALER,
    INGRESS,
    JOB,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    SERVICE,
    KindInfo,
)
from planner.kube.client import KubeClient, resource_path
from planner.live import get_or_none, list_objects, read_stateful_claims
from planner.monitor.mapping import recorded_pod, rootfs_claim, sandbox_state
from planner.objects import (
    ANNOTATION_LAST_ACTIVITY,
    ANNOTATION_PAUSE_REASON,
    ANNOTATION_RUNTIME_ID,
    ANNOTATION_SANDBOX_STATE,
    LABEL_WORKLOAD,
    PAUSE_REASON_IDLE,
    Manifest,
    annotations_of,
    metadata_of,
    newest,
)
from planner.plan.names import service_name, workspace_pvc_name
from planner.render.identity import RuntimeID, with_hash
from planner.sandboxes.idle import format_timestamp
from planner.state.applyset import run_finalizer_removal

FIELD_MANAGER = "planner-lifecycle"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
RELEASE_ATTEMPTS = 8
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
DEFAULT_TAIL = 200
_GENERATION = re.compile(r"-rootfs-g(\d+)$")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What an operation did, in a sentence (`scaled deployment shop/web to 1`)."""

    runtime_id: str
    action: str
    message: str


@dataclass(frozen=True, kw_only=True)
class Inspection:
    """`inspect`'s answer. `ip_address` is the Service DNS name for a Deployment (gobrave's IPAddress),
    the Pod IP otherwise; `pod` is the latest pod's name; the sandbox fields are None for workloads."""

    runtime_id: str
    kind: str
    namespace: str
    name: str
    ip_address: str
    node_name: str
    pod: str
    pvcs: tuple[str, ...] | None = None
    generation: int | None = None
    state: str | None = None


def parse(runtime_id: str | RuntimeID) -> RuntimeID:
    """The parsed runtime ID; RuntimeIDError (exit 1) naming the expected form otherwise."""
    return runtime_id if isinstance(runtime_id, RuntimeID) else RuntimeID.parse(runtime_id)


def _describe(rid: RuntimeID) -> str:
    return f"{rid.kind} {rid.namespace}/{rid.name}"


def _not_found(rid: RuntimeID, why: str = "") -> WorkloadNotFoundError:
    return WorkloadNotFoundError(f"{_describe(rid)} ({rid}) not found{why}")


def primary_object(rid: RuntimeID) -> tuple[KindInfo, str]:
    """The object whose existence is the workload's: Deployment, StatefulSet, Job, CronJob, or the
    sandbox's workspace PVC."""
    if rid.kind != workloads.SANDBOX:
        return workloads.named(rid.kind).api, rid.name
    return PERSISTENT_VOLUME_CLAIM, workspace_pvc_name(rid.name)


def primary(client: KubeClient, rid: RuntimeID, *, why: str = "") -> Manifest:
    """The workload's own object; WorkloadNotFoundError (exit 4) when it does not exist."""
    kind, name = primary_object(rid)
    found = get_or_none(client, kind, rid.namespace, name)
    if found is None:
        raise _not_found(rid, why)
    return found


def _write_query() -> dict[str, str]:
    return {"fieldManager": FIELD_MANAGER}


def _scale(client: KubeClient, rid: RuntimeID, replicas: int) -> str:
    """Scale through `/scale`."""
    kind, _ = primary_object(rid)
    path = resource_path(kind, rid.namespace, rid.name) + "/scale"
    body = {"spec": {"replicas": replicas}}
    client.request("PATCH", path, query=_write_query(), body=body, content_type=MERGE_PATCH, verb="patch")
    return f"scaled {_describe(rid)} to {replicas}"


@dataclass(frozen=True)
class _Workload:
    """One workload as its kind's lifecycle sees it (`planner.workloads.kind.Handle`)."""

    client: KubeClient
    rid: RuntimeID

    @property
    def name(self) -> str:
        return self.rid.name

    @property
    def namespace(self) -> str:
        return self.rid.namespace

    @property
    def describe(self) -> str:
        return _describe(self.rid)

    def own(self, *, why: str = "") -> Manifest:
        return primary(self.client, self.rid, why=why)

    def scale(self, replicas: int) -> str:
        return _scale(self.client, self.rid, replicas)

    def patch(self, body: dict[str, Any]) -> None:
        kind, name = primary_object(self.rid)
        path = resource_path(kind, self.rid.namespace, name)
        self.client.request(
            "PATCH", path, query=_write_query(), body=body, content_type=MERGE_PATCH, verb="patch"
        )

    def delete(self, kind: KindInfo, name: str, *, propagation: str = "Background") -> bool:
        return _delete(self.client, kind, self.rid.namespace, name, propagation=propagation)

    def delete_companions(self) -> str:
        kind = workloads.named(self.rid.kind)
        said = []
        if kind.scalable and _delete_own(self.client, HORIZONTAL_POD_AUTOSCALER, self.rid):
            said.append(f"horizontalpodautoscaler {self.name}")
        if kind.service == "exposed" and _delete_own(self.client, INGRESS, self.rid):
            said.append(f"ingress {self.name}")
        if kind.service is not None:
            service = service_name(self.name) if kind.service == "exposed" else self.name
            self.delete(SERVICE, service)
            said.append(f"service {service} (if any)")
        return ", ".join(said) or "nothing else"

    def delete_run(self) -> None:
        _delete_job(self.client, self.rid)

    def claims(self, own: Manifest) -> list[str]:
        return [str(metadata_of(claim)["name"]) for claim in read_stateful_claims(self.client, own)]


def _delete(client: KubeClient, kind: KindInfo, namespace: str, name: str, *, propagation: str) -> bool:
    """Delete one object; False when it was already gone."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
    try:
        client.request("DELETE", resource_path(kind, namespace, name), body=body, verb="delete")
    except NotFoundError:
        return False
    return True


def release_run_finalizer(client: KubeClient, job: Manifest) -> None:
    """Remove the run-record finalizer (`applyset.RUN_FINALIZER`) from the pods of `job` (one LIST),
    then from `job` as read; nothing to do for what holds none or is gone."""
    selector = f"{CONTROLLER_UID_LABEL}={metadata_of(job).get('uid')}"
    for pod in list_objects(
        client, POD, str(metadata_of(job).get("namespace") or ""), label_selector=selector
    ):
        _release(client, POD, pod)
    _release(client, JOB, job)


def _release(client: KubeClient, kind: KindInfo, obj: Manifest) -> None:
    """Remove the run-record finalizer from `obj` as read, reading it again when its finalizers
    changed in between."""
    namespace, name = str(metadata_of(obj).get("namespace") or ""), str(metadata_of(obj).get("name"))
    path = resource_path(kind, namespace, name)
    current: Manifest | None = obj
    for _ in range(RELEASE_ATTEMPTS):
        removal = run_finalizer_removal(current) if current is not None else None
        if removal is None:
            return
        try:
            client.request("PATCH", path, body=removal, content_type=JSON_PATCH, verb="patch")
            return
        except NotFoundError:
            return
        except (InvalidError, ConflictError):  # the list moved under the `test`: read it again
            current = get_or_none(client, kind, namespace, name)
    raise PlannerError(f"{kind.kind.lower()} {namespace}/{name}: its finalizers keep changing")


def _delete_job(client: KubeClient, rid: RuntimeID) -> None:
    """Delete the Job (Foreground) and let it go: its run-record finalizer is removed, since a Job
    deleted on purpose has nothing left to record."""
    _delete(client, JOB, rid.namespace, rid.name, propagation="Foreground")
    job = get_or_none(client, JOB, rid.namespace, rid.name)
    if job is not None:
        release_run_finalizer(client, job)


def _mark(client: KubeClient, rid: RuntimeID, state: str | None, *, reason: str | None = None) -> None:
    """Set the sandbox's state annotation (unless None), its pause reason (removed when None) and its
    last activity (now) on its workspace PVC, and nothing else: every lifecycle command is activity."""
    path = resource_path(PERSISTENT_VOLUME_CLAIM, rid.namespace, workspace_pvc_name(rid.name))
    annotations = {
        **({} if state is None else {ANNOTATION_SANDBOX_STATE: state}),
        ANNOTATION_PAUSE_REASON: reason,
        ANNOTATION_LAST_ACTIVITY: format_timestamp(datetime.now(UTC)),
    }
    body = {"metadata": {"annotations": annotations}}
    client.request("PATCH", path, query=_write_query(), body=body, content_type=MERGE_PATCH, verb="patch")


def touch(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """Record activity on a sandbox now, and lift an idle pause's hold: the next apply of a plan that
    says `running` resumes a sandbox the reaper paused once it has been touched."""
    rid = parse(runtime_id)
    if rid.kind != workloads.SANDBOX:
        raise PlannerError(f"{_describe(rid)}: only a sandbox records activity")
    primary(client, rid)
    _mark(client, rid, None)
    return Outcome(runtime_id=str(rid), action="touched", message=f"recorded activity on {_describe(rid)}")


# --- start / resume --------------------------------------------------------------------------------


def start(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """A workload as its kind starts it (`planner.workloads`: a Deployment scales to 1, a CronJob is
    unsuspended…); a sandbox resumes."""
    rid = parse(runtime_id)
    if rid.kind == workloads.SANDBOX:
        return _resume_sandbox(client, rid)
    message = workloads.named(rid.kind).lifecycle.start(_Workload(client, rid))
    return Outcome(runtime_id=str(rid), action="started", message=message)


def resume(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """Resume is start; for a sandbox, recreate its Pod and mark it `running`."""
    return start(client, runtime_id)


def _resume_sandbox(client: KubeClient, rid: RuntimeID) -> Outcome:
    workspace = primary(client, rid)
    pod = recorded_pod(workspace)
    if pod is None:
        raise PlannerError(
            f"{_describe(rid)}: its workspace PVC records no pod spec (planner.dev/pod-spec); apply its plan"
        )
    try:
        client.request(
            "POST",
            resource_path(POD, rid.namespace),
            query=_write_query(),
            body=with_hash(pod),
            verb="create",
        )
        message = f"recreated pod {rid.namespace}/{rid.name}"
    except AlreadyExistsError:
        message = f"pod {rid.namespace}/{rid.name} already exists"
    _mark(client, rid, "running")
    return Outcome(runtime_id=str(rid), action="resumed", message=f"{message}; marked running")


# --- stop / pause ----------------------------------------------------------------------------------


def stop(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """A workload as its kind stops it (`planner.workloads`: a Deployment scales to 0, a Job is deleted
    with Foreground propagation…); a sandbox pauses."""
    rid = parse(runtime_id)
    if rid.kind == workloads.SANDBOX:
        return _pause_sandbox(client, rid)
    message = workloads.named(rid.kind).lifecycle.stop(_Workload(client, rid))
    return Outcome(runtime_id=str(rid), action="stopped", message=message)


def pause(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """Pause is stop; for a sandbox: mark `paused`, delete the Pod, keep both PVCs."""
    return stop(client, runtime_id)


def pause_idle(client: KubeClient, runtime_id: str | RuntimeID) -> Outcome:
    """Pause a sandbox as `pause` does, with reason `idle`: the idle reaper's pause, which a plan's
    `running` does not undo until the sandbox is touched or resumed."""
    return _pause_sandbox(client, parse(runtime_id), reason=PAUSE_REASON_IDLE)


def _pause_sandbox(client: KubeClient, rid: RuntimeID, *, reason: str | None = None) -> Outcome:
    primary(client, rid)
    # Marked first: a monitor then sees the Pod go while the state already says paused, never a
    # running sandbox without a Pod (which it must read as a rebase and stay silent about).
    _mark(client, rid, "paused", reason=reason)
    gone = _delete(client, POD, rid.namespace, rid.name, propagation="Background")
    what = f"deleted pod {rid.namespace}/{rid.name}" if gone else "no pod was running"
    return Outcome(runtime_id=str(rid), action="paused", message=f"marked paused; {what}; PVCs kept")


# --- delete ----------------------------------------------------------------------------------------


def delete(client: KubeClient, runtime_id: str | RuntimeID, *, allow_data_loss: bool = False) -> Outcome:
    """A workload as its kind deletes it, with what it brings along (`planner.workloads`: a Deployment's
    autoscaler, Ingress and Service…; a StatefulSet's claims only with `allow_data_loss`). A sandbox:
    the Pod, then its PVCs only with `allow_data_loss` (without it the PVCs stay and the sandbox is marked
    `paused`)."""
    rid = parse(runtime_id)
    if rid.kind == workloads.SANDBOX:
        primary(client, rid)
        message = _delete_sandbox(client, rid, allow_data_loss=allow_data_loss)
    else:
        message = workloads.named(rid.kind).lifecycle.delete(_Workload(client, rid), allow_data_loss)
    return Outcome(runtime_id=str(rid), action="deleted", message=message)


def _delete_own(client: KubeClient, kind: KindInfo, rid: RuntimeID) -> bool:
    """Delete the `kind` named after the workload (its Ingress, its autoscaler) when it is this workload's
    (its runtime-ID annotation says so): one of that name that something else made is left alone."""
    found = get_or_none(client, kind, rid.namespace, rid.name)
    if found is None or annotations_of(found).get(ANNOTATION_RUNTIME_ID) != str(rid):
        return False
    return _delete(client, kind, rid.namespace, rid.name, propagation="Background")


def _delete_sandbox(client: KubeClient, rid: RuntimeID, *, allow_data_loss: bool) -> str:
    if not allow_data_loss:
        _mark(client, rid, "paused")
    _delete(client, POD, rid.namespace, rid.name, propagation="Background")
    if not allow_data_loss:
        return f"deleted pod {rid.namespace}/{rid.name}; PVCs kept (--allow-data-loss deletes them)"
    claims = sandbox_claims(client, rid)
    for claim in claims:
        _delete(client, PERSISTENT_VOLUME_CLAIM, rid.namespace, claim, propagation="Background")
    return f"deleted pod {rid.namespace}/{rid.name} and PVCs {', '.join(claims)}"


def sandbox_claims(client: KubeClient, rid: RuntimeID) -> list[str]:
    """The sandbox's PVCs (every generation's rootfs and the workspace), by the `gobrave-workload` label."""
    listed = list_objects(client, PERSISTENT_VOLUME_CLAIM, rid.namespace, label_selector=_selector(rid))
    return sorted(str(metadata_of(claim)["name"]) for claim in listed)


def _inspect_workload(handle: _Workload, own: Manifest, pod_ip: str, common: dict[str, Any]) -> Inspection:
    """The Service's DNS name for a kind with one (the `<name>-svc` of an exposed one, the headless
    `<name>` that names a StatefulSet's pods) when that Service exists (not without `expose`, or a
    StatefulSet without a port), the latest pod's IP otherwise; the claims of a kind with claim
    templates."""
    kind = workloads.named(handle.rid.kind)
    service = {"exposed": service_name(handle.name), "headless": handle.name}.get(kind.service or "")
    if service and get_or_none(handle.client, SERVICE, handle.namespace, service) is None:
        service = None
    address = f"{service}.{handle.namespace}.svc.cluster.local" if service else pod_ip
    claims = tuple(handle.claims(own)) if kind.claim_templates else None
    return Inspection(ip_address=address, pvcs=claims, **common)


# --- logs and inspect ------------------------------------------------------------------------------


def _selector(rid: RuntimeID) -> str:
    return f"{LABEL_WORKLOAD}={rid.name}"


def latest_pod(client: KubeClient, rid: RuntimeID) -> Manifest | None:
    """The newest Pod labelled `gobrave-workload=<name>` (by creation time, then name), None if none."""
    return newest(list_objects(client, POD, rid.namespace, label_selector=_selector(rid)))


@dataclass(frozen=True, kw_only=True)
class LogOptions:
    tail: int | None = DEFAULT_TAIL  # None: every line
    container: str | None = None
    previous: bool = False
    follow: bool = False


def logs(client: KubeClient, runtime_id: str | RuntimeID, options: LogOptions | None = None) -> Iterator[str]:
    """The latest pod's log lines (default: the last 200); with `follow`, until the pod's stream ends."""
    options = options or LogOptions()
    rid = parse(runtime_id)
    primary(client, rid)
    pod = latest_pod(client, rid)
    if pod is None:
        raise PlannerError(f"{_describe(rid)} has no pod (label {_selector(rid)}) to read logs from")
    query = {"follow": "true" if options.follow else "false"}
    if options.tail is not None:
        query["tailLines"] = str(options.tail)
    if options.container:
        query["container"] = options.container
    if options.previous:
        query["previous"] = "true"
    path = resource_path(POD, rid.namespace, str(metadata_of(pod)["name"])) + "/log"
    timeout = None if options.follow else 60.0
    for line in client.stream_lines(path, query=query, timeout=timeout, keep_blank=True, verb="get"):
        yield line.decode("utf-8", errors="replace")


def inspect(client: KubeClient, runtime_id: str | RuntimeID) -> Inspection:
    """Where a workload runs; for a sandbox also its PVCs, generation and state."""
    rid = parse(runtime_id)
    own = primary(client, rid)
    pod = latest_pod(client, rid)
    pod_spec, pod_status = (pod or {}).get("spec") or {}, (pod or {}).get("status") or {}
    common: dict[str, Any] = {
        "runtime_id": str(rid),
        "kind": rid.kind,
        "namespace": rid.namespace,
        "name": rid.name,
        "node_name": str(pod_spec.get("nodeName") or ""),
        "pod": str(metadata_of(pod).get("name") or ""),
    }
    ip_address = str(pod_status.get("podIP") or "")
    if rid.kind != workloads.SANDBOX:
        return _inspect_workload(_Workload(client, rid), own, ip_address, common)
    rootfs = rootfs_claim(recorded_pod(own)) or ""
    generation = _GENERATION.search(rootfs)
    return Inspection(
        ip_address=ip_address,
        pvcs=tuple(sandbox_claims(client, rid)),
        generation=int(generation.group(1)) if generation else None,
        state=sandbox_state(own),
        **common,
    )

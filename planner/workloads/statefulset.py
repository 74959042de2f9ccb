"""`kind: statefulset`: a StatefulSet with per-pod claims (`volumes[].claim` templates) and the
headless Service `<name>` that gives its pods their DNS names when it has a port.

Lifecycle: stop records its replicas (`planner.dev/stopped-replicas`) and scales to 0, keeping the PVCs;
start scales back to what it had; delete takes its claims' PVCs only with `--allow-data-loss`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planner.kinds import PERSISTENT_VOLUME_CLAIM, STATEFUL_SET
from planner.objects import Manifest, annotations_of, present
from planner.workloads.kind import Fields, Handle, Lifecycle, PodInputs, Problem, WorkloadKind
from planner.workloads.replicated import observe_replicas, replicas_ready

ANNOTATION_STOPPED_REPLICAS = "planner.dev/stopped-replicas"


@dataclass(frozen=True, kw_only=True)
class StatefulUpdate:
    """A StatefulSet's `updateStrategy`: pods at or above `partition` roll; OnDelete waits for deletes."""

    type: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    partition: int | None = None


@dataclass(frozen=True, kw_only=True)
class StatefulSetSpec:
    pod_management_policy: Literal["OrderedReady", "Parallel"] | None = None
    update_strategy: StatefulUpdate | None = None


def parse(item: Mapping[str, Any]) -> StatefulSetSpec:
    update = item.get("updateStrategy")
    return StatefulSetSpec(
        pod_management_policy=item.get("podManagementPolicy"),
        update_strategy=None
        if update is None
        else StatefulUpdate(type=update.get("type", "RollingUpdate"), partition=update.get("partition")),
    )


def checks(item: Mapping[str, Any]) -> Iterator[Problem]:
    update = item.get("updateStrategy")
    if not isinstance(update, dict):
        return
    if update.get("type") == "OnDelete" and "partition" in update:
        message = "partition is for type RollingUpdate only: OnDelete replaces a pod only when it is deleted"
        yield Problem(keys=("updateStrategy", "partition"), message=message, at_value=False)
    for key in ("maxUnavailable", "maxSurge"):
        if key in update:
            message = f"{key} is for daemonsets only: a statefulset rolls one pod at a time, by partition"
            yield Problem(keys=("updateStrategy", key), message=message, at_value=False)


def render(spec: StatefulSetSpec, pod: PodInputs) -> Fields:
    """`serviceName` is always the workload's name: the headless Service rendered when it has a port."""
    update = spec.update_strategy
    return {
        "selector": {"matchLabels": dict(pod.selector)},
        "serviceName": pod.name,
        "template": pod.template,
        **present(
            replicas=pod.replicas,
            podManagementPolicy=spec.pod_management_policy,
            updateStrategy=None
            if update is None
            else {"type": update.type, **present(rollingUpdate=present(partition=update.partition))},
            volumeClaimTemplates=list(pod.claim_templates),
        ),
    }


def _record_replicas(handle: Handle, replicas: int | None) -> None:
    """Set (or, with None, remove) the replicas a stopped StatefulSet is to start with again."""
    value = None if replicas is None else str(replicas)
    handle.patch({"metadata": {"annotations": {ANNOTATION_STOPPED_REPLICAS: value}}})


def _replicas(own: Manifest) -> int:
    return int((own.get("spec") or {}).get("replicas", 1))


def stop(handle: Handle) -> str:
    replicas = _replicas(handle.own())
    if replicas:  # stopping a stopped set keeps what the first stop recorded
        _record_replicas(handle, replicas)
    return f"{handle.scale(0)}; PVCs kept"


def start(handle: Handle) -> str:
    own = handle.own()
    current = _replicas(own)
    recorded = str(annotations_of(own).get(ANNOTATION_STOPPED_REPLICAS, ""))
    if current and not recorded:
        return f"{handle.describe} already runs {current} replicas"
    replicas = int(recorded) if recorded.isdigit() and int(recorded) else max(current, 1)
    message = handle.scale(replicas)
    _record_replicas(handle, None)
    return message


def delete(handle: Handle, allow_data_loss: bool) -> str:
    own = handle.own()
    companions = handle.delete_companions()
    handle.delete(STATEFUL_SET, handle.name)
    deleted = f"deleted {companions} and {handle.describe}"
    claims = handle.claims(own)
    if not allow_data_loss:
        kept = ", ".join(claims) or "none"
        return f"{deleted}; PVCs kept ({kept}; --allow-data-loss deletes them)"
    for claim in claims:
        handle.delete(PERSISTENT_VOLUME_CLAIM, claim)
    return f"{deleted} and PVCs {', '.join(claims) or '(none)'}"


KIND = WorkloadKind[StatefulSetSpec](
    name="statefulset",
    api=STATEFUL_SET,
    fields=("replicas", "autoscale", "podManagementPolicy", "updateStrategy"),
    parse=parse,
    checks=checks,
    render=render,
    lifecycle=Lifecycle(start=start, stop=stop, delete=delete),
    observe=observe_replicas,
    service="headless",
    scalable=True,
    claim_templates=True,
    ready=replicas_ready,
)

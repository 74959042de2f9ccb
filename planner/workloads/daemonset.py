"""`kind: daemonset`: a DaemonSet, one pod on every node its pods select and tolerate (node agents, log
shippers), rolled node by node (`updateStrategy`: RollingUpdate with `maxUnavailable` or `maxSurge`, or
OnDelete), with `nodeSelector` and `tolerations` on its pods. It is ready as `kubectl rollout status ds`
says (`planner.wait.readiness.daemon_set`), and the monitor reports each node's pod on its own.

Lifecycle: stop sends its pods off every node by adding `planner.dev/stopped: "true"` to its pods'
nodeSelector (no node has that label), start takes it away again; the next plan shows the stop as drift.
Delete deletes it (its pods go with it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from planner.kinds import DAEMON_SET, POD
from planner.objects import Manifest, controlling, owned_by, present
from planner.workloads.kind import Fields, Handle, Lifecycle, Look, PodInputs, Problem, Runs, WorkloadKind
from planner.workloads.observation import (
    EXIT_SUCCESS,
    End,
    Observation,
    condition,
    count,
    gone,
    is_true,
    status_of,
    uid_of,
)

STOPPED_LABEL = "planner.dev/stopped"
ZERO = (0, "0%")


@dataclass(frozen=True, kw_only=True)
class DaemonUpdate:
    """How a changed pod template rolls out: node by node, `max_unavailable` (default 1) pods down or
    `max_surge` new pods beside the old at a time, each a count or a percentage; OnDelete waits."""

    type: Literal["RollingUpdate", "OnDelete"] = "RollingUpdate"
    max_unavailable: int | str | None = None
    max_surge: int | str | None = None


@dataclass(frozen=True, kw_only=True)
class Toleration:
    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


@dataclass(frozen=True, kw_only=True)
class DaemonSetSpec:
    update_strategy: DaemonUpdate | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


def parse(item: Mapping[str, Any]) -> DaemonSetSpec:
    update = item.get("updateStrategy")
    return DaemonSetSpec(
        update_strategy=None
        if update is None
        else DaemonUpdate(
            type=update.get("type", "RollingUpdate"),
            max_unavailable=update.get("maxUnavailable"),
            max_surge=update.get("maxSurge"),
        ),
        node_selector=dict(item.get("nodeSelector", {})),
        tolerations=tuple(
            Toleration(
                key=toleration.get("key"),
                operator=toleration.get("operator"),
                value=toleration.get("value"),
                effect=toleration.get("effect"),
                toleration_seconds=toleration.get("tolerationSeconds"),
            )
            for toleration in item.get("tolerations", ())
        ),
    )


def checks(item: Mapping[str, Any]) -> Iterator[Problem]:
    """What the API server refuses in a DaemonSet's update strategy and its pods' tolerations."""
    update = item.get("updateStrategy")
    if isinstance(update, dict):
        yield from _update_problems(update)
    tolerations = item.get("tolerations")
    for index, toleration in enumerate(tolerations if isinstance(tolerations, list) else ()):
        if isinstance(toleration, dict):
            yield from _toleration_problems(toleration, ("tolerations", index))


def _update_problems(update: Mapping[str, Any]) -> Iterator[Problem]:
    if "partition" in update:
        message = (
            "partition is for statefulsets only: a daemonset rolls node by node, maxUnavailable at a time"
        )
        yield Problem(keys=("updateStrategy", "partition"), message=message, at_value=False)
    rolling = [key for key in ("maxUnavailable", "maxSurge") if key in update]
    if update.get("type") == "OnDelete":
        for key in rolling:
            message = f"{key} is for type RollingUpdate only: OnDelete replaces a pod only when it is deleted"
            yield Problem(keys=("updateStrategy", key), message=message, at_value=False)
    elif len(rolling) == 2 and all(update[key] in ZERO for key in rolling):
        message = "maxUnavailable and maxSurge cannot both be 0: the rollout could never replace a pod"
        yield Problem(keys=("updateStrategy", "maxUnavailable"), message=message)


def _toleration_problems(toleration: Mapping[str, Any], here: tuple[str | int, ...]) -> Iterator[Problem]:
    operator = toleration.get("operator", "Equal")
    if operator == "Exists" and toleration.get("value"):
        message = "a value is for operator Equal only: Exists tolerates every value of the key"
        yield Problem(keys=(*here, "value"), message=message)
    if not toleration.get("key") and operator != "Exists":
        message = "a toleration without a key needs operator Exists (it then tolerates every taint)"
        yield Problem(keys=(*here, "operator") if "operator" in toleration else here, message=message)
    if "tolerationSeconds" in toleration and toleration.get("effect") != "NoExecute":
        message = (
            "tolerationSeconds is for effect NoExecute only: it says how long the pod stays on a tainted node"
        )
        yield Problem(keys=(*here, "tolerationSeconds"), message=message, at_value=False)


def _toleration(toleration: Toleration) -> Fields:
    return present(
        key=toleration.key,
        operator=toleration.operator,
        value=toleration.value,
        effect=toleration.effect,
        tolerationSeconds=toleration.toleration_seconds,
    )


def render(spec: DaemonSetSpec, pod: PodInputs) -> Fields:
    update = spec.update_strategy
    pod_spec = {
        **pod.template["spec"],
        **present(
            nodeSelector=dict(spec.node_selector), tolerations=[_toleration(t) for t in spec.tolerations]
        ),
    }
    rolling = (
        None if update is None else present(maxUnavailable=update.max_unavailable, maxSurge=update.max_surge)
    )
    return {
        "selector": {"matchLabels": dict(pod.selector)},
        "template": {**pod.template, "spec": pod_spec},
        **present(
            updateStrategy=None if update is None else {"type": update.type, **present(rollingUpdate=rolling)}
        ),
    }


def _stopped(daemon_set: Manifest) -> bool:
    template = (daemon_set.get("spec") or {}).get("template") or {}
    return STOPPED_LABEL in ((template.get("spec") or {}).get("nodeSelector") or {})


def observe(daemon_set: Manifest | None, look: Look) -> Observation:
    """Started: a pod is ready on some node and it is not stopped (stopped with pods left is stopping);
    Exited "0": stopped and no pod left on any node; Deleted: gone. Its pods' own starts and ends are
    its runs'."""
    if daemon_set is None:
        return gone(look.describe)
    uid = uid_of(daemon_set)
    ready, wanted = count(daemon_set, "numberReady"), count(daemon_set, "desiredNumberScheduled")
    stopping = _stopped(daemon_set)
    stopped = stopping and count(daemon_set, "currentNumberScheduled") == 0
    return Observation(
        uid=uid,
        started_uid=uid if ready > 0 and not stopping else None,
        started_message=f"ready {ready}/{wanted}",
        end=End(type="ContainerExited", message=EXIT_SUCCESS, uid=uid) if stopped else None,
    )


def observe_pod(pod: Manifest | None, look: Look) -> Observation:
    """One node's pod: Started once Ready, Failed when its phase is Failed, Deleted when gone."""
    if pod is None:
        return gone(look.describe)
    uid = uid_of(pod)
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    failed = status_of(pod).get("phase") == "Failed"
    message = str(status_of(pod).get("message") or status_of(pod).get("reason") or "pod failed")
    return Observation(
        uid=uid,
        started_uid=uid if is_true(condition(pod, "Ready")) else None,
        started_message=f"pod Ready on {node}" if node else "pod Ready",
        end=End(type="ContainerFailed", message=message, uid=uid) if failed else None,
    )


def owning_daemon_set(pod: Manifest) -> str | None:
    """The name of the DaemonSet that owns `pod`, None when none does."""
    return controlling(pod, DAEMON_SET)


def pods(name: str, namespace: str, candidates: Iterable[Manifest]) -> list[Manifest]:
    """The DaemonSet's pods, oldest first."""
    return owned_by(DAEMON_SET, name, namespace, candidates)


def ready(daemon_set: Manifest) -> str:
    """`kubectl get ds`'s READY over DESIRED: ready pods over the nodes that should run one."""
    return f"{count(daemon_set, 'numberReady')}/{count(daemon_set, 'desiredNumberScheduled')}"


def stop(handle: Handle) -> str:
    if _stopped(handle.own()):
        return f"{handle.describe} is stopped already"
    handle.patch({"spec": {"template": {"spec": {"nodeSelector": {STOPPED_LABEL: "true"}}}}})
    return f"stopped {handle.describe}: its pods leave every node (nodeSelector {STOPPED_LABEL}=true until start)"


def start(handle: Handle) -> str:
    if not _stopped(handle.own()):
        return f"{handle.describe} runs already"
    handle.patch({"spec": {"template": {"spec": {"nodeSelector": {STOPPED_LABEL: None}}}}})
    return f"started {handle.describe}: its pods run again on the nodes it selects"


def delete(handle: Handle, _allow_data_loss: bool) -> str:
    handle.own()
    handle.delete(DAEMON_SET, handle.name)
    return f"deleted {handle.describe} (its pods go with it)"


KIND = WorkloadKind[DaemonSetSpec](
    name="daemonset",
    api=DAEMON_SET,
    fields=("updateStrategy", "nodeSelector", "tolerations"),
    label_maps=("nodeSelector",),
    parse=parse,
    checks=checks,
    render=render,
    lifecycle=Lifecycle(start=start, stop=stop, delete=delete),
    observe=observe,
    runs=Runs(api=POD, word="pod", observe=observe_pod, of=pods, owner=owning_daemon_set),
    ready=ready,
)

"""`kind: deployment` (the default): a Deployment, rolled out by `strategy`, exposed through its
`<name>-svc` Service (and an Ingress) when `expose` is set.

Lifecycle: start scales to 1, stop to 0; delete takes its autoscaler, Ingress and Service with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planner.kinds import DEPLOYMENT
from planner.objects import present
from planner.workloads.kind import Fields, Handle, Lifecycle, PodInputs, Problem, WorkloadKind
from planner.workloads.replicated import observe_replicas, replicas_ready, scale_to_one, scale_to_zero


@dataclass(frozen=True, kw_only=True)
class RolloutStrategy:
    """A Deployment's `strategy`: `max_surge`/`max_unavailable` are a count or a percentage (`"25%"`)."""

    type: Literal["RollingUpdate", "Recreate"] = "RollingUpdate"
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(frozen=True, kw_only=True)
class DeploymentSpec:
    progress_deadline_seconds: int | None = None
    strategy: RolloutStrategy | None = None


def parse(item: Mapping[str, Any]) -> DeploymentSpec:
    strategy = item.get("strategy")
    return DeploymentSpec(
        progress_deadline_seconds=item.get("progressDeadlineSeconds"),
        strategy=None
        if strategy is None
        else RolloutStrategy(
            type=strategy.get("type", "RollingUpdate"),
            max_surge=strategy.get("maxSurge"),
            max_unavailable=strategy.get("maxUnavailable"),
        ),
    )


def checks(item: Mapping[str, Any]) -> Iterator[Problem]:
    """What the API server refuses in a strategy: rolling parameters under Recreate, and a rollout that
    may neither surge nor go below the wanted replicas."""
    strategy = item.get("strategy")
    if not isinstance(strategy, dict):
        return
    rolling = [key for key in ("maxSurge", "maxUnavailable") if key in strategy]
    if strategy.get("type") == "Recreate":
        for key in rolling:
            message = f"{key} is for type RollingUpdate only: Recreate stops every old pod first"
            yield Problem(keys=("strategy", key), message=message, at_value=False)
    elif len(rolling) == 2 and all(strategy[key] in (0, "0%") for key in rolling):
        message = "maxSurge and maxUnavailable cannot both be 0: the rollout could never replace a pod"
        yield Problem(keys=("strategy", "maxUnavailable"), message=message)


def rollout_strategy(strategy: RolloutStrategy | None) -> Fields | None:
    if strategy is None:
        return None
    rolling = present(maxSurge=strategy.max_surge, maxUnavailable=strategy.max_unavailable)
    return {"type": strategy.type, **present(rollingUpdate=rolling)}


def render(spec: DeploymentSpec, pod: PodInputs) -> Fields:
    return {
        "selector": {"matchLabels": dict(pod.selector)},
        "template": pod.template,
        **present(
            replicas=pod.replicas,
            progressDeadlineSeconds=spec.progress_deadline_seconds,
            strategy=rollout_strategy(spec.strategy),
        ),
    }


def delete(handle: Handle, _allow_data_loss: bool) -> str:
    handle.own()
    companions = handle.delete_companions()
    handle.delete(DEPLOYMENT, handle.name)
    return f"deleted {companions} and {handle.describe}"


KIND = WorkloadKind[DeploymentSpec](
    name="deployment",
    api=DEPLOYMENT,
    fields=("replicas", "autoscale", "progressDeadlineSeconds", "strategy"),
    parse=parse,
    checks=checks,
    render=render,
    lifecycle=Lifecycle(start=scale_to_one, stop=scale_to_zero, delete=delete),
    observe=observe_replicas,
    service="exposed",
    scalable=True,
    ready=replicas_ready,
)

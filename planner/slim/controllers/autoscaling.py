"""HorizontalPodAutoscaler → its target's `/scale`, as kube-controller-manager's podautoscaler.

Every 15 s (scaled) each HPA reads its target's scale and the pods its selector matches, and computes
the replicas its Resource metrics want with the real algorithm: `ceil(ready pods × usage/target)`,
unchanged within a tolerance of 0.1; running pods without metrics count at 100% of their request
when scaling down and 0% when scaling up, and unready or pending pods at 0% when scaling up, so they
never make it scale the wrong way. There is no metrics server: a pod's usage is simulated by its
annotations `sim.planner.dev/cpu-utilization` and `sim.planner.dev/memory-utilization` (percent of
the pod's container requests). With no pod carrying one the HPA reports ScalingActive False
`FailedGetResourceMetric`, in the words of a cluster without metrics-server. The proposal is then
stabilised (never below the highest recommendation of the scale-down window — 300 s unless
`behavior` says otherwise, scaled — nor above the lowest of the scale-up one), rate limited
(`behavior`'s policies, or max(2×current, 4) without `behavior`) and clamped to min/max; the
conditions AbleToScale, ScalingActive and ScalingLimited carry the real reasons and messages.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from planner import quantities
from planner.slim import status_errors
from planner.slim.api import Api
from planner.slim.controllers.base import KindController, deleting, key, name_of, ns_of, uid_of
from planner.slim.controllers.deployments import pod_ready
from planner.slim.meta import epoch_of, rfc3339
from planner.slim.reconcilers import Key, Scale
from planner.slim.resources import BY_KIND, ResourceType
from planner.slim.selectors import parse_label_selector
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
TOLERANCE = 0.1
SYNC_SECONDS = 15.0
DOWNSCALE_WINDOW_SECONDS = 300.0
COMPONENT = "horizontal-pod-autoscaler"
ANNOTATION = "sim.planner.dev/{}-utilization"
NO_METRICS_API = (
    "unable to get metrics for resource {0}: unable to fetch metrics from resource metrics API: "
    "the server could not find the requested resource (get pods.metrics.k8s.io)"
)


class MetricError(Exception):
    """A metric that cannot be computed; the message is the controller's."""


@dataclass(frozen=True)
class Pods:
    """The target's pods as the algorithm groups them: (request, usage) of the ready pods with
    metrics, the requests of running pods without metrics, and of unready or pending ones."""

    measured: list[tuple[float, float]]
    missing: list[float] = field(default_factory=list)
    unready: list[float] = field(default_factory=list)


Ratio = Callable[[list[tuple[float, float]]], float]


def utilization(samples: list[tuple[float, float]]) -> int:
    """Usage as a whole percentage of requests (integer division, as the controller computes it)."""
    requests = sum(r for r, _ in samples)
    return int(sum(u for _, u in samples) * 100 // requests) if requests else 0


def replicas_for(current: int, pods: Pods, ratio_of: Ratio, fill_down: Callable[[float], float]) -> int:
    """The replica proposal for one metric (the controller's GetResourceReplicas): `ratio_of` gives
    usage against the target for (request, usage) pairs, `fill_down(request)` the usage assumed for a
    pod without metrics when scaling down."""
    if not pods.measured:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    ratio = ratio_of(pods.measured)
    rebalance_unready = bool(pods.unready) and ratio > 1.0
    if not rebalance_unready and not pods.missing:
        if abs(1.0 - ratio) <= TOLERANCE:
            return current
        return math.ceil(ratio * len(pods.measured))
    assumed = list(pods.measured)
    assumed += [(r, fill_down(r) if ratio < 1.0 else 0.0) for r in pods.missing]
    if rebalance_unready:
        assumed += [(r, 0.0) for r in pods.unready]
    new_ratio = ratio_of(assumed)
    if abs(1.0 - new_ratio) <= TOLERANCE or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    proposal = math.ceil(new_ratio * len(assumed))
    if (new_ratio < 1.0 and proposal > current) or (new_ratio > 1.0 and proposal < current):
        return current
    return proposal


def stabilize(
    recommendations: list[tuple[float, int]],
    now: float,
    proposal: int,
    current: int,
    *,
    up_window: float,
    down_window: float,
) -> int:
    """Current replicas moved toward the proposal no further than the windows' recommendations allow:
    at least the lowest of the scale-up window, at most the highest of the scale-down window."""
    up = min([r for t, r in recommendations if t > now - up_window] + [proposal])
    down = max([r for t, r in recommendations if t > now - down_window] + [proposal])
    return min(max(current, up), down)


def scale_up_limit(rules: Obj, current: int, added_within: Callable[[float], int]) -> int:
    """The most replicas `behavior.scaleUp` allows now; `added_within(seconds)` counts the replicas
    added during a policy's period."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        start = current - added_within(float(policy.get("periodSeconds", 15)))
        value = int(policy.get("value", 0))
        if policy.get("type") == "Pods":
            proposals.append(start + value)
        else:
            proposals.append(math.ceil(start * (1 + value / 100)))
    if not proposals:
        return current
    return min(proposals) if select == "Min" else max(proposals)


def scale_down_limit(rules: Obj, current: int, removed_within: Callable[[float], int]) -> int:
    """The fewest replicas `behavior.scaleDown` allows now."""
    select = rules.get("selectPolicy", "Max")
    if select == "Disabled":
        return current
    proposals = []
    for policy in rules.get("policies") or []:
        start = current + removed_within(float(policy.get("periodSeconds", 15)))
        value = int(policy.get("value", 0))
        if policy.get("type") == "Pods":
            proposals.append(start - value)
        else:
            proposals.append(int(start * (1 - value / 100)))
    if not proposals:
        return current
    return max(proposals) if select == "Min" else min(proposals)


def legacy_limits(current: int, desired: int, low: int, high: int) -> tuple[int, str, str]:
    """Without `behavior`: at most max(2×current, 4) at once, within min and max."""
    limit = max(2 * current, 4)
    if high > limit:
        ceiling, reason, message = limit, "ScaleUpLimit", SCALE_UP_LIMIT
    else:
        ceiling, reason, message = high, "TooManyReplicas", TOO_MANY
    if desired < low:
        return low, "TooFewReplicas", TOO_FEW
    if desired > ceiling:
        return ceiling, reason, message
    return desired, "DesiredWithinRange", WITHIN_RANGE


SCALE_UP_LIMIT = "the desired replica count is increasing faster than the maximum scale rate"
SCALE_DOWN_LIMIT = "the desired replica count is decreasing faster than the maximum scale rate"
TOO_MANY = "the desired replica count is more than the maximum replica count"
TOO_FEW = "the desired replica count is less than the minimum replica count"
WITHIN_RANGE = "the desired count is within the acceptable range"


def _milli(text: Any) -> float:
    value, _ = quantities.parse(str(text))
    return float(value * Decimal(1000))


def _milli_text(milli: float) -> str:
    return quantities.canonical(f"{int(milli)}m")


@dataclass
class History:
    """What the controller remembers of one HPA between syncs (in memory, as the real one)."""

    recommendations: list[tuple[float, int]] = field(default_factory=list)
    scale_events: list[tuple[float, int]] = field(default_factory=list)  # (time, replicas changed by)

    def changed_within(self, now: float, seconds: float, *, up: bool) -> int:
        return sum(abs(d) for t, d in self.scale_events if t > now - seconds and (d > 0) == up)

    def forget_before(self, moment: float) -> None:
        self.recommendations = [(t, r) for t, r in self.recommendations if t > moment]
        self.scale_events = [(t, d) for t, d in self.scale_events if t > moment]


def _condition(old: list[Obj], kind: str, ok: bool, reason: str, message: str, stamp: str) -> Obj:
    status = "True" if ok else "False"
    previous = next((c for c in old if c.get("type") == kind), None)
    transition = (
        previous.get("lastTransitionTime") if previous and previous.get("status") == status else stamp
    )
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }


class HorizontalPodAutoscalerController(KindController):
    kind = "HorizontalPodAutoscaler"
    recorder = COMPONENT
    controls = ()

    def __init__(self, api: Api, scale: Scale) -> None:
        super().__init__(api, scale)
        self.history: dict[str, History] = {}

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.type == "DELETED":
            self.history.pop(uid_of(event.obj), None)
            return []
        return super().observe(event)

    def reconcile(self, hpa: Obj, now: float) -> float | None:
        Sync(self, hpa, now).run()
        return now + self.scale(SYNC_SECONDS)


class Sync:
    """One reconciliation of one HPA (the controller's reconcileAutoscaler)."""

    def __init__(self, controller: HorizontalPodAutoscalerController, hpa: Obj, now: float) -> None:
        self.c = controller
        self.hpa = hpa
        self.now = now
        self.stamp = rfc3339(now)
        self.spec = hpa.get("spec") or {}
        self.old = copy.deepcopy(hpa.get("status") or {})
        self.conditions: dict[str, Obj] = {}
        self.history = controller.history.setdefault(uid_of(hpa), History())

    def set(self, kind: str, ok: bool, reason: str, message: str) -> None:
        self.conditions[kind] = _condition(
            self.old.get("conditions") or [], kind, ok, reason, message, self.stamp
        )

    def event(self, event_type: str, reason: str, message: str) -> None:
        self.c.event(self.hpa, event_type, reason, message)

    def run(self) -> None:
        target = self.spec.get("scaleTargetRef") or {}
        found = self._target(target)
        if isinstance(found, str):
            self.event("Warning", "FailedGetScale", found)
            message = f"the HPA controller was unable to get the target's current scale: {found}"
            self.set("AbleToScale", False, "FailedGetScale", message)
            self._write(
                self.old.get("currentReplicas", 0),
                self.old.get("desiredReplicas", 0),
                self.old.get("currentMetrics"),
            )
            return
        rt, scale = found
        self.set(
            "AbleToScale",
            True,
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        )
        current = int((scale.get("spec") or {}).get("replicas", 0))
        low, high = int(self.spec.get("minReplicas", 1)), int(self.spec.get("maxReplicas", 1))
        if not self.history.recommendations:
            self.history.recommendations.append((self.now, current))
        metrics: list[Obj] | None = None
        reason = ""
        if current == 0 and low != 0:
            self.set(
                "ScalingActive",
                False,
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            )
            self._write(current, 0, None)
            return
        if current > high:
            desired, reason = high, "Current number of replicas above Spec.MaxReplicas"
        elif current < low:
            desired, reason = low, "Current number of replicas below Spec.MinReplicas"
        else:
            computed = self._metric_replicas(scale, current)
            if computed is None:
                return
            proposal, metric_name, metrics = computed
            if proposal > current:
                reason = f"{metric_name} above target"
            elif proposal < current:
                reason = "All metrics below target"
            desired = self._normalize(current, proposal, low, high)
        if desired != current:
            self._rescale(rt, scale, current, desired, reason)
        self._write(current, desired, metrics, rescaled=desired != current)

    def _target(self, ref: Obj) -> tuple[ResourceType, Obj] | str:
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        rt = BY_KIND.get(kind)
        group = str(ref.get("apiVersion", "")).rpartition("/")[0]
        if rt is None or "scale" not in rt.subresources or rt.group != group:
            return f'no matches for kind "{kind}" in group "{group}"'
        try:
            return rt, self.c.api.get_scale(rt, ns_of(self.hpa), name)
        except status_errors.StatusError as exc:
            return str(exc.body.get("message", ""))

    # --- metrics ------------------------------------------------------------------------------------

    def _metric_replicas(self, scale: Obj, current: int) -> tuple[int, str, list[Obj]] | None:
        specs = self.spec.get("metrics") or []
        statuses: list[Obj] = []
        proposals: list[tuple[int, str]] = []
        first_error = ""
        for metric in specs:
            try:
                replicas, name, status = self._one_metric(metric, scale, current)
            except MetricError as exc:
                statuses.append({"type": ""})
                first_error = first_error or str(exc)
                continue
            statuses.append(status)
            proposals.append((replicas, name))
        if not proposals:
            self.event(
                "Warning",
                "FailedComputeMetricsReplicas",
                f"invalid metrics ({len(specs)} invalid out of {len(specs)}), first error is: {first_error}",
            )
            # As the real controller: only currentReplicas is written, the metrics stay as they were.
            self._write(current, self.old.get("desiredReplicas", 0), self.old.get("currentMetrics"))
            return None
        replicas, name = max(proposals, key=lambda p: p[0])
        self.set(
            "ScalingActive",
            True,
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {name}",
        )
        return replicas, name, statuses

    def _one_metric(self, metric: Obj, scale: Obj, current: int) -> tuple[int, str, Obj]:
        kind = metric.get("type")
        if kind != "Resource":
            message = f"unable to get {str(kind).lower()} metric: no metrics API serves it"
            self.set(
                "ScalingActive",
                False,
                f"FailedGet{kind}Metric",
                f"the HPA was unable to compute the replica count: {message}",
            )
            self.event("Warning", f"FailedGet{kind}Metric", message)
            raise MetricError(message)
        resource = metric.get("resource") or {}
        name = str(resource.get("name", "cpu"))
        target = resource.get("target") or {}
        try:
            pods = self._pods(scale, name)
        except MetricError as exc:
            detail = f"failed to get {name} utilization: {exc}"
            self.event("Warning", "FailedGetResourceMetric", detail)
            message = f"the HPA was unable to compute the replica count: {detail}"
            self.set("ScalingActive", False, "FailedGetResourceMetric", message)
            raise MetricError(f"failed to get {name} resource metric value: {detail}") from exc
        average = sum(u for _, u in pods.measured) / len(pods.measured)
        current_status: Obj = {"averageValue": _milli_text(average)}
        if target.get("type") == "AverageValue":
            wanted = _milli(target.get("averageValue", "0")) or 1.0
            replicas = replicas_for(
                current, pods, lambda s: sum(u for _, u in s) / len(s) / wanted, lambda _r: wanted
            )
            label = f"{name} resource"
        else:
            percent = int(target.get("averageUtilization", 80)) or 1
            replicas = replicas_for(current, pods, lambda s: utilization(s) / percent, lambda r: r)
            current_status = {"averageUtilization": utilization(pods.measured), **current_status}
            label = f"{name} resource utilization (percentage of request)"
        return replicas, label, {"type": "Resource", "resource": {"name": name, "current": current_status}}

    def _pods(self, scale: Obj, resource: str) -> Pods:
        selector = parse_label_selector(str((scale.get("status") or {}).get("selector", "")))
        annotation = ANNOTATION.format(resource)
        pods = [
            p
            for p in self.c.api.store.list(key("Pod"), ns_of(self.hpa))
            if selector.matches(p["metadata"].get("labels"))
            and not deleting(p)
            and (p.get("status") or {}).get("phase") != "Failed"
        ]
        if not any(annotation in (p["metadata"].get("annotations") or {}) for p in pods):
            raise MetricError(NO_METRICS_API.format(resource))
        grouped = Pods([], [], [])
        for pod in pods:
            request = _request(pod, resource)
            percent = (pod["metadata"].get("annotations") or {}).get(annotation)
            if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
                grouped.unready.append(request)
            elif percent is None:
                grouped.missing.append(request)
            elif resource == "cpu" and not pod_ready(pod):
                grouped.unready.append(request)
            else:
                try:
                    grouped.measured.append((request, request * float(percent) / 100))
                except ValueError as exc:
                    raise MetricError(
                        f"invalid {annotation} annotation on Pod {name_of(pod)}: {percent!r}"
                    ) from exc
        return grouped

    # --- decisions ----------------------------------------------------------------------------------

    def _normalize(self, current: int, proposal: int, low: int, high: int) -> int:
        behavior = self.spec.get("behavior")
        scaled = self.c.scale
        up_rules = (behavior or {}).get("scaleUp") or {}
        down_rules = (behavior or {}).get("scaleDown") or {}
        down_window = scaled(float(down_rules.get("stabilizationWindowSeconds", DOWNSCALE_WINDOW_SECONDS)))
        up_window = scaled(float(up_rules.get("stabilizationWindowSeconds", 0))) if behavior else 0.0
        stable = stabilize(
            self.history.recommendations,
            self.now,
            proposal,
            current,
            up_window=up_window,
            down_window=down_window,
        )
        self.history.recommendations.append((self.now, proposal))
        self.history.forget_before(self.now - max(down_window, up_window, scaled(1800.0)))
        if stable != proposal:
            if proposal >= current:
                self.set(
                    "AbleToScale",
                    True,
                    "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation",
                )
            else:
                self.set(
                    "AbleToScale",
                    True,
                    "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation",
                )
        else:
            self.set("AbleToScale", True, "ReadyForNewScale", "recommended size matches current size")
        if behavior is None:
            desired, reason, message = legacy_limits(current, stable, low, high)
        else:
            desired, reason, message = self._rate_limited(current, stable, low, high, up_rules, down_rules)
        self.set("ScalingLimited", desired != stable, reason, message)
        return desired

    def _rate_limited(
        self, current: int, desired: int, low: int, high: int, up: Obj, down: Obj
    ) -> tuple[int, str, str]:
        scaled = self.c.scale
        period = {
            **up,
            "policies": [
                {**p, "periodSeconds": scaled(float(p.get("periodSeconds", 15)))}
                for p in up.get("policies") or []
            ],
        }
        if desired > current:
            limit = max(
                scale_up_limit(period, current, lambda s: self.history.changed_within(self.now, s, up=True)),
                current,
            )
            ceiling, reason, message = (
                (limit, "ScaleUpLimit", SCALE_UP_LIMIT)
                if high > limit
                else (high, "TooManyReplicas", TOO_MANY)
            )
            if desired > ceiling:
                return ceiling, reason, message
        elif desired < current:
            period = {
                **down,
                "policies": [
                    {**p, "periodSeconds": scaled(float(p.get("periodSeconds", 15)))}
                    for p in down.get("policies") or []
                ],
            }
            limit = min(
                scale_down_limit(
                    period, current, lambda s: self.history.changed_within(self.now, s, up=False)
                ),
                current,
            )
            floor_, reason, message = (
                (limit, "ScaleDownLimit", SCALE_DOWN_LIMIT)
                if low < limit
                else (low, "TooFewReplicas", TOO_FEW)
            )
            if desired < floor_:
                return floor_, reason, message
        return desired, "DesiredWithinRange", WITHIN_RANGE

    def _rescale(self, rt: ResourceType, scale: Obj, current: int, desired: int, reason: str) -> None:
        body = copy.deepcopy(scale)
        body["spec"] = {"replicas": desired}
        try:
            self.c.api.update_scale(rt, ns_of(self.hpa), name_of(scale), body, self.c.writer.options)
        except status_errors.StatusError as exc:
            message = str(exc.body.get("message", ""))
            self.event("Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {message}")
            self.set(
                "AbleToScale",
                False,
                "FailedUpdateScale",
                f"the HPA controller was unable to update the target scale: {message}",
            )
            return
        self.set(
            "AbleToScale",
            True,
            "SucceededRescale",
            f"the HPA controller was able to update the target scale to {desired}",
        )
        self.event("Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
        self.history.scale_events.append((self.now, desired - current))

    def _write(
        self, current: int, desired: int, metrics: list[Obj] | None, *, rescaled: bool = False
    ) -> None:
        status: Obj = {}
        last = self.now if rescaled else epoch_of(self.old.get("lastScaleTime"))
        if last is not None:
            status["lastScaleTime"] = rfc3339(last)
        status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        status["currentMetrics"] = metrics or None  # not omitempty: `null` when there are none
        old = {c.get("type"): c for c in self.old.get("conditions") or []}
        merged = {**old, **self.conditions}
        status["conditions"] = [
            merged[k] for k in ("AbleToScale", "ScalingActive", "ScalingLimited") if k in merged
        ]
        status = {k: v for k, v in status.items() if v != 0 or k == "desiredReplicas"}
        self.c.writer.write_status("HorizontalPodAutoscaler", self.hpa, status)


def _request(pod: Obj, resource: str) -> float:
    """The pod's containers' summed request for `resource`, in milli-units; MetricError when one
    container has none (the controller's words)."""
    total = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        request = ((container.get("resources") or {}).get("requests") or {}).get(resource)
        if request is None:
            raise MetricError(
                f"missing request for {resource} in container {container.get('name')} of Pod {name_of(pod)}"
            )
        total += _milli(request)
    return total

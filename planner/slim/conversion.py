"""Conversion between the served versions of a kind and the version it is stored in.

A kind served in more than one version is stored once, in one version (HorizontalPodAutoscaler: in
`autoscaling/v2`), and every other version is a view: a write in that version is converted to the
stored form (`to_storage`) before defaulting, admission and validation, and every object read in it
is converted back (`from_storage`), as the apiserver converts through its internal version.

`autoscaling/v1` knows one metric, a CPU utilization target: it is `targetCPUUtilizationPercentage`
in v1 and the first Resource metric for `cpu` with a Utilization target in v2 (the current value
likewise in the status). Whatever v1 cannot hold — other metrics, the current metrics, the
conditions, `behavior` — travels in the `autoscaling.alpha.kubernetes.io/*` annotations of the v1
object, so a v1 client that writes back what it read loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from planner.slim.defaults import cpu_utilization_metric
from planner.slim.meta import json_copy

Obj = dict[str, Any]
Converter = Callable[[Obj], Obj]

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
STATUS_FIELDS = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")


def _is_cpu(metric: Any, value_key: str) -> bool:
    resource = (metric or {}).get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get(value_key) or {}).get("averageUtilization") is not None
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def hpa_to_v1(stored: Obj) -> Obj:
    """An autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1 sees it."""
    obj = json_copy(stored)
    spec, status = obj.pop("spec", None) or {}, obj.pop("status", None) or {}
    meta = obj.setdefault("metadata", {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in ROUND_TRIP}
    metrics = spec.get("metrics") or []
    cpu = next((m for m in metrics if _is_cpu(m, "target")), None)
    kept: dict[str, Any] = {
        METRICS: [m for m in metrics if m is not cpu and not _is_cpu(m, "target")],
        CURRENT_METRICS: status.get("currentMetrics") or [],
        CONDITIONS: status.get("conditions") or [],
        BEHAVIOR: spec.get("behavior") or {},
    }
    annotations.update({key: _dumps(value) for key, value in kept.items() if value})
    meta["annotations"] = annotations
    if not annotations:
        meta.pop("annotations")
    v1_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    v1_status = {"currentReplicas": 0, "desiredReplicas": 0}  # v1 always writes both
    v1_status.update({k: status[k] for k in STATUS_FIELDS if k in status})
    current = next((m for m in status.get("currentMetrics") or [] if _is_cpu(m, "current")), None)
    if current is not None:
        v1_status["currentCPUUtilizationPercentage"] = current["resource"]["current"]["averageUtilization"]
    return {**obj, "spec": v1_spec, "status": v1_status}


def hpa_from_v1(v1: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler in its stored form (autoscaling/v2)."""
    obj = json_copy(v1)
    spec, status = obj.pop("spec", None) or {}, obj.pop("status", None) or {}
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    kept = {key: _loads(annotations.pop(key, None)) for key in ROUND_TRIP}
    meta["annotations"] = annotations
    v2_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    metrics = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append(cpu_utilization_metric(spec["targetCPUUtilizationPercentage"]))
    v2_spec["metrics"] = metrics + list(kept[METRICS] or [])
    if kept[BEHAVIOR]:
        v2_spec["behavior"] = kept[BEHAVIOR]
    v2_status = {k: status[k] for k in STATUS_FIELDS if k in status}
    current = kept[CURRENT_METRICS]
    if not current and status.get("currentCPUUtilizationPercentage") is not None:
        utilization = {"averageUtilization": status["currentCPUUtilizationPercentage"]}
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": utilization}}]
    if current:
        v2_status["currentMetrics"] = current
    if kept[CONDITIONS]:
        v2_status["conditions"] = kept[CONDITIONS]
    return {**obj, "spec": v2_spec, "status": v2_status}


def _loads(text: str | None) -> Any:
    """A round-trip annotation's value; one that is not JSON is ignored."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None

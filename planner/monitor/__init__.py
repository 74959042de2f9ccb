"""The monitor: runtime IDs followed through shared informer caches, Kubernetes state mapped to
lifecycle events by a per-ID state machine, and the lifecycle operations (start, stop, pause, resume,
delete, logs, inspect).

`mapping` and `state` are pure; `monitor` owns subscriptions; `lifecycle` owns the writes the lifecycle
commands make.
"""

from __future__ import annotations

from planner.monitor.mapping import (
    End,
    Observation,
    SandboxObjects,
    deployment_observation,
    job_observation,
    managed_runtime_id,
    sandbox_observation,
)
from planner.monitor.monitor import Caches, KindCache, Monitor, steady, subscription_key
from planner.monitor.state import Transition, WorkloadState, advance, event_id

__all__ = [
    "Caches",
    "End",
    "KindCache",
    "Monitor",
    "Observation",
    "SandboxObjects",
    "Transition",
    "WorkloadState",
    "advance",
    "deployment_observation",
    "event_id",
    "job_observation",
    "managed_runtime_id",
    "sandbox_observation",
    "steady",
    "subscription_key",
]

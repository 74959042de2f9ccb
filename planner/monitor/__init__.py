"""The monitor: runtime IDs followed through shared informer caches, Kubernetes state mapped to
lifecycle events by a per-ID state machine, and the lifecycle operations (start, stop, pause, resume,
delete, logs, inspect).

`mapping` and `state` are pure (each workload kind's own look is `planner.workloads`'); `monitor` owns subscriptions; `lifecycle` owns the writes the lifecycle
commands make.
"""

from __future__ import annotations

from planner.monitor.mapping import (
    SandboxObjects,
    managed_runtime_id,
    sandbox_observation,
    workload_observation,
)
from planner.monitor.monitor import Caches, KindCache, Monitor, steady, subscription_key
from planner.monitor.state import Transition, WorkloadState, advance, event_id

__all__ = [
    "Caches",
    "KindCache",
    "Monitor",
    "SandboxObjects",
    "Transition",
    "WorkloadState",
    "advance",
    "event_id",
    "managed_runtime_id",
    "sandbox_observation",
    "steady",
    "subscription_key",
    "workload_observation",
]

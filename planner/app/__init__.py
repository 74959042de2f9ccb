"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. The commands come
in families, one module each: `planning` (validate, render, plan), `applying` (apply, apply of a saved
plan, parent scope tightening), `workloads` (lifecycle operations, logs, inspect) and `watching`
(monitor, apply --watch, status); `target` says which cluster they talk to.
"""

from planner.app.applying import (
    AppliedPlan,
    ApplyOptions,
    apply,
    apply_saved,
    remaining_scope,
    tighten_if_wider,
    wait_scopes,
)
from planner.app.planning import (
    DEFAULT_APPLY_TIMEOUT,
    PlannedChanges,
    PlanOptions,
    RenderedPlan,
    check_not_empty,
    execution_plan,
    plan,
    plan_rendered,
    render_loaded,
    render_plans,
    server_dry_run,
    validate,
)
from planner.app.target import Target
from planner.app.watching import (
    STATUS_KINDS,
    MonitorOptions,
    MonitorResult,
    apply_and_watch,
    follow,
    monitor,
    monitor_scope,
    plan_runtime_ids,
    status,
    status_runtime_ids,
)
from planner.app.workloads import (
    LIFECYCLE_OPERATIONS,
    delete_workload,
    inspect_workload,
    run_lifecycle,
    workload_logs,
)

__all__ = [
    "DEFAULT_APPLY_TIMEOUT",
    "LIFECYCLE_OPERATIONS",
    "STATUS_KINDS",
    "AppliedPlan",
    "ApplyOptions",
    "MonitorOptions",
    "MonitorResult",
    "PlanOptions",
    "PlannedChanges",
    "RenderedPlan",
    "Target",
    "apply",
    "apply_and_watch",
    "apply_saved",
    "check_not_empty",
    "delete_workload",
    "execution_plan",
    "follow",
    "inspect_workload",
    "monitor",
    "monitor_scope",
    "plan",
    "plan_rendered",
    "plan_runtime_ids",
    "remaining_scope",
    "render_loaded",
    "render_plans",
    "run_lifecycle",
    "server_dry_run",
    "status",
    "status_runtime_ids",
    "tighten_if_wider",
    "validate",
    "wait_scopes",
    "workload_logs",
]

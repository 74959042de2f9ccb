"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. The commands come
in families, one module each: `planning` (validate, render, plan), `applying` (apply, apply of a saved
plan, narrowing the ApplySet parent after a converged apply), `workloads` (lifecycle operations, logs,
inspect) and `watching` (monitor, apply --watch, status, and the choice among the ways to apply);
`target` says which cluster they talk to and builds its client once. This package exports what the CLI
calls; everything else is reached through its module.
"""

from planner.app.applying import ApplyOptions
from planner.app.planning import (
    DEFAULT_APPLY_TIMEOUT,
    PlanOptions,
    check_data_loss,
    plan,
    render_plans,
    save_plans,
    validate,
)
from planner.app.target import Target
from planner.app.watching import MonitorOptions, apply_plans, monitor, status
from planner.app.workloads import delete_workload, inspect_workload, run_lifecycle, workload_logs
from planner.monitor.lifecycle import LogOptions

__all__ = [
    "DEFAULT_APPLY_TIMEOUT",
    "ApplyOptions",
    "LogOptions",
    "MonitorOptions",
    "PlanOptions",
    "Target",
    "apply_plans",
    "check_data_loss",
    "delete_workload",
    "inspect_workload",
    "monitor",
    "plan",
    "render_plans",
    "run_lifecycle",
    "save_plans",
    "status",
    "validate",
    "workload_logs",
]

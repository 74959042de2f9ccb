"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. The commands come
in families, one module each: `planning` (validate, render, plan), `applying` (apply, apply of a saved
plan, settling the ApplySet parent after a converged apply, all under the run lock), `reconciling`
(reconcile: every plan under some paths, each locked, planned and applied on its own), `locks`
(unlock), `history` (recording generations; history, diff-generations), `rollingback` (rollback),
`workloads` (lifecycle operations, logs, inspect), `sandboxes` (claim, release and touch
sandboxes beside a plan) and `watching` (monitor, apply --watch,
status, and the choice among the ways to apply); `target` says which cluster they talk to and builds
its client once. This package exports what the CLI calls; everything else is reached through its
module.
"""

from planner.app.applying import ApplyOptions
from planner.app.history import HistoryOptions, diff_generations, history, show_generation
from planner.app.locks import LockState, lock_state, unlock
from planner.app.planning import (
    DEFAULT_APPLY_TIMEOUT,
    PlanOptions,
    check_data_loss,
    plan,
    render_plans,
    save_plans,
    validate,
)
from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile
from planner.app.rollingback import RollbackOptions, RollbackResult, rollback
from planner.app.sandboxes import claim_sandbox, release_sandbox, touch_sandbox
from planner.app.target import Target
from planner.app.watching import MonitorOptions, apply_plans, monitor, status
from planner.app.workloads import delete_workload, inspect_workload, run_lifecycle, workload_logs
from planner.generations import DEFAULT_HISTORY_MAX
from planner.lock import LockOptions
from planner.monitor.lifecycle import LogOptions

__all__ = [
    "DEFAULT_APPLY_TIMEOUT",
    "DEFAULT_HISTORY_MAX",
    "ApplyOptions",
    "HistoryOptions",
    "LockOptions",
    "LockState",
    "LogOptions",
    "MonitorOptions",
    "PlanOptions",
    "PlanOutcome",
    "ReconcileOptions",
    "RollbackOptions",
    "RollbackResult",
    "Target",
    "apply_plans",
    "check_data_loss",
    "claim_sandbox",
    "delete_workload",
    "diff_generations",
    "history",
    "inspect_workload",
    "lock_state",
    "monitor",
    "plan",
    "reconcile",
    "release_sandbox",
    "render_plans",
    "rollback",
    "run_lifecycle",
    "save_plans",
    "show_generation",
    "status",
    "touch_sandbox",
    "unlock",
    "validate",
    "workload_logs",
]

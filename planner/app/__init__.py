"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. The commands come
in families, one module each (docs/architecture.md lists them); `options` builds every command's
option object from its flags, `selector` finds the plans a command names, and `target` says which
cluster they talk to and builds its client once. This package exports what the CLI calls, each name
imported from its module on first use (so `planner --help` imports none of them); everything else is
reached through its module.
"""

from typing import TYPE_CHECKING

from planner.lazy import exports

if TYPE_CHECKING:
    from planner.app.apply import apply_plans
    from planner.app.applying import ApplyOptions
    from planner.app.building import build, explain
    from planner.app.command_options import (
        apply_options,
        cluster_target,
        log_options,
        plan_options,
        reconcile_exit_code,
        reconcile_options,
        rollback_options,
        watch_options,
    )
    from planner.app.history import HistoryOptions, diff_generations, history_of, show_generation
    from planner.app.locks import LockState, lock_state, unlock
    from planner.app.planning import (
        DEFAULT_APPLY_TIMEOUT,
        PlanOptions,
        check_conflicts,
        check_data_loss,
        plan,
        render_plans,
        save_plans,
    )
    from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile
    from planner.app.rendering import validate
    from planner.app.rollingback import RollbackOptions, RollbackResult, rollback
    from planner.app.sandboxes import claim_sandbox, release_sandbox, touch_sandbox
    from planner.app.selector import PlanRef, selected_plans
    from planner.app.target import Target
    from planner.app.watching import MonitorOptions, monitor, status
    from planner.app.workloads import delete_workload, inspect_workload, run_lifecycle, workload_logs
    from planner.generations import DEFAULT_HISTORY_MAX
    from planner.monitor.lifecycle import LogOptions
    from planner.plan.crd import plan_crd
    from planner.plan.durations import parse_duration
    from planner.plan.schema import schema_text
    from planner.state.runlock import LockOptions

_MODULES = {
    "planner.app.apply": ["apply_plans"],
    "planner.app.building": ["build", "explain"],
    "planner.app.applying": ["ApplyOptions"],
    "planner.app.history": ["HistoryOptions", "diff_generations", "history_of", "show_generation"],
    "planner.app.locks": ["LockState", "lock_state", "unlock"],
    "planner.app.command_options": [
        "apply_options",
        "log_options",
        "plan_options",
        "reconcile_exit_code",
        "reconcile_options",
        "rollback_options",
        "cluster_target",
        "watch_options",
    ],
    "planner.app.rendering": ["validate"],
    "planner.app.planning": [
        "DEFAULT_APPLY_TIMEOUT",
        "PlanOptions",
        "check_conflicts",
        "check_data_loss",
        "plan",
        "render_plans",
        "save_plans",
    ],
    "planner.app.reconciling": ["PlanOutcome", "ReconcileOptions", "reconcile"],
    "planner.app.rollingback": ["RollbackOptions", "RollbackResult", "rollback"],
    "planner.app.sandboxes": ["claim_sandbox", "release_sandbox", "touch_sandbox"],
    "planner.app.selector": ["PlanRef", "selected_plans"],
    "planner.app.target": ["Target"],
    "planner.app.watching": ["MonitorOptions", "monitor", "status"],
    "planner.app.workloads": ["delete_workload", "inspect_workload", "run_lifecycle", "workload_logs"],
    "planner.generations": ["DEFAULT_HISTORY_MAX"],
    "planner.state.runlock": ["LockOptions"],
    "planner.monitor.lifecycle": ["LogOptions"],
    "planner.plan.crd": ["plan_crd"],
    "planner.plan.durations": ["parse_duration"],
    "planner.plan.schema": ["schema_text"],
}

__getattr__ = exports(__name__, {name: module for module, names in _MODULES.items() for name in names})

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
    "PlanRef",
    "ReconcileOptions",
    "RollbackOptions",
    "RollbackResult",
    "Target",
    "apply_options",
    "apply_plans",
    "build",
    "check_conflicts",
    "check_data_loss",
    "claim_sandbox",
    "cluster_target",
    "delete_workload",
    "diff_generations",
    "explain",
    "history_of",
    "inspect_workload",
    "lock_state",
    "log_options",
    "monitor",
    "parse_duration",
    "plan",
    "plan_crd",
    "plan_options",
    "reconcile",
    "reconcile_exit_code",
    "reconcile_options",
    "release_sandbox",
    "render_plans",
    "rollback",
    "rollback_options",
    "run_lifecycle",
    "save_plans",
    "schema_text",
    "selected_plans",
    "show_generation",
    "status",
    "touch_sandbox",
    "unlock",
    "validate",
    "watch_options",
    "workload_logs",
]

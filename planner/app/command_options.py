"""From a command's flags to the option objects the commands take, with the checks between flags.

The command line passes each command's flags here by their option names, as parsed and nothing more;
every default a flag leaves out and every rule that ties two flags together (`--out` needs `--dry-run`)
lives here, so a program calling `planner.app` gets the same options the command line does. The
controller's own flags become its options in `planner.controller.settings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.app.applying import ApplyOptions
from planner.app.history import HistoryOptions
from planner.app.planning import DEFAULT_APPLY_TIMEOUT, PlanOptions
from planner.app.reconciling import PlanOutcome, ReconcileOptions
from planner.app.rollingback import RollbackOptions
from planner.app.target import Target
from planner.app.watching import MonitorOptions
from planner.errors import ExitCode, UsageError
from planner.generations import DEFAULT_HISTORY_MAX
from planner.kube.client import ClientOptions
from planner.monitor.lifecycle import LogOptions
from planner.state.runlock import DEFAULT_DURATION, LockOptions

MIN_LOCK_DURATION = 3.0


def cluster_target(
    *,
    namespace: str | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
    qps: float | None = None,
    as_user: str | None = None,
    as_groups: Sequence[str] = (),
) -> Target:
    """The cluster of `--kubeconfig` and `--context`, `-n` its default namespace, `--qps` its rate limit,
    every request made as `--as` (and `--as-group`) when given, through the API server's impersonation."""
    if as_groups and not as_user:
        raise UsageError("--as-group needs --as: Kubernetes impersonates groups only with a user")
    options = None
    if qps is not None or as_user:
        options = ClientOptions(qps=qps, impersonate=as_user or None, impersonate_groups=tuple(as_groups))
    return Target(namespace=namespace, kubeconfig=kubeconfig, context=context, options=options)


def plan_options(
    *,
    allow_data_loss: bool = False,
    adopt: bool = False,
    rerun: Sequence[str] = (),
    allow_empty: bool = False,
    server_dry_run: bool = False,
) -> PlanOptions:
    return PlanOptions(
        allow_data_loss=allow_data_loss,
        adopt=adopt,
        rerun=frozenset(rerun),
        allow_empty=allow_empty,
        server_dry_run=server_dry_run,
    )


def lock_options(*, lock_timeout: float = 0.0, lock_duration: float = DEFAULT_DURATION) -> LockOptions:
    if lock_duration < MIN_LOCK_DURATION:
        raise UsageError(f"--lock-duration must be at least {MIN_LOCK_DURATION:g}s")
    return LockOptions(duration=lock_duration, timeout=lock_timeout)


def history_options(
    *,
    history_max: int = DEFAULT_HISTORY_MAX,
    no_secret_history: bool = False,
    source_revision: str | None = None,
) -> HistoryOptions:
    return HistoryOptions(keep=history_max, secret_data=not no_secret_history, revision=source_revision)


def apply_options(
    *,
    parallelism: int = 16,
    timeout: float | None = None,
    no_wait: bool = False,
    lock_timeout: float = 0.0,
    lock_duration: float = DEFAULT_DURATION,
    history_max: int = DEFAULT_HISTORY_MAX,
    no_secret_history: bool = False,
    source_revision: str | None = None,
    **plan_flags: Any,
) -> ApplyOptions:
    """What `apply`, `reconcile`, `rollback` and the controller apply with; `timeout` None is the
    default per-object wait (`--timeout` left out), not "no limit"."""
    return ApplyOptions(
        plan=plan_options(**plan_flags),
        parallelism=parallelism,
        timeout=DEFAULT_APPLY_TIMEOUT if timeout is None else timeout,
        no_wait=no_wait,
        lock=lock_options(lock_timeout=lock_timeout, lock_duration=lock_duration),
        history=history_options(
            history_max=history_max, no_secret_history=no_secret_history, source_revision=source_revision
        ),
    )


def watch_options(*, watch: bool, watch_timeout: float | None) -> MonitorOptions | None:
    """`apply --watch`: follow until every workload is steady, for `--watch-timeout` at most."""
    return MonitorOptions(until_done=True, timeout=watch_timeout) if watch else None


def reconcile_options(
    *, check: bool = False, parallel_plans: int = 4, **apply_flags: Any
) -> ReconcileOptions:
    return ReconcileOptions(apply=apply_options(**apply_flags), check=check, parallel_plans=parallel_plans)


def rollback_options(
    *,
    to: int | None = None,
    dry_run: bool = False,
    out: Path | None = None,
    output: str = "text",
    **apply_flags: Any,
) -> RollbackOptions:
    if out is not None and not dry_run:
        raise UsageError("--out needs --dry-run")
    if output == "markdown" and not dry_run:
        raise UsageError("-o markdown needs --dry-run")
    return RollbackOptions(apply=apply_options(**apply_flags), to=to, dry_run=dry_run, out=out)


def log_options(*, tail: int, container: str | None, previous: bool, follow: bool) -> LogOptions:
    """`--tail -1` is every line."""
    return LogOptions(tail=None if tail < 0 else tail, container=container, previous=previous, follow=follow)


def reconcile_exit_code(outcomes: Sequence[PlanOutcome]) -> int:
    """FAILED when any plan failed; else LOCKED when any was skipped because locked; else CHANGES when
    `--check` found drift or pending changes; else OK."""
    results = {outcome.result for outcome in outcomes}
    for result, code in (
        ("failed", ExitCode.FAILED),
        ("locked", ExitCode.LOCKED),
        ("changes", ExitCode.CHANGES),
    ):
        if result in results:
            return int(code)
    return int(ExitCode.OK)

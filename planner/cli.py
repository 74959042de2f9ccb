"""The command line: parse options, call `app`, hand results to a printer, choose the exit code.

Exit codes are a contract (DESIGN §5): 0 success, 1 any error (usage errors too: click's 2 is remapped),
2 changes present (`plan --detailed-exitcode`, `reconcile --check`), 3 lock held, 4 workload not found.

The commands that write for a plan (`apply`, `reconcile`) turn SIGTERM into the Ctrl-C path, so a
stopped CI job or systemd unit releases the plan's run lock on its way out as an interrupted one does.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar, cast

import click

from planner import __version__, app
from planner.controller.leader import ElectionTimings
from planner.controller.manager import Controller, ControllerOptions
from planner.errors import PlanError, PlannerError
from planner.kube.client import ClientOptions
from planner.lock import DEFAULT_DURATION
from planner.output.errors import print_diagnostics, report_error, report_failure
from planner.output.events import MonitorPrinter, apply_printer
from planner.output.history import (
    formatted_diff,
    generation_json,
    generation_text,
    history_json,
    history_text,
    rollback_line,
)
from planner.output.locks import refusal_line, unlocked_line
from planner.output.manifests import to_json, to_yaml
from planner.output.plan import formatted
from planner.output.reconcile import ReconcilePrinter, write_metrics
from planner.output.validation import print_validated, print_warnings
from planner.output.workloads import print_inspection, print_outcome, print_status
from planner.plan.durations import parse_duration
from planner.plan.schema import schema_text

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


_namespace_option = click.option(
    "-n",
    "--namespace",
    help="Default namespace for objects whose plan names none (default: the context's, else `default`).",
)
_kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config).",
)
_context_option = click.option("--context", help="Kubeconfig context to use (default: the current context).")
_qps_option = click.option(
    "--qps",
    type=click.FloatRange(min=1),
    help="Most API requests per second, bursting to twice that (default: no client-side limit once the "
    "server shows API Priority and Fairness, else 1000).",
)


def _cluster_options(*, namespace: bool = True) -> Callable[[F], F]:
    """`-n/--namespace` (unless the command's runtime IDs name the namespace), `--kubeconfig` and
    `--context`, as kubectl spells them, handed to the command as one `target: app.Target` (with the
    rate limit of `--qps` when the command has that option too)."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def with_target(*args: Any, **kwargs: Any) -> Any:
            qps: float | None = kwargs.pop("qps", None)
            target = app.Target(
                namespace=kwargs.pop("namespace", None),
                kubeconfig=kwargs.pop("kubeconfig"),
                context=kwargs.pop("context"),
                options=None if qps is None else ClientOptions(qps=qps),
            )
            return command(*args, target=target, **kwargs)

        decorated = _kubeconfig_option(_context_option(with_target))
        return cast(F, _namespace_option(decorated) if namespace else decorated)

    return decorate


@dataclass
class _Invocation:
    """What `main` needs to know of the command it ran: the `-o` format, so an error it reports is a
    JSON line too when the command's output is JSON."""

    output: str = "text"


def _remember_output(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.ensure_object(_Invocation).output = value
    return value


def _output_option(*choices: str) -> Callable[[F], F]:
    return click.option(
        "-o",
        "--output",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        is_eager=True,  # known before any other option's error, which is then reported in it
        callback=_remember_output,
        help="Output format.",
    )


def _plan_paths() -> Callable[[F], F]:
    return click.argument("plans", nargs=-1, required=True, type=click.Path(exists=True))


def _duration_option(name: str, *, help: str, default: str | None = None) -> Callable[[F], F]:
    """An option taking a duration (`30s`, `5m`), parsed to seconds; its default shown when it has one."""
    return click.option(
        name,
        callback=_duration,
        metavar="DURATION",
        default=default,
        show_default=default is not None,
        help=help,
    )


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as bad:
        raise click.BadParameter(str(bad)) from bad


_allow_data_loss_option = click.option(
    "--allow-data-loss", is_flag=True, help="Allow replacing or deleting PVCs and Namespaces."
)
_adopt_option = click.option(
    "--adopt", is_flag=True, help="Take over same-named objects this plan does not own yet."
)
_rerun_option = click.option(
    "--rerun", multiple=True, metavar="NAME", help="Run this Job again though its run-key ran."
)


def _lock_options(command: F) -> F:
    """`--lock-timeout` and `--lock-duration`, handed to the command as one `lock: app.LockOptions`."""

    @functools.wraps(command)
    def with_lock(*args: Any, **kwargs: Any) -> Any:
        timeout, duration = kwargs.pop("lock_timeout"), kwargs.pop("lock_duration")
        if duration < 3:
            raise click.BadParameter("must be at least 3s", param_hint="--lock-duration")
        return command(*args, lock=app.LockOptions(duration=duration, timeout=timeout), **kwargs)

    timeout = _duration_option(
        "--lock-timeout",
        default="0s",
        help="Wait this long for a plan's lock while another run holds it (0: exit 3 at once).",
    )
    duration = _duration_option(
        "--lock-duration",
        default=f"{DEFAULT_DURATION:g}s",
        help="The lock's lease: renewed every third of it; a dead run's lock expires after it.",
    )
    return cast(F, timeout(duration(with_lock)))


def _history_options(command: F) -> F:
    """`--history-max`, `--no-secret-history` and `--source-revision`, handed to the command as one
    `history: app.HistoryOptions`."""

    @functools.wraps(command)
    def with_history(*args: Any, **kwargs: Any) -> Any:
        history = app.HistoryOptions(
            keep=kwargs.pop("history_max"),
            secret_data=not kwargs.pop("no_secret_history"),
            revision=kwargs.pop("source_revision"),
        )
        return command(*args, history=history, **kwargs)

    keep = click.option(
        "--history-max",
        type=click.IntRange(1),
        default=app.DEFAULT_HISTORY_MAX,
        show_default=True,
        help="Generations kept per plan (failed ones count); older records are deleted.",
    )
    no_secrets = click.option(
        "--no-secret-history",
        is_flag=True,
        help="Keep no Secret data in generation records (a rollback then refuses to change a Secret).",
    )
    revision = click.option(
        "--source-revision",
        metavar="REV",
        help="The revision recorded (default: $GIT_COMMIT, $GITHUB_SHA, else the plan's git HEAD).",
    )
    return cast(F, keep(no_secrets(revision(with_history))))


def _notice(message: str) -> None:
    """A sentence about the run lock (waiting for it, taking it over), for the person on stderr."""
    click.echo(message, err=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM takes Ctrl-C's path while a command writes: no task starts, locks are released."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="planner", message="%(prog)s %(version)s")
@click.option("--no-color", is_flag=True, help="No colour in any output (as does NO_COLOR set to anything).")
def cli(no_color: bool) -> None:
    """planner: a Nix-style declarative reconciler for Kubernetes.

    Plan files declare workloads and sandboxes; planner renders them, diffs them against the live
    cluster and applies the difference along a dependency graph.
    """


def _no_color() -> bool:
    """`--no-color` before the command, or NO_COLOR set to any non-empty value (no-color.org)."""
    flag = click.get_current_context().find_root().params.get("no_color")
    return bool(flag) or bool(os.environ.get("NO_COLOR"))


@cli.command()
@_plan_paths()
@_output_option("text", "json")
def validate(plans: tuple[str, ...], output: str) -> None:
    """Check plan files (or directories of them) without contacting a cluster.

    Every problem is reported at once, one line each, as `file:LINE:COL: path: message`; exit 1 if any.
    With `-o json` each problem and warning is also a `Diagnostic` JSON line on stdout.
    """
    try:
        loaded = app.validate(plans)
    except PlanError as invalid:
        if output == "json":
            print_diagnostics(invalid.diagnostics)
        raise
    print_warnings(loaded.warnings)
    if output == "json":
        print_diagnostics(loaded.warnings)
    print_validated(loaded.plans, output)


@cli.command()
@_plan_paths()
@_output_option("yaml", "json")
@_cluster_options()
@click.option("--show-secrets", is_flag=True, help="Print Secret values and hashes instead of `***`.")
def render(plans: tuple[str, ...], output: str, target: app.Target, show_secrets: bool) -> None:
    """Print the manifests the plans render to, without contacting a cluster.

    The output pipes into `kubectl apply -f -`. Secret values are masked unless --show-secrets.
    """
    loaded, rendered = app.render_plans(plans, target=target)
    print_warnings(loaded.warnings)
    manifests = [manifest for each in rendered for manifest in each.manifests]
    printer = to_json if output == "json" else to_yaml
    click.echo(printer(manifests, show_secrets=show_secrets), nl=False)


_ALLOW_EMPTY_HELP = "Accept a plan that declares nothing though it manages objects (prunes them all)."


@cli.command("plan")
@_plan_paths()
@_output_option("text", "json", "markdown")
@_cluster_options()
@click.option(
    "--detailed-exitcode", is_flag=True, help="Exit 2 when there are changes, 0 when none, 1 on error."
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a saved plan for `apply FILE`.",
)
@_allow_data_loss_option
@_adopt_option
@_rerun_option
@click.option("--graph", is_flag=True, help="Also print the ordered task list apply would run.")
@click.option("--allow-empty", is_flag=True, help=_ALLOW_EMPTY_HELP)
@click.option(
    "--server-dry-run",
    is_flag=True,
    help="Ask the server for each create and update (dryRun=All) and show its exact result.",
)
@_qps_option
def plan_command(
    plans: tuple[str, ...],
    output: str,
    target: app.Target,
    detailed_exitcode: bool,
    out: Path | None,
    allow_data_loss: bool,
    adopt: bool,
    rerun: tuple[str, ...],
    graph: bool,
    allow_empty: bool,
    server_dry_run: bool,
) -> None:
    """Show what apply would change, and why, without changing anything.

    Reads the live objects of each plan (one LIST per kind and namespace) and diffs them against the
    rendered plan. Secret values and hashes are never shown.
    """
    options = app.PlanOptions(
        allow_data_loss=allow_data_loss,
        adopt=adopt,
        rerun=frozenset(rerun),
        server_dry_run=server_dry_run,
        allow_empty=allow_empty,
    )
    loaded, results = app.plan(plans, target=target, options=options)
    print_warnings(loaded.warnings)
    changesets = [result.changeset for result in results]
    graphs = [result.execution.as_text() for result in results] if graph else []
    saved = str(out) if out is not None else None
    colour = sys.stdout.isatty() and not _no_color()
    pools = [result.pools for result in results]
    cluster = target.described() if output == "markdown" else None
    shown = formatted(
        changesets, output, colour=colour, graphs=graphs, pools=pools, saved=saved, cluster=cluster
    )
    click.echo(shown, nl=False)
    app.check_data_loss(results)
    if out is not None:
        for warning in app.save_plans(out, results, options, target=target):
            click.echo(f"warning: {warning}", err=True)
    if any(result.changeset.conflicts for result in results):
        sys.exit(1)
    if detailed_exitcode and any(result.changeset.has_changes for result in results):
        sys.exit(2)


_parallelism_option = click.option(
    "--parallelism",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="API writes in flight at once, per plan (waits take none).",
)
_timeout_option = _duration_option(
    "--timeout",
    help="Per-object wait timeout where the plan sets none, like 30s or 5m (default: 5m).",
)
_no_wait_option = click.option(
    "--no-wait", is_flag=True, help="Write without waiting for objects to become ready."
)


@cli.command("apply")
@_plan_paths()
@_output_option("text", "json")
@_cluster_options()
@_allow_data_loss_option
@_adopt_option
@_rerun_option
@_parallelism_option
@_timeout_option
@_no_wait_option
@click.option("--allow-empty", is_flag=True, help=_ALLOW_EMPTY_HELP)
@_qps_option
@click.option(
    "--watch",
    is_flag=True,
    help="Then follow every workload's lifecycle events until each is steady (or --watch-timeout).",
)
@_duration_option(
    "--watch-timeout",
    default="10m",
    help="How long --watch follows at most.",
)
@_lock_options
@_history_options
def apply_command(
    plans: tuple[str, ...],
    output: str,
    target: app.Target,
    allow_data_loss: bool,
    adopt: bool,
    rerun: tuple[str, ...],
    parallelism: int,
    timeout: float | None,
    no_wait: bool,
    allow_empty: bool,
    watch: bool,
    watch_timeout: float,
    lock: app.LockOptions,
    history: app.HistoryOptions,
) -> None:
    """Make the cluster match the plans: write along the dependency graph, waiting where it must.

    PLANS are plan files and directories, or one saved plan written by `plan --out`: then exactly its
    changes are applied, after checking that it was made against this cluster and that neither the
    plan files nor the objects it read have moved (it carries its own --allow-data-loss, --adopt,
    --rerun, --allow-empty and namespace).

    Each plan is planned and applied holding its run lock (a Lease `planner-lock-<plan>`): while
    another run holds it, apply waits up to --lock-timeout, then exits 3 naming the holder.

    Exit 0 when everything converged, 1 when anything failed, was skipped or timed out, a saved plan
    is stale or the lock was lost, 3 when another run holds a plan's lock; the summary names each
    failure and what it held back.
    """
    plan_options = app.PlanOptions(
        allow_data_loss=allow_data_loss, adopt=adopt, rerun=frozenset(rerun), allow_empty=allow_empty
    )
    options = app.ApplyOptions(
        plan=plan_options,
        parallelism=parallelism,
        timeout=app.DEFAULT_APPLY_TIMEOUT if timeout is None else timeout,
        no_wait=no_wait,
        lock=lock,
        history=history,
    )
    following = app.MonitorOptions(until_done=True, timeout=watch_timeout) if watch else None
    printer = apply_printer(output, no_color=_no_color())
    try:
        with _terminate_as_interrupt():
            run = app.apply_plans(
                plans, target=target, options=options, watch=following, sink=printer, notice=_notice
            )
    finally:
        printer.close()
    print_warnings(run.loaded.warnings)
    if output != "json":
        for each in run.applied:
            printer.summary(each)
    if run.lost:
        click.echo(f"error: {run.lost}", err=True)
    if not run.ok:
        sys.exit(1)


def _reconcile_exit_code(outcomes: Sequence[app.PlanOutcome]) -> int:
    """1 when any plan failed; else 3 when any was skipped because locked; else 2 when `--check` found
    drift or pending changes; else 0."""
    results = {outcome.result for outcome in outcomes}
    for result, code in (("failed", 1), ("locked", 3), ("changes", 2)):
        if result in results:
            return code
    return 0


@cli.command("reconcile")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@_output_option("text", "json")
@_cluster_options()
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 2 when any plan has drift or pending changes."
)
@click.option(
    "--parallel-plans", type=click.IntRange(1), default=4, show_default=True, help="Plans reconciled at once."
)
@click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write Prometheus metrics here, atomically (for node_exporter's textfile collector).",
)
@_allow_data_loss_option
@click.option("--allow-empty", is_flag=True, help=_ALLOW_EMPTY_HELP)
@_parallelism_option
@_timeout_option
@_no_wait_option
@_lock_options
@_history_options
@_qps_option
def reconcile_command(
    paths: tuple[str, ...],
    output: str,
    target: app.Target,
    check: bool,
    parallel_plans: int,
    metrics_file: Path | None,
    allow_data_loss: bool,
    allow_empty: bool,
    parallelism: int,
    timeout: float | None,
    no_wait: bool,
    lock: app.LockOptions,
    history: app.HistoryOptions,
) -> None:
    """Reconcile every plan under PATHS: the one command for cron, systemd timers and CronJobs.

    Plan files are found recursively (`*.yaml`/`*.yml` declaring `kind: Plan`, in path order). Each
    plan, on its own and several at once: take its lock (a plan another run holds is skipped as
    `locked`), plan it, apply what drifted or is pending (prune included), release the lock. One plan's
    failure never stops another. With --check nothing is written (no lock either): each change is
    reported as drift (the cluster moved away from what was applied) or pending (the plan changed).

    Exit 0 when every plan converged (or, with --check, has nothing to do), 1 when any failed, 2 with
    --check when any has drift or pending changes, 3 when any was skipped because locked (and none
    failed).
    """
    apply_options = app.ApplyOptions(
        plan=app.PlanOptions(allow_data_loss=allow_data_loss, allow_empty=allow_empty),
        parallelism=parallelism,
        timeout=app.DEFAULT_APPLY_TIMEOUT if timeout is None else timeout,
        no_wait=no_wait,
        lock=lock,
        history=history,
    )
    options = app.ReconcileOptions(apply=apply_options, check=check, parallel_plans=parallel_plans)
    printer = ReconcilePrinter(output)
    with _terminate_as_interrupt():
        outcomes = app.reconcile(
            paths, target=target, options=options, notice=_notice, on_outcome=printer.outcome
        )
    code = _reconcile_exit_code(outcomes)
    printer.finish(outcomes, exit_code=code)
    if metrics_file is not None:
        write_metrics(metrics_file, outcomes, check=check)
    sys.exit(code)


@cli.command("history")
@click.argument("plan_name", metavar="PLAN")
@_output_option("text", "json")
@click.option(
    "--show", type=click.IntRange(1), metavar="N", help="Print generation N: its plan files and closure."
)
@click.option(
    "--diff",
    "between",
    type=(click.IntRange(1), click.IntRange(1)),
    metavar="A B",
    help="Compare generation A's closure with B's (as `diff-generations PLAN A B`).",
)
@_cluster_options()
def history_command(
    plan_name: str, output: str, show: int | None, between: tuple[int, int] | None, target: app.Target
) -> None:
    """List the recorded generations of PLAN: one per apply that wrote anything (docs/history.md).

    The plan's namespace is -n, else the context's. The current generation (the one the cluster is
    at) is marked `*`. Secret values and hashes are never printed.
    """
    if show is not None and between is not None:
        raise click.UsageError("give --show or --diff, not both")
    if between is not None:
        compared = app.diff_generations(plan_name, *between, target=target)
        click.echo(formatted_diff(compared, output), nl=False)
    elif show is not None:
        generation = app.show_generation(plan_name, show, target=target)
        click.echo(generation_json(generation) if output == "json" else generation_text(generation), nl=False)
    else:
        shown = app.history(plan_name, target=target)
        click.echo(history_json(shown) if output == "json" else history_text(shown), nl=False)


@cli.command("diff-generations")
@click.argument("plan_name", metavar="PLAN")
@click.argument("old", metavar="A", type=click.IntRange(1))
@click.argument("new", metavar="B", type=click.IntRange(1))
@_output_option("text", "json", "markdown")
@_cluster_options()
def diff_generations_command(plan_name: str, old: int, new: int, output: str, target: app.Target) -> None:
    """What changed between two generations of PLAN, like `nix store diff-closures`.

    Objects added (+), removed (-) and changed (~), with the fields that changed (an image
    `2.4.1 → 2.4.2`, replicas, a sandbox's rootfs `g1 → g2`); a Secret only as changed.
    """
    compared = app.diff_generations(plan_name, old, new, target=target)
    click.echo(formatted_diff(compared, output), nl=False)


@cli.command("rollback")
@click.argument("plan_name", metavar="PLAN")
@click.option("--to", "to", type=click.IntRange(1), metavar="N", help="The generation to go back to.")
@_output_option("text", "json", "markdown")
@_cluster_options()
@click.option("--dry-run", is_flag=True, help="Only show the plan (as `plan` does); write nothing.")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --dry-run: write a saved plan for `apply FILE`.",
)
@_allow_data_loss_option
@_adopt_option
@_rerun_option
@_parallelism_option
@_timeout_option
@_no_wait_option
@_qps_option
@_lock_options
@_history_options
def rollback_command(
    plan_name: str,
    to: int | None,
    output: str,
    target: app.Target,
    dry_run: bool,
    out: Path | None,
    allow_data_loss: bool,
    adopt: bool,
    rerun: tuple[str, ...],
    parallelism: int,
    timeout: float | None,
    no_wait: bool,
    lock: app.LockOptions,
    history: app.HistoryOptions,
) -> None:
    """Apply generation N of PLAN again (default: the newest converged one before the current).

    The recorded closure goes through apply's path: diffed against live, objects it does not hold
    pruned, readiness waits, under the plan's run lock, recorded as a new generation. Jobs whose
    run-key ran are not run again unless --rerun names them. A Secret the record kept no data for
    (--no-secret-history) is refused; a sandbox rootfs going back a generation needs
    --allow-data-loss (its disk is created afresh, not restored).

    Exit 0 when it converged, 1 when anything failed, 3 when another run holds the plan's lock.
    """
    if out is not None and not dry_run:
        raise click.UsageError("--out needs --dry-run")
    if output == "markdown" and not dry_run:
        raise click.UsageError("-o markdown needs --dry-run")
    options = app.RollbackOptions(
        apply=app.ApplyOptions(
            plan=app.PlanOptions(allow_data_loss=allow_data_loss, adopt=adopt, rerun=frozenset(rerun)),
            parallelism=parallelism,
            timeout=app.DEFAULT_APPLY_TIMEOUT if timeout is None else timeout,
            no_wait=no_wait,
            lock=lock,
            history=history,
        ),
        to=to,
        dry_run=dry_run,
        out=out,
    )
    printer = apply_printer(output if output != "markdown" else "text", no_color=_no_color())
    try:
        with _terminate_as_interrupt():
            result = app.rollback(plan_name, target=target, options=options, sink=printer, notice=_notice)
    finally:
        printer.close()
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if result.applied is None:
        colour = sys.stdout.isatty() and not _no_color()
        saved = str(out) if out is not None else None
        click.echo(formatted([result.planned.changeset], output, colour=colour, saved=saved), nl=False)
        app.check_data_loss([result.planned])
    else:
        if output != "json":
            printer.summary(result.applied)
        click.echo(rollback_line(result), err=output == "json")
    if result.lost:
        click.echo(f"error: {result.lost}", err=True)
    if result.planned.changeset.conflicts or not result.ok:
        sys.exit(1)


@cli.command("unlock")
@click.argument("plan_name", metavar="PLAN")
@click.option(
    "--force", is_flag=True, help="Delete the lock: only when the run holding it is known to be dead."
)
@_cluster_options()
def unlock_command(plan_name: str, force: bool, target: app.Target) -> None:
    """Break the run lock of plan PLAN (in -n's namespace, else the context's): delete its Lease and
    print whom it belonged to. Without --force it only says who holds it, and exits 1 if anyone does.

    A run whose lock is broken stops starting tasks at its next renewal and exits 1; a dead run's lock
    also expires on its own, so --force is for not waiting that long.
    """
    if not force:
        state = app.lock_state(plan_name, target=target)
        if state.holder is None:
            click.echo(refusal_line(state))
            return
        click.echo(f"error: {refusal_line(state)}", err=True)
        sys.exit(1)
    click.echo(unlocked_line(app.unlock(plan_name, target=target)))


@cli.command()
def schema() -> None:
    """Print the plan format's JSON Schema (draft-07)."""
    click.echo(schema_text(), nl=False)


@cli.command()
@_output_option("text", "json")
def version(output: str) -> None:
    """Print planner's version."""
    if output == "json":
        click.echo(json.dumps({"version": __version__}))
    else:
        click.echo(f"planner {__version__}")


@cli.group()
def cluster() -> None:
    """Run the embedded slim cluster: a local Kubernetes-compatible API server for when no cluster is at hand."""


_data_option = click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="State directory (default: $XDG_STATE_HOME/planner/cluster).",
)


_time_scale_option = click.option(
    "--time-scale",
    type=click.FloatRange(min=0.001),
    default=1.0,
    show_default=True,
    help="Multiply every simulated delay, backoff and deadline (0.1 runs ten times faster).",
)


_rbac_option = click.option(
    "--rbac",
    is_flag=True,
    help="Authorize requests by RBAC, as a real cluster does: the kubeconfig's admin token is in "
    "system:masters; ServiceAccount tokens (kubectl create token) get what their bindings allow.",
)


_resync_option = click.option(
    "--resync-seconds",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="How often the simulated controllers and node agent look at every object again (between "
    "resyncs, watch events and timers drive them); 10 suits simulations of 1,000+ workloads.",
)


@cluster.command("up")
@_data_option
@click.option("--port", type=click.IntRange(0, 65535), help="Port on 127.0.0.1 (default: a free one).")
@click.option("--memory", is_flag=True, help="Keep state in memory only (lost when it stops).")
@_time_scale_option
@_resync_option
@_rbac_option
def cluster_up(
    data_dir: Path | None,
    port: int | None,
    memory: bool,
    time_scale: float,
    resync_seconds: float,
    rbac: bool,
) -> None:
    """Start the embedded cluster in the background and write its kubeconfig."""
    from planner.slim import cluster as slim

    info = slim.up(
        data_dir=data_dir,
        port=port,
        memory=memory,
        time_scale=time_scale,
        resync_seconds=resync_seconds,
        rbac=rbac,
    )
    click.echo(f"embedded cluster running at {info.url} (pid {info.pid}, data {info.data_dir})", err=True)
    click.echo(f"export KUBECONFIG={info.kubeconfig}")


@cluster.command("down")
@_data_option
def cluster_down(data_dir: Path | None) -> None:
    """Stop the embedded cluster (its state stays in the data directory)."""
    from planner.slim import cluster as slim

    click.echo("stopped" if slim.down(data_dir=data_dir) else "not running")


@cluster.command("status")
@_data_option
def cluster_status(data_dir: Path | None) -> None:
    """Say whether the embedded cluster runs, and where."""
    from planner.slim import cluster as slim

    info = slim.status(data_dir=data_dir)
    if info is None:
        click.echo("not running")
        sys.exit(1)
    click.echo(f"running at {info.url} (pid {info.pid}); kubeconfig {info.kubeconfig}")


@cluster.command("reset")
@_data_option
def cluster_reset(data_dir: Path | None) -> None:
    """Stop the embedded cluster and delete its state."""
    from planner.slim import cluster as slim

    slim.reset(data_dir=data_dir)
    click.echo("reset")


@cluster.command("serve")
@_data_option
@click.option(
    "--port", type=click.IntRange(0, 65535), default=6443, show_default=True, help="Port on 127.0.0.1."
)
@click.option("--memory", is_flag=True, help="Keep state in memory only.")
@click.option(
    "--token",
    envvar="PLANNER_CLUSTER_TOKEN",
    help="Require this bearer token from clients (with --rbac: the admin's).",
)
@_time_scale_option
@_resync_option
@_rbac_option
def cluster_serve(
    data_dir: Path | None,
    port: int,
    memory: bool,
    token: str | None,
    time_scale: float,
    resync_seconds: float,
    rbac: bool,
) -> None:
    """Run the embedded cluster in the foreground until interrupted."""
    from planner.slim import cluster as slim

    slim.serve(
        data_dir=data_dir,
        port=port,
        memory=memory,
        token=token,
        time_scale=time_scale,
        resync_seconds=resync_seconds,
        rbac=rbac,
        announce=lambda kubeconfig: click.echo(f"export KUBECONFIG={kubeconfig}"),
    )


# --- the commands on runtime IDs, and the monitor ----------------------------------------------------


def _lifecycle_command(operation: str, summary: str, *, watchable: bool = False) -> None:
    def command(
        runtime_id: str, output: str, target: app.Target, watch: bool = False, timeout: float | None = None
    ) -> None:
        print_outcome(app.run_lifecycle(operation, runtime_id, target=target), output)
        if watch:
            options = app.MonitorOptions(until_done=True, timeout=timeout)
            result = app.monitor([runtime_id], target=target, options=options, sink=MonitorPrinter(output))
            if result.failed or not result.steady:
                sys.exit(1)

    if watchable:
        command = _duration_option("--timeout", help="With --watch, give up after this long.")(command)
        command = click.option(
            "--watch",
            is_flag=True,
            help="Then follow its events until it has started (or ended); exit 1 if it failed.",
        )(command)
    command = _cluster_options(namespace=False)(_output_option("text", "json")(command))
    cli.command(operation, help=summary)(click.argument("runtime_id", metavar="RUNTIME_ID")(command))


_lifecycle_command(
    "start",
    "Start a workload by runtime ID: a Deployment is scaled to 1; a Job must still exist (a deleted Job "
    "is not restartable: exit 4); a sandbox is resumed. Exit 1 for a malformed ID, 4 if not found.",
    watchable=True,
)
_lifecycle_command(
    "stop",
    "Stop a workload by runtime ID: a Deployment is scaled to 0; a Job is deleted (Foreground); a "
    "sandbox is paused. Exit 1 for a malformed ID, 4 if not found.",
)
_lifecycle_command(
    "pause",
    "Pause a workload (the same as stop): a sandbox's Pod is deleted, its PVCs kept and its state "
    "marked paused. Exit 1 for a malformed ID, 4 if not found.",
)
_lifecycle_command(
    "resume",
    "Resume a workload (the same as start): a sandbox's Pod is recreated from the spec its workspace "
    "PVC records and its state marked running. Exit 1 for a malformed ID, 4 if not found.",
    watchable=True,
)


@cli.command("delete")
@click.argument("runtime_id", metavar="RUNTIME_ID")
@click.option("--allow-data-loss", is_flag=True, help="Also delete a sandbox's PVCs.")
@_output_option("text", "json")
@_cluster_options(namespace=False)
def delete_command(runtime_id: str, allow_data_loss: bool, output: str, target: app.Target) -> None:
    """Delete a workload by runtime ID: a Deployment and its `<name>-svc` Service; a Job (Foreground); a
    sandbox's Pod, and its PVCs only with --allow-data-loss. Exit 1 for a malformed ID, 4 if not found.
    """
    print_outcome(app.delete_workload(runtime_id, target=target, allow_data_loss=allow_data_loss), output)


@cli.command("controller")
@click.option(
    "--plans",
    "plans",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="A plan file or a directory of them (repeatable); re-read when a file changes.",
)
@_duration_option(
    "--interval",
    default="5m",
    help="Reconcile every plan this often (and whenever its file changes).",
)
@_duration_option(
    "--resync",
    default="30s",
    help="Check every warm pool and idle sandbox this often (the watch also triggers pools).",
)
@_duration_option(
    "--poll",
    default="2s",
    help="Look for changed plan files this often.",
)
@click.option(
    "--listen",
    default="127.0.0.1:8081",
    show_default=True,
    metavar="HOST:PORT",
    help="Serve /healthz, /readyz and /metrics here (port 0: any free port).",
)
@_duration_option(
    "--progress-deadline",
    default="10m",
    help="/healthz fails when the worker or the plan-file loop has not moved for this long (longer than "
    "--timeout plus --lock-timeout: a reconcile may take that).",
)
@click.option(
    "--leader-elect", is_flag=True, help="Run as one of several replicas: only the Lease holder writes."
)
@click.option(
    "--lease-namespace", metavar="NS", help="Namespace of the Lease `planner-controller` (default: -n's)."
)
@_duration_option(
    "--lease-duration",
    default="15s",
    help="Leader election: how long a leader's Lease lasts unrenewed.",
)
@_duration_option(
    "--renew-deadline",
    default="10s",
    help="Leader election: a leader that could not renew for this long stops writing.",
)
@_duration_option(
    "--retry-period",
    default="2s",
    help="Leader election: how often to renew, or to try to take the Lease.",
)
@click.option(
    "--once", is_flag=True, help="One pass (reconcile, pools, reaper), no server; exit 1 if any failed."
)
@click.option(
    "--allow-data-loss", is_flag=True, help="Allow reconciles to replace or delete PVCs and Namespaces."
)
@_timeout_option
@_lock_options
@_history_options
@_qps_option
@_cluster_options()
def controller_command(
    plans: tuple[str, ...],
    interval: float,
    resync: float,
    poll: float,
    listen: str,
    progress_deadline: float,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    once: bool,
    allow_data_loss: bool,
    timeout: float | None,
    lock: app.LockOptions,
    history: app.HistoryOptions,
    target: app.Target,
) -> None:
    """Keep plans reconciled, warm pools full and idle sandboxes paused, until SIGTERM.

    Every --interval and whenever a plan file changes, each plan is reconciled as `planner reconcile`
    does, under its run lock; results are Events on the plan's ApplySet parent Secret and metrics.
    Warm pools are kept at their size (on every watch event of a member and every --resync); a
    sandbox idle past its idleTimeout is paused (reason `idle`). With --leader-elect only the holder
    of the Lease `planner-controller` writes. SIGTERM: finish the write in flight, release the Lease,
    exit 0. See docs/controller.md.
    """
    if not renew_deadline < lease_duration:
        raise click.BadParameter("must be shorter than --lease-duration", param_hint="--renew-deadline")
    longest_reconcile = (app.DEFAULT_APPLY_TIMEOUT if timeout is None else timeout) + lock.timeout
    if not progress_deadline > longest_reconcile:
        raise click.BadParameter(
            "must be longer than --timeout plus --lock-timeout", param_hint="--progress-deadline"
        )
    apply_options = app.ApplyOptions(
        plan=app.PlanOptions(allow_data_loss=allow_data_loss),
        timeout=app.DEFAULT_APPLY_TIMEOUT if timeout is None else timeout,
        lock=lock,
        history=history,
    )
    options = ControllerOptions(
        plans=plans,
        interval=interval,
        resync=resync,
        poll=poll,
        listen=listen,
        progress_deadline=progress_deadline,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        timings=ElectionTimings(
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period
        ),
        reconcile=app.ReconcileOptions(apply=apply_options),
    )
    controller = Controller(target, options, notice=_notice)
    if once:
        sys.exit(controller.run_once())
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: controller.stop())
    sys.exit(controller.run())


@cli.group("sandbox")
def sandbox_group() -> None:
    """Sandboxes beside a plan: claim a warm-pool member, release it, record activity."""


@sandbox_group.command("claim")
@click.argument("pool")
@click.option("--name", "owner", required=True, help="Who claims it; `release` and `touch` take this name.")
@_cluster_options()
def sandbox_claim_command(pool: str, owner: str, target: app.Target) -> None:
    """Take one unclaimed sandbox of warm pool POOL for NAME (atomically: two claims never get the same
    one) and print its runtime ID; the controller refills the pool. Exit 1 when none is free."""
    click.echo(str(app.claim_sandbox(pool, owner, target=target)))


@sandbox_group.command("release")
@click.argument("name")
@click.option("--allow-data-loss", is_flag=True, help="Also delete its PVCs and env Secret.")
@_output_option("text", "json")
@_cluster_options()
def sandbox_release_command(name: str, allow_data_loss: bool, output: str, target: app.Target) -> None:
    """Delete the sandbox NAME claimed: its Pod, and its PVCs only with --allow-data-loss (else they stay,
    marked paused). Exit 4 when NAME holds no sandbox."""
    print_outcome(app.release_sandbox(name, target=target, allow_data_loss=allow_data_loss), output)


@sandbox_group.command("touch")
@click.argument("name")
@_output_option("text", "json")
@_cluster_options()
def sandbox_touch_command(name: str, output: str, target: app.Target) -> None:
    """Record activity on sandbox NAME (a claimant's name or the sandbox's own) now, so the idle reaper
    leaves it running; a sandbox the reaper paused is resumed by the next apply of a plan that says
    `running`. Exit 4 when there is no such sandbox."""
    print_outcome(app.touch_sandbox(name, target=target), output)


@cli.command("logs")
@click.argument("runtime_id", metavar="RUNTIME_ID")
@click.option(
    "--tail", type=click.IntRange(-1), default=200, show_default=True, help="Lines from the end; -1 for all."
)
@click.option("-c", "--container", help="Container name (default: the pod's only or first container).")
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new lines.")
@click.option("-p", "--previous", is_flag=True, help="The previous (crashed) container's logs.")
@_cluster_options(namespace=False)
def logs_command(
    runtime_id: str, tail: int, container: str | None, follow: bool, previous: bool, target: app.Target
) -> None:
    """Print the logs of a workload's latest pod (label `gobrave-workload=<name>`). Exit 1 for a
    malformed ID, 4 if the workload does not exist."""
    options = app.LogOptions(
        tail=None if tail < 0 else tail, container=container, previous=previous, follow=follow
    )
    try:
        for line in app.workload_logs(runtime_id, target=target, options=options):
            click.echo(line)
    except KeyboardInterrupt:
        return


@cli.command("inspect")
@click.argument("runtime_id", metavar="RUNTIME_ID")
@_output_option("text", "json")
@_cluster_options(namespace=False)
def inspect_command(runtime_id: str, output: str, target: app.Target) -> None:
    """Show where a workload runs: a Deployment's Service DNS name and its latest pod's node; a Job's pod
    IP and node; a sandbox's pod IP, node, PVCs, generation and state. Exit 4 if not found."""
    print_inspection(app.inspect_workload(runtime_id, target=target), output)


@cli.command("monitor")
@click.argument("runtime_ids", nargs=-1, metavar="[RUNTIME_ID]...")
@click.option("--all", "attach_all", is_flag=True, help="Every managed workload in scope (-n, else all).")
@click.option(
    "--until-done",
    is_flag=True,
    help="Stop once each is steady: a Deployment or sandbox started, a Job ended (or anything ended).",
)
@_duration_option(
    "--timeout",
    help="Stop after this long, like 30s or 5m (default: never; with --until-done, exit 1 when reached).",
)
@_output_option("text", "json")
@_cluster_options()
def monitor_command(
    runtime_ids: tuple[str, ...],
    attach_all: bool,
    until_done: bool,
    timeout: float | None,
    output: str,
    target: app.Target,
) -> None:
    """Stream lifecycle events (ContainerStarted, ContainerExited, ContainerFailed, ContainerDeleted)
    for runtime IDs, through one watch per kind. Delivery is at-least-once: every event carries a stable
    `event_id`. Exit 1 if any workload failed, or --until-done timed out."""
    options = app.MonitorOptions(attach_all=attach_all, until_done=until_done, timeout=timeout)
    try:
        result = app.monitor(runtime_ids, target=target, options=options, sink=MonitorPrinter(output))
    except KeyboardInterrupt:
        return
    if result.failed or (until_done and not result.steady):
        sys.exit(1)


@cli.command("status")
@click.argument("targets", nargs=-1, required=True, metavar="PLAN|RUNTIME_ID...")
@click.option("-w", "--watch", is_flag=True, help="Print again whenever a row changes.")
@_duration_option("--timeout", help="With --watch, stop after this long.")
@_output_option("text", "json")
@_cluster_options()
def status_command(
    targets: tuple[str, ...], watch: bool, timeout: float | None, output: str, target: app.Target
) -> None:
    """Show each workload's lifecycle state and its newest pod as kubectl shows it: READY, RESTARTS,
    STATUS (Init:N/M, PodInitializing, CrashLoopBackOff, Completed…), AGE, and a message. Arguments are
    runtime IDs (they contain `|`) or plan files, whose workloads and sandboxes are listed."""
    try:
        app.status(
            targets,
            target=target,
            on_rows=lambda rows: print_status(rows, output),
            watch=watch,
            timeout=timeout,
        )
    except KeyboardInterrupt:
        return


def _output_in(args: Sequence[str], invocation: _Invocation) -> str:
    """The `-o` format of a command whose arguments click refused before it read that option (an
    unknown flag is refused while parsing, before any option's callback runs)."""
    for index, arg in enumerate(args):
        if arg in ("-o", "--output") and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(("--output=", "-o")) and arg not in ("-o", "--output"):
            return arg.removeprefix("--output=").removeprefix("-o").removeprefix("=")
    return invocation.output


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: runs the CLI and maps every failure to DESIGN §5's exit codes. Errors are text on
    stderr, followed by a JSON `Error` line when the command was given `-o json`."""
    # Everything imported so far lives as long as the process: out of the collector's full passes, which
    # otherwise walk it again each time a large plan's objects pile up (0.3 s of a 1,000-workload apply).
    gc.freeze()
    args = list(argv) if argv is not None else sys.argv[1:]
    invocation = _Invocation()
    try:
        code = cli.main(args=args, standalone_mode=False, obj=invocation)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.exceptions.Abort:
        report_failure(["aborted"], "aborted", 1, invocation.output)
        sys.exit(1)
    except click.ClickException as usage:
        usage.show()
        report_failure([], usage.format_message(), 1, _output_in(args, invocation))
        sys.exit(1)
    except PlannerError as error:
        sys.exit(report_error(error, invocation.output))
    sys.exit(code if isinstance(code, int) else 0)

"""The commands on running workloads: monitor, status, the lifecycle commands, logs, inspect."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import click

from planner import app
from planner import output as printers
from planner.cli import options
from planner.cli.running import fail_unless, until_interrupted

_json_or_text = options.output("text", "json")
_not_found = "Exit 1 for a malformed ID, 4 if not found."


@click.command("monitor")
@click.argument("runtime_ids", nargs=-1, metavar="[RUNTIME_ID]...")
@click.option("--all", "attach_all", is_flag=True, help="Every managed workload in scope (-n, else all).")
@options.flag(
    "--until-done",
    "Stop once each is steady: a Deployment or sandbox started, a Job ended (or anything ended).",
)
@options.duration(
    "--timeout",
    help="Stop after this long, like 30s or 5m (default: never; with --until-done, exit 1 when reached).",
)
@_json_or_text
@options.target_options()
def monitor_command(runtime_ids: tuple[str, ...], output: str, target: app.Target, **flags: Any) -> None:
    """Stream lifecycle events (ContainerStarted, ContainerExited, ContainerFailed, ContainerDeleted)
    for runtime IDs, through one watch per kind. Delivery is at-least-once: every event carries a stable
    `event_id`. Exit 1 if any workload failed, or --until-done timed out."""
    sink, watched = printers.MonitorPrinter(output), app.MonitorOptions(**flags)
    until_interrupted(
        lambda: fail_unless(app.monitor(runtime_ids, target=target, options=watched, sink=sink).ok)
    )


@click.command("status", epilog=options.PLAN_SELECTOR_HELP.replace("PLAN is", "Each PLAN is"))
@click.argument("targets", nargs=-1, required=True, metavar="PLAN|RUNTIME_ID...")
@click.option("-w", "--watch", is_flag=True, help="Print again whenever a row changes.")
@options.duration("--timeout", help="With --watch, stop after this long.")
@_json_or_text
@options.target_options()
def status_command(targets: tuple[str, ...], output: str, target: app.Target, **flags: Any) -> None:
    """Show each workload's lifecycle state and its newest pod as kubectl shows it: READY, RESTARTS,
    STATUS (Init:N/M, PodInitializing, CrashLoopBackOff, Completed…), AGE, and a message. Arguments are
    runtime IDs (they contain `|`) or plans, whose workloads and sandboxes are listed."""
    show = functools.partial(printers.print_status, output=output)
    until_interrupted(lambda: app.status(targets, target=target, on_rows=show, **flags))


def _lifecycle(operation: str, summary: str, *, watchable: bool = False) -> click.Command:
    """`start`, `stop`, `pause`, `resume`: one operation on one runtime ID, `--watch` to follow it."""

    def command(runtime_id: str, output: str, target: app.Target, **watch: Any) -> None:
        printers.print_outcome(app.run_lifecycle(operation, runtime_id, target=target), output)
        if watch.get("watch"):
            following = app.MonitorOptions(until_done=True, timeout=watch["timeout"])
            fail_unless(
                app.monitor(
                    [runtime_id], target=target, options=following, sink=printers.MonitorPrinter(output)
                ).ok
            )

    watching = options.stacked(
        options.flag(
            "--watch", "Then follow its events until it has started (or ended); exit 1 if it failed."
        ),
        options.duration("--timeout", help="With --watch, give up after this long."),
    )
    decorated = options.stacked(options.runtime_id, _json_or_text, options.target_options(namespace=False))(
        command
    )
    return click.command(operation, help=f"{summary} {_not_found}")(
        watching(decorated) if watchable else decorated
    )


start_command = _lifecycle(
    "start",
    "Start a workload by runtime ID: a Deployment is scaled to 1; a Job must still exist (a deleted Job "
    "is not restartable: exit 4); a sandbox is resumed.",
    watchable=True,
)
stop_command = _lifecycle(
    "stop",
    "Stop a workload by runtime ID: a Deployment is scaled to 0; a Job is deleted (Foreground); a "
    "sandbox is paused.",
)
pause_command = _lifecycle(
    "pause",
    "Pause a workload (the same as stop): a sandbox's Pod is deleted, its PVCs kept and its state "
    "marked paused.",
)
resume_command = _lifecycle(
    "resume",
    "Resume a workload (the same as start): a sandbox's Pod is recreated from the spec its workspace "
    "PVC records and its state marked running.",
    watchable=True,
)


@click.command("delete")
@options.runtime_id
@options.flag(
    "--allow-data-loss", "Also delete a sandbox's PVCs, or those a StatefulSet's claim templates made."
)
@_json_or_text
@options.target_options(namespace=False)
def delete_command(runtime_id: str, allow_data_loss: bool, output: str, target: app.Target) -> None:
    """Delete a workload by runtime ID: a Deployment and its `<name>-svc` Service; a StatefulSet and its
    headless Service, and the PVCs its claim templates made only with --allow-data-loss; a Job
    (Foreground); a CronJob; a sandbox's Pod, and its PVCs only with --allow-data-loss. Exit 1 for a
    malformed ID, 4 if not found.
    """
    printers.print_outcome(
        app.delete_workload(runtime_id, target=target, allow_data_loss=allow_data_loss), output
    )


@click.command("logs")
@options.runtime_id
@click.option(
    "--tail", type=click.IntRange(-1), default=200, show_default=True, help="Lines from the end; -1 for all."
)
@click.option("-c", "--container", help="Container name (default: the pod's only or first container).")
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new lines.")
@click.option("-p", "--previous", is_flag=True, help="The previous (crashed) container's logs.")
@options.target_options(namespace=False)
def logs_command(runtime_id: str, target: app.Target, **flags: Any) -> None:
    """Print the logs of a workload's latest pod (label `gobrave-workload=<name>`). Exit 1 for a
    malformed ID, 4 if the workload does not exist."""
    lines = app.workload_logs(runtime_id, target=target, options=app.log_options(**flags))
    until_interrupted(lambda: _print_lines(lines))


def _print_lines(lines: Iterable[str]) -> None:
    for line in lines:
        click.echo(line)


@click.command("inspect")
@options.runtime_id
@_json_or_text
@options.target_options(namespace=False)
def inspect_command(runtime_id: str, output: str, target: app.Target) -> None:
    """Show where a workload runs: a Deployment's Service DNS name and its latest pod's node; a Job's pod
    IP and node; a sandbox's pod IP, node, PVCs, generation and state. Exit 4 if not found."""
    printers.print_inspection(app.inspect_workload(runtime_id, target=target), output)

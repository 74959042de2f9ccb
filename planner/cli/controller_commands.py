"""The long-running command: controller."""

from __future__ import annotations

from typing import Any

import click

from planner import app, controller
from planner.cli import options
from planner.cli.running import exit_with, notice, stop_on_signals


@click.command("controller")
@click.option(
    "--plans",
    multiple=True,
    type=click.Path(exists=True),
    help="A plan file or a directory of them (repeatable); re-read when a file changes. Without it: "
    "the Plan objects (plans.planner.dev) in every namespace, or in -n's.",
)
@options.duration(
    "--interval", default="5m", help="Reconcile every plan this often (and whenever its file changes)."
)
@options.duration(
    "--resync",
    default="30s",
    help="Check every warm pool and idle sandbox this often (the watch also triggers pools).",
)
@options.duration("--poll", default="2s", help="Look for changed plan files this often.")
@click.option(
    "--listen",
    default="127.0.0.1:8081",
    show_default=True,
    metavar="HOST:PORT",
    help="Serve /healthz, /readyz, /metrics and the read-only web view (/) here (port 0: any free port).",
)
@click.option(
    "--web-listen",
    metavar="HOST:PORT",
    help="Serve the read-only web view here instead, and only here (default: the --listen address); "
    "deploy/ keeps it on the pod's loopback, reached through kubectl port-forward.",
)
@options.duration(
    "--progress-deadline",
    default="10m",
    help="/healthz fails when a worker or the plan-file loop has not moved for this long (longer than "
    "--timeout plus --lock-timeout: a reconcile may take that).",
)
@options.leader_election
@click.option(
    "--concurrent",
    type=click.IntRange(1),
    default=4,
    show_default=True,
    metavar="N",
    help="Workers: up to N plans reconcile at once, never one plan twice at once (all share one client's "
    "rate limit, --qps).",
)
@click.option(
    "--shard",
    metavar="KEY",
    help="Reconcile only the Plan objects labelled planner.dev/shard=KEY (its own Lease "
    "`planner-controller-KEY`); without it, only those without that label.",
)
@options.drift_watch
@click.option(
    "--hooks-secret",
    metavar="SECRET",
    help="Receive Git hosts' push webhooks at POST /hooks/NAME on the --listen address, each verified "
    "with the key NAME of this Secret in the controller's namespace (GitHub's X-Hub-Signature-256, "
    "GitLab's X-Gitlab-Token): the Plans on the pushed repository fetch it now. Off without it.",
)
@options.tenancy
@options.flag("--once", "One pass (reconcile, pools, reaper), no server; exit 1 if any failed.")
@options.flag("--allow-data-loss", "Allow reconciles to replace or delete PVCs and Namespaces.")
@options.stacked(options.timeout, options.lock, options.history, options.qps)
@options.target_options()
def controller_command(target: app.Target, once: bool, **flags: Any) -> None:
    """Keep plans reconciled, warm pools full and idle sandboxes paused, until SIGTERM.

    The plans are the files under --plans, or without it the Plan objects in the cluster (every
    namespace, or -n's; with --shard KEY those labelled planner.dev/shard=KEY, else the unlabelled).
    Every --interval and whenever a plan changes, each plan is reconciled as `planner reconcile` does,
    under its run lock, by one of --concurrent workers (different plans in parallel, one plan never
    twice at once); results are a Plan object's status and Events on it (on a plan file's ApplySet
    parent Secret), and metrics.
    Warm pools are kept at their size (on every watch event of a member and every --resync); a
    sandbox idle past its idleTimeout is paused (reason `idle`). With --leader-elect only the holder
    of the Lease `planner-controller` (`planner-controller-KEY` with --shard) writes. SIGTERM: finish the write in flight, release the Lease,
    exit 0. See docs/controller.md.
    """
    settings = controller.controller_options(watch_namespace=target.namespace, **flags)
    running = controller.Controller(target, settings, notice=notice)
    if once:
        exit_with(running.run_once())
    stop_on_signals(running.stop)
    exit_with(running.run())

"""The embedded cluster's commands: cluster up, down, status, reset, serve.

The only commands that do not go through `planner.app`: the embedded cluster is a program of its own
beside the pipeline (it imports nothing else of planner), and these start, stop and describe it.
"""

from __future__ import annotations

from pathlib import Path

import click

from planner.cli.running import FAILED, exit_with


@click.group("cluster")
def cluster_group() -> None:
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
    "system:masters; ServiceAccount tokens (kubectl create token) get what their bindings allow "
    "(without it, every valid token may do everything).",
)


_resync_option = click.option(
    "--resync-seconds",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="How often the simulated controllers and node agent look at every object again (between "
    "resyncs, watch events and timers drive them); 10 suits simulations of 1,000+ workloads.",
)


@cluster_group.command("up")
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
    """Start the embedded cluster in the background and write its kubeconfig.

    It serves HTTPS on 127.0.0.1 and requires the admin token the kubeconfig (mode 0600) carries: a
    request without it gets only /healthz, /livez, /readyz and /version, as on a real cluster.
    """
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


@cluster_group.command("down")
@_data_option
def cluster_down(data_dir: Path | None) -> None:
    """Stop the embedded cluster (its state stays in the data directory)."""
    from planner.slim import cluster as slim

    click.echo("stopped" if slim.down(data_dir=data_dir) else "not running")


@cluster_group.command("status")
@_data_option
def cluster_status(data_dir: Path | None) -> None:
    """Say whether the embedded cluster runs, and where."""
    from planner.slim import cluster as slim

    info = slim.status(data_dir=data_dir)
    if info is None:
        click.echo("not running")
        exit_with(FAILED)
    click.echo(f"running at {info.url} (pid {info.pid}); kubeconfig {info.kubeconfig}")


@cluster_group.command("reset")
@_data_option
def cluster_reset(data_dir: Path | None) -> None:
    """Stop the embedded cluster and delete its state."""
    from planner.slim import cluster as slim

    slim.reset(data_dir=data_dir)
    click.echo("reset")


@cluster_group.command("serve")
@_data_option
@click.option(
    "--port", type=click.IntRange(0, 65535), default=6443, show_default=True, help="Port on 127.0.0.1."
)
@click.option("--memory", is_flag=True, help="Keep state in memory only.")
@click.option(
    "--token",
    envvar="PLANNER_CLUSTER_TOKEN",
    help="The admin's bearer token clients must present (default: a new random one, written only "
    "to the kubeconfig). Prefer $PLANNER_CLUSTER_TOKEN: any local user can read a command line.",
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
    """Run the embedded cluster in the foreground until interrupted.

    Like `up`, it serves HTTPS and requires the admin token: it writes the certificates and the
    kubeconfig (mode 0600) to the data directory first and prints where the kubeconfig is.
    """
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

"""The options several commands share, declared once.

Each is a decorator; `target_options` hands the command one `target` built by `app.target`, every
other option reaches the command as the flag click parsed, and the command passes its flags on to the
`app` function that builds its option object. Defaults that `--help` shows are spelled here as
literals, so listing the commands imports nothing of the application (`tests/unit/test_cli.py`
checks them against the application's own defaults).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import click

from planner import app

F = TypeVar("F", bound=Callable[..., Any])

HISTORY_MAX = 10  # app.DEFAULT_HISTORY_MAX
LOCK_DURATION = "30s"  # app.DEFAULT_LOCK_DURATION


def stacked(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several options as one decorator, listed in the order `--help` shows them."""

    def decorate(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return decorate


def _duration(
    ctx: click.Context, param: click.Parameter, value: str | None, *, zero: str | None
) -> float | None:
    if value is None:
        return None
    try:
        seconds = app.parse_duration(value)
    except ValueError as bad:
        raise click.BadParameter(str(bad)) from bad
    if seconds == 0 and zero is not None:
        raise click.BadParameter(f"{value!r}: expected a duration above zero like 90s, 5m, 1h30m ({zero})")
    return seconds


def duration(
    name: str, *, help: str, default: str | None = None, zero: str | None = "0 has no meaning here"
) -> Callable[[F], F]:
    """An option taking a duration (`30s`, `5m`, `0`), parsed to seconds; its default shown when it has
    one. `zero` says why 0 is refused; None for an option where 0 has a meaning (its help says which)."""
    return click.option(
        name,
        callback=functools.partial(_duration, zero=zero),
        metavar="DURATION",
        default=default,
        show_default=default is not None,
        help=help,
    )


def flag(name: str, help: str) -> Callable[[F], F]:
    return click.option(name, is_flag=True, help=help)


# Leader election among a controller's replicas, as client-go's leaderelection names its settings.
leader_election = stacked(
    flag("--leader-elect", "Run as one of several replicas: only the Lease holder writes."),
    click.option(
        "--lease-namespace", metavar="NS", help="Namespace of the Lease `planner-controller` (default: -n's)."
    ),
    duration(
        "--lease-duration", default="15s", help="Leader election: how long a leader's Lease lasts unrenewed."
    ),
    duration(
        "--renew-deadline",
        default="10s",
        help="Leader election: a leader that could not renew for this long stops writing.",
    ),
    duration(
        "--retry-period",
        default="2s",
        help="Leader election: how often to renew, or to try to take the Lease.",
    ),
)


@dataclass
class Invocation:
    """What `running.main` needs to know of the command it ran: the `-o` format, so an error it reports
    is a JSON line too when the command's output is JSON."""

    output: str = "text"


def _remember_output(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.ensure_object(Invocation).output = value
    return value


def output(*choices: str) -> Callable[[F], F]:
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


def no_color() -> bool:
    """`--no-color` before the command, or NO_COLOR set to any non-empty value (no-color.org)."""
    flag = click.get_current_context().find_root().params.get("no_color")
    return bool(flag) or bool(os.environ.get("NO_COLOR"))


def colour() -> bool:
    """Colour on stdout: a terminal, and no `--no-color`."""
    return sys.stdout.isatty() and not no_color()


plan_paths = click.argument("plans", nargs=-1, required=True, type=click.Path(exists=True))
plan_selector = click.argument("plan", metavar="PLAN")
runtime_id = click.argument("runtime_id", metavar="RUNTIME_ID")

PLAN_SELECTOR_HELP = (
    "PLAN is a plan file or a directory holding one plan (its namespace is the plan's, else -n's), a "
    "plan NAME in -n's namespace (else the context's), or NAMESPACE/NAME."
)

qps = click.option(
    "--qps",
    type=click.FloatRange(min=1),
    help="Most API requests per second, bursting to twice that (default: no client-side limit once the "
    "server shows API Priority and Fairness, else 1000).",
)


def target_options(*, namespace: bool = True) -> Callable[[F], F]:
    """`-n/--namespace` (unless the command's runtime IDs name the namespace), `--kubeconfig` and
    `--context`, as kubectl spells them, handed to the command as one `target` (with the rate limit of
    `--qps` when the command has that option too)."""

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def with_target(*args: Any, **kwargs: Any) -> Any:
            names = ("namespace", "kubeconfig", "context", "qps", "as_user", "as_groups")
            target = app.cluster_target(**{name: kwargs.pop(name) for name in names if name in kwargs})
            return command(*args, target=target, **kwargs)

        decorated = stacked(
            click.option(
                "--kubeconfig",
                type=click.Path(dir_okay=False),
                help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config).",
            ),
            click.option("--context", help="Kubeconfig context to use (default: the current context)."),
            click.option(
                "--as",
                "as_user",
                metavar="USER",
                help="Make every request as this user, through impersonation, as kubectl --as does "
                "(a tenant's ServiceAccount: system:serviceaccount:NAMESPACE:NAME).",
            ),
            click.option(
                "--as-group",
                "as_groups",
                multiple=True,
                metavar="GROUP",
                help="With --as, impersonate this group too (repeatable).",
            ),
        )(with_target)
        if not namespace:
            return cast(F, decorated)
        return cast(
            F,
            click.option(
                "-n",
                "--namespace",
                help="Default namespace for objects whose plan names none (default: the context's, else `default`).",
            )(decorated),
        )

    return decorate


# `planner controller`'s multi-tenancy (docs/controller.md, "Multi-tenancy"): the platform admin's flags.
tenancy = stacked(
    click.option(
        "--default-service-account",
        metavar="NAME",
        help="Reconcile a Plan object that names no serviceAccountName as the ServiceAccount NAME of its "
        "own namespace, through impersonation (absent there: the Plan fails, nothing written).",
    ),
    flag(
        "--no-cross-namespace-refs",
        "Refuse a Plan object whose objects leave its own namespace, and its cluster-scoped objects "
        "unless --cluster-scoped-namespaces names its namespace.",
    ),
    click.option(
        "--cluster-scoped-namespaces",
        metavar="NS,...",
        default="",
        help="With --no-cross-namespace-refs, the namespaces whose Plan objects may manage cluster-scoped "
        "objects (their allowClusterScoped is not enough).",
    ),
)

# `planner controller`'s watch of the objects Plan objects own (docs/controller.md, "Drift correction").
drift_watch = stacked(
    click.option(
        "--drift-correction",
        type=click.Choice(["immediate", "interval", "off"]),
        default="immediate",
        show_default=True,
        help="When a Plan object's drift (someone else's change to a field it declares) is undone, "
        "unless its reconcile.driftCorrection says: at once, as the watch sees it; at its next "
        "reconcile; never.",
    ),
    duration(
        "--full-resync",
        default="1h",
        help="A Plan object's periodic reconcile is answered from the watch caches, with no request, "
        "while they show it applied and healthy; a full reconcile (reading the cluster) at least this "
        "often.",
    ),
)

allow_data_loss = flag("--allow-data-loss", "Allow replacing or deleting PVCs and Namespaces.")
adopt = flag("--adopt", "Take over same-named objects this plan does not own yet.")
rerun = click.option(
    "--rerun", multiple=True, metavar="NAME", help="Run this Job again though its run-key ran."
)
allow_empty = flag(
    "--allow-empty", "Accept a plan that declares nothing though it manages objects (prunes them all)."
)
parallelism = click.option(
    "--parallelism",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="API writes in flight at once, per plan (waits take none).",
)
timeout = duration(
    "--timeout",
    help="Per-object wait timeout where the plan sets none, like 30s or 5m (default: 5m).",
    zero="a wait of 0 would fail every object not ready at once; --no-wait writes without waiting",
)
no_wait = flag("--no-wait", "Write without waiting for objects to become ready.")

lock = stacked(
    duration(
        "--lock-timeout",
        default="0s",
        help="Wait this long for a plan's lock while another run holds it (0: exit 3 at once).",
        zero=None,
    ),
    duration(
        "--lock-duration",
        default=LOCK_DURATION,
        help="The lock's lease: renewed every third of it; a dead run's lock expires after it.",
    ),
)

history = stacked(
    click.option(
        "--history-max",
        type=click.IntRange(1),
        default=HISTORY_MAX,
        show_default=True,
        help="Generations kept per plan (failed ones count); older records are deleted.",
    ),
    flag(
        "--no-secret-history",
        "Keep no Secret data in generation records (a rollback then refuses to change a Secret).",
    ),
    click.option(
        "--source-revision",
        metavar="REV",
        help="The revision recorded (default: $GIT_COMMIT, $GITHUB_SHA, else the plan's git HEAD).",
    ),
)

# What every command that writes along the graph takes (apply, reconcile, rollback, the controller).
writing = stacked(parallelism, timeout, no_wait, lock, history, qps)

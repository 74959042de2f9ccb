"""The controller's options: what `planner controller`'s flags become (with the checks between them), and
how a Plan object's `reconcile:` section amends them for its own reconciles."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planner.app.command_options import apply_options
from planner.app.reconciling import ReconcileOptions
from planner.controller.leader import ElectionTimings
from planner.controller.sharding import is_shard_key
from planner.controller.tenancy import Tenancy
from planner.errors import UsageError
from planner.plan.reconcile_section import DriftCorrection, ReconcileSection

PLAN_OBJECT_CONSENT = "set reconcile.allowDataLoss: true in the Plan"


@dataclass(frozen=True, kw_only=True)
class ControllerOptions:
    """`plans`: the plan files and directories; none: the Plan objects in `watch_namespace` (None:
    every namespace)."""

    plans: tuple[str, ...]
    watch_namespace: str | None = None
    interval: float = 300.0
    resync: float = 30.0
    poll: float = 2.0
    listen: str = "127.0.0.1:8081"
    web_listen: str | None = None  # the web view's own address; None: `listen`'s
    progress_deadline: float = 600.0  # /healthz fails when a work loop has not moved for this long
    leader_elect: bool = False
    lease_namespace: str | None = None
    concurrent: int = 4  # workers
    shard: str | None = None  # Plan objects labelled planner.dev/shard=<shard> (None: the unlabelled)
    timings: ElectionTimings = dataclasses.field(default_factory=ElectionTimings)
    reconcile: ReconcileOptions = dataclasses.field(default_factory=ReconcileOptions)
    tenancy: Tenancy = dataclasses.field(default_factory=Tenancy)  # as whom Plan objects reconcile
    drift_correction: DriftCorrection = "immediate"  # a Plan's, unless its reconcile.driftCorrection says
    full_resync: float = 3600.0  # a Plan's periodic reconcile is a full one at least this often
    hooks_secret: str | None = None  # the webhook receiver's Secret (None: no receiver)


def controller_options(
    *,
    plans: Sequence[str],
    watch_namespace: str | None,
    interval: float,
    resync: float,
    poll: float,
    listen: str,
    web_listen: str | None,
    progress_deadline: float,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    concurrent: int = 4,
    shard: str | None = None,
    default_service_account: str | None = None,
    no_cross_namespace_refs: bool = False,
    cluster_scoped_namespaces: str = "",
    drift_correction: DriftCorrection = "immediate",
    full_resync: float = 3600.0,
    hooks_secret: str | None = None,
    **apply_flags: Any,
) -> ControllerOptions:
    if not renew_deadline < lease_duration:
        raise UsageError("--renew-deadline must be shorter than --lease-duration")
    if shard is not None and plans:
        raise UsageError("--shard selects Plan objects; it cannot be used with --plans")
    if hooks_secret and plans:
        raise UsageError(
            "--hooks-secret asks Plan objects' Git sources to fetch; it cannot be used with --plans"
        )
    if shard is not None and not is_shard_key(shard):
        raise UsageError(
            f"--shard {shard!r}: a shard key is at most 40 lowercase letters, digits and '-', starting and "
            "ending with a letter or digit (a label value, and part of its Lease's name)"
        )
    applying = apply_options(**apply_flags)
    longest_reconcile = (applying.timeout or 0.0) + applying.lock.timeout
    if not progress_deadline > longest_reconcile:
        raise UsageError("--progress-deadline must be longer than --timeout plus --lock-timeout")
    timings = ElectionTimings(
        lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period
    )
    return ControllerOptions(
        plans=tuple(plans),
        watch_namespace=watch_namespace,
        interval=interval,
        resync=resync,
        poll=poll,
        listen=listen,
        web_listen=None if web_listen in (None, listen) else web_listen,
        progress_deadline=progress_deadline,
        leader_elect=leader_elect,
        lease_namespace=lease_namespace,
        concurrent=concurrent,
        shard=shard,
        timings=timings,
        reconcile=ReconcileOptions(apply=applying),
        tenancy=Tenancy(
            default_service_account=default_service_account or None,
            no_cross_namespace_refs=no_cross_namespace_refs,
            cluster_scoped_namespaces=frozenset(n for n in cluster_scoped_namespaces.split(",") if n),
        ),
        drift_correction=drift_correction,
        full_resync=full_resync,
        hooks_secret=hooks_secret or None,
    )


def plan_reconcile_options(
    options: ReconcileOptions,
    section: ReconcileSection,
    *,
    revision: str,
    prune: bool | None = None,
    allow_empty: bool = False,
    drift_correction: DriftCorrection = "immediate",
) -> ReconcileOptions:
    """The controller's reconcile options as the Plan's `reconcile:` section and revision amend them;
    `drift_correction` is the Plan's (its section's, else the controller's)."""
    applying = options.apply
    planning = dataclasses.replace(
        applying.plan,
        allow_data_loss=applying.plan.allow_data_loss or section.allow_data_loss,
        allow_empty=applying.plan.allow_empty or allow_empty,
        data_loss_consent=PLAN_OBJECT_CONSENT,
    )
    applying = dataclasses.replace(
        applying,
        plan=planning,
        timeout=section.timeout if section.timeout is not None else applying.timeout,
        history=dataclasses.replace(applying.history, revision=revision or None),
    )
    return dataclasses.replace(
        options,
        apply=applying,
        prune=section.prune if prune is None else prune,
        correct_drift=drift_correction != "off",
        namespace_exists=True,
    )

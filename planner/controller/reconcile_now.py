"""`planner reconcile --now plan/NAME`: ask the controller to reconcile a Plan object now, and wait for
its answer. The request is the annotation `reconcile.planner.dev/requestedAt`; the controller answers
by writing the same value to the Plan's `status.lastHandledReconcileAt` with its Ready condition."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from planner.app.target import Target
from planner.controller import planstatus
from planner.controller.planref import patch_plan
from planner.errors import NotFoundError, PlannerError
from planner.kinds import PLAN
from planner.kube.client import resource_path
from planner.kube.informer import Informer
from planner.objects import Manifest
from planner.plan.load import plan_object_source
from planner.plan.reconcile_section import reconcile_section


@dataclass(frozen=True)
class Handled:
    """How the controller answered a `requestedAt`: the Plan's Ready condition then."""

    ready: str
    reason: str
    message: str


def request_reconcile(target: Target, name: str, namespace: str, *, timeout: float | None) -> Handled:
    """`planner reconcile --now plan/NAME`: set the Plan's `reconcile.planner.dev/requestedAt` to now,
    then wait (through a watch of the Plan) until its status says the controller handled it. Raises
    PlannerError when the Plan does not exist, is suspended (no controller answers it: said at once,
    nothing asked), or it is not handled within `timeout` seconds."""
    client = target.client
    path = resource_path(PLAN, namespace, name)
    try:
        plan = client.request("GET", path, verb="get")
    except NotFoundError:
        raise PlannerError(f"{plan_object_source(namespace, name)} not found") from None
    if reconcile_section(plan).suspend:
        raise PlannerError(
            f"{plan_object_source(namespace, name)} is suspended (reconcile.suspend: true): the controller "
            "reconciles it only once it is resumed, so nothing was asked"
        )
    requested = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    patch = {"metadata": {"annotations": {planstatus.ANNOTATION_REQUESTED_AT: requested}}}
    try:
        patch_plan(client, path, patch)
    except NotFoundError:
        raise PlannerError(f"{plan_object_source(namespace, name)} not found") from None
    informer = Informer(client, PLAN, namespaces=frozenset({namespace})).start()
    try:
        with informer.changed:
            handled = informer.changed.wait_for(
                lambda: _handled(informer.get(namespace, name), requested), timeout=timeout
            )
    finally:
        informer.stop()
    if not isinstance(handled, Handled):
        raise PlannerError(
            f"{plan_object_source(namespace, name)}: the request of {requested} was not handled within "
            f"{timeout:g}s (is planner controller running?)"
        )
    return handled


def _handled(plan: Manifest | None, requested: str) -> Handled | None:
    status = (plan or {}).get("status") or {}
    if status.get("lastHandledReconcileAt") != requested:
        return None
    ready = planstatus.condition(status, planstatus.READY) or {}
    return Handled(
        str(ready.get("status", "Unknown")), str(ready.get("reason", "")), str(ready.get("message", ""))
    )

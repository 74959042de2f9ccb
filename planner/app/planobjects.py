"""Plan objects (`plans.planner.dev/v1`) as the controller's source of plans, when it runs without
`--plans`: one watch of the Plans in all namespaces (or `-n`'s) of this controller's shard (`sharding`:
a label selector), each reconciled as `planner reconcile`
reconciles a file, its outcome written to the Plan's status subresource and told by an Event on it.

A Plan is loaded and rendered at every reconcile, from the watch cache: the same loader and checks as a
file (named `plan/NAME -n NS` in diagnostics), its secret values read then from Secrets in its
namespace, so a rotated Secret is a change. A Plan that does not load is `Stalled` until it changes (the
periodic reconcile tries again, in case what it lacked, a Secret, has come). The annotation
`planner.dev/revision` (set by a GitOps tool) is the revision recorded with the generation it applies.

The plan's `reconcile:` section steers it: `suspend` (nothing is done), `dependsOn` (wait, Ready False
`DependencyNotReady`, until those Plans are Ready; a dependency's change queues its dependents), `prune`,
`timeout`, `allowDataLoss`, `interval` (the controller requeues it). The finalizer `planner.dev/prune`,
added before the first write, makes a deletion of the Plan prune its objects first: everything but its
PVCs (sandbox disks included) and Namespaces, those too with `allowDataLoss`; then its generation
records are trimmed to the `--history-max` newest (the prune's own counted), so a Plan re-created
under the name can still be rolled back while the records of a deleted one stop piling up.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.app.history import trim_generations
from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile_plan
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, secret_refs
from planner.controller import planstatus
from planner.controller.events import event_reason, record_event
from planner.controller.sharding import plan_selector
from planner.controller.tenancy import Tenancy, service_account_user
from planner.diff import ChangeSet
from planner.errors import ApiError, ConflictError, NotFoundError, PlannerError, UnreachableError
from planner.kinds import NAMESPACE, PERSISTENT_VOLUME_CLAIM, PLAN, SERVICE_ACCOUNT
from planner.kube.client import KubeClient, resource_path
from planner.kube.informer import EventType, Informer, Informers
from planner.objects import Manifest, ObjectRef, annotations_of, metadata_of
from planner.plan.load import load_plan_object, plan_object_source
from planner.plan.reconcile_section import ReconcileSection, reconcile_section
from planner.plan.redact import literal_secret_paths
from planner.plan.secrets import unread_secrets
from planner.state.runlock import holding

Notice = Callable[[str], None]
FINALIZER = "planner.dev/prune"
KEPT_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM.kind, NAMESPACE.kind})  # without allowDataLoss
PLAN_OBJECT_CONSENT = "set reconcile.allowDataLoss: true in the Plan"
KEPT_WITHOUT_DATA_LOSS = "PVCs and Namespaces are kept without reconcile.allowDataLoss"


def object_key(plan: Manifest) -> str:
    """A Plan's work-queue key: `NAMESPACE/NAME`."""
    metadata = metadata_of(plan)
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def source_name(key: str) -> str:
    namespace, _, name = key.partition("/")
    return plan_object_source(namespace, name)


@dataclass(frozen=True)
class Reconciled:
    """What one Plan's reconcile left: its rendering (None: it did not load, is suspended or gone),
    whether to retry it after its backoff, and when to reconcile it again by its own `interval`."""

    rendered: RenderedPlan | None
    retry: bool
    outcome: PlanOutcome | None = None
    again_after: float | None = None


class PlanObjects:
    def __init__(
        self,
        target: Target,
        informers: Informers,
        *,
        namespace: str | None,
        identity: str,
        notice: Notice,
        shard: str | None = None,
        tenancy: Tenancy | None = None,
    ) -> None:
        self.target, self.identity, self.notice = target, identity, notice
        self.tenancy = tenancy or Tenancy()
        self.client, self.informers = target.client, informers
        self.informer: Informer = informers.informer(
            PLAN,
            namespaces=frozenset({namespace}) if namespace else None,
            label_selector=plan_selector(shard),
        )

    def follow(self, queue: Callable[[str], None], forget: Callable[[str], None]) -> None:
        """Queue every Plan once, then each that asks for a reconcile as the watch sees it, and `forget`
        the ones deleted."""

        def on_event(kind: EventType, plan: Manifest) -> None:
            if kind == "DELETED":
                forget(object_key(plan))
                return
            # ADDED: new to this controller (created, or moved into its shard), so looked at once.
            if kind == "ADDED" or planstatus.wants_reconcile(plan) or _being_deleted(plan):
                queue(object_key(plan))
            for dependent in self.dependents(plan):
                queue(dependent)

        # Every Plan is ADDED once, from the cache or its first list: queueing them all again at the
        # sync would reconcile twice each Plan a worker had already taken.
        self.informer.subscribe(on_event, replay=True)

    def keys(self, *, periodic: bool = False) -> list[str]:
        """Every Plan's key; `periodic`: those the controller's --interval reconciles (not those with
        their own `reconcile.interval`)."""
        if not self.informer.synced or self.informer.failed:
            return []
        return [
            object_key(plan)
            for plan in self.informer.items()
            if not (periodic and reconcile_section(plan).interval is not None)
        ]

    def get(self, key: str) -> Manifest | None:
        namespace, _, name = key.partition("/")
        return self.informer.get(namespace, name)

    def dependents(self, plan: Manifest) -> list[str]:
        """The keys of the Plans of its namespace waiting for `plan` (`dependsOn`), once it is Ready."""
        if not planstatus.is_ready(plan):
            return []
        metadata = metadata_of(plan)
        return [
            object_key(other)
            for other in self.informer.items()
            if metadata_of(other).get("namespace") == metadata.get("namespace")
            and metadata.get("name") in reconcile_section(other).depends_on
            and not planstatus.is_ready(other)
        ]

    def unready_dependencies(self, plan: Manifest, section: ReconcileSection) -> list[str]:
        namespace = str(metadata_of(plan).get("namespace", ""))
        unready = []
        for name in section.depends_on:
            other = self.informer.get(namespace, name) or self._read(namespace, name)
            if other is None or not planstatus.is_ready(other):
                unready.append(name if other is not None else f"{name} (not found)")
        return unready

    def _read(self, namespace: str, name: str) -> Manifest | None:
        """A Plan outside this controller's watch (another shard's): read once, while it is waited for."""
        try:
            return self.client.request("GET", resource_path(PLAN, namespace, name), verb="get")
        except NotFoundError:
            return None

    # --- one reconcile ---

    def reconcile(self, key: str, *, options: ReconcileOptions, stop: threading.Event) -> Reconciled:
        """What the Plan asks for now: pruned when it is being deleted; nothing when suspended; a wait
        while a dependency is not Ready; else applied."""
        plan = self.get(key)
        if plan is None:
            return Reconciled(None, retry=False)
        section = reconcile_section(plan)
        if _being_deleted(plan):
            return self.finalize(plan, section, options=options, stop=stop)
        if section.suspend:
            self.notice(f"{source_name(key)}: suspended (reconcile.suspend): not reconciled")
            status = planstatus.suspended(plan, _now())
            if _conditions_differ(plan, status):
                self.write_status(plan, status)
            return Reconciled(None, retry=False)
        unready = self.unready_dependencies(plan, section)
        if unready:
            message = f"waiting for dependencies to be Ready: {', '.join(unready)}"
            self.notice(f"{source_name(key)}: {message}")
            status = planstatus.waiting(plan, _now(), message)
            if _conditions_differ(plan, status):
                self.write_status(plan, status)
            return Reconciled(None, retry=True)
        return self.apply(plan, section, options=options, stop=stop)

    def apply(
        self, plan: Manifest, section: ReconcileSection, *, options: ReconcileOptions, stop: threading.Event
    ) -> Reconciled:
        """Load, render and reconcile the Plan as `planner reconcile` does a file; its status and Event."""
        namespace = str(metadata_of(plan).get("namespace", ""))
        annotations = annotations_of(plan)
        revision = str(annotations.get(planstatus.ANNOTATION_REVISION, ""))
        requested_at = str(annotations.get(planstatus.ANNOTATION_REQUESTED_AT, ""))
        attempt = functools.partial(
            planstatus.Attempt,
            generation=planstatus.generation_of(plan),
            revision=revision,
            requested_at=requested_at,
        )
        target = self.acting_as(plan)
        if isinstance(target, str):  # its ServiceAccount is missing: nothing read or written; tried again
            self.finish(
                plan,
                attempt(ready="False", reason=planstatus.FAILED, message=target, error=target),
                reason=("ReconcileFailed", "Warning"),
            )
            return Reconciled(None, retry=True)
        try:
            loaded = load_plan_object(plan, secret_refs=secret_refs(target, namespace))
            for warning in loaded.warnings:
                self.notice(str(warning))
            (rendered,) = render_loaded(loaded, namespace)
            refused = self.tenancy.refusals(namespace, rendered.manifests)
            if refused:
                raise PlannerError(
                    f"refused by the controller's lockdown, nothing written: {'; '.join(refused)}"
                )
        except PlannerError as broken:
            message = str(broken)
            self.finish(
                plan,
                attempt(
                    ready="False", reason=planstatus.FAILED, message=message, stalled=True, error=message
                ),
                reason=("ReconcileFailed", "Warning"),
            )
            return Reconciled(None, retry=False)
        # Progressing first: the finalizer's write then shows a Plan being reconciled, not one asking for
        # a reconcile (no Ready yet), so its watch event does not queue the Plan a second time.
        if planstatus.generation_of(plan) != (plan.get("status") or {}).get("observedGeneration"):
            self.warn_of_literal_secrets(plan)
            plan = self.write_status(plan, planstatus.progressing(plan, _now())) or plan
        if FINALIZER not in (metadata_of(plan).get("finalizers") or ()):
            self.set_finalizer(plan, present=True)
        outcome = reconcile_plan(
            rendered,
            target=target,
            options=plan_reconcile_options(options, section, revision=revision),
            notice=self.notice,
            stop=stop,
            informers=self.informers,
        )
        if outcome.result == "locked":
            return Reconciled(rendered, retry=True, outcome=outcome)
        verdict = _attempt(attempt, rendered, outcome)
        failed = verdict.ready == "False"
        self.finish(plan, verdict, reason=event_reason("failed" if failed else outcome.result, outcome.drift))
        return Reconciled(
            rendered, retry=outcome.result == "failed", outcome=outcome, again_after=section.interval
        )

    def finalize(
        self, plan: Manifest, section: ReconcileSection, *, options: ReconcileOptions, stop: threading.Event
    ) -> Reconciled:
        """The Plan is being deleted: prune its objects (keeping PVCs and Namespaces unless
        `allowDataLoss`), then let the deletion finish by removing the finalizer. Secret values are not
        read: a pruned Secret needs none."""
        namespace = str(metadata_of(plan).get("namespace", ""))
        target = self.acting_as(plan)
        try:
            if isinstance(target, str):
                raise PlannerError(target)
            (rendered,) = render_loaded(load_plan_object(plan, secret_refs=unread_secrets), namespace)
        except PlannerError as broken:
            message = f"cannot prune its objects: {broken} (remove the finalizer {FINALIZER} to leave them)"
            return self.prune_failed(plan, message, None)
        kept = tuple(m for m in rendered.manifests if m.get("kind") in KEPT_KINDS)
        emptied = dataclasses.replace(rendered, manifests=() if section.allow_data_loss else kept, fixed=True)
        pruning = plan_reconcile_options(options, section, revision="", prune=True, allow_empty=True)
        outcome = reconcile_plan(
            emptied,
            target=target,
            options=pruning,
            notice=self.notice,
            stop=stop,
            informers=self.informers,
        )
        if outcome.result == "locked":
            return Reconciled(None, retry=True, outcome=outcome)
        if outcome.result == "failed":
            message = f"cannot prune its objects: {outcome.message}; its finalizer {FINALIZER} stays"
            return self.prune_failed(plan, message, outcome)
        trimmed = self.trim_history(rendered, target.client, options=pruning, stop=stop)
        if trimmed is None:
            return Reconciled(None, retry=True, outcome=outcome)
        changeset = outcome.changeset
        pruned = pruned_message(changeset, allow_data_loss=section.allow_data_loss) if changeset else ""
        self.tell(plan, ("Pruned", "Normal"), f"{pruned}{trimmed}")
        return Reconciled(None, retry=not self.set_finalizer(plan, present=False), outcome=outcome)

    def acting_as(self, plan: Manifest) -> Target | str:
        """The target every request for this Plan goes through: as its ServiceAccount (its own, else the
        default) through impersonation, else as the controller. A sentence instead when that account
        does not exist (asked as the controller; one it may not read is left to the API server)."""
        named = plan.get("serviceAccountName")
        account = self.tenancy.account_of(named if isinstance(named, str) else None)
        if account is None:
            return self.target
        namespace = str(metadata_of(plan).get("namespace", ""))
        try:
            self.client.request("GET", resource_path(SERVICE_ACCOUNT, namespace, account), verb="get")
        except NotFoundError:
            given = "serviceAccountName" if named else "the controller's --default-service-account"
            return (
                f"ServiceAccount {account} (from {given}) not found in namespace {namespace}: the Plan is "
                "reconciled as that account, so nothing was read or written; create it, or name another"
            )
        except ApiError:
            pass  # not the controller's to read: the impersonated requests will be judged
        return self.target.impersonating(service_account_user(namespace, account))

    def warn_of_literal_secrets(self, plan: Manifest) -> None:
        """A Warning Event, once per generation, for each secret value the Plan holds literally."""
        literal = literal_secret_paths(plan)
        if literal:
            self.tell(
                plan,
                ("LiteralSecretValue", "Warning"),
                f"{', '.join(literal)}: written literally, so stored in plain text in this Plan object (and "
                "in kubectl's last-applied-configuration annotation): read it from a Secret with "
                "valueFrom.secretKeyRef",
            )

    def prune_failed(self, plan: Manifest, message: str, outcome: PlanOutcome | None) -> Reconciled:
        """A deleted Plan's prune did not finish: its finalizer stays, its Ready condition and a Warning
        Event say why, and it is tried again."""
        self.write_status(plan, planstatus.prune_failed(plan, _now(), message))
        self.tell(plan, ("ReconcileFailed", "Warning"), message)
        return Reconciled(None, retry=True, outcome=outcome)

    def trim_history(
        self, rendered: RenderedPlan, client: KubeClient, *, options: ReconcileOptions, stop: threading.Event
    ) -> str | None:
        """The deleted Plan's generation records past `--history-max` deleted, under its run lock (its
        prune recorded the newest, when it deleted anything): a sentence for the Event, or None when the
        lock is held or the records could not be read (then the deletion is retried)."""
        plan, namespace = rendered.plan.name, rendered.namespace
        keep = options.apply.history.keep
        try:
            with holding(
                client, [(plan, namespace)], options=options.apply.lock, notice=self.notice, stop=stop
            ):
                gone = trim_generations(client, plan, namespace, keep=keep)
        except (PlannerError, ApiError, UnreachableError) as failure:
            self.notice(f"{plan_object_source(namespace, plan)}: its generations were not trimmed: {failure}")
            return None
        return f"; deleted {len(gone)} generation records past --history-max {keep}" if gone else ""

    def set_finalizer(self, plan: Manifest, *, present: bool, again: bool = True) -> bool:
        """Add or remove `planner.dev/prune` (a merge patch carrying the resourceVersion it read, so a
        concurrent change of the list is never lost; on a conflict, once more from the Plan read again);
        whether that was done."""
        metadata = metadata_of(plan)
        others = [f for f in metadata.get("finalizers") or () if f != FINALIZER]
        patch = {
            "metadata": {
                "finalizers": [*others, FINALIZER] if present else others,
                "resourceVersion": metadata.get("resourceVersion"),
            }
        }
        path = resource_path(PLAN, str(metadata.get("namespace")), str(metadata.get("name")))
        try:
            self.client.request(
                "PATCH", path, body=patch, content_type="application/merge-patch+json", verb="patch"
            )
        except ConflictError:
            if not again:
                return False  # the next reconcile tries again
            try:
                fresh = self.client.request("GET", path, verb="get")
            except (ApiError, UnreachableError):
                return False
            return self.set_finalizer(fresh, present=present, again=False)
        except NotFoundError:
            return False  # gone meanwhile
        except (ApiError, UnreachableError) as failure:
            self.notice(f"{source_name(object_key(plan))}: could not update its finalizers: {failure}")
            return False
        return True

    def finish(self, plan: Manifest, attempt: planstatus.Attempt, *, reason: tuple[str, str]) -> None:
        """Write the attempt's status, then tell it by an Event on the Plan."""
        previous = self.get(object_key(plan)) or plan  # the freshest status, for transition times
        self.write_status(plan, planstatus.finished(previous.get("status") or {}, attempt, _now()))
        self.tell(plan, reason, attempt.message)

    def tell(self, plan: Manifest, reason: tuple[str, str], message: str) -> None:
        """An Event on the Plan."""
        metadata = metadata_of(plan)
        involved = {
            "apiVersion": PLAN.api_version,
            "kind": PLAN.kind,
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "uid": metadata.get("uid"),
        }
        problem = record_event(
            self.client,
            involved,
            reason=reason[0],
            kind=reason[1],
            message=message,
            identity=self.identity,
        )
        if problem:
            self.notice(problem)

    def write_status(self, plan: Manifest, status: dict[str, Any]) -> Manifest | None:
        """`status` as a merge patch of the status subresource, from the status the watch last showed (the
        whole `conditions` list at once); the Plan as written. A Plan deleted meanwhile has no status to
        write; other failures are said and the next reconcile writes again (None for both)."""
        previous = (self.get(object_key(plan)) or plan).get("status") or {}
        metadata = metadata_of(plan)
        path = resource_path(PLAN, str(metadata.get("namespace")), str(metadata.get("name"))) + "/status"
        try:
            return self.client.request(
                "PATCH",
                path,
                body={"status": planstatus.merge_patch(previous, status)},
                content_type="application/merge-patch+json",
                verb="patch",
            )
        except (ApiError, UnreachableError) as failure:
            if getattr(failure, "http_status", 0) != 404:
                self.notice(f"{source_name(object_key(plan))}: could not write its status: {failure}")
            return None


def _attempt(
    attempt: Callable[..., planstatus.Attempt], rendered: RenderedPlan, outcome: PlanOutcome
) -> planstatus.Attempt:
    """The reconcile's verdict. One that found nothing to write waited for every object of the plan
    that was not ready (`planner.unready`), so `unchanged` means converged, also after a generation
    that failed."""
    if outcome.result == "failed":
        return attempt(
            ready="False", reason=planstatus.FAILED, message=outcome.message, error=outcome.message
        )
    current = outcome.changeset.generation if outcome.changeset is not None else None
    applied = planstatus.Applied(
        # this reconcile's generation, else (nothing written) the one the cluster is at
        planner_generation=outcome.generation or (current.number if current is not None else None),
        objects=planstatus.objects_by_kind(rendered.manifests),
        drift_found=outcome.drift,
        drift_corrected=outcome.drift if outcome.result == "applied" else 0,
    )
    return attempt(ready="True", reason=planstatus.SUCCEEDED, message=outcome.message, applied=applied)


def plan_reconcile_options(
    options: ReconcileOptions,
    section: ReconcileSection,
    *,
    revision: str,
    prune: bool | None = None,
    allow_empty: bool = False,
) -> ReconcileOptions:
    """The controller's reconcile options as the Plan's `reconcile:` section and revision amend them."""
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
    return dataclasses.replace(options, apply=applying, prune=section.prune if prune is None else prune)


def _being_deleted(plan: Manifest) -> bool:
    metadata = metadata_of(plan)
    return bool(metadata.get("deletionTimestamp")) and FINALIZER in (metadata.get("finalizers") or ())


def _conditions_differ(plan: Manifest, status: Mapping[str, Any]) -> bool:
    def shown(conditions: object) -> list[tuple[Any, ...]]:
        items = conditions if isinstance(conditions, list) else []
        fields = ("type", "status", "reason", "message", "observedGeneration")
        return [tuple(each.get(field) for field in fields) for each in items]

    return shown((plan.get("status") or {}).get("conditions")) != shown(status.get("conditions"))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Handled:
    """How the controller answered a `requestedAt`: the Plan's Ready condition then."""

    ready: str
    reason: str
    message: str


def request_reconcile(target: Target, name: str, namespace: str, *, timeout: float | None) -> Handled:
    """`planner reconcile --now plan/NAME`: set the Plan's `reconcile.planner.dev/requestedAt` to now,
    then wait (through a watch of the Plan) until its status says the controller handled it. Raises
    PlannerError when the Plan does not exist, or it is not handled within `timeout` seconds."""
    client = target.client
    path = resource_path(PLAN, namespace, name)
    requested = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    patch = {"metadata": {"annotations": {planstatus.ANNOTATION_REQUESTED_AT: requested}}}
    try:
        client.request("PATCH", path, body=patch, content_type="application/merge-patch+json", verb="patch")
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
            f"{timeout:g}s (is planner controller running, and the Plan not suspended?)"
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


LISTED_OBJECTS = 10  # a Pruned Event names this many objects of each list, then says how many more


def _listed(refs: Sequence[ObjectRef]) -> str:
    names = ", ".join(str(ref) for ref in refs[:LISTED_OBJECTS])
    more = f" and {len(refs) - LISTED_OBJECTS} more" if len(refs) > LISTED_OBJECTS else ""
    return f"{names}{more}"


def pruned_message(changeset: ChangeSet, *, allow_data_loss: bool) -> str:
    """What a deleted Plan's prune did, for its Event: each object deleted, and each kept with why."""
    deleted = [c.ref for c in changeset.changes if c.action == "delete"]
    kept = [c for c in changeset.changes if c.action == "noop" and c.live is not None]
    said = f"deleted {len(deleted)} objects: {_listed(deleted)}" if deleted else "deleted no object"
    if not kept:
        return f"{said}; kept none"
    reasons = sorted({c.reason or KEPT_WITHOUT_DATA_LOSS for c in kept})
    return f"{said}; kept {len(kept)}: {_listed([c.ref for c in kept])} ({'; '.join(reasons)})"

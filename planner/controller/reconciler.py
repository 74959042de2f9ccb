"""One Plan object's reconcile (`plans.planner.dev/v1`), as `planner reconcile` reconciles a file: its
outcome written to the Plan's status subresource (`planstatus`) and told by an Event on it (`recorder`).

A Plan is loaded and rendered at every reconcile, from the watch cache: the same loader and checks as a
file (named `plan/NAME -n NS` in diagnostics), its secret values read then from Secrets in its
namespace, so a rotated Secret is a change. A Plan that does not load is `Stalled` until it changes (the
periodic reconcile tries again, in case what it lacked, a Secret, has come). The annotation
`planner.dev/revision` (set by a GitOps tool) is the revision recorded with the generation it applies.
Every request for the Plan is made as whom `tenancy` says, and what its lockdown refuses is not written.

The plan's `reconcile:` section steers it: `suspend` (nothing is done), `dependsOn` (wait, Ready False
`DependencyNotReady`, until those Plans are Ready; a dependency's change queues its dependents), `prune`,
`timeout`, `allowDataLoss`, `interval` (the controller requeues it), `driftCorrection` (`immediate`: its
objects are tracked by the drift watch, `driftwatch`, which queues it when one drifts; `off`: drift is
left). A Plan being deleted is pruned (`finalizer`).

A Plan with a Git source (`source.git`) is loaded from the commit its source gives now
(`gitsources`: fetched at most once per interval for every Plan on it), and that commit's revision
(`main@sha1:…`) is the one recorded, in its status and Events and with its generation: each reconcile
applies exactly one commit. When the fetch or that commit's plan fails, nothing is written: its
`SourceReady` and `Ready` conditions say why, and the commit applied last stays; the source's next
change queues the Plan again. With `source.git.verify`, a commit not signed by a key in its Secret is
refused the same way, before its plan is read. Its SOPS-encrypted files are opened with the keys its
`decryption` names.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile_plan
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, chart_capabilities, secret_refs
from planner.controller import planstatus
from planner.controller.decryption import decryption_keys
from planner.controller.driftfields import DriftedField, corrected_fields
from planner.controller.driftwatch import DriftWatch
from planner.controller.finalizer import (
    FINALIZER,
    being_deleted,
    has_finalizer,
    last_applied,
    left_standing,
    pruned_message,
    set_finalizer,
    trim_history,
)
from planner.controller.gitsources import GitSources, read_trusted_keys
from planner.controller.planref import namespace_of, object_key, source_name
from planner.controller.planwatch import PlanWatch
from planner.controller.recorder import CONFLICT_EVENT, FAILED_EVENT, EventRecorder, event_reason
from planner.controller.settings import plan_reconcile_options
from planner.controller.tenancy import Tenancy, service_account_user
from planner.errors import ApiError, NotFoundError, PlannerError, SourceError, UnreachableError
from planner.kinds import NAMESPACE, SERVICE_ACCOUNT
from planner.kube.client import KubeClient, resource_path
from planner.kube.informer import Informers
from planner.monitor.pool_members import listed_claims, remove_undeclared_pools
from planner.objects import Manifest, annotations_of, metadata_of
from planner.plan.git_source import GitSource, beside_source, git_source, path_problem
from planner.plan.load import LoadResult, load_checkout_plan, load_plan_object, plan_object_source
from planner.plan.reconcile_section import DriftCorrection, ReconcileSection, reconcile_section
from planner.plan.redact import literal_secret_paths
from planner.plan.secrets import SecretRefs, unread_secrets
from planner.sops.keys import KeySource, unread_keys
from planner.sources.failures import PATH_NOT_FOUND, PLAN_INVALID
from planner.sources.gitfetch import Checkout
from planner.sources.signatures import verified_signer

Notice = Callable[[str], None]


@dataclass(frozen=True)
class Reconciled:
    """What one Plan's reconcile left: its rendering (None: it did not load, is suspended or gone),
    whether to retry it after its backoff, and when to reconcile it again by its own `interval`."""

    rendered: RenderedPlan | None
    retry: bool
    outcome: PlanOutcome | None = None
    again_after: float | None = None
    keep: bool = False  # its source failed: the rendering kept (its pools kept) is the last good one


class PlanReconciler:
    def __init__(
        self,
        target: Target,
        watch: PlanWatch,
        informers: Informers,
        *,
        options: ReconcileOptions,
        tenancy: Tenancy,
        recorder: EventRecorder,
        sources: GitSources,
        notice: Notice,
        stop: threading.Event,
        drift: DriftWatch | None = None,
        drift_correction: DriftCorrection = "immediate",
    ) -> None:
        self.target, self.client, self.watch, self.informers = target, target.client, watch, informers
        self.options, self.tenancy, self.recorder, self.notice = options, tenancy, recorder, notice
        self.sources = sources
        self.stop = stop  # the reconcile in flight stops at it (shutdown, lost leadership)
        self.drift, self.drift_correction = drift, drift_correction  # the watch; the controller's default
        self.status = planstatus.StatusWriter(self.client, cached=watch.get, notice=notice)

    def reconcile(self, key: str) -> Reconciled:
        """What the Plan asks for now: pruned when it is being deleted; nothing when suspended; a wait
        while a dependency is not Ready; else applied."""
        plan = self.watch.get(key)
        if plan is None:
            self.untrack(key)
            return Reconciled(None, retry=False)
        section = reconcile_section(plan)
        if being_deleted(plan):
            self.untrack(key)
            return self.finalize(plan, section)
        if section.suspend:
            self.untrack(key)
            self.notice(f"{source_name(key)}: suspended (reconcile.suspend): not reconciled")
            self.status.write_if_changed(plan, planstatus.suspended(plan, planstatus.now()))
            return Reconciled(None, retry=False)
        cycle = self.watch.dependency_cycle(plan, section) if section.depends_on else None
        if cycle is not None:  # it would wait for ever: Stalled, retried only when one of them changes
            return self.stall(plan, f"dependsOn cycle: {' → '.join(cycle)}")
        unready = self.watch.unready_dependencies(plan, section)
        if unready:
            message = f"waiting for dependencies to be Ready: {', '.join(unready)}"
            self.notice(f"{source_name(key)}: {message}")
            self.status.write_if_changed(plan, planstatus.waiting(plan, planstatus.now(), message))
            return Reconciled(None, retry=True)
        return self.apply(plan, section)

    def apply(self, plan: Manifest, section: ReconcileSection) -> Reconciled:
        """Load, render and reconcile the Plan as `planner reconcile` does a file; its status and Event."""
        revision = str(annotations_of(plan).get(planstatus.ANNOTATION_REVISION, ""))
        attempt = _attempt(plan)
        target = self.acting_as(plan)
        if isinstance(target, str):  # its ServiceAccount is missing: nothing read or written; tried again
            failed = attempt(ready="False", reason=planstatus.FAILED, message=target, error=target)
            self.finish(plan, failed, reason=FAILED_EVENT)
            return Reconciled(None, retry=True, outcome=failed_outcome(plan, target))
        source = git_source(plan)
        fetched: planstatus.SourceState | None = None
        try:
            if source is None:
                rendered = self._render(plan, target)
            else:
                revision, rendered, signer = self._render_source(plan, source, target)
                attempt = functools.partial(attempt, revision=revision)
                signed = f", signed by {signer}" if signer else ""
                fetched = planstatus.SourceState(
                    "True", planstatus.SOURCE_SUCCEEDED, f"fetched {revision}{signed}"
                )
        except SourceError as failed:
            self.finish(plan, self.source_failed(plan, attempt, failed), reason=FAILED_EVENT)
            return Reconciled(None, retry=False, keep=True)
        except PlannerError as broken:
            return self.stall(plan, str(broken))
        attempt = functools.partial(attempt, source=fetched)
        # Progressing first: the finalizer's write then shows a Plan being reconciled, not one asking for
        # a reconcile (no Ready yet), so its watch event does not queue the Plan a second time.
        if planstatus.generation_of(plan) != (plan.get("status") or {}).get("observedGeneration"):
            self.warn_of_literal_secrets(plan)
            plan = self.status.write(plan, planstatus.progressing(plan, planstatus.now())) or plan
        if not has_finalizer(plan):
            set_finalizer(self.client, plan, present=True, notice=self.notice)
        correction = section.drift_correction or self.drift_correction
        seen = self.track(object_key(plan), rendered.manifests, correction)
        options = plan_reconcile_options(
            self.options, section, revision=revision, drift_correction=correction
        )
        outcome = self._reconcile(rendered, target, options)
        drifted = corrected_fields(outcome.changeset, seen) if outcome.result == "applied" else ()
        conflict = self.conflicts(plan, drifted)
        if outcome.result == "locked":
            return Reconciled(rendered, retry=True, outcome=outcome)
        verdict = planstatus.verdict(
            functools.partial(attempt, drifted=drifted, conflict=conflict), rendered.manifests, outcome
        )
        named = f"{revision}: " if source is not None else ""  # its Events and Ready name the commit applied
        verdict = dataclasses.replace(verdict, message=named + verdict.message)
        described = f"; drifted: {describe(drifted)}" if drifted else ""
        self.finish(
            plan,
            verdict,
            reason=event_reason(outcome.result, outcome.drift),
            event=named + outcome.message + described,
        )
        return Reconciled(
            rendered, retry=outcome.result == "failed", outcome=outcome, again_after=section.interval
        )

    def stall(self, plan: Manifest, message: str) -> Reconciled:
        """The Plan cannot be reconciled as it is (it does not load, its dependsOn is a cycle): Stalled
        and a failed reconcile, saying why; not retried until it changes (or the periodic reconcile)."""
        self.untrack(object_key(plan))
        stalled = _attempt(plan)(
            ready="False", reason=planstatus.FAILED, message=message, stalled=True, error=message
        )
        self.finish(plan, stalled, reason=FAILED_EVENT)
        return Reconciled(None, retry=False, outcome=failed_outcome(plan, message))

    def finalize(self, plan: Manifest, section: ReconcileSection) -> Reconciled:
        """The Plan is being deleted: prune its objects (keeping PVCs and Namespaces unless
        `allowDataLoss`) and its warm pools' unclaimed members, then let the deletion finish by removing
        the finalizer; with `prune: false`, as Flux's, leave everything as it is. Secret values are not
        read: a pruned Secret needs none."""
        if not section.prune:
            self.recorder.on_plan(plan, ("Orphaned", "Normal"), ORPHANED)
            removed = set_finalizer(self.client, plan, present=False, notice=self.notice)
            return Reconciled(None, retry=not removed)
        target = self.acting_as(plan)
        try:
            if isinstance(target, str):
                raise PlannerError(target)
            rendered = self._rendered_for_prune(plan, target)
        except PlannerError as broken:
            message = f"cannot prune its objects: {broken} (remove the finalizer {FINALIZER} to leave them)"
            return self.prune_failed(plan, message, None)
        pruning = plan_reconcile_options(self.options, section, revision="", prune=True, allow_empty=True)
        outcome = self._reconcile(
            left_standing(rendered, allow_data_loss=section.allow_data_loss), target, pruning
        )
        if outcome.result == "locked":
            return Reconciled(None, retry=True, outcome=outcome)
        if outcome.result == "failed":
            message = (
                f"cannot prune its objects: {outcome.message}; its finalizer {FINALIZER} stays (remove it "
                "to leave them)"
            )
            return self.prune_failed(plan, message, outcome)
        trimmed = trim_history(target.client, rendered, options=pruning, notice=self.notice, stop=self.stop)
        if trimmed is None:
            return Reconciled(None, retry=True, outcome=outcome)
        spares = _remove_spares(target.client, rendered)
        changeset = outcome.changeset
        pruned = pruned_message(changeset, allow_data_loss=section.allow_data_loss) if changeset else ""
        self.recorder.on_plan(plan, ("Pruned", "Normal"), f"{pruned}{spares}{trimmed}")
        removed = set_finalizer(self.client, plan, present=False, notice=self.notice)
        return Reconciled(None, retry=not removed, outcome=outcome)

    def _rendered_for_prune(self, plan: Manifest, target: Target) -> RenderedPlan:
        """The plan whose PVCs and Namespaces the prune keeps: the Plan's own, or its source's now; else,
        when the source cannot be read or is refused, the generation it applied last."""
        source = git_source(plan)
        if source is None:
            loaded = load_plan_object(plan, secret_refs=unread_secrets, sops_keys=unread_keys)
        else:
            try:
                loaded = self._load_source(plan, source, target, unread_secrets, unread_keys)[1]
            except SourceError as failed:
                name, namespace = str(metadata_of(plan).get("name", "")), namespace_of(plan)
                recorded = last_applied(target.client, name, namespace)
                if recorded is None:
                    raise PlannerError(f"{failed}; and no generation of it is recorded to prune by") from None
                self.notice(
                    f"{source_name(object_key(plan))}: {failed}; pruned by the generation it applied last"
                )
                return recorded
        (rendered,) = render_loaded(loaded, namespace_of(plan))
        return rendered

    def acting_as(self, plan: Manifest) -> Target | str:
        """The target every request for this Plan goes through: as its ServiceAccount (its own, else the
        default) through impersonation, else as the controller. A sentence instead when that account
        does not exist (asked as the controller; one it may not read is left to the API server)."""
        named = plan.get("serviceAccountName")
        account = self.tenancy.account_of(named if isinstance(named, str) else None)
        if account is None:
            return self.target
        namespace = namespace_of(plan)
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
            self.recorder.on_plan(
                plan,
                ("LiteralSecretValue", "Warning"),
                f"{', '.join(literal)}: written literally, so stored in plain text in this Plan object (and "
                "in kubectl's last-applied-configuration annotation): read it from a Secret with "
                "valueFrom.secretKeyRef",
            )

    def prune_failed(self, plan: Manifest, message: str, outcome: PlanOutcome | None) -> Reconciled:
        """A deleted Plan's prune did not finish: its finalizer stays, its Ready condition and a Warning
        Event say why, and it is tried again. Unless its namespace is being deleted: its ServiceAccount
        and that account's bindings go with the namespace, so the prune would fail for ever and hold the
        namespace; what the Plan made there goes with it, and the finalizer is removed, saying so."""
        if self._namespace_terminating(plan):
            self.notice(
                f"{source_name(object_key(plan))}: {message}; its namespace is being deleted, so the finalizer "
                "is removed: what it made in that namespace goes with it, anything elsewhere is left"
            )
            removed = set_finalizer(self.client, plan, present=False, notice=self.notice)
            return Reconciled(None, retry=not removed, outcome=outcome)
        self.status.write(plan, planstatus.prune_failed(plan, planstatus.now(), message))
        self.recorder.on_plan(plan, FAILED_EVENT, message)
        return Reconciled(None, retry=True, outcome=outcome)

    def _namespace_terminating(self, plan: Manifest) -> bool:
        """Whether the Plan's namespace is being deleted, as the controller reads it (its own role's
        `get namespaces`: the tenant's account goes with the namespace)."""
        namespace = namespace_of(plan)
        try:
            found = self.client.request("GET", resource_path(NAMESPACE, None, namespace), verb="get")
        except (ApiError, UnreachableError) as unread:
            self.notice(f"{object_key(plan)}: cannot tell whether its namespace is being deleted: {unread}")
            return False
        return bool(metadata_of(found).get("deletionTimestamp"))

    def finish(
        self, plan: Manifest, attempt: planstatus.Attempt, *, reason: tuple[str, str], event: str = ""
    ) -> None:
        """Write the attempt's status, then tell it by an Event on the Plan (`event`, else its message)."""
        self.status.finish(plan, attempt)
        self.recorder.on_plan(plan, reason, event or attempt.message)

    # --- drift correction (driftwatch) ---

    def track(
        self, key: str, manifests: list[Manifest] | tuple[Manifest, ...], correction: DriftCorrection
    ) -> tuple[DriftedField, ...]:
        """Before the Plan's reconcile: its objects watched for drift (when corrected at once), and the
        drift the watch saw since its last reconcile, which this one answers."""
        if self.drift is None:
            return ()
        if correction != "immediate":
            self.drift.untrack(key)
            return ()
        self.drift.track(key, manifests)
        return self.drift.take(key)

    def conflicts(self, plan: Manifest, drifted: tuple[DriftedField, ...]) -> str:
        """After the Plan's reconcile, which corrected `drifted`: the fields another writer keeps writing
        back, said by a Warning Event when this reconcile corrected one of them (empty: none)."""
        if self.drift is None:
            return ""
        conflicts = self.drift.corrected(object_key(plan), drifted)
        said = "; ".join(conflict.describe() for conflict in conflicts)
        fought = {(each.object, each.path) for each in drifted}
        if any((c.field.object, c.field.path) in fought for c in conflicts):
            self.recorder.on_plan(plan, CONFLICT_EVENT, said)
        return said

    def unserved(self, key: str) -> str | None:
        """Why the Plan's periodic reconcile must be a full one (None: the watch caches answer it, with
        no request): it asks for a reconcile or is not Ready, is suspended, waits for dependencies,
        reads Secrets or another source at each reconcile, or the drift watch says (`DriftWatch.unserved`)."""
        plan = self.watch.get(key)
        if self.drift is None or plan is None or being_deleted(plan):
            return "not watched"
        section = reconcile_section(plan)
        if (
            section.suspend
            or section.depends_on
            or (section.drift_correction or self.drift_correction) != "immediate"
        ):
            return "its reconcile section asks for more"
        if planstatus.wants_reconcile(plan) or not planstatus.is_ready(plan):
            return "not Ready at its generation"
        if "source" in plan or _reads_secrets(plan):
            return "it reads Secrets or a source at each reconcile"
        return self.drift.unserved(key)

    def untrack(self, key: str) -> None:
        if self.drift is not None:
            self.drift.untrack(key)

    def source_failed(
        self, plan: Manifest, attempt: Callable[..., planstatus.Attempt], failed: SourceError
    ) -> planstatus.Attempt:
        """The attempt of a Plan whose source gave no plan: nothing written; Ready and SourceReady
        False say why, and which commit stays applied. Not stalled: the source's next change (or its
        next fetch) queues the Plan again."""
        status = plan.get("status") or {}
        kept = status.get("lastAppliedRevision")
        message = f"{failed}; {f'{kept} stays applied' if kept else 'nothing applied yet'}"
        state = planstatus.SourceState("False", failed.reason, message)
        attempted = failed.revision  # the commit whose plan failed; none when the fetch did
        return attempt(
            ready="False",
            reason=failed.reason,
            message=message,
            error=message,
            source=state,
            revision=attempted or str(status.get("lastAttemptedRevision") or ""),
        )

    def _render_source(
        self, plan: Manifest, source: GitSource, target: Target
    ) -> tuple[str, RenderedPlan, str]:
        """The revision the Plan's Git source gives now, its plan rendered and who signed it ("" when
        not verified); SourceError when any fails (the plan invalid at that commit is PlanInvalid, with
        every problem)."""
        namespace = namespace_of(plan)
        keys = decryption_keys(plan, target, namespace)
        revision, loaded, signer = self._load_source(
            plan, source, target, secret_refs(target, namespace), keys
        )
        try:
            return revision, self._rendered(loaded, namespace), signer
        except PlannerError as broken:
            raise SourceError(PLAN_INVALID, f"at {revision}: {broken}", revision=revision) from None

    def _load_source(
        self, plan: Manifest, source: GitSource, target: Target, refs: SecretRefs, keys: KeySource
    ) -> tuple[str, LoadResult, str]:
        """The revision, the plan loaded from that commit and who signed it (with `verify`; else "")."""
        beside = beside_source(plan)
        if beside:
            raise PlannerError(
                f"{', '.join(beside)}: a Plan with a source holds no plan of its own (its plan is "
                f"{source.path} in {source.url}): move them into that file"
            )
        problem = path_problem(source.path)
        if problem:
            raise PlannerError(problem)
        namespace = namespace_of(plan)
        annotations = annotations_of(plan)
        asked = str(annotations.get(planstatus.ANNOTATION_REQUESTED_AT, ""))
        handled = (plan.get("status") or {}).get("lastHandledReconcileAt", "")
        checkout = self.sources.checkout(
            object_key(plan), source, target, namespace, refresh=bool(asked) and asked != handled
        )
        signer = self._verified_signer(checkout, source, target, namespace)
        if not (checkout.root / source.path).is_file():
            raise SourceError(
                PATH_NOT_FOUND,
                f"at {checkout.revision}: no file {source.path} in the repository",
                revision=checkout.revision,
            )
        named = plan.get("serviceAccountName")
        try:
            loaded = load_checkout_plan(
                checkout.root,
                source.path,
                name=str(metadata_of(plan).get("name", "")),
                namespace=namespace,
                service_account=named if isinstance(named, str) else None,
                secret_refs=refs,
                sops_keys=keys,
                capabilities=chart_capabilities(target),  # as the tenant sees the cluster's discovery
            )
        except PlannerError as broken:
            raise SourceError(
                PLAN_INVALID, f"at {checkout.revision}: {broken}", revision=checkout.revision
            ) from None
        return checkout.revision, loaded, signer

    @staticmethod
    def _verified_signer(checkout: Checkout, source: GitSource, target: Target, namespace: str) -> str:
        """Who signed the commit among the keys `verify` trusts ("" without `verify`); SourceError when
        it is refused: then nothing of it is read, let alone applied."""
        try:
            keys = read_trusted_keys(target, namespace, source)
            return "" if keys is None else verified_signer(checkout.signed, keys)
        except SourceError as refused:
            raise SourceError(refused.reason, str(refused), revision=checkout.revision) from None

    def _render(self, plan: Manifest, target: Target) -> RenderedPlan:
        """The Plan loaded (secret values read as `target`) and rendered; PlannerError when it does not
        load, or the controller's lockdown refuses what it renders."""
        namespace = namespace_of(plan)
        keys = decryption_keys(plan, target, namespace)
        loaded = load_plan_object(plan, secret_refs=secret_refs(target, namespace), sops_keys=keys)
        return self._rendered(loaded, namespace)

    def _rendered(self, loaded: LoadResult, namespace: str) -> RenderedPlan:
        for warning in loaded.warnings:
            self.notice(str(warning))
        (rendered,) = render_loaded(loaded, namespace)
        refused = self.tenancy.refusals(namespace, rendered.manifests)
        if refused:
            raise PlannerError(f"refused by the controller's lockdown, nothing written: {'; '.join(refused)}")
        return rendered

    def _reconcile(self, rendered: RenderedPlan, target: Target, options: ReconcileOptions) -> PlanOutcome:
        return reconcile_plan(
            rendered,
            target=target,
            options=options,
            notice=self.notice,
            stop=self.stop,
            informers=self.informers,
        )


ORPHANED = (
    "reconcile.prune is false: its objects are left as they are (still labelled as its ApplySet's "
    "members, with its parent Secret), as its generations are"
)


def _remove_spares(client: KubeClient, rendered: RenderedPlan) -> str:
    """Delete the unclaimed members of the deleted plan's warm pools (spares, holding nothing of anyone's);
    claimed ones are sandboxes in use, kept. `; deleted warm pool members a, b` or ""."""
    if not rendered.plan.warm_pools:
        return ""
    namespace = rendered.namespace
    claims = listed_claims(client, [namespace])
    none_declared = dataclasses.replace(rendered.plan, warm_pools=())
    removed = remove_undeclared_pools(
        client, none_declared, claims, default_namespace=rendered.default_namespace
    )
    return f"; deleted the unclaimed warm pool members {', '.join(removed)}" if removed else ""


def _attempt(plan: Manifest) -> Callable[..., planstatus.Attempt]:
    """A reconcile's attempt of the Plan as it is now: its generation, the revision and the request it answers."""
    annotations = annotations_of(plan)
    return functools.partial(
        planstatus.Attempt,
        generation=planstatus.generation_of(plan),
        revision=str(annotations.get(planstatus.ANNOTATION_REVISION, "")),
        requested_at=str(annotations.get(planstatus.ANNOTATION_REQUESTED_AT, "")),
    )


def failed_outcome(plan: Manifest, message: str) -> PlanOutcome:
    """A reconcile that failed before the plan was reconciled (it does not load, the lockdown refuses it,
    its ServiceAccount is missing): counted as failed like any other."""
    name, namespace = str(metadata_of(plan).get("name", "")), namespace_of(plan)
    return PlanOutcome(
        file=plan_object_source(namespace, name),
        plan=name,
        namespace=namespace,
        result="failed",
        message=message,
        finished=time.time(),
    )


def describe(drifted: tuple[DriftedField, ...], most: int = 10) -> str:
    """`deployment/shop/web .spec.replicas (written by kubectl), …`, the first `most` and how many more."""
    shown = ", ".join(each.describe() for each in drifted[:most])
    return shown + (f" and {len(drifted) - most} more" if len(drifted) > most else "")


def _reads_secrets(value: object) -> bool:
    """Whether a Plan (or a part of it) has a `secretKeyRef` (its values are read at each reconcile)."""
    if isinstance(value, dict):
        return "secretKeyRef" in value or any(_reads_secrets(child) for child in value.values())
    if isinstance(value, list):
        return any(_reads_secrets(child) for child in value)
    return False

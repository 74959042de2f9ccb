"""Plan objects (`plans.planner.dev/v1`) as the controller's source of plans, when it runs without
`--plans`: one watch of the Plans in all namespaces (or `-n`'s), each reconciled as `planner reconcile`
reconciles a file, its outcome written to the Plan's status subresource and told by an Event on it.

A Plan is loaded and rendered at every reconcile, from the watch cache: the same loader and checks as a
file (named `plan/NAME -n NS` in diagnostics), its secret values read then from Secrets in its
namespace, so a rotated Secret is a change. A Plan that does not load is `Stalled` until it changes (the
periodic reconcile tries again, in case what it lacked, a Secret, has come). The annotation
`planner.dev/revision` (set by a GitOps tool) is the revision recorded with the generation it applies.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.app.planning import RenderedPlan, render_loaded
from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile_plan
from planner.app.target import Target, secret_refs
from planner.controller import planstatus
from planner.controller.events import event_reason, record_event
from planner.errors import ApiError, PlannerError, UnreachableError
from planner.kinds import PLAN
from planner.kube.client import resource_path
from planner.kube.informer import EventType, Informer, Informers
from planner.objects import Manifest, annotations_of, metadata_of
from planner.plan.load import load_plan_object, plan_object_source

Notice = Callable[[str], None]


def object_key(plan: Manifest) -> str:
    """A Plan's work-queue key: `NAMESPACE/NAME`."""
    metadata = metadata_of(plan)
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def source_name(key: str) -> str:
    namespace, _, name = key.partition("/")
    return plan_object_source(namespace, name)


@dataclass(frozen=True)
class Reconciled:
    """What one Plan's reconcile left: its rendering (None: it did not load or is gone) and whether to
    retry it after its backoff."""

    rendered: RenderedPlan | None
    retry: bool
    outcome: PlanOutcome | None = None


class PlanObjects:
    def __init__(
        self,
        target: Target,
        informers: Informers,
        *,
        namespace: str | None,
        identity: str,
        notice: Notice,
    ) -> None:
        self.target, self.identity, self.notice = target, identity, notice
        self.client = target.client
        self.informer: Informer = informers.informer(
            PLAN, namespaces=frozenset({namespace}) if namespace else None
        )

    def follow(self, queue: Callable[[str], None], forget: Callable[[str], None]) -> None:
        """Queue each Plan that asks for a reconcile as the watch sees it, every Plan once the first
        list is in, and `forget` the ones deleted."""

        def on_event(kind: EventType, plan: Manifest) -> None:
            if kind == "DELETED":
                forget(object_key(plan))
            elif planstatus.wants_reconcile(plan):
                queue(object_key(plan))

        def queue_all() -> None:
            for key in self.keys():
                queue(key)

        self.informer.subscribe(on_event)
        self.informer.when_synced(queue_all)

    def keys(self) -> list[str]:
        if not self.informer.synced or self.informer.failed:
            return []
        return [object_key(plan) for plan in self.informer.items()]

    def get(self, key: str) -> Manifest | None:
        namespace, _, name = key.partition("/")
        return self.informer.get(namespace, name)

    # --- one reconcile ---

    def reconcile(self, key: str, *, options: ReconcileOptions, stop: threading.Event) -> Reconciled:
        plan = self.get(key)
        if plan is None:
            return Reconciled(None, retry=False)
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
        try:
            loaded = load_plan_object(plan, secret_refs=secret_refs(self.target, namespace))
            for warning in loaded.warnings:
                self.notice(str(warning))
            (rendered,) = render_loaded(loaded, namespace)
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
        if planstatus.generation_of(plan) != (plan.get("status") or {}).get("observedGeneration"):
            self.write_status(plan, planstatus.progressing(plan, _now()))
        history = dataclasses.replace(options.apply.history, revision=revision or None)
        options = dataclasses.replace(options, apply=dataclasses.replace(options.apply, history=history))
        outcome = reconcile_plan(rendered, target=self.target, options=options, notice=self.notice, stop=stop)
        if outcome.result == "locked":
            return Reconciled(rendered, retry=True, outcome=outcome)
        self.finish(
            plan, _attempt(attempt, rendered, outcome), reason=event_reason(outcome.result, outcome.drift)
        )
        return Reconciled(rendered, retry=outcome.result == "failed", outcome=outcome)

    def finish(self, plan: Manifest, attempt: planstatus.Attempt, *, reason: tuple[str, str]) -> None:
        """Write the attempt's status, then tell it by an Event on the Plan."""
        previous = self.get(object_key(plan)) or plan  # the freshest status, for transition times
        self.write_status(plan, planstatus.finished(previous.get("status") or {}, attempt, _now()))
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
            message=attempt.message,
            identity=self.identity,
        )
        if problem:
            self.notice(problem)

    def write_status(self, plan: Manifest, status: dict[str, Any]) -> None:
        """A merge patch of the status subresource (the whole `conditions` list at once). A Plan deleted
        meanwhile has no status to write; other failures are said and the next reconcile writes again."""
        metadata = metadata_of(plan)
        path = resource_path(PLAN, str(metadata.get("namespace")), str(metadata.get("name"))) + "/status"
        try:
            self.client.request(
                "PATCH",
                path,
                body={"status": status},
                content_type="application/merge-patch+json",
                verb="patch",
            )
        except (ApiError, UnreachableError) as failure:
            if getattr(failure, "http_status", 0) != 404:
                self.notice(f"{source_name(object_key(plan))}: could not write its status: {failure}")


def _attempt(
    attempt: Callable[..., planstatus.Attempt], rendered: RenderedPlan, outcome: PlanOutcome
) -> planstatus.Attempt:
    if outcome.result == "failed":
        return attempt(
            ready="False", reason=planstatus.FAILED, message=outcome.message, error=outcome.message
        )
    applied = planstatus.Applied(
        planner_generation=outcome.generation,
        objects=planstatus.objects_by_kind(rendered.manifests),
        drift_found=outcome.drift,
        drift_corrected=outcome.drift if outcome.result == "applied" else 0,
    )
    return attempt(ready="True", reason=planstatus.SUCCEEDED, message=outcome.message, applied=applied)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

"""`validate`, and what every command on plan files starts with: plans loaded and rendered against the
runtime's default namespace, checked against the API's size limits and for objects two plans declare.
Asks no cluster, so `validate` imports none of the client (`planning` builds the rest on this)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import Diagnostic, PlanError
from planner.kinds import NAMESPACE
from planner.objects import Manifest, ObjectRef, ref_of
from planner.plan import LoadResult, Plan, load_plans
from planner.plan.secrets import unread_secrets
from planner.render import limit_diagnostics, plan_namespace, render
from planner.sops.keys import unread_keys

if TYPE_CHECKING:
    from planner.generations import Generation


@dataclass(frozen=True)
class RenderedPlan:
    """A plan's closure, ready to be planned and applied: `plan` rendered, or — with `recorded` — a
    recorded generation's closure (`rollback`), for which `plan` carries only the name and namespace."""

    plan: Plan
    default_namespace: str
    manifests: tuple[Manifest, ...]
    recorded: Generation | None = None
    # The closure is applied as given, never rendered again from `plan` (for the kinds the cluster
    # serves, or under the digest key): a deleted Plan object's prune, which keeps only some objects.
    fixed: bool = False

    @property
    def as_given(self) -> bool:
        """Whether `manifests` is applied exactly: a recorded closure, or a fixed one."""
        return self.fixed or self.recorded is not None

    @property
    def timeouts(self) -> dict[str, float]:
        """The per-workload and per-sandbox wait timeouts (a recorded closure's as recorded)."""
        return dict(self.recorded.timeouts) if self.recorded else plan_timeouts(self.plan)

    @property
    def namespace(self) -> str:
        """The plan's own namespace: its parent Secret's and its lock's."""
        return plan_namespace(self.plan, self.default_namespace)


def validate(paths: Sequence[str | Path]) -> LoadResult:
    """Load and check plans, and what they render against the API's size limits; raises PlanError with
    every problem at once. No cluster is asked: a plan without a namespace renders into "default"."""
    loaded = load_plans(paths, secret_refs=unread_secrets, sops_keys=unread_keys)
    render_loaded(loaded, "default")
    return loaded


def render_loaded(loaded: LoadResult, fallback_namespace: str) -> list[RenderedPlan]:
    """Render plans already loaded, each against the runtime's default namespace (docs/design.md §3); raises
    PlanError when an object would be too big for the API, before anything is written."""
    rendered = [
        RenderedPlan(plan, fallback_namespace, tuple(render(plan, fallback_namespace)))
        for plan in loaded.plans
    ]
    problems = [found for item in rendered for found in limit_diagnostics(item.plan, list(item.manifests))]
    problems += _declared_twice(rendered)
    if problems:
        raise PlanError(problems)
    return rendered


def _declared_twice(rendered: list[RenderedPlan]) -> list[Diagnostic]:
    """An object two plans render (Namespaces aside, which plans share) would belong to two ApplySets:
    whichever applies second fails on ownership. Said once per later plan and object, naming the first."""
    first: dict[ObjectRef, RenderedPlan] = {}
    problems = []
    for each in rendered:
        for manifest in each.manifests:
            ref = ref_of(manifest)
            if ref.kind == NAMESPACE.kind and not ref.group:
                continue
            earlier = first.setdefault(ref, each)
            if earlier is not each and earlier.plan.name != each.plan.name:
                source, where = each.plan.source, each.plan.source.position("metadata.name")
                problems.append(
                    Diagnostic(
                        source.file_of(where),
                        where.line,
                        where.column,
                        "metadata.name",
                        f'{ref} is also declared by plan "{earlier.plan.name}" ({earlier.plan.source.file}): '
                        "an object belongs to one plan's ApplySet, so declare it in one of them",
                    )
                )
    return problems


def plan_timeouts(plan: Plan) -> dict[str, float]:
    """The plan's per-workload and per-sandbox `timeout`, by name (a Change's `owner`)."""
    timeouts = {w.name: w.timeout_seconds for w in plan.workloads if w.timeout_seconds is not None}
    return timeouts | {s.name: s.timeout_seconds for s in plan.sandboxes if s.timeout_seconds is not None}

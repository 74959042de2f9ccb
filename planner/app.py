"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. Later commands
(plan, apply, monitor) add their wiring here: the client, the informer cache, the executor's StatusSource.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.diff import ChangeSet, diff
from planner.graph import ExecutionPlan, solve
from planner.kube.client import ClientOptions, KubeClient
from planner.kube.config import default_namespace
from planner.live import LiveState, read_live
from planner.plan import LoadResult, Plan, load_plans
from planner.render import plan_namespace, render
from planner.savedplan import saved_plan

Manifest = dict[str, Any]


@dataclass(frozen=True)
class RenderedPlan:
    plan: Plan
    default_namespace: str
    manifests: tuple[Manifest, ...]


def validate(paths: Sequence[str | Path]) -> LoadResult:
    """Load and check plans; raises PlanError with every problem at once."""
    return load_plans(paths)


def render_plans(
    paths: Sequence[str | Path], *, namespace: str | None, kubeconfig: str | None, context: str | None
) -> tuple[LoadResult, list[RenderedPlan]]:
    """Load plans and render each against the runtime's default namespace (DESIGN §3)."""
    loaded = load_plans(paths)
    fallback = default_namespace(namespace=namespace, kubeconfig=kubeconfig, context=context)
    rendered = [RenderedPlan(plan, fallback, tuple(render(plan, fallback))) for plan in loaded.plans]
    return loaded, rendered


@dataclass(frozen=True, kw_only=True)
class Target:
    """Which cluster, and the runtime's default namespace there."""

    namespace: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    options: ClientOptions | None = None

    def client(self) -> KubeClient:
        return KubeClient.from_config(kubeconfig=self.kubeconfig, context=self.context, options=self.options)


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    allow_data_loss: bool = False
    adopt: bool = False
    rerun: frozenset[str] = frozenset()


@dataclass(frozen=True)
class PlannedChanges:
    rendered: RenderedPlan
    live: LiveState
    changeset: ChangeSet

    @property
    def execution(self) -> ExecutionPlan:
        return solve(self.changeset)

    def saved(self, options: PlanOptions) -> dict[str, Any]:
        return saved_plan(
            files=[self.rendered.plan.source.file],
            changeset=self.changeset,
            desired=self.rendered.manifests,
            live=self.live,
            options={
                "allow_data_loss": options.allow_data_loss,
                "adopt": options.adopt,
                "rerun": sorted(options.rerun),
            },
        )


def plan(
    paths: Sequence[str | Path], *, target: Target, options: PlanOptions, client: KubeClient | None = None
) -> tuple[LoadResult, list[PlannedChanges]]:
    """Load, render, read the live objects of each plan and diff them. Writes nothing."""
    loaded, rendered = render_plans(
        paths, namespace=target.namespace, kubeconfig=target.kubeconfig, context=target.context
    )
    client = client or target.client()
    results = []
    for each in rendered:
        namespace = plan_namespace(each.plan, each.default_namespace)
        live = read_live(client, desired=each.manifests, plan=each.plan.name, namespace=namespace)
        changeset = diff(
            each.manifests,
            live,
            plan=each.plan.name,
            namespace=namespace,
            allow_data_loss=options.allow_data_loss,
            adopt=options.adopt,
            rerun=options.rerun,
        )
        results.append(PlannedChanges(each, live, changeset))
    return loaded, results

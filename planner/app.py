"""Wires the stages together, one function per command, so the CLI only parses and prints.

Each function takes plain values and returns results; nothing here prints or exits. Later commands
(plan, apply, monitor) add their wiring here: the client, the informer cache, the executor's StatusSource.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.kube.config import default_namespace
from planner.plan import LoadResult, Plan, load_plans
from planner.render import render

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

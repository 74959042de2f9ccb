"""The kinds of a plan's raw manifests that neither planner nor the plan's own CustomResourceDefinitions
know — custom resources of a CRD installed some other way — asked of the cluster when the plan is made.

Render places an object in a namespace or not by its kind's scope; for such a kind only the cluster
can say, so, as kubectl's RESTMapper does, its discovery (`kube.discovery.Kinds`: one GET per
group-version, cached on the client) answers before anything is read or written. A cluster-scoped
custom resource then needs the plan's `allowClusterScoped`, as any cluster-scoped manifest does, and a
kind the cluster does not serve is a plan error at the manifest's file position: nothing is written.
"""

from __future__ import annotations

import dataclasses

from planner.errors import Diagnostic, PlanError
from planner.kinds import KindInfo, group_of, known
from planner.kube.client import KubeClient
from planner.kube.discovery import Kinds
from planner.plan import Plan
from planner.plan.model import RawManifest
from planner.plan.raw_manifests import scope_problems
from planner.plan.source import child_path


def with_served_kinds(client: KubeClient, plan: Plan) -> Plan:
    """`plan` knowing, from the cluster's discovery, the kinds of its raw manifests nothing else knows
    (unchanged when there are none); PlanError naming each manifest whose kind the cluster does not
    serve, or that is cluster-scoped where the plan does not allow it."""
    kinds = Kinds(client)
    served: dict[tuple[str, str], KindInfo] = {}
    problems: list[Diagnostic] = []
    for raw in plan.manifests:
        key = (group_of(raw.api_version), raw.kind)
        if known(*key) is not None or key in plan.declared_kinds:
            continue
        info = served.get(key) or kinds.find(raw.api_version, raw.kind)
        if info is None:
            problems.append(
                _diagnostic(
                    raw,
                    "kind",
                    f"the cluster serves no kind {raw.kind} in {raw.api_version}: install its "
                    "CustomResourceDefinition first, or declare it in the plan",
                )
            )
            continue
        served[key] = info
        found = scope_problems(raw.object, namespaced=info.namespaced, allowed=plan.allow_cluster_scoped)
        problems += [_diagnostic(raw, field, message) for field, message in found]
    if problems:
        raise PlanError(problems)
    return dataclasses.replace(plan, served_kinds=served) if served else plan


def _diagnostic(raw: RawManifest, key: str, message: str) -> Diagnostic:
    """At the manifest's own position: its file (the plan's, or a manifest file's), line and column."""
    return Diagnostic(raw.file, raw.position.line, raw.position.column, child_path(raw.path, key), message)

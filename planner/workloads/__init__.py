"""Workload kinds, one module each, behind the interface in `kind.py`; this registry lists them.

Adding a kind is its module and one line here (and its plan fields in `schemas/plan.schema.json`):
render, plan, monitor, lifecycle and status find it through these functions and never name a kind.
"""

from __future__ import annotations

from typing import Any

from planner.kinds import KindInfo
from planner.objects import SANDBOX_KIND
from planner.workloads import cronjob, daemonset, deployment, job, statefulset
from planner.workloads.kind import WorkloadKind

KINDS: tuple[WorkloadKind[Any], ...] = (
    deployment.KIND,
    job.KIND,
    cronjob.KIND,
    statefulset.KIND,
    daemonset.KIND,
)
# A sandbox's runtime ID kind: not a workload kind (its objects are a Pod and PVCs of its own), but one the
# runtime IDs, the monitor and the lifecycle commands know beside them.
SANDBOX = SANDBOX_KIND
RUNTIME_KINDS: tuple[str, ...] = (*(kind.name for kind in KINDS), SANDBOX)
DEFAULT = deployment.KIND  # a workload that names no kind
_BY_NAME = {kind.name: kind for kind in KINDS}
_BY_API_KIND = {kind.api.kind: kind for kind in KINDS}


def named(name: str | None) -> WorkloadKind[Any]:
    """The kind a plan's `kind:` names (validated against the schema's list); the default for none."""
    return _BY_NAME.get(name or "", DEFAULT)


def known(name: str) -> bool:
    return name in _BY_NAME


def rendered_as(api_kind: str) -> WorkloadKind[Any] | None:
    """The workload kind whose object is of `api_kind` (`Deployment`), None for any other kind."""
    return _BY_API_KIND.get(api_kind)


def named_for(api: KindInfo) -> WorkloadKind[Any]:
    """The workload kind whose object is of the API kind `api`, which one of them renders."""
    return _BY_API_KIND[api.kind]


def accepting(field: str) -> tuple[WorkloadKind[Any], ...]:
    """The kinds that accept the plan field `field` among their own; () for a field every kind takes."""
    return tuple(kind for kind in KINDS if field in kind.fields)


def own_fields() -> tuple[str, ...]:
    """Every plan field that some kinds only accept, in registry order."""
    return tuple(dict.fromkeys(field for kind in KINDS for field in kind.fields))

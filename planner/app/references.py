"""What a plan's workloads read from ConfigMaps and Secrets, against the cluster and the changes.

`missing_references`: an object a workload reads through env, envFrom or a volume that the plan does not
declare must exist in the cluster, holding the key read, when the plan is made — else the pods could
never start (`CreateContainerConfigError`, `MountVolume.SetUp failed`), and the plan says so at the
reference's file position before anything is written. One GET per object referenced (never a list of
every Secret); only key names are looked at, never a value. Optional references and objects the plan
declares (ordered before their readers by the graph) are not asked about.

`config_key`: the key Secrets enter the config-hash annotation under (`render.confighash`), the plan's
digest key. `with_roll_reasons`: a workload whose config-hash changes says
why (`rolls because secret db-credentials changed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from planner.changeset import Change, ChangeSet
from planner.errors import Diagnostic, ForbiddenError
from planner.graph import used_objects
from planner.kinds import CONFIG_MAP, DEPLOYMENT, SECRET
from planner.kube.client import KubeClient
from planner.live import get_or_none
from planner.objects import Manifest, ObjectRef
from planner.plan import Plan
from planner.plan.config_refs import ConfigRef, plan_config_refs, plan_objects, reads_plan_objects
from planner.render import ANNOTATION_CONFIG_HASH, workload_namespace
from planner.state.applyset import digest_key
from planner.writes import new_digest_key

_KINDS = {"configMap": CONFIG_MAP, "secret": SECRET}


def missing_references(client: KubeClient, plan: Plan, default_namespace: str) -> list[Diagnostic]:
    """A diagnostic per non-optional env, envFrom or volume reference to an object the plan does not
    declare that the cluster lacks (or whose data lacks the key); nothing when reading it is forbidden."""
    declared = plan_objects(plan)
    found: dict[ObjectRef, Manifest | None] = {}
    problems = []
    for workload, ref in plan_config_refs(plan):
        if ref.optional:
            continue
        elsewhere = (ref.kind, ref.name) in declared
        if elsewhere and reads_plan_objects(plan, workload, default_namespace):
            continue
        target = ObjectRef.of(
            _KINDS[ref.kind], ref.name, workload_namespace(plan, workload, default_namespace)
        )
        if target not in found:
            try:
                found[target] = get_or_none(client, _KINDS[ref.kind], target.namespace, target.name)
            except ForbiddenError:
                continue  # not ours to read: the kubelet will say
        problem = _problem(ref, target, found[target], declared_elsewhere=elsewhere)
        if problem:
            path, message = problem
            where = plan.source.position(path)
            problems.append(Diagnostic(plan.source.file_of(where), where.line, where.column, path, message))
    return problems


def _problem(
    ref: ConfigRef, target: ObjectRef, live: Manifest | None, *, declared_elsewhere: bool
) -> tuple[str, str] | None:
    """(path, message) of what is wrong with one reference: the object missing, or the key."""
    what = f'{ref.kind} "{ref.name}"'
    if live is None:
        declared = (
            "is declared by this plan in the plan's namespace, not the workload's,"
            if declared_elsewhere
            else "is not declared by this plan"
        )
        # A volume has no `optional` in a plan: the object must be there.
        fixes = (
            "declare it in the plan or create it first"
            if ref.via == "volume"
            else ("declare it in the plan, create it first, or mark the reference optional")
        )
        return ref.path, f"{what} {declared} and does not exist in namespace {target.namespace}: {fixes}"
    keys = {*(live.get("data") or {}), *(live.get("binaryData") or {})}
    if ref.key is not None and ref.key not in keys:
        return f"{ref.path}.key", (
            f'{what} in namespace {target.namespace} has no key "{ref.key}" (it has: '
            f"{', '.join(sorted(keys)) or 'no data'}): fix the key, or mark the reference optional"
        )
    return None


def needs_config_key(plan: Plan) -> bool:
    """Whether a workload of the plan may read a Secret the plan declares (then its config-hash is keyed)."""
    secrets = {s.name for s in plan.secrets}
    return any(ref.kind == "secret" and ref.name in secrets for _, ref in plan_config_refs(plan))


def config_key(parent: Manifest | None) -> tuple[bytes | None, bool]:
    """The plan's digest key, and whether it is new: a first apply (no parent yet) makes one, which the
    parent write keeps. A parent without one (objects written from `planner render`, whose Secrets hash
    by key names only) gets none, so planning them is not a perpetual roll."""
    if parent is None:
        return new_digest_key(), True
    return digest_key(parent), False


def with_roll_reasons(changeset: ChangeSet) -> ChangeSet:
    """Each workload change whose config-hash moved, with a reason naming the plan objects it reads that
    this plan changes (or, when none does, saying that what it reads changed)."""
    changed = {
        c.ref
        for c in changeset.changes
        if c.ref.kind in (CONFIG_MAP.kind, SECRET.kind) and c.action != "noop"
    }
    return dataclasses.replace(changeset, changes=tuple(_with_reason(c, changed) for c in changeset.changes))


def _with_reason(change: Change, changed: set[ObjectRef]) -> Change:
    if not any(ANNOTATION_CONFIG_HASH in field.path for field in change.fields):
        return change
    verb = "rolls" if change.ref.kind == DEPLOYMENT.kind else "runs again"
    read = [ref for ref in used_objects(change.desired) if ref in changed]
    because = " and ".join(_described(read)) + " changed" if read else "the config it reads changed"
    reason = f"{verb} because {because}"
    return dataclasses.replace(change, reason=f"{change.reason}; {reason}" if change.reason else reason)


def _described(refs: list[ObjectRef]) -> Iterator[str]:
    for ref in refs:
        yield f"{'secret' if ref.kind == SECRET.kind else 'configMap'} {ref.name}"

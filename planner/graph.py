"""ChangeSet -> ExecutionPlan: the ordered, inspectable task list that `apply` runs (docs/design.md §4).

Like cli-utils' solver it decides what runs after what, and the executor runs it. Each change becomes
a few tasks on one object (`create`, `apply`, `delete`, `wait-gone`, `wait-ready`, `record-run`, and
`delete-hook` after the wait of a chart's hook Job whose Helm delete policy asks for it, or of the hook
Jobs of the phase of another hook object that `hook-succeeded` deletes);
`ensure` creates a missing namespace before the `parent` write and everything in it; ConfigMaps,
Secrets and PVCs come before what mounts them, `depends-on` targets' readiness before their
dependents, prunes last; an unchanged object that is not ready (`Change.unready`) gets a
`wait-ready` of its own. Predecessors are the transitive reduction; the list is networkx's
lexicographical topological sort, so it prints and compares as text (`plan --graph`).

The rules in full, and why, are in docs/architecture.md ("Module notes", graph.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from planner.diff import Change, ChangeSet
from planner.errors import PlannerError
from planner.kinds import (
    CONFIG_MAP,
    CUSTOM_RESOURCE_DEFINITION,
    INGRESS,
    JOB,
    NAMESPACE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    KindInfo,
    declared_kinds,
)
from planner.objects import (
    ANNOTATION_DEPENDS_ON,
    ANNOTATION_RUN_KEY,
    ANNOTATION_RUNTIME_ID,
    HOOK_DELETE_POLICY,
    Manifest,
    ObjectRef,
    annotations_of,
    hook_delete_policies,
    hook_phase,
    labels_of,
    metadata_of,
    ref_of,
    stateful_claims,
    with_create_only_of,
)
from planner.plan.durations import format_duration
from planner.render.identity import with_hash
from planner.state.applyset import LABEL_PART_OF, ParentRecord, parent_ref, pending_runs
from planner.unready import awaited

if TYPE_CHECKING:
    import networkx as nx

TaskAction = Literal[
    "ensure", "parent", "delete", "wait-gone", "create", "apply", "record-run", "wait-ready", "delete-hook"
]
STEPS: tuple[TaskAction, ...] = (
    "ensure",
    "parent",
    "delete",
    "wait-gone",
    "create",
    "apply",
    "record-run",
    "wait-ready",
    "delete-hook",
)
# Helm's delete policies a `delete-hook` task acts on: after its Job's wait succeeded, or failed.
HOOK_SUCCEEDED = "hook-succeeded"
HOOK_FAILED = "hook-failed"
AFTER_RUN_POLICIES = frozenset({HOOK_SUCCEEDED, HOOK_FAILED})
WAITS: frozenset[TaskAction] = frozenset({"wait-ready", "wait-gone"})
# Kind order when nothing else is said, as kubectl and kapp apply a directory: CustomResourceDefinitions
# before everything, service accounts and RBAC (and cluster policy) before the workloads that run as
# them. ConfigMaps, Secrets and claims come before the workloads that use them (`used_objects`); a
# custom resource waits for its CRD to be Established.
FIRST_RANK = frozenset({CUSTOM_RESOURCE_DEFINITION.group_kind})
BEFORE_WORKLOADS = frozenset(
    {
        SERVICE_ACCOUNT.group_kind,
        *(
            f"{kind}.rbac.authorization.k8s.io"
            for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
        ),
        "PriorityClass.scheduling.k8s.io",
        "StorageClass.storage.k8s.io",
        "RuntimeClass.node.k8s.io",
        "ResourceQuota",
        "LimitRange",
    }
)
DEPENDS_ON_FORMS = "<group>/namespaces/<namespace>/<Kind>/<name> or <group>/<Kind>/<name>"
FOREGROUND = "Foreground"


class GraphError(PlannerError):
    """The ChangeSet cannot be ordered: a cycle, a malformed dependency, two changes for one object."""


@dataclass(frozen=True, kw_only=True)
class Task:
    """One step on one object. `manifest` is what `create`/`apply` writes; `parent` is set on the
    `parent` task; `timeout` (seconds) is how long a wait may take (None: no limit); `policies` are
    the Helm delete policies a `delete-hook` task acts on (`hook-succeeded`, `hook-failed`)."""

    id: str
    action: TaskAction
    ref: ObjectRef
    predecessors: tuple[str, ...] = ()
    timeout: float | None = None
    manifest: Manifest | None = None
    parent: ParentRecord | None = None
    propagation: str | None = None
    runtime_id: str | None = None
    policies: tuple[str, ...] = ()
    # A wait-ready whose object has already failed (`Change.failed`): why. It fails at once, --no-wait or
    # not, and skips its dependents.
    failed: str | None = None

    @property
    def is_wait(self) -> bool:
        return self.action in WAITS


@dataclass(frozen=True, kw_only=True)
class ExecutionPlan:
    plan: str
    namespace: str
    tasks: tuple[Task, ...] = ()

    @property
    def parent_ref(self) -> ObjectRef:
        return parent_ref(self.plan, self.namespace)

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def successors(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {task.id: [] for task in self.tasks}
        for task in self.tasks:
            for predecessor in task.predecessors:
                found[predecessor].append(task.id)
        return {task_id: tuple(after) for task_id, after in found.items()}

    def as_text(self) -> str:
        """One line per task in execution order: `<id> [timeout 5m] <- <predecessor>, ...`."""
        return "".join(f"{_task_line(task)}\n" for task in self.tasks)


def _task_line(task: Task) -> str:
    line = task.id
    if task.timeout is not None:
        line += f" [timeout {format_duration(task.timeout)}]"
    if task.predecessors:
        line += " <- " + ", ".join(task.predecessors)
    return line


def task_id(action: TaskAction, ref: ObjectRef) -> str:
    return f"{action} {ref}"


# --- reading manifests -------------------------------------------------------------------------------


def parse_depends_on(value: str) -> list[ObjectRef]:
    """cli-utils' `config.kubernetes.io/depends-on`: comma-separated object references."""
    refs = []
    for item in (part.strip() for part in value.split(",")):
        parts = item.split("/")
        if len(parts) == 5 and parts[1] == "namespaces":
            refs.append(ObjectRef(group=parts[0], kind=parts[3], namespace=parts[2], name=parts[4]))
        elif len(parts) == 3:
            refs.append(ObjectRef(group=parts[0], kind=parts[1], namespace=None, name=parts[2]))
        else:
            raise GraphError(f"depends-on: expected {DEPENDS_ON_FORMS}, but was {item!r}")
    return refs


def depends_on(manifest: Manifest | None) -> list[ObjectRef]:
    value = annotations_of(manifest).get(ANNOTATION_DEPENDS_ON)
    return parse_depends_on(value) if value else []


def pod_spec(manifest: Manifest | None) -> Mapping[str, Any] | None:
    """The pod spec of a Pod, or of a workload's pod template (Deployment, Job, StatefulSet, CronJob's job
    template)."""
    if not manifest:
        return None
    spec: Mapping[str, Any] = manifest.get("spec") or {}
    if manifest.get("kind") == POD.kind:
        return spec
    if "jobTemplate" in spec:
        spec = spec["jobTemplate"].get("spec") or {}
    template = spec.get("template")
    return (template.get("spec") or {}) if isinstance(template, Mapping) else None


def _volume_references(volume: Mapping[str, Any]) -> Iterator[tuple[KindInfo, str | None]]:
    yield CONFIG_MAP, (volume.get("configMap") or {}).get("name")
    yield SECRET, (volume.get("secret") or {}).get("secretName")
    yield PERSISTENT_VOLUME_CLAIM, (volume.get("persistentVolumeClaim") or {}).get("claimName")
    for source in (volume.get("projected") or {}).get("sources") or []:
        yield CONFIG_MAP, (source.get("configMap") or {}).get("name")
        yield SECRET, (source.get("secret") or {}).get("name")


def _container_references(container: Mapping[str, Any]) -> Iterator[tuple[KindInfo, str | None]]:
    for source in container.get("envFrom") or []:
        yield CONFIG_MAP, (source.get("configMapRef") or {}).get("name")
        yield SECRET, (source.get("secretRef") or {}).get("name")
    for variable in container.get("env") or []:
        value_from = variable.get("valueFrom") or {}
        yield CONFIG_MAP, (value_from.get("configMapKeyRef") or {}).get("name")
        yield SECRET, (value_from.get("secretKeyRef") or {}).get("name")


def _pod_references(spec: Mapping[str, Any] | None) -> Iterator[tuple[KindInfo, str | None]]:
    if spec is None:
        return
    for volume in spec.get("volumes") or []:
        yield from _volume_references(volume)
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        yield from _container_references(container)
    yield from ((SECRET, s.get("name")) for s in spec.get("imagePullSecrets") or [])
    yield SERVICE_ACCOUNT, spec.get("serviceAccountName")


def _ingress_references(manifest: Manifest) -> Iterator[tuple[KindInfo, str | None]]:
    """An Ingress's TLS Secrets and backend Services."""
    if manifest.get("kind") != INGRESS.kind:
        return
    spec = manifest.get("spec") or {}
    yield from ((SECRET, tls.get("secretName")) for tls in spec.get("tls") or [])
    backends = [spec.get("defaultBackend") or {}]
    backends += [
        p.get("backend") or {}
        for r in spec.get("rules") or []
        for p in (r.get("http") or {}).get("paths") or []
    ]
    yield from ((SERVICE, (backend.get("service") or {}).get("name")) for backend in backends)


def used_objects(manifest: Manifest | None) -> list[ObjectRef]:
    """The ConfigMaps, Secrets, PVCs and service account a manifest's pod spec names, and the Secrets and
    Services an Ingress names, in its namespace."""
    if manifest is None:
        return []
    namespace = metadata_of(manifest).get("namespace")
    found = [*_pod_references(pod_spec(manifest)), *_ingress_references(manifest)]
    return sorted({ObjectRef.of(kind, name, namespace) for kind, name in found if name})


def clone_source(manifest: Manifest | None) -> ObjectRef | None:
    """The PVC a PVC is cloned from (`spec.dataSource`), if any."""
    if not manifest or manifest.get("kind") != PERSISTENT_VOLUME_CLAIM.kind:
        return None
    source = (manifest.get("spec") or {}).get("dataSource") or {}
    if source.get("kind") != PERSISTENT_VOLUME_CLAIM.kind or source.get("apiGroup"):
        return None
    return ObjectRef.of(PERSISTENT_VOLUME_CLAIM, source["name"], metadata_of(manifest).get("namespace"))


# --- building the graph ------------------------------------------------------------------------------


def _normalized(changes: Iterable[Change]) -> dict[ObjectRef, Change]:
    """One change per object; a delete and a create of the same object are one replace."""
    by_ref: dict[ObjectRef, list[Change]] = defaultdict(list)
    for change in changes:
        by_ref[change.ref].append(change)
    merged: dict[ObjectRef, Change] = {}
    for ref, group in by_ref.items():
        actions = sorted(c.action for c in group)
        if len(group) == 1:
            merged[ref] = group[0]
        elif actions == ["create", "delete"]:
            create = next(c for c in group if c.action == "create")
            delete = next(c for c in group if c.action == "delete")
            transition = create.transition or delete.transition
            merged[ref] = Change(
                ref=ref,
                action="replace",
                desired=create.desired,
                live=delete.live,
                reason=create.reason or delete.reason,
                transition=transition,
                owner=create.owner or delete.owner,
            )
        else:
            raise GraphError(f"{ref}: more than one change ({', '.join(actions)}); expected one per object")
    return merged


def _is_prune(change: Change) -> bool:
    return change.action == "delete" and change.transition is None


@dataclass
class _Node:
    action: TaskAction
    ref: ObjectRef
    timeout: float | None = None
    manifest: Manifest | None = None
    parent: ParentRecord | None = None
    propagation: str | None = None
    runtime_id: str | None = None
    prune: bool = False
    policies: tuple[str, ...] = ()
    failed: str | None = None


@dataclass
class _Handles:
    """The tasks of one change that others attach to."""

    first: str
    write: str | None = None  # create or apply
    gone: str | None = None
    ready: str | None = None


def _as_created(manifest: Manifest, live: Manifest) -> Manifest:
    """What an update writes: never a change to a create-only field (a fork's `dataSource`); the hash
    names what is written, so the next diff sees the object as its own whatever its source became."""
    written = with_create_only_of(manifest, live)
    return manifest if written == manifest else with_hash(written)


class _Builder:
    def __init__(
        self,
        changeset: ChangeSet,
        *,
        wait: bool,
        timeouts: Mapping[str, float],
        default_timeout: float | None,
    ) -> None:
        self.changeset = changeset
        self.wait = wait
        self.timeouts = timeouts
        self.default_timeout = default_timeout
        self.changes = _normalized(changeset.changes)
        import networkx as nx  # here, not at the top: `plan` prints no task list unless asked

        self.graph: nx.DiGraph = nx.DiGraph()
        self.nodes: dict[str, _Node] = {}
        self.handles: dict[ObjectRef, _Handles] = {}
        self.parent_id = ""
        self.namespace_tasks: dict[str, str] = {}

    def add(self, node: _Node, *after: str | None) -> str:
        node_id = task_id(node.action, node.ref)
        self.nodes[node_id] = node
        self.graph.add_node(node_id)
        for predecessor in after:
            self.edge(predecessor, node_id)
        return node_id

    def edge(self, before: str | None, after: str | None) -> None:
        if before is not None and after is not None and before != after:
            self.graph.add_edge(before, after)

    def timeout_of(self, change: Change | None) -> float | None:
        owner = change.owner if change is not None else None
        return self.timeouts.get(owner, self.default_timeout) if owner else self.default_timeout

    def build(self) -> ExecutionPlan:
        active = {ref: c for ref, c in self.changes.items() if c.action != "noop"}
        for ref in (c.ref for c in self.changes.values() if c.unready is not None):
            self.ready_task(ref)  # unchanged, not ready: waited for as if written
        if active or self.changeset.unrecorded:
            self.add_parent_and_namespaces(active)
            for change in active.values():
                self.add_change(change)
            self.add_use_edges(active)
            self.add_release_edges(active)
            self.add_dependency_edges(active)
            self.add_fork_edges(active)
            self.add_rebase_edges(active)
            self.add_kind_order_edges(active)
            self.add_custom_resource_edges(active)
            self.add_other_hook_deletes(active)  # last: after every wait the edges above added
        if not self.wait:
            self.drop_terminal_waits()
        self.add_prune_edges()
        return self.solved()

    def add_parent_and_namespaces(self, active: Mapping[ObjectRef, Change]) -> None:
        for ref, change in active.items():
            if ref.kind == NAMESPACE.kind and change.action == "create":
                self.namespace_tasks[ref.name] = self.add(_Node(action="ensure", ref=ref))
        parent = _Node(action="parent", ref=parent_ref(self.changeset.plan, self.changeset.namespace))
        parent.parent = self.parent_record()
        self.parent_id = self.add(parent, self.namespace_tasks.get(self.changeset.namespace))

    def parent_record(self) -> ParentRecord:
        changes = self.changes.values()
        started = [c.desired for c in changes if c.action in ("create", "replace") and c.desired]
        return ParentRecord.covering(
            (c.ref for c in changes),
            (c.desired for c in changes if c.desired),
            runs=(*pending_runs(started), *self.changeset.unrecorded),
            digest_key=self.changeset.digest_key,
        )

    def add_change(self, change: Change) -> None:
        ref = change.ref
        if ref.kind == NAMESPACE.kind and change.action == "create":
            ensure = write = self.namespace_tasks[ref.name]
            if LABEL_PART_OF in labels_of(change.desired):  # declared (a raw manifest): written whole
                write = self.add(
                    _Node(action="apply", ref=ref, manifest=change.desired), ensure, self.parent_id
                )
            self.handles[ref] = _Handles(first=ensure, write=write)
            return
        runtime_id = annotations_of(change.desired or change.live).get(ANNOTATION_RUNTIME_ID)
        handles = _Handles(first="")
        if change.action in ("delete", "replace"):
            handles.first = self.add_removal(change, runtime_id)
            handles.gone = task_id("wait-gone", ref)
        if change.action in ("create", "replace", "update"):
            handles.write = self.add_write(change, runtime_id, after=handles.gone)
            handles.first = handles.first or handles.write
            if awaited(ref):
                handles.ready = self.add_ready(ref, change, handles.write)
                self.add_hook_delete(change, handles.ready)
        self.handles[ref] = handles

    def add_hook_delete(self, change: Change, ready: str) -> None:
        """A chart's hook Job that runs now (created, or replaced for a new run-key) and whose Helm delete
        policy says `hook-succeeded` or `hook-failed`: deleted after its wait, as the run ended. Its run
        is recorded (`record-run`), so the next plan finds it ran rather than missing."""
        desired = change.desired
        if change.ref.kind != JOB.kind or ANNOTATION_RUN_KEY not in annotations_of(desired):
            return
        value = str(annotations_of(desired).get(HOOK_DELETE_POLICY) or "")
        policies = tuple(sorted({p.strip() for p in value.split(",")} & AFTER_RUN_POLICIES))
        if policies:
            node = _Node(action="delete-hook", ref=change.ref, runtime_id=None, policies=policies)
            self.add(node, ready)

    def add_other_hook_deletes(self, active: Mapping[ObjectRef, Change]) -> None:
        """A chart's hook object other than a Job (a ConfigMap, a hook Job's ServiceAccount), written
        now for its run-key, whose Helm delete policy says `hook-succeeded`: it succeeded once written,
        so its run is recorded and it is deleted — after the hook Jobs of its phase that run now, as Helm
        deletes a phase's succeeded hooks once every hook of it succeeded."""
        for ref, change in active.items():
            desired, write = change.desired, self.handles[ref].write if ref in self.handles else None
            if ref.kind == JOB.kind or write is None or ANNOTATION_RUN_KEY not in annotations_of(desired):
                continue
            if HOOK_SUCCEEDED not in hook_delete_policies(desired):
                continue
            phase = hook_phase(desired)
            jobs = [
                self.handles[other].ready
                for other, run in active.items()
                if other.kind == JOB.kind and other in self.handles and hook_phase(run.desired) == phase
            ]
            record = self.add(_Node(action="record-run", ref=ref), write)
            node = _Node(action="delete-hook", ref=ref, runtime_id=None, policies=(HOOK_SUCCEEDED,))
            self.add(node, record, self.handles[ref].ready, *jobs)  # its own wait, when it has one, too

    def add_removal(self, change: Change, runtime_id: str | None) -> str:
        """delete → wait-gone; returns the delete."""
        prune = _is_prune(change)
        delete = _Node(
            action="delete", ref=change.ref, propagation=FOREGROUND, runtime_id=runtime_id, prune=prune
        )
        delete_id = self.add(delete, self.parent_id)
        timeout = self.timeout_of(change)
        self.add(
            _Node(action="wait-gone", ref=change.ref, timeout=timeout, runtime_id=runtime_id, prune=prune),
            delete_id,
        )
        return delete_id

    def add_write(self, change: Change, runtime_id: str | None, *, after: str | None) -> str:
        """create (+ record-run for a workload's Job, which carries a run-key) or apply; returns the
        write. A Job of raw manifests or a chart has no run-key: nothing to record."""
        ref = change.ref
        action: TaskAction = "apply" if change.action == "update" else "create"
        namespace_task = self.namespace_tasks.get(ref.namespace or "")
        manifest = change.desired
        if action == "apply" and manifest is not None and change.live is not None:
            manifest = _as_created(manifest, change.live)
        write = _Node(action=action, ref=ref, manifest=manifest, runtime_id=runtime_id)
        write_id = self.add(write, after, self.parent_id, namespace_task)
        if action == "create" and ref.kind == JOB.kind and ANNOTATION_RUN_KEY in annotations_of(manifest):
            self.add(_Node(action="record-run", ref=ref, runtime_id=runtime_id), write_id)
        return write_id

    def add_ready(self, ref: ObjectRef, change: Change | None, after: str | None = None) -> str:
        runtime_id = annotations_of(change.desired if change else None).get(ANNOTATION_RUNTIME_ID)
        node = _Node(action="wait-ready", ref=ref, timeout=self.timeout_of(change), runtime_id=runtime_id)
        node.failed = change.unready if change is not None and change.failed else None
        return self.add(node, after)

    def ready_task(self, ref: ObjectRef) -> str | None:
        """The target's wait-ready, added when missing (a noop target); None for targets that cannot
        be waited for: deleted ones, and Jobs that already ran."""
        change = self.changes.get(ref)
        if change is not None and (change.action == "delete" or change.transition == "already-ran"):
            return None
        handles = self.handles.setdefault(ref, _Handles(first=""))
        if handles.ready is None:
            handles.ready = self.add_ready(ref, change, handles.write)
        return handles.ready

    def add_use_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        """What a pod spec names is written first; a PVC created now is also ready first (Bound, or
        Pending in a WaitForFirstConsumer class, which the pod's scheduling binds)."""
        for ref, change in active.items():
            for used in used_objects(change.desired) if change.action != "delete" else []:
                target = self.handles.get(used)
                if target is None:
                    continue
                created = active[used].action in ("create", "replace")
                if used.kind == PERSISTENT_VOLUME_CLAIM.kind and created:
                    self.edge(self.ready_task(used), self.handles[ref].write)
                else:
                    self.edge(target.write, self.handles[ref].write)

    def add_release_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        """What a deleted object's live pod spec names — and a StatefulSet's claim templates made — goes
        after it is gone."""
        claims = [c.live for ref, c in active.items() if ref.kind == PERSISTENT_VOLUME_CLAIM.kind and c.live]
        for ref, change in active.items():
            if change.action not in ("delete", "replace"):
                continue
            made = [ref_of(claim) for claim in stateful_claims(change.live, claims)]
            for used in [*used_objects(change.live), *made]:
                target = active.get(used)
                if target is None or (_is_prune(change) and not _is_prune(target)):
                    continue
                if used.kind == PERSISTENT_VOLUME_CLAIM.kind or target.action == "delete":
                    self.edge(self.handles[ref].gone, self.handles[used].first)

    def add_dependency_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        for ref, change in active.items():
            if change.action == "delete":
                for target in depends_on(change.live):
                    if target in active and active[target].action == "delete":
                        self.edge(self.handles[ref].gone, self.handles[target].first)
                continue
            for target in depends_on(change.desired):
                self.edge(self.ready_task(target), self.handles[ref].write)

    def add_fork_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        for ref, change in active.items():
            source = clone_source(change.desired) if change.action in ("create", "replace") else None
            if source is not None:
                self.edge(self.ready_task(source), self.handles[ref].write)

    def add_rebase_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        rebased = [
            c
            for c in active.values()
            if c.transition == "rebase" and c.ref.kind == PERSISTENT_VOLUME_CLAIM.kind
        ]
        for old in (c for c in rebased if c.action == "delete"):
            for new in (c for c in rebased if c.action == "create" and c.owner == old.owner):
                self.edge(self.handles[old.ref].gone, self.handles[new.ref].write)

    def add_kind_order_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        writes = {
            ref: handles.write
            for ref, handles in self.handles.items()
            if handles.write and ref in active and ref.kind != NAMESPACE.kind  # ensured before all
        }
        first = [w for ref, w in writes.items() if ref.group_kind in FIRST_RANK]
        before = [w for ref, w in writes.items() if ref.group_kind in BEFORE_WORKLOADS]
        workloads = [w for ref, w in writes.items() if pod_spec(active[ref].desired) is not None]
        for write in first:
            for later in writes.values():
                if later not in first:
                    self.edge(write, later)
        for write in before:
            for later in workloads:
                self.edge(write, later)

    def add_custom_resource_edges(self, active: Mapping[ObjectRef, Change]) -> None:
        """A custom resource after its CRD is Established; pruned, before its CRD goes."""
        crds = {
            (info.group, info.kind): ref
            for ref, change in self.changes.items()
            if ref.group_kind in FIRST_RANK
            for info in declared_kinds([change.desired or change.live or {}])
        }
        for ref, change in active.items():
            crd = crds.get((ref.group, ref.kind))
            if crd is None or crd not in active:
                continue
            if change.action == "delete":
                if active[crd].action == "delete":
                    self.edge(self.handles[ref].gone, self.handles[crd].first)
            else:
                self.edge(self.ready_task(crd), self.handles[ref].write)

    def drop_terminal_waits(self) -> None:
        for node_id in [
            n for n, node in self.nodes.items() if node.action == "wait-ready" and not node.failed
        ]:
            if self.graph.out_degree(node_id) == 0:
                self.graph.remove_node(node_id)
                del self.nodes[node_id]

    def add_prune_edges(self) -> None:
        prunes = {n for n, node in self.nodes.items() if node.prune}
        others = [n for n in self.nodes if n not in prunes]
        sinks = [n for n in others if not any(s not in prunes for s in self.graph.successors(n))]
        for node_id in prunes:
            if self.nodes[node_id].action == "delete":
                for sink in sinks:
                    self.edge(sink, node_id)

    def solved(self) -> ExecutionPlan:
        import networkx as nx

        if not nx.is_directed_acyclic_graph(self.graph):
            cycle = " -> ".join(edge[0] for edge in nx.find_cycle(self.graph))
            raise GraphError(f"dependency cycle: {cycle}")
        reduced = nx.transitive_reduction(self.graph)
        order = list(nx.lexicographical_topological_sort(reduced, key=self.sort_key))
        position = {node_id: index for index, node_id in enumerate(order)}
        tasks = tuple(
            self.task(node_id, sorted(reduced.predecessors(node_id), key=position.__getitem__))
            for node_id in order
        )
        return ExecutionPlan(plan=self.changeset.plan, namespace=self.changeset.namespace, tasks=tasks)

    def sort_key(self, node_id: str) -> str:
        node = self.nodes[node_id]
        return f"{node.ref}\0{STEPS.index(node.action)}"

    def task(self, node_id: str, predecessors: list[str]) -> Task:
        node = self.nodes[node_id]
        return Task(
            id=node_id,
            action=node.action,
            ref=node.ref,
            predecessors=tuple(predecessors),
            timeout=node.timeout,
            manifest=node.manifest,
            parent=node.parent,
            propagation=node.propagation,
            runtime_id=node.runtime_id,
            policies=node.policies,
            failed=node.failed,
        )


def solve(
    changes: ChangeSet,
    *,
    wait: bool = True,
    timeouts: Mapping[str, float] | None = None,
    default_timeout: float | None = None,
) -> ExecutionPlan:
    """Order a ChangeSet into tasks. `wait=False` leaves out the wait-ready tasks nothing depends on;
    `timeouts` maps a workload or sandbox name (a Change's `owner`) to its plan `timeout` in seconds,
    and every other wait gets `default_timeout` (None: no limit)."""
    return _Builder(changes, wait=wait, timeouts=timeouts or {}, default_timeout=default_timeout).build()

"""`validate`, `render` and `plan`: load each plan file once, render it against the runtime's default
namespace, read its live objects and diff them (optionally checked by a server-side dry run), and order
the changes into the execution plan that `apply` runs and `plan --graph` prints. Writes nothing to the
cluster, but for `plan --out`'s digest key when a plan with Secret values has none yet (`saving_key`,
a preconditioned write of the parent that needs no run lock), and never takes the run lock: `plan --out`
records the cluster and the lock holder it saw. `apply` and `status` build on the loaded, rendered and
planned plans from here."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from planner.app.custom_kinds import with_served_kinds
from planner.app.references import (
    config_key,
    missing_references,
    needs_config_key,
    with_roll_reasons,
)
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, chart_capabilities, secret_refs
from planner.dataloss import refuse_data_loss
from planner.diff import ChangeSet, diff, server_predicted
from planner.errors import (
    ApiError,
    EmptyPlanError,
    ForbiddenError,
    NotFoundError,
    OwnershipError,
    PlanError,
    PlannerError,
)
from planner.generations import Generation, generation_of, parent_with_runs, record_name, recorded_runs
from planner.graph import ExecutionPlan, solve
from planner.kinds import NAMESPACE, SECRET, declared_kinds
from planner.kube.client import KubeClient
from planner.kube.discovery import Kinds
from planner.live import LiveState, get_or_none, read_live
from planner.monitor.pool_members import PoolStatus, pool_status
from planner.objects import FIELD_MANAGER, ObjectRef
from planner.plan import LoadResult, Plan, Source, load_plans
from planner.provenance import AppliedCharts, with_chart_changes, with_origins
from planner.render import render
from planner.savedplan import needs_key, saved_plan, write_saved_plans
from planner.state.applyset import digest_key, parent_ref
from planner.state.runlock import Holder, read_holder
from planner.unready import with_unready
from planner.writes import KubeWriter, new_digest_key

DEFAULT_APPLY_TIMEOUT = 300.0


def recorded_plan(generation: Generation) -> RenderedPlan:
    """A recorded generation's closure as a plan to apply (`rollback`): rendered already, so nothing is
    rendered again; the plan carries only its name and namespace."""
    source = Source(file=f"generation {generation.number} of plan {generation.plan}")
    plan = Plan(name=generation.plan, namespace=generation.namespace, runtime="k8s", source=source)
    return RenderedPlan(plan, generation.namespace, tuple(generation.closure), recorded=generation)


def render_plans(paths: Sequence[str | Path], *, target: Target) -> tuple[LoadResult, list[RenderedPlan]]:
    """Load plans and render each against the runtime's default namespace (docs/design.md §3)."""
    loaded = load_plans(paths, secret_refs=secret_refs(target), capabilities=chart_capabilities(target))
    return loaded, render_loaded(loaded, target.default_namespace())


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    allow_data_loss: bool = False
    adopt: bool = False
    rerun: frozenset[str] = frozenset()
    server_dry_run: bool = False
    allow_empty: bool = False
    # How a refusal to destroy data says to accept it (None: `--allow-data-loss`); a Plan object's
    # reconcile names `reconcile.allowDataLoss`. Never recorded in a saved plan.
    data_loss_consent: str | None = None

    def recorded(self) -> dict[str, Any]:
        """The options a saved plan carries, so `apply FILE` plans exactly as `plan --out` did."""
        return {
            "allow_data_loss": self.allow_data_loss,
            "adopt": self.adopt,
            "rerun": sorted(self.rerun),
            "allow_empty": self.allow_empty,
        }

    @classmethod
    def from_recorded(cls, recorded: dict[str, Any]) -> PlanOptions:
        return cls(
            allow_data_loss=bool(recorded.get("allow_data_loss")),
            adopt=bool(recorded.get("adopt")),
            rerun=frozenset(recorded.get("rerun") or ()),
            allow_empty=bool(recorded.get("allow_empty")),
        )


@dataclass(frozen=True)
class PlannedChanges:
    rendered: RenderedPlan
    live: LiveState
    changeset: ChangeSet
    pools: tuple[PoolStatus, ...] = ()  # its warm pools' members now (`plan` shows them; apply makes none)

    @property
    def execution(self) -> ExecutionPlan:
        """The task list a plain `apply` of this plan runs (`plan --graph` prints it)."""
        return execution_plan(self)

    def saved(
        self, options: PlanOptions, key: bytes | None, *, root: Path, lock: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The saved-plan document, Secret values digested under `key` (see `saving_key`), with the
        holder of the plan's lock `plan` saw, if any; `root` is the directory its plan file's path is
        relative to (where `plan` runs)."""
        recorded = self.rendered.recorded
        document = saved_plan(
            files=[] if recorded else [self.rendered.plan.source.file],
            root=str(root.absolute()),
            changeset=self.changeset,
            desired=self.rendered.manifests,
            live=self.live,
            options=options.recorded(),
            key=key,
            lock=lock,
        )
        # A rollback's plan is made again from its generation's record, not from files.
        return document | ({"rollback": {"generation": recorded.number}} if recorded else {})

    @property
    def needs_key(self) -> bool:
        """Whether a saved plan of it digests Secret values (and so needs the plan's digest key)."""
        return needs_key(self.rendered.manifests, self.live)

    @property
    def parent_ref(self) -> ObjectRef:
        return parent_ref(self.changeset.plan, self.changeset.namespace)


def execution_plan(
    planned: PlannedChanges, *, wait: bool = True, timeout: float | None = DEFAULT_APPLY_TIMEOUT
) -> ExecutionPlan:
    """The tasks `apply` runs for one planned plan, each wait with its workload's or sandbox's own
    `timeout`, else `timeout` (None: no limit); `wait=False` (`--no-wait`) leaves out the wait-ready
    tasks nothing depends on. `plan --graph` prints the same list, with apply's defaults."""
    return solve(planned.changeset, wait=wait, timeouts=planned.rendered.timeouts, default_timeout=timeout)


def plan(
    paths: Sequence[str | Path],
    *,
    target: Target,
    options: PlanOptions,
    probe_foreign: bool = True,
    created_by_run: frozenset[str] = frozenset(),
    pools: bool = True,
) -> tuple[LoadResult, list[PlannedChanges]]:
    """Load and render the plan files, then plan each (`plan_rendered`), with its warm pools' members
    now unless not asked for `pools`. Writes nothing."""
    loaded, rendered = render_plans(paths, target=target)
    planned = plan_rendered(
        rendered,
        client=target.client,
        options=options,
        probe_foreign=probe_foreign,
        created_by_run=created_by_run,
    )
    if not pools:
        return loaded, planned
    return loaded, [dataclasses.replace(each, pools=_pools(each.rendered, target.client)) for each in planned]


def _pools(rendered: RenderedPlan, client: KubeClient) -> tuple[PoolStatus, ...]:
    return tuple(pool_status(client, rendered.namespace, pool) for pool in rendered.plan.warm_pools)


def save_plans(
    path: Path, planned: Sequence[PlannedChanges], options: PlanOptions, *, target: Target
) -> list[str]:
    """`plan --out`: one saved-plan file for every plan of the run, bound to this cluster, each plan's
    Secret values digested under its digest key (`saving_key`), each plan with the holder of its lock if
    one was writing it. Returns a warning per plan that was locked."""
    documents, warnings = [], []
    root = Path.cwd()
    for each in planned:
        held = read_holder(target.client, each.rendered.plan.name, each.changeset.namespace)
        lock = None
        if held is not None:
            holder, now = held
            lock = {"holder": holder.identity, "since": holder.since()}
            warnings.append(_locked_warning(each.rendered.plan.name, holder, now))
        documents.append(each.saved(options, saving_key(each, target.client), root=root, lock=lock))
    write_saved_plans(path, documents, cluster=target.identity())
    return warnings


def _locked_warning(plan: str, holder: Holder, now: datetime) -> str:
    expired_for = holder.expired_for(now)
    if expired_for is not None:
        return (
            f"plan {plan} is locked by {holder.described(now)}, expired {expired_for:.0f}s ago: that run "
            "probably died, and the next apply takes its lock over"
        )
    return (
        f"plan {plan} is being applied by {holder.described(now)}: the saved plan may be stale by the "
        "time it is applied"
    )


def saving_key(planned: PlannedChanges, client: KubeClient) -> bytes | None:
    """The digest key a saved plan of `planned` needs: none without Secret values; else the one its
    ApplySet parent holds, or — the one write `plan` ever makes, and only with `--out` — a new one
    added to the parent (created holding only the key, listing no member, when the plan was never
    applied). Without the key in the cluster `apply FILE` could not check the values, and with it in
    the file anyone could test guesses (docs/gitops.md)."""
    if not planned.needs_key:
        return None
    key = digest_key(planned.live.parent)
    if key is not None:
        return key
    ref = planned.parent_ref
    try:
        return KubeWriter(client).ensure_digest_key(ref, planned.changeset.digest_key)
    except NotFoundError as missing:
        raise PlannerError(
            f"plan --out: namespace {ref.namespace} does not exist, so plan {ref.name} has nowhere to keep "
            "the key that hides its Secret values in the saved plan; create the namespace (or apply the "
            "plan once), then plan again"
        ) from missing
    except ForbiddenError as forbidden:
        raise PlannerError(
            f"plan --out: plan {ref.name} has Secret values and no digest key yet, and writing one into "
            f"{ref.described} is forbidden ({forbidden}); apply the plan once (apply adds the key), or "
            "let this identity create and update that secret, then plan again"
        ) from forbidden


def plan_rendered(
    rendered: Sequence[RenderedPlan],
    *,
    client: KubeClient,
    options: PlanOptions,
    probe_foreign: bool = True,
    created_by_run: frozenset[str] = frozenset(),
    progress: Callable[[int, int], None] | None = None,
    references_checked: bool = False,
    locked: bool = False,
) -> list[PlannedChanges]:
    """Read the live objects of each rendered plan and diff them (`progress(done, total)` hears of each
    plan before it is read). Writes nothing. Without
    `probe_foreign`, same-named objects the plan does not own are found only when a create meets them.
    The namespaces in `created_by_run` were created by this run before it planned (its run locks' Leases
    live there: `planner.app.applying.create_lock_namespaces`): they are planned as missing, as they were when the run began, so the plan
    creates them as it would have — and matches a saved plan made before. A recorded closure
    (`rollback`) is diffed with the runs its generation recorded counted as ran (the parent task then
    records them again), so its Jobs that ran then do not run again — also when the parent, and the
    runs it recorded, were deleted. `locked`: the caller holds each plan's run lock, whose Lease lives
    in the plan's namespace, so that namespace exists and is not listed."""
    results: list[PlannedChanges] = []
    for each in rendered:
        if progress is not None:
            progress(len(results), len(rendered))
        namespace = each.namespace
        each = _with_kinds_served(client, each)
        live = read_live(
            client,
            desired=each.manifests,
            plan=each.plan.name,
            namespace=namespace,
            probe_foreign=probe_foreign,
            known_namespaces=frozenset({namespace}) if locked else frozenset(),
        )
        if live.namespaces is not None and created_by_run:
            live = dataclasses.replace(live, namespaces=live.namespaces - created_by_run)
        if not options.allow_empty:
            check_not_empty(each, live)
        each, new_key = _with_references_checked(client, each, live, checked=references_checked)
        restored = recorded_runs(each.recorded, live.parent) if each.recorded is not None else ()
        judged = live
        if restored:
            # A deleted parent still gets the recorded runs for the diff's judgement, but stays absent
            # in the plan: the parent task creates it, holding them.
            judged = dataclasses.replace(live, parent=parent_with_runs(live.parent or {}, restored))
            if live.parent is not None:
                live = judged
        changeset = diff(
            each.manifests,
            judged,
            plan=each.plan.name,
            namespace=namespace,
            allow_data_loss=options.allow_data_loss,
            adopt=options.adopt,
            rerun=options.rerun,
            allow_cluster_scoped=each.plan.allow_cluster_scoped,
        )
        if restored:
            changeset = dataclasses.replace(changeset, unrecorded=changeset.unrecorded + restored)
        if new_key is None and digest_key(live.parent) is None and _has_chart_secrets(each.plan):
            new_key = new_digest_key()  # the parent write keeps it: the record's secret digests need it
        changeset = with_roll_reasons(dataclasses.replace(changeset, digest_key=new_key))
        changeset = with_origins(with_unready(changeset, time.time()), each.plan)
        # A plan without charts reads the applied record only when it deletes something: a chart it
        # removed deletes what that chart rendered.
        applied = applied_charts(client, changeset) if each.plan.charts or _deletes(changeset) else None
        key = new_key or digest_key(live.parent)
        changeset = with_chart_changes(changeset, each.plan, applied, key)
        if options.server_dry_run:
            changeset = server_dry_run(client, changeset)
        results.append(PlannedChanges(each, live, changeset))
    return results


def _has_chart_secrets(plan: Plan) -> bool:
    return any(chart.secrets for chart in plan.charts)


def _deletes(changeset: ChangeSet) -> bool:
    return any(change.action == "delete" for change in changeset.changes)


def plan_digest_key(planned: PlannedChanges) -> bytes | None:
    """The digest key the plan's parent holds once applied: its own, or the new one the apply writes."""
    return planned.changeset.digest_key or digest_key(planned.live.parent)


def applied_charts(client: KubeClient, changeset: ChangeSet) -> AppliedCharts | None:
    """The charts of the generation the cluster is at, as its record keeps them; None when none is
    recorded, or its record cannot be read (then no chart change is told: the object changes still are)."""
    at = changeset.generation
    if at is None:
        return None
    try:
        secret = get_or_none(client, SECRET, changeset.namespace, record_name(changeset.plan, at.number))
    except ForbiddenError:
        return None
    generation = generation_of(secret) if secret is not None else None
    if generation is None:
        return None
    return AppliedCharts(charts=generation.charts, inputs=generation.chart_inputs)


def checked_before_writing(client: KubeClient, rendered: Sequence[RenderedPlan]) -> list[RenderedPlan]:
    """The plan-time checks that ask the cluster, made before a run writes anything — even the
    namespaces its run locks need: every kind a raw manifest holds is served (each plan placed as
    discovery says), and what workloads read exists (PlanError, at the file positions, otherwise).
    `plan_rendered` then leaves out the references (`references_checked`)."""
    checked = [_with_kinds_served(client, each) for each in rendered]
    problems = [
        problem
        for each in checked
        if not each.as_given
        for problem in missing_references(client, each.plan, each.default_namespace)
    ]
    if problems:
        raise PlanError(problems)
    return checked


def _with_kinds_served(client: KubeClient, rendered: RenderedPlan) -> RenderedPlan:
    """The plan rendered again when its raw manifests hold kinds only the cluster serves, each placed
    as the cluster's discovery says (PlanError for one it does not serve, or a cluster-scoped one the
    plan does not allow). A recorded or fixed closure (`rollback`, a prune) is applied as it is."""
    if rendered.as_given:
        return rendered
    plan = with_served_kinds(client, rendered.plan)
    if plan is rendered.plan:
        return rendered
    return dataclasses.replace(rendered, plan=plan, manifests=tuple(render(plan, rendered.default_namespace)))


def _with_references_checked(
    client: KubeClient, rendered: RenderedPlan, live: LiveState, *, checked: bool = False
) -> tuple[RenderedPlan, bytes | None]:
    """Refuse (PlanError) a plan whose workloads read objects the cluster lacks; then the plan rendered
    with its digest key when a workload reads one of its Secrets, and that key when the parent has none
    yet (the parent write keeps it). A recorded or fixed closure (`rollback`, a prune) is applied as
    it is."""
    if rendered.as_given:
        return rendered, None
    problems = [] if checked else missing_references(client, rendered.plan, rendered.default_namespace)
    if problems:
        raise PlanError(problems)
    if not needs_config_key(rendered.plan):
        return rendered, None
    key, new = config_key(live.parent)
    if key is None:
        return rendered, None
    manifests = tuple(render(rendered.plan, rendered.default_namespace, config_key=key))
    return dataclasses.replace(rendered, manifests=manifests), key if new else None


def check_data_loss(planned: Sequence[PlannedChanges], *, consent: str | None = None) -> None:
    """Refuse (DataLossError, naming each) changes of any plan that destroy data without
    `--allow-data-loss` (or the `consent` given): `apply` before it writes anything, `plan` once it has
    printed the plan."""
    refuse_data_loss((each.changeset for each in planned), consent=consent)


def check_conflicts(planned: Sequence[PlannedChanges]) -> None:
    """Refuse (OwnershipError, naming each) ownership conflicts of any plan, once `plan` has printed it:
    on stderr too, where a script reads why it exited 1."""
    found = [f"  plan {each.changeset.plan}: {c}" for each in planned for c in each.changeset.conflicts]
    if found:
        count = f"{len(found)} ownership conflict{'s' if len(found) > 1 else ''}"
        raise OwnershipError(f"{count} (apply would fail on them):\n" + "\n".join(found))


def check_not_empty(rendered: RenderedPlan, live: LiveState) -> None:
    """Refuse a plan that declares nothing (Namespaces aside) while its ApplySet still has members:
    applying it would prune them all, which is almost never what an emptied plan file meant."""
    declares = any(m.get("kind") != NAMESPACE.kind for m in rendered.manifests)
    if declares or not live.members:
        return
    raise EmptyPlanError(
        f"plan {rendered.plan.name} declares nothing, and applying it would delete all "
        f"{len(live.members)} objects it manages; re-run with --allow-empty to accept it"
    )


def server_dry_run(client: KubeClient, changeset: ChangeSet) -> ChangeSet:
    """Each create and update as the server would apply it (`dryRun=All`), shown in place of the
    client-side prediction. A server rejection (422, a webhook) fails the plan, naming the object."""
    changes = []
    kinds = Kinds(client, declared=declared_kinds(c.desired for c in changeset.changes if c.desired))
    for change in changeset.changes:
        if change.action in ("create", "update") and change.desired is not None:
            try:
                result = client.server_side_apply(
                    kinds.for_manifest(change.desired),
                    change.desired,
                    field_manager=FIELD_MANAGER,
                    force=True,
                    dry_run=True,
                )
            except NotFoundError:
                result = None  # its namespace is created by the same apply: nothing to ask yet
            except ApiError as rejected:
                raise PlannerError(
                    f"{change.ref}: the server rejects it in a dry run: {rejected}"
                ) from rejected
            change = server_predicted(change, result) if result is not None else change
        changes.append(change)
    return dataclasses.replace(changeset, changes=tuple(changes))

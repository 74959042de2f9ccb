"""`rollback`: apply a recorded generation's closure again, through the path every apply takes.

The closure is already rendered, so it enters the pipeline where a render would leave it
(`planning.recorded_plan`): diffed against live (prune of what it does not hold, ownership rules,
data-loss refusal), solved into the DAG, executed with readiness waits, under the plan's run lock, and
recorded as a new generation that names the one it rolled back to. Its Jobs whose run-key ran then are
not run again (`plan_rendered` counts the generation's recorded runs as ran, even when the parent
holding the later runs was deleted) unless `--rerun` names them.

Two things a record cannot give back are refused before anything is written: a Secret the record kept
no data for (`--no-secret-history`) that would have to be written, and — without `--allow-data-loss` —
a sandbox rootfs taken back to an earlier generation (that volume is created afresh: disks are not
restored). `--dry-run` plans only, takes no lock, and can save the plan (`--out`) for `apply FILE`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from planner.app.applying import AppliedPlan, Applier, ApplyOptions, unheard
from planner.app.history import current, list_generations, read_generation
from planner.app.planning import PlannedChanges, plan_rendered, recorded_plan, save_plans
from planner.app.selector import selected_plan
from planner.app.target import Target
from planner.errors import DataLossError, PlannerError, UsageError
from planner.events import EventSink
from planner.generations import Generation, rollback_target, rootfs_moves_back, secrets_without_data
from planner.kube.client import KubeClient
from planner.state.runlock import Notice, holding


@dataclass(frozen=True, kw_only=True)
class RollbackOptions:
    """`to`: the generation to go back to (None: the newest converged one before the current);
    `dry_run` plans only; `out` saves that plan for `apply FILE`."""

    apply: ApplyOptions = dataclasses.field(default_factory=ApplyOptions)
    to: int | None = None
    dry_run: bool = False
    out: Path | None = None


@dataclass(frozen=True, kw_only=True)
class RollbackResult:
    """The generation gone back to, its plan against live, what applying it did (None for a dry run),
    sentences the person should read (disks not restored), and why the lock was lost, if it was."""

    generation: Generation
    planned: PlannedChanges
    applied: AppliedPlan | None = None
    recorded: Generation | None = None  # the new generation the rollback was recorded as
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    lost: str | None = None

    @property
    def ok(self) -> bool:
        return self.lost is None and (self.applied is None or self.applied.result.ok)


def rollback(
    plan: str, *, target: Target, options: RollbackOptions, sink: EventSink, notice: Notice = unheard
) -> RollbackResult:
    ref, client = selected_plan(plan, target=target), target.client
    plan, namespace, target = ref.name, ref.namespace, target.in_namespace(ref.namespace)
    if options.dry_run:
        generation = chosen_generation(client, plan, namespace, options.to)
        planned, notes = _planned(generation, client=client, options=options)
        warnings = (
            save_plans(options.out, [planned], options.apply.plan, target=target) if options.out else []
        )
        return RollbackResult(generation=generation, planned=planned, notes=notes, warnings=tuple(warnings))
    with holding(client, [(plan, namespace)], options=options.apply.lock, notice=notice) as locks:
        generation = chosen_generation(client, plan, namespace, options.to)
        planned, notes = _planned(generation, client=client, options=options)
        applier = Applier.for_target(target, options=options.apply, sink=sink, stop=locks.lost)
        (applied,) = applier.execute_all([planned])
        return RollbackResult(
            generation=generation,
            planned=planned,
            applied=applied,
            recorded=applier.recorded[0] if applier.recorded else None,
            notes=notes,
            lost=locks.lost(),
        )


def chosen_generation(client: KubeClient, plan: str, namespace: str, to: int | None) -> Generation:
    """Generation `to`, else the newest converged one before the current; refused when the record
    cannot be applied (its closure did not fit it)."""
    number = to
    if number is None:
        at = current(client, plan, namespace)
        listed = list_generations(client, plan, namespace)
        number = rollback_target(listed, at.number if at else None)
        if number is None:
            where = f"generation {at.number}" if at else "the newest recorded generation"
            raise UsageError(
                f"plan {plan} has no converged generation before {where} in namespace {namespace} "
                "(planner history lists them); name one with --to"
            )
    generation = read_generation(client, plan, namespace, number)
    if not generation.complete:
        raise UsageError(
            f"generation {number} of plan {plan} recorded only its objects' hashes (its closure was too "
            "big for the record), so it cannot be rolled back to"
        )
    return generation


def _planned(
    generation: Generation, *, client: KubeClient, options: RollbackOptions
) -> tuple[PlannedChanges, tuple[str, ...]]:
    plan_options = options.apply.plan
    rendered = recorded_plan(generation)
    (planned,) = plan_rendered([rendered], client=client, options=plan_options, probe_foreign=True)
    changes = planned.changeset.changes
    missing = secrets_without_data(generation, changes)
    if missing:
        raise PlannerError(
            f"generation {generation.number} of plan {generation.plan} was recorded without Secret data "
            f"(--no-secret-history), and rolling back would have to write {', '.join(missing)}: restore "
            "those Secrets from their source and apply the plan files instead"
        )
    moves = rootfs_moves_back(changes)
    if moves and not plan_options.allow_data_loss:
        raise DataLossError(
            [
                (f"sandbox {m.sandbox}", f"rootfs back from g{m.before} to g{m.after}: {_NOT_RESTORED}")
                for m in moves
            ]
        )
    notes = tuple(
        f"sandbox {m.sandbox}: rootfs back from g{m.before} to g{m.after}: {_NOT_RESTORED}" for m in moves
    )
    return planned, notes


_NOT_RESTORED = (
    "the earlier volume is created afresh (disk contents are not restored) and the later one deleted"
)

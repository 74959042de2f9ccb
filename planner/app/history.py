"""A plan's generations in the cluster: recording one after an apply (under the caller's run lock),
pruning the oldest past `--history-max`, and reading them back for `history`, `diff-generations` and
`rollback` (`planner.generations` says what a record holds; docs/history.md why).

Listing reads the records' metadata only (labels and annotations say what the table shows); one
generation's whole record is one GET."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planner.app.selector import selected_plan
from planner.app.target import Target
from planner.changeset import ChangeSet
from planner.errors import ForbiddenError, NotFoundError, UsageError
from planner.execute import ExecutionResult
from planner.generations import (
    CONVERGED,
    DEFAULT_HISTORY_MAX,
    FAILED,
    Generation,
    Listed,
    ObjectDelta,
    Who,
    changed_inputs,
    changes_of,
    closure_of,
    diff_closures,
    expired,
    fitted,
    generation_of,
    hashes_of,
    input_hashes,
    listed_of,
    manifest_file_hashes,
    record_manifest,
    record_name,
    record_selector,
    written_changes,
)
from planner.kinds import SECRET
from planner.kube.client import METADATA_LIST_ACCEPT, KubeClient, resource_path
from planner.live import get_or_none
from planner.objects import Manifest, ObjectRef, metadata_of
from planner.plan.model import Plan, Source
from planner.state.applyset import (
    CurrentGeneration,
    current_generation,
    encode_run_record,
    parent_ref,
    run_keys_of,
    run_records,
)
from planner.writes import GenerationTaken, KubeWriter

REVISION_ENVIRONMENT = ("GIT_COMMIT", "GITHUB_SHA")
GIT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class HistoryOptions:
    """How applies record generations: `keep` (`--history-max`) records per plan, Secrets' data kept
    unless `secret_data` is False (`--no-secret-history`), `revision` given (`--source-revision`) or
    found (None: look in the environment, then the plan file's git checkout)."""

    keep: int = DEFAULT_HISTORY_MAX
    secret_data: bool = True
    revision: str | None = None


@dataclass(frozen=True, kw_only=True)
class Recording:
    """What one apply of one plan records beside its result: its input and who ran it."""

    plan: str
    namespace: str
    manifests: Sequence[Manifest]
    sources: Mapping[str, str]
    inputs: Mapping[str, str]  # `{file: sha256}`: the sources' and the manifest files' (generations.py)
    timeouts: Mapping[str, float]
    revision: str | None
    who: Who
    rolled_back_from: int | None = None
    charts: Mapping[str, str] = field(default_factory=dict)  # release → `<chart>-<version>`
    chart_inputs: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict
    )  # `provenance.recorded_charts`


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def who_for(target: Target) -> Who:
    """The kubeconfig user of the chosen context ("" in-cluster) and this host's name."""
    return Who(user=target.user, host=socket.gethostname())


def plan_inputs(plan: Plan) -> dict[str, str]:
    """`{file: sha256}` of every file that went into `plan`: its plan files' masked texts, then the
    manifest files it read."""
    sources = plan_sources(plan.source)
    return input_hashes(sources) | manifest_file_hashes(plan.manifests, set(sources))


def plan_sources(source: Source) -> dict[str, str]:
    """The plan's input files as a record keeps them: the plan file, then each file it imported, as the
    loader read them, literal secret values masked (nothing for a plan that did not come from a file)."""
    return source.inputs


def source_revision(file: str, given: str | None, *, imported: Iterable[str] = ()) -> str | None:
    """`--source-revision`, else `GIT_COMMIT`/`GITHUB_SHA`, else `git rev-parse HEAD` of the checkout
    holding the plan file, `-dirty` appended (as `git describe --dirty` does) when the plan file or any
    file it imported (`imported`: an environment's base, in the same repository) differs from HEAD
    (changed, staged or untracked); None when none is known."""
    if given:
        return given
    for name in REVISION_ENVIRONMENT:
        if os.environ.get(name):
            return os.environ[name]
    path = Path(file).resolve()
    if not path.is_file():  # a Plan object (`plan/NAME -n NS`): no checkout holds it
        return None
    revision = _git(path.parent, "rev-parse", "HEAD")
    if not revision:
        return None
    inputs = [path.name, *(str(Path(other).resolve()) for other in imported)]
    changed = _git(path.parent, "status", "--porcelain", "--untracked-files=all", "--", *inputs)
    return f"{revision}-dirty" if changed else revision


def _git(directory: Path, *args: str) -> str | None:
    """What `git ARGS` prints in `directory`, stripped; None when it fails or git is missing."""
    try:
        found = subprocess.run(
            ["git", *args],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


def record(
    writer: KubeWriter,
    recording: Recording,
    *,
    changeset: ChangeSet,
    result: ExecutionResult,
    started: str,
    options: HistoryOptions,
    settling: Callable[[Manifest], Manifest] | None = None,
) -> Generation | None:
    """Record the apply as the plan's next generation, name it on the parent (settling the parent in
    the same write when `settling` is given), prune past `keep`. Only for an apply that set out to
    write something and wrote something: a run stopped before its first write (its lock lost, Ctrl-C)
    records nothing it did not do; None then, and nothing was settled. The caller holds the plan's run
    lock, so the parent is as its writer last wrote it."""
    ref = parent_ref(recording.plan, recording.namespace)
    if not result.ok and not _written(result, writer) - {ref}:  # only the parent's first write: nothing done
        return None
    client = writer.client
    parent = writer.parent(ref)
    known = current_generation(parent)
    closure_runs = run_keys_of(recording.manifests)
    runs = {
        key: encode_run_record(run)
        for key, run in run_records(parent).items()
        if run.ran and key in closure_runs
    }
    failed = tuple(o.task for o in (*result.failed, *result.skipped))

    def numbered(listed: list[Listed]) -> Generation:
        number = max([g.number for g in listed] + [known.number if known else 0]) + 1
        previous = _last_hashes(client, recording, listed)
        return Generation(
            plan=recording.plan,
            namespace=recording.namespace,
            number=number,
            result=CONVERGED if result.ok else FAILED,
            failed_tasks=failed,
            message=result.stopped,
            started=started,
            finished=now(),
            who=recording.who,
            revision=recording.revision,
            rolled_back_from=recording.rolled_back_from,
            sources=recording.sources,
            inputs=recording.inputs,
            timeouts=recording.timeouts,
            closure=closure_of(recording.manifests, secret_data=options.secret_data),
            hashes=hashes_of(recording.manifests),
            changes=changes_of(written_changes(changeset.changes, _written(result, writer), previous)),
            runs=runs,
            charts=recording.charts,
            chart_inputs=recording.chart_inputs,
            secret_data=options.secret_data,
        )

    # A parent naming no generation is almost always a new plan's: its record 1 is created without
    # listing first. Only a name already taken (records an earlier plan of this name left) lists them,
    # and the numbering goes on from theirs.
    listed = [] if known is None else list_generations(client, recording.plan, recording.namespace)
    try:
        generation, recorded = _recorded(writer, numbered(listed))
    except GenerationTaken:
        if known is not None:
            raise
        listed = list_generations(client, recording.plan, recording.namespace)
        generation, recorded = _recorded(writer, numbered(listed))
    if recorded is None:
        return None
    number = generation.number
    writer.mark_generation(ref, CurrentGeneration(number, generation.result), settling=settling)
    converged = [g.number for g in listed if g.result == CONVERGED] + [number] * (
        generation.result == CONVERGED
    )
    for old in expired([g.number for g in listed] + [number], options.keep, converged=converged):
        writer.forget_generation(ObjectRef.of(SECRET, record_name(recording.plan, old), recording.namespace))
    return generation


def _recorded(writer: KubeWriter, generation: Generation) -> tuple[Generation, Manifest | None]:
    """The generation as fitted under the size limit, and its record as created (None: its namespace
    is gone or going)."""
    generation, encoded = fitted(generation)
    return generation, writer.record_generation(record_manifest(generation, encoded))


def _written(result: ExecutionResult, writer: KubeWriter) -> set[ObjectRef]:
    """The objects the run wrote: its finished tasks', and those of failed or interrupted tasks whose
    write the server answered before the wait failed or the run stopped."""
    return {
        outcome.ref
        for outcome in result.outcomes
        if outcome.status in ("done", "not-waited")
        or (outcome.status in ("failed", "interrupted") and writer.written.get(outcome.ref) is not None)
    }


def _last_hashes(client: KubeClient, recording: Recording, listed: list[Listed]) -> Mapping[str, str] | None:
    """The hashes the latest recorded generation rendered; None when none is recorded (or readable)."""
    if not listed:
        return None
    secret = get_or_none(client, SECRET, recording.namespace, record_name(recording.plan, listed[-1].number))
    generation = generation_of(secret) if secret is not None else None
    return generation.hashes if generation is not None else None


def trim_generations(client: KubeClient, plan: str, namespace: str, *, keep: int) -> list[int]:
    """Delete the plan's records past the `keep` newest (what retention keeps after an apply), whether
    or not a generation was just recorded; the numbers deleted. The caller holds the plan's run lock."""
    listed = list_generations(client, plan, namespace)
    converged = [g.number for g in listed if g.result == CONVERGED]
    gone = expired([g.number for g in listed], keep, converged=converged)
    for number in gone:
        try:
            client.request(
                "DELETE", resource_path(SECRET, namespace, record_name(plan, number)), verb="delete"
            )
        except NotFoundError:
            continue
    return gone


# --- reading ------------------------------------------------------------------------------------------


def _records(client: KubeClient, plan: str, namespace: str | None) -> list[Manifest]:
    """The metadata of the plan's generation records in `namespace` (None: every namespace)."""
    page = client.request(
        "GET",
        resource_path(SECRET, namespace),
        query={"labelSelector": record_selector(plan)},
        verb="list",
        accept=METADATA_LIST_ACCEPT,
    )
    return list(page.get("items") or [])


def list_generations(client: KubeClient, plan: str, namespace: str) -> list[Listed]:
    """The plan's recorded generations, oldest first, from their metadata alone."""
    found = [listed_of(item) for item in _records(client, plan, namespace)]
    return sorted((g for g in found if g is not None), key=lambda g: g.number)


def read_generation(client: KubeClient, plan: str, namespace: str, number: int) -> Generation:
    """One generation's whole record; a UsageError naming what is recorded when it is not."""
    secret = get_or_none(client, SECRET, namespace, record_name(plan, number))
    generation = generation_of(secret) if secret is not None else None
    if generation is None or generation.plan != plan:
        known = [g.number for g in list_generations(client, plan, namespace)]
        recorded = ", ".join(map(str, known)) if known else "none"
        raise UsageError(
            f"plan {plan} has no generation {number} in namespace {namespace} (recorded: {recorded})"
        )
    return generation


def current(client: KubeClient, plan: str, namespace: str) -> CurrentGeneration | None:
    """The generation the plan's parent names as current (None: none recorded)."""
    try:
        parent = get_or_none(client, SECRET, namespace, plan)
    except NotFoundError:
        return None
    return current_generation(parent)


# --- the commands -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class History:
    """`planner history PLAN`: the plan's recorded generations, oldest first, and the one the cluster
    is at (None when its parent names none)."""

    plan: str
    namespace: str
    current: CurrentGeneration | None
    generations: list[Listed]


def history(plan: str, *, target: Target) -> History:
    """`plan` selects one plan: a plan file, `NAME` in `-n`'s namespace, or `NS/NAME`. A plan with no
    recorded generation there is a UsageError naming the namespaces where a plan of that name has some
    (a name given without `-n` is looked for in the context's namespace: the plan is elsewhere)."""
    ref, client = selected_plan(plan, target=target), target.client
    shown = History(
        plan=ref.name,
        namespace=ref.namespace,
        current=current(client, ref.name, ref.namespace),
        generations=list_generations(client, ref.name, ref.namespace),
    )
    if shown.generations or shown.current is not None:
        return shown
    elsewhere = namespaces_with_generations(client, ref.name)
    where = (
        f"; plan {ref.name} has generations in namespace {', '.join(elsewhere)} (name it with -n, or as "
        f"{elsewhere[0]}/{ref.name})"
        if elsewhere
        else ", nor in any other namespace"
    )
    raise UsageError(f"plan {ref.name} has no recorded generations in namespace {ref.namespace}{where}")


def namespaces_with_generations(client: KubeClient, plan: str) -> list[str]:
    """The namespaces where a plan of this name has generation records: one LIST of metadata across
    namespaces; none when this identity may not list Secrets everywhere."""
    try:
        records = _records(client, plan, None)
    except ForbiddenError:
        return []
    return sorted({str(metadata_of(item).get("namespace")) for item in records})


def show_generation(plan: str, number: int, *, target: Target) -> Generation:
    """`planner history PLAN --show N`: one generation's whole record."""
    ref = selected_plan(plan, target=target)
    return read_generation(target.client, ref.name, ref.namespace, number)


@dataclass(frozen=True, kw_only=True)
class GenerationDiff:
    """`planner diff-generations PLAN A B`: what changed from generation A's closure to B's."""

    plan: str
    namespace: str
    old: Generation
    new: Generation
    objects: list[ObjectDelta]
    inputs: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (file, how) changed


def diff_generations(plan: str, old: int, new: int, *, target: Target) -> GenerationDiff:
    ref, client = selected_plan(plan, target=target), target.client
    before = read_generation(client, ref.name, ref.namespace, old)
    after = read_generation(client, ref.name, ref.namespace, new)
    return GenerationDiff(
        plan=ref.name,
        namespace=ref.namespace,
        old=before,
        new=after,
        objects=diff_closures(before, after),
        inputs=changed_inputs(before, after),
    )


def history_of(
    plan: str, *, target: Target, show: int | None = None, between: tuple[int, int] | None = None
) -> History | Generation | GenerationDiff:
    """`planner history PLAN`: its generations, or with `show` one of them, or with `between` two compared."""
    if show is not None and between is not None:
        raise UsageError("give --show or --diff, not both")
    if between is not None:
        return diff_generations(plan, *between, target=target)
    if show is not None:
        return show_generation(plan, show, target=target)
    return history(plan, target=target)

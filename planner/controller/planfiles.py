"""Plan files as the controller's source of plans (`--plans PATH...`), keyed by their path.

Every `--poll` the files are looked for again; one is read again only when its content, or that of a
file it imports, or of a secret or manifest file it reads (`valueFrom.file`, `manifestFiles:`), changed:
a digest of them all (`load.input_files`). A new
or changed file that loads queues its reconcile and its pools; one that does not is said, counted as a
failed reconcile and kept with its problem (the web view shows it); a file that went is forgotten.
Each plan is reconciled as `planner reconcile` does (under its run lock, so a controller and a cron
`reconcile` or a person's `apply` never interleave), then an Event on its ApplySet parent Secret
(`Reconciled`, `DriftCorrected`, `ReconcileFailed`) tells how it went.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from planner.app.reconciling import PlanOutcome, ReconcileOptions, reconcile_plan
from planner.app.rendering import RenderedPlan, render_loaded
from planner.app.target import Target, chart_capabilities, secret_refs
from planner.controller.catalog import KeptPlan, PlanCatalog, Report
from planner.controller.health import Heartbeat
from planner.controller.prometheus import ControllerMetrics
from planner.controller.recorder import EventRecorder
from planner.controller.viewmodels import Known
from planner.controller.workers import plan_key, pools_key
from planner.errors import PlannerError
from planner.kube.client import KubeClient
from planner.kube.informer import Informer, Informers
from planner.plan import load_plans
from planner.plan.input_limits import read_capped
from planner.plan.load import find_plan_files, input_files
from planner.workqueue import WorkQueue


def file_digest(path: Path, inputs: tuple[Path, ...]) -> str:
    """sha256 over the plan file and each file it reads (imports, secret and manifest files), each read as a plan file is (regular
    files only, never past the size limit, a FIFO never waited on). One that cannot be read counts as
    its error, so it is reported once, and its coming back (or another error) is a change too."""
    digest = hashlib.sha256()
    for each in (path, *inputs):
        digest.update(b"\0" + os.fsencode(each) + b"\0")
        try:
            digest.update(b"\1" + read_capped(each)[1])
        except OSError as error:
            digest.update(b"\2" + str(error).encode())
    return digest.hexdigest()


class PlanFiles:
    def __init__(
        self,
        paths: Sequence[str],
        catalog: PlanCatalog,
        queue: WorkQueue[str],
        *,
        target: Target,
        default_namespace: str,
        informers: Informers,
        options: ReconcileOptions,
        recorder: EventRecorder,
        metrics: ControllerMetrics,
        report: Report,
        notice: Callable[[str], None],
        stop: threading.Event,
        ticks: Heartbeat,
    ) -> None:
        self.paths, self.catalog, self.queue = paths, catalog, queue
        self.target, self.informers, self.options = target, informers, options
        self.default_namespace = default_namespace
        self.recorder, self.metrics, self.report, self.notice = recorder, metrics, report, notice
        self.stop = stop  # the reconcile in flight stops at it (shutdown, lost leadership)
        self.ticks = ticks  # the loop that polls the files: each file read is progress

    def start(self) -> None:
        """Nothing to start: the files are read by `poll`."""

    def poll(self) -> None:
        """Read every plan file under `--plans`; queue a reconcile (and its pools) for each that is new
        or whose content changed; forget the ones that went."""
        found = {str(f): f for f in find_plan_files(self.paths)}
        known = self.catalog.retain(found)
        for name, path in found.items():
            previous = known.get(name)
            inputs = previous.inputs if previous else ()
            self.ticks.beat(f"reading {name}")
            digest = file_digest(path, inputs)
            if previous is not None and previous.digest == digest:
                continue
            self._read(name, path, digest, inputs)

    def _read(self, name: str, path: Path, digest: str, inputs: tuple[Path, ...]) -> None:
        loaded = self._load(path, digest)
        if loaded.inputs != inputs:  # the plan reads other files now: watch those
            loaded = dataclasses.replace(loaded, digest=file_digest(path, loaded.inputs))
        self.catalog.put(name, loaded)
        if loaded.problem:
            self.notice(f"{name}: {loaded.problem}")
            self.metrics.count_unloadable(name)
            return
        self.queue.add(plan_key(name))
        self.queue.add(pools_key(name))

    def _load(self, path: Path, digest: str) -> KeptPlan:
        inputs = input_files(path)
        try:
            loaded = load_plans(
                [path], secret_refs=secret_refs(self.target), capabilities=chart_capabilities(self.target)
            )
            (rendered,) = render_loaded(loaded, self.default_namespace)
        except (PlannerError, ValueError) as broken:
            return KeptPlan(rendered=None, problem=str(broken), digest=digest, inputs=inputs)
        return KeptPlan(rendered=rendered, digest=digest, inputs=inputs)

    def plan_keys(self, *, periodic: bool = False) -> list[str]:
        """Every plan file's key (each is reconciled at the controller's --interval)."""
        return self.catalog.kept_keys()

    def reconcile(self, key: str) -> bool:
        """Reconcile the plan file and tell how it went; False to retry it (failed, or locked)."""
        rendered = self.catalog.rendered(key)
        if rendered is None:
            return True  # broken or gone: its problem was said when it was read
        outcome = reconcile_plan(
            rendered,
            target=self.target,
            options=self.options,
            notice=self.notice,
            stop=self.stop,
            informers=self.informers,
        )
        self.report(key, key, outcome)
        if outcome.result != "locked":
            self.recorder.on_applyset(outcome)
        return outcome.result not in ("failed", "locked")

    def reconcile_periodic(self, key: str) -> bool:
        """A plan file's periodic reconcile is a full one."""
        return self.reconcile(key)

    def loaded(self, key: str) -> bool:
        return self.catalog.rendered(key) is not None

    def once_keys(self, timeout: float) -> tuple[list[str], bool]:
        """Every plan file read, for one pass: the keys of those that load, and whether all did."""
        self.poll()
        plans = self.catalog.plans()
        keys = [name for name, kept in plans.items() if not kept.problem]
        return keys, len(keys) == len(plans)

    def writer(self, rendered: RenderedPlan) -> KubeClient:
        """Who writes a plan file's warm pool members: the controller."""
        return self.target.client

    def pool_failed(self, key: str, message: str) -> None:
        """A plan file has no object to hold an Event: the log says why its pool is short."""
        del key, message  # the keeper has logged it

    def watches(self) -> tuple[Informer | None, ...]:
        """None: plan files are polled, not watched."""
        return ()

    def known(self) -> list[Known]:
        """Every plan file with its last outcomes (one that does not load with its problem)."""
        kept = self.catalog.snapshot()
        return [
            _known(name, plan, kept.outcomes.get(name), kept.applied.get(name))
            for name, plan in kept.plans.items()
        ]


def _known(name: str, kept: KeptPlan, outcome: PlanOutcome | None, applied: PlanOutcome | None) -> Known:
    rendered = kept.rendered
    if rendered is None:
        return Known(source=name, name=Path(name).name, namespace="", problem=kept.problem)
    return Known(
        source=name,
        name=rendered.plan.name,
        namespace=rendered.namespace,
        rendered=rendered,
        outcome=outcome,
        applied=applied,
    )

"""Recording how planned Jobs ended: whoever watches a Job run (`apply`'s waits, a re-run, the monitor,
the controller) writes its outcome into the run record the ApplySet parent keeps, so it outlives the
Job, then lets the Job go.

A Job's TTL deletes it soon after it finishes, and with it the only place Kubernetes said how it
ended; so planner creates its Jobs holding the finalizer `planner.dev/run-record`, and a Job whose
outcome nobody recorded yet stays (Terminating, its status and pods intact) until someone does.
`RunRecorder` subscribes to the Job informer a command already has (no extra watch), and when a Job
whose run-key it was told about shows `Complete` or `Failed`, or is being deleted before it finished,
a worker thread lists the Job's pods for the failed container's exit code, records the `RunOutcome`
under a resourceVersion precondition (`KubeWriter.record_outcome`) and only then removes the
finalizer (`KubeWriter.release_run`). A Job whose parent is gone (its namespace being deleted) has
nowhere to be recorded and is let go. Recording is idempotent, so apply and a monitor that both saw
the Job finish write once between them, and a restarted monitor never writes again.

The informer's thread only queues: its other subscribers (waits, the monitor's state machines) are
never held up by a write. `close()` lets the queued writes finish. Recording is best effort: a failure
(no permission to update Secrets, the parent deleted meanwhile) is logged as a warning and changes
nothing else, since the run itself is recorded already.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable

from planner.errors import PlannerError
from planner.kinds import POD
from planner.kube.client import KubeClient
from planner.kube.informer import EventType, Informer
from planner.live import list_objects
from planner.monitor.lifecycle import CONTROLLER_UID_LABEL
from planner.objects import ANNOTATION_RUN_KEY, Manifest, ObjectRef, annotations_of, metadata_of, ref_of
from planner.state.applyset import RESULT_FAILED, RunOutcome, final_outcome, holds_run_finalizer, run_outcome
from planner.writes import KubeWriter

SYNC_TIMEOUT = 60.0
log = logging.getLogger(__name__)

_Finished = tuple[ObjectRef | None, Manifest, RunOutcome]  # no parent yet: to be discovered
Discover = Callable[[], Iterable[tuple[ObjectRef, str]]]  # (parent, run-key) of every run recorded now


class RunRecorder:
    """Records the outcome of every Job it sees finish whose run-key `expect` named, into that run-key's
    parent. Thread-safe; `close()` when done. With `discover` (the monitor's), a Job that holds the
    run-record finalizer but whose run-key it was not told about — created by an apply after it started —
    is recorded too: `discover` reads the parents again to find its run's (on the worker thread)."""

    def __init__(self, client: KubeClient, writer: KubeWriter, *, discover: Discover | None = None) -> None:
        self.client, self.writer, self.discover = client, writer, discover
        self._parents: dict[str, ObjectRef] = {}
        self._handled: set[tuple[str, str]] = set()  # (uid, result) queued once
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Finished | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._unsubscribe: list[Callable[[], None]] = []

    def expect(self, parent: ObjectRef, run_keys: Iterable[str]) -> None:
        """Record the outcomes of the Jobs of these run-keys into `parent`."""
        with self._lock:
            self._parents.update(dict.fromkeys(run_keys, parent))

    @property
    def expecting(self) -> bool:
        """Whether any Job's outcome is to be recorded: a run-key was named, or any held Job's may be."""
        with self._lock:
            return bool(self._parents) or self.discover is not None

    def follow(self, jobs: Informer, *, snapshot: bool = False) -> None:
        """Watch `jobs` (an informer of the Job kind) from now on; with `snapshot`, once it has synced,
        also the Jobs it already holds (a monitor started after they finished)."""
        self._unsubscribe.append(jobs.subscribe(self.seen))
        if snapshot:
            jobs.wait_until_synced(SYNC_TIMEOUT)
            for job in jobs.items():
                self.seen("ADDED", job)

    def seen(self, _kind: EventType, job: Manifest) -> None:
        """An informer event: queue the Job's outcome when it has finished (or is being deleted before
        it did) and is expected."""
        key = str(annotations_of(job).get(ANNOTATION_RUN_KEY) or "")
        outcome = final_outcome(job)
        with self._lock:
            parent = self._parents.get(key)
            handled = (str(metadata_of(job).get("uid") or ""), outcome.result if outcome else "")
            known = parent is not None or (self.discover is not None and holds_run_finalizer(job) and key)
            if not known or outcome is None or not handled[0] or handled in self._handled:
                return
            self._handled.add(handled)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="planner-run-outcomes", daemon=True)
                self._worker.start()
        self._queue.put((parent, job, outcome))

    def close(self, timeout: float = 30.0) -> None:
        """Stop watching and let the queued writes finish (at most `timeout` seconds)."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        with self._lock:
            worker = self._worker
        if worker is not None:
            self._queue.put(None)
            worker.join(timeout)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            parent, job, outcome = item
            try:
                parent = parent or self._discovered(job)
                if parent is None:
                    log.warning(
                        "warning: %s holds planner's run record, but no plan records its run",
                        ref_of(job).described,
                    )
                    continue
                self.writer.record_outcome(parent, job, self._detailed(job, outcome))
                if holds_run_finalizer(job):
                    self.writer.release_run(job)
            except PlannerError as error:
                log.warning("warning: could not record how %s ended: %s", ref_of(job).described, error)

    def _discovered(self, job: Manifest) -> ObjectRef | None:
        """The parent that records `job`'s run, read again (`discover`): an apply since recorded it."""
        key = str(annotations_of(job).get(ANNOTATION_RUN_KEY) or "")
        found = list(self.discover()) if self.discover is not None else []
        with self._lock:
            self._parents.update({run_key: parent for parent, run_key in found})
            return self._parents.get(key)

    def _detailed(self, job: Manifest, outcome: RunOutcome) -> RunOutcome:
        """A failure with the exit code its pods show (one LIST), when they can be read."""
        if outcome.result != RESULT_FAILED:
            return outcome
        ref = ref_of(job)
        selector = f"{CONTROLLER_UID_LABEL}={metadata_of(job).get('uid')}"
        try:
            pods = list_objects(self.client, POD, ref.namespace, label_selector=selector)
        except PlannerError:
            return outcome
        return run_outcome(job, pods) or outcome


__all__ = ["RunRecorder"]

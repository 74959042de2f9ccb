"""The run lock: one writer per plan at a time (docs/design.md §3), held as a `coordination.k8s.io/v1` Lease.

Every command that writes for a plan holds the Lease `planner-lock-<plan>` in the plan's namespace for
its whole run: `apply` (plan files or a saved plan, prune included), each plan of `reconcile`,
`rollback` and the controller's reconciles. `plan` never takes it (it writes nothing). The lifecycle
commands (`stop`, `pause`, …) do not take it either: they patch only the `/scale` subresource or the
sandbox state annotation, as their own field manager, and an apply running at the same time sees
their change as drift at its next plan rather than interleaving with it.

The protocol is client-go's leader election, narrowed to a run:

- **Acquire** is one POST of a Lease naming this run as holder (`<user>@<host>/<pid>/<random>`; the
  random part tells apart runs whose pids coincide, such as pid 1 in every container). A 201 means the
  lock is ours. A 409 means it is held: the Lease is read, and taken over with a PUT carrying the read's
  resourceVersion only when it has expired; a 409 on that PUT means another run raced us to it.
- **Renew** is a PUT of `renewTime` with the last resourceVersion written, every third of the lease
  duration (10 s of 30 s), retried every `duration / 15` on failure. One scheduling thread hands the
  locks that are due to a fixed pool of workers (`_Renewer`), so a run holding 5,000 locks has a
  handful of threads, not one per lock.
- **Release** is one DELETE with the last resourceVersion and uid as preconditions, so a lock that was
  taken over is never deleted. So an uncontended run costs two requests (POST, DELETE) plus one renew
  per 10 s.
- **Loss.** A run that has not renewed for two thirds of the duration (20 s of 30 s, counted on its own
  monotonic clock from the start of its last successful renew) — or whose renew found another holder,
  or no Lease — has lost the lock: `RunLock.lost()` says why, and the executor starts no further task.
  Stopping at two thirds rather than at the full duration leaves the last third for writes already in
  flight to finish before anyone else may take the lock over.

**A dead holder on this host.** The Lease also says where its holder runs (the annotation
`planner.dev/holder-process`: the kernel's boot id, the PID namespace, the PID and the process's start
time). A run that finds the lock held from the same boot and PID namespace by a process that is gone
(no such PID, a zombie, or the PID reused by a younger process) takes it over at once and says so; a
holder anywhere else (another host, container or boot) keeps the expiry rule. Two runs taking over the
same dead lock both PUT with the resourceVersion they read, so one wins and the other reads again.

**Expiry, and whose clock.** A Lease has expired when `renewTime + leaseDurationSeconds` has passed.
`renewTime` is written by the holder from its clock, so a reader compares it with the API server's
clock — the `Date` header of its own GET, to the second — rather than its own, and a takeover at
first sight trusts only that the holder's clock and the server's agree to within the safety margin
(the last third of the duration: 10 s by default). A waiter that has watched the same resourceVersion
for a whole duration on its own monotonic clock needs no clock agreement at all (client-go's rule), and
takes over then even if the clocks disagree. A Lease whose holder is empty (released by a tool that
releases by PUT) is free.

Pure parts (the Lease body, reading a holder, judging expiry, the messages) are module functions the
tests call directly; `acquire` and `RunLock` do the I/O through `planner.kube`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import getpass
import heapq
import itertools
import json
import math
import os
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from planner.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    ForbiddenError,
    LockHeldError,
    NotFoundError,
    PlannerError,
    UnreachableError,
    namespace_terminating,
)
from planner.kinds import LEASE
from planner.kube.client import KubeClient, resource_path
from planner.objects import FIELD_MANAGER, LOCK_PREFIX, Manifest, metadata_of

DEFAULT_DURATION = 30.0
POLL_SECONDS = 2.0  # how often a waiting run reads the Lease again
RENEW_WORKERS = 4  # the threads that send renewals, whatever the number of locks held
RENEWALS_PER_SECOND = 50.0  # what the renewals of one run's locks may send, at most, on average
RELEASE_ATTEMPTS = 3  # a release that meets a renewal it did not see the answer of reads and tries again
ANNOTATION_HOLDER_PROCESS = "planner.dev/holder-process"
PROC = "/proc"

Notice = Callable[[str], None]
Progress = Callable[[int, int], None]  # (done, total): called as each lock of a run is taken


@functools.cache
def run_identity() -> str:
    """This process's holder identity, `<user>@<host>/<pid>/<random>`: the same for every lock it takes."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container user with no passwd entry
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


@dataclass(frozen=True, kw_only=True)
class HolderProcess:
    """Where a lock's holder runs, precisely enough for a run on the same host to tell it is gone:
    the kernel's boot id, the PID namespace (`pid:[4026531836]`), the PID and its start time in clock
    ticks since boot (0: unknown), which tells a reused PID from the holder."""

    boot_id: str
    pid_namespace: str
    pid: int
    started: int

    def encoded(self) -> str:
        fields = {"bootId": self.boot_id, "pidNamespace": self.pid_namespace, "pid": self.pid}
        return json.dumps(fields | {"started": self.started}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def decoded(cls, text: object) -> HolderProcess | None:
        try:
            fields = json.loads(str(text))
            return cls(
                boot_id=str(fields["bootId"]),
                pid_namespace=str(fields["pidNamespace"]),
                pid=int(fields["pid"]),
                started=int(fields.get("started") or 0),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def gone(self, *, seen_from: HolderProcess | None, started_of: Callable[[int], int | None]) -> bool:
        """Whether this process is known to be gone, judged by the process `seen_from`: only from the
        same boot and PID namespace, where PIDs mean the same process; `started_of(pid)` is the start
        time of the live process with that PID (0: alive, start unknown) or None when there is none."""
        if (
            seen_from is None
            or not self.boot_id
            or (self.boot_id, self.pid_namespace)
            != (
                seen_from.boot_id,
                seen_from.pid_namespace,
            )
        ):
            return False
        started = started_of(self.pid)
        return started is None or bool(started and self.started and started != self.started)


def process_started(pid: int) -> int | None:
    """The start time (clock ticks since boot) of the live process `pid`: None when there is none or it
    is a zombie, 0 when it exists but its start cannot be read (another user's, under `hidepid`)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, but is another user's
    try:
        with open(f"{PROC}/{pid}/stat", encoding="utf-8") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold ")"
    except (OSError, IndexError):
        return 0
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else 0


@functools.cache
def this_process() -> HolderProcess | None:
    """This process as a lock holder, or None where the kernel does not say (no `/proc`)."""
    try:
        with open(f"{PROC}/sys/kernel/random/boot_id", encoding="utf-8") as boot:
            boot_id = boot.read().strip()
        namespace = os.readlink(f"{PROC}/self/ns/pid")
    except OSError:
        return None
    pid = os.getpid()
    return HolderProcess(boot_id=boot_id, pid_namespace=namespace, pid=pid, started=process_started(pid) or 0)


def holder_annotations() -> dict[str, str]:
    """The annotations a run lock's Lease carries: where its holder runs, when the kernel says."""
    here = this_process()
    return {ANNOTATION_HOLDER_PROCESS: here.encoded()} if here is not None else {}


def lease_name(plan: str) -> str:
    return f"{LOCK_PREFIX}{plan}"


@dataclass(frozen=True, kw_only=True)
class LockOptions:
    """`duration`: the Lease's `leaseDurationSeconds` (whole seconds, at least 3); `timeout`: how long to
    wait for a lock another run holds (0: not at all)."""

    duration: float = DEFAULT_DURATION
    timeout: float = 0.0

    @property
    def seconds(self) -> int:
        return max(3, round(self.duration))


# --- the Lease, as data ------------------------------------------------------------------------------


def micro_time(moment: datetime) -> str:
    """A MicroTime: RFC 3339 in UTC with exactly six fractional digits, as the API requires."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def lease_body(
    name: str,
    namespace: str,
    *,
    identity: str,
    seconds: int,
    now: datetime,
    transitions: int = 0,
    annotations: dict[str, str] | None = None,
) -> Manifest:
    """The Lease `name` saying `identity` holds it from `now` (a plan's run lock, the controller's
    leadership)."""
    stamp = micro_time(now)
    metadata: dict[str, object] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": LEASE.api_version,
        "kind": LEASE.kind,
        "metadata": metadata,
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": seconds,
            "acquireTime": stamp,
            "renewTime": stamp,
            "leaseTransitions": transitions,
        },
    }


@dataclass(frozen=True, kw_only=True)
class Holder:
    """Who holds a lock, read from its Lease. `identity` is empty for a released Lease."""

    identity: str
    acquired: datetime | None
    renewed: datetime | None
    seconds: int
    transitions: int = 0
    process: HolderProcess | None = None

    @classmethod
    def of(cls, lease: Manifest) -> Holder:
        spec = lease.get("spec") or {}
        where = (metadata_of(lease).get("annotations") or {}).get(ANNOTATION_HOLDER_PROCESS)
        return cls(
            identity=str(spec.get("holderIdentity") or ""),
            acquired=parse_time(spec.get("acquireTime")),
            renewed=parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime")),
            seconds=int(spec.get("leaseDurationSeconds") or 0),
            transitions=int(spec.get("leaseTransitions") or 0),
            process=HolderProcess.decoded(where) if where else None,
        )

    def dead_here(self) -> bool:
        """Whether the holder ran on this host (same boot and PID namespace) and its process is gone."""
        return (
            bool(self.identity)
            and self.process is not None
            and self.process.gone(seen_from=this_process(), started_of=process_started)
        )

    def expired_for(self, now: datetime) -> float | None:
        """Seconds since the lock expired at `now` (the server's clock), or None while it is valid. A
        released Lease, or one that never says when it was renewed, counts as expired."""
        if not self.identity or self.renewed is None:
            return 0.0
        over = (now - self.renewed).total_seconds() - self.seconds
        return over if over > 0 else None

    def since(self) -> str:
        return _stamp(self.acquired) if self.acquired else "an unknown time"

    def described(self, now: datetime) -> str:
        """`alice@ci-7/4711/9f3a since 2026-05-01T10:00:00Z (renewed 3s ago)`."""
        renewed = f" (renewed {_ago(now, self.renewed)})" if self.renewed else ""
        return f"{self.identity} since {self.since()}{renewed}"


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ago(now: datetime, then: datetime) -> str:
    seconds = max(0, round((now - then).total_seconds()))
    return f"{seconds}s ago"


def unlock_command(plan: str, namespace: str) -> str:
    return f"planner unlock {plan} -n {namespace} --force"


def held_message(plan: str, namespace: str, holder: Holder, now: datetime, *, waited: float) -> str:
    """Why a run cannot write: who holds the lock, since when, and how to wait or break it."""
    waited_for = f" after waiting {waited:.0f}s" if waited >= 1 else ""
    return (
        f"plan {plan} (namespace {namespace}) is locked by {holder.described(now)}{waited_for}: another "
        f"run is writing it. Retry later or wait with --lock-timeout; a dead run's lock is taken over at "
        f"once on its host, elsewhere {holder.seconds}s after its last renewal; to break it now: "
        f"{unlock_command(plan, namespace)}"
    )


def took_over_message(plan: str, holder: Holder, expired_for: float | None) -> str:
    """`expired_for` None: taken over because its holder's process on this host is gone."""
    if not holder.identity:
        return f"took over the released lock of plan {plan}"
    if expired_for is None:
        pid = holder.process.pid if holder.process is not None else "?"
        return f"took over the lock of plan {plan} from {holder.identity}: its process {pid} on this host is gone"
    return f"took over the lock of plan {plan} from {holder.identity}, expired {expired_for:.0f}s ago"


# --- acquiring ---------------------------------------------------------------------------------------


@dataclass
class _Observed:
    """The resourceVersion a waiter last saw and when (its monotonic clock): unchanged for a whole
    duration means expired, whatever the clocks say."""

    version: str = ""
    since: float = 0.0

    def unchanged_for(self, version: str, now: float) -> float:
        if version != self.version:
            self.version, self.since = version, now
        return now - self.since


# What this process saw of each lock's Lease, kept across attempts: a controller asks for a held lock
# once per retry, never waiting, so only a memory that outlives the attempt can see that a Lease —
# planted by someone who never renews it, with a renewTime far ahead — has not moved for a duration.
_SEEN: dict[tuple[str, str], _Observed] = {}
_SEEN_LOCK = threading.Lock()


def _observed(namespace: str, plan: str) -> _Observed:
    with _SEEN_LOCK:
        return _SEEN.setdefault((namespace, plan), _Observed())


class _Raced(Exception):
    """A takeover met a Lease changed since it was read."""


class _Acquirer:
    def __init__(
        self,
        client: KubeClient,
        *,
        plan: str,
        namespace: str,
        options: LockOptions,
        notice: Notice,
        stop: threading.Event | None,
    ) -> None:
        self.client, self.plan, self.namespace = client, plan, namespace
        self.options, self.notice, self.stop = options, notice, stop
        self.identity = run_identity()
        self.collection = resource_path(LEASE, namespace)
        self.path = resource_path(LEASE, namespace, lease_name(plan))
        self.observed = _observed(namespace, plan)

    def acquire(self) -> RunLock | UnleasedLock:
        started = time.monotonic()
        announced = ""
        while True:
            lock = self.create()
            if lock is not None:
                return lock
            try:
                lease, server_now = self.client.request_dated("GET", self.path, verb="get")
            except NotFoundError:
                continue  # released in between: try creating it again
            holder = Holder.of(lease)
            try:
                lock = self.take_over_if_expired(lease, holder, server_now or datetime.now(UTC))
            except _Raced:
                continue  # read it again: whoever won is judged, not the holder it replaced
            if lock is not None:
                return lock
            now = server_now or datetime.now(UTC)
            waited = time.monotonic() - started
            if waited >= self.options.timeout or (self.stop is not None and self.stop.is_set()):
                raise LockHeldError(
                    held_message(self.plan, self.namespace, holder, now, waited=waited),
                    holder=holder.described(now),
                )
            if holder.identity != announced:
                announced = holder.identity
                self.notice(
                    f"waiting for the lock of plan {self.plan} (namespace {self.namespace}), held by "
                    f"{holder.described(now)}"
                )
            pause = min(POLL_SECONDS, self.options.timeout - waited)
            if self.stop is not None:
                self.stop.wait(pause)
            else:
                time.sleep(pause)

    def create(self) -> RunLock | UnleasedLock | None:
        """POST the Lease: the lock when it is created, None when one exists. Its namespace must exist
        (a run creates its plans' namespaces first, `planner.app.applying.create_lock_namespaces`)."""
        body = self.body(transitions=0)
        sent = time.monotonic()
        try:
            created = self.client.request(
                "POST", self.collection, query={"fieldManager": FIELD_MANAGER}, body=body, verb="create"
            )
        except AlreadyExistsError:
            return None
        except NotFoundError as missing:
            raise PlannerError(f"cannot take the lock of plan {self.plan}: {missing}") from missing
        except ForbiddenError as refused:
            if not namespace_terminating(refused):
                raise
            return self.unleased()
        return RunLock(self.client, plan=self.plan, namespace=self.namespace, lease=created, sent=sent)

    def unleased(self) -> UnleasedLock | None:
        """The namespace is being deleted, so no Lease can be created there, by this run or any other:
        with none left from before, the run goes on without one (a prune of a Plan in that namespace
        must not wait forever for a lock nobody can take). With one, None: it is judged as any held
        lock (taking over an expired one is an update, which a terminating namespace still allows)."""
        try:
            self.client.request("GET", self.path, verb="get")
        except NotFoundError:
            self.notice(
                f"namespace {self.namespace} is being deleted: no lock can be taken there, so plan "
                f"{self.plan} is run without one (nor can any other run take it)"
            )
            return UnleasedLock(plan=self.plan, namespace=self.namespace)
        return None

    def take_over_if_expired(self, lease: Manifest, holder: Holder, server_now: datetime) -> RunLock | None:
        expired_for = holder.expired_for(server_now)
        version = str(metadata_of(lease).get("resourceVersion") or "")
        unchanged = self.observed.unchanged_for(version, time.monotonic())
        if expired_for is None and unchanged > holder.seconds:
            expired_for = unchanged - holder.seconds
        if expired_for is None and not holder.dead_here():
            return None
        body = self.body(transitions=holder.transitions + 1)
        body["metadata"] |= {"resourceVersion": version, "uid": metadata_of(lease).get("uid")}
        sent = time.monotonic()
        try:
            taken = self.client.request(
                "PUT", self.path, query={"fieldManager": FIELD_MANAGER}, body=body, verb="update"
            )
        except (ConflictError, NotFoundError) as raced:
            raise _Raced from raced  # another run renewed it or raced us to it
        self.notice(took_over_message(self.plan, holder, expired_for))
        return RunLock(self.client, plan=self.plan, namespace=self.namespace, lease=taken, sent=sent)

    def body(self, *, transitions: int) -> Manifest:
        return lease_body(
            lease_name(self.plan),
            self.namespace,
            identity=self.identity,
            seconds=self.options.seconds,
            now=datetime.now(UTC),
            transitions=transitions,
            annotations=holder_annotations(),
        )


def acquire(
    client: KubeClient,
    *,
    plan: str,
    namespace: str,
    options: LockOptions,
    notice: Notice,
    stop: threading.Event | None = None,
) -> RunLock | UnleasedLock:
    """Take the lock of `plan` in `namespace` (waiting up to `options.timeout` while another run holds
    it, reading the Lease every two seconds) and start renewing it. Raises LockHeldError (exit 3)
    naming the holder, also when `stop` is set while waiting; `notice` gets the sentences a person
    should see (waiting, taking over)."""
    acquirer = _Acquirer(client, plan=plan, namespace=namespace, options=options, notice=notice, stop=stop)
    return acquirer.acquire().start()


# --- holding -----------------------------------------------------------------------------------------


class RunLock:
    """A held lock: renewed from a daemon thread until `release()`; `lost()` says why it no longer is.

    Renewals use a client without retries whose timeout is the renew interval, so a renewal that hangs
    is abandoned and tried again rather than waited for; `lost()` is judged from the clock, not from the
    renewing thread, so a thread stuck in a request cannot hide a loss."""

    def __init__(
        self, client: KubeClient, *, plan: str, namespace: str, lease: Manifest, sent: float
    ) -> None:
        """`lease` as the request that took it returned it; `sent`: when (monotonic) that request left,
        the latest moment the lease can be counted from."""
        self.plan, self.namespace = plan, namespace
        self.holder = Holder.of(lease)
        seconds = float(self.holder.seconds)
        self.interval, self.deadline, self.retry = seconds / 3, seconds * 2 / 3, seconds / 15
        self.client = client.with_options(retries=0, connect_retries=0, timeout=self.interval)
        self.path = resource_path(LEASE, namespace, lease_name(plan))
        self._lease = lease
        self._renewed_at = sent
        self._failure = ""
        self._lost = ""
        self._mutex = threading.Lock()
        self._stopping = threading.Event()

    def start(self) -> RunLock:
        _renewer().add(self)
        return self

    # --- loss ---

    def lost(self) -> str | None:
        """Why this run no longer holds the lock, or None while it does."""
        with self._mutex:
            if not self._lost and time.monotonic() - self._renewed_at > self.deadline:
                cause = f": {self._failure}" if self._failure else ""
                self._lost = f"could not renew it for {self.deadline:.0f}s{cause}"
            if not self._lost:
                return None
            return f"lost the lock of plan {self.plan} (namespace {self.namespace}): {self._lost}"

    def _lose(self, why: str) -> None:
        with self._mutex:
            self._lost = self._lost or why
        self._stopping.set()

    # --- renewing (in the daemon thread) ---

    @property
    def stopped(self) -> bool:
        return self._stopping.is_set()

    def renew_once(self) -> float | None:
        """One renewal (from a renewer's worker): seconds until the next, None once the lock is lost or
        released."""
        renewed = self._renew()
        if self._stopping.is_set() or self.lost() is not None:
            return None
        return self.interval if renewed else self.retry

    def _renew(self) -> bool:
        started = time.monotonic()
        with self._mutex:
            lease = self._lease
        metadata = metadata_of(lease)
        body = {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {
                key: metadata[key]
                for key in ("name", "namespace", "uid", "resourceVersion", "annotations")
                if key in metadata
            },
            "spec": {**(lease.get("spec") or {}), "renewTime": micro_time(datetime.now(UTC))},
        }
        try:
            written = self.client.request(
                "PUT", self.path, query={"fieldManager": FIELD_MANAGER}, body=body, verb="update"
            )
        except NotFoundError:
            self._lose("its Lease was deleted (by `planner unlock --force`?)")
            return False
        except ConflictError:
            return self._after_conflict()
        except (ApiError, UnreachableError) as failure:
            with self._mutex:
                self._failure = str(failure)
            return False
        with self._mutex:
            self._lease, self._renewed_at, self._failure = written, started, ""
        return True

    def _after_conflict(self) -> bool:
        """A renew met a newer Lease: ours still (an earlier renew landed though its answer was lost),
        then carry on from it; or another run's."""
        try:
            current = self.client.request("GET", self.path, verb="get")
        except NotFoundError:
            self._lose("its Lease was deleted (by `planner unlock --force`?)")
            return False
        except (ApiError, UnreachableError) as failure:
            with self._mutex:
                self._failure = str(failure)
            return False
        holder = Holder.of(current)
        if holder.identity != self.holder.identity:
            self._lose(f"{holder.identity or 'nobody'} holds it now")
            return False
        with self._mutex:
            self._lease = current
        return self._renew()

    # --- releasing ---

    def release(self) -> str | None:
        """Stop renewing and delete the Lease if it is still this run's (preconditions: its uid and the
        last resourceVersion written). Returns a sentence when it could not, for the person to see; the
        lock then expires on its own."""
        self._stopping.set()
        _renewer().remove(self, timeout=self.interval + 1)
        with self._mutex:
            lease = self._lease
        for _ in range(RELEASE_ATTEMPTS):
            metadata = metadata_of(lease)
            preconditions = {"uid": metadata.get("uid"), "resourceVersion": metadata.get("resourceVersion")}
            try:
                self.client.request(
                    "DELETE",
                    self.path,
                    body={"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions},
                    verb="delete",
                )
                return None
            except NotFoundError:
                return None  # gone: nothing of ours to release
            except ConflictError:
                # Changed since this run last wrote it: by a renewal whose answer was lost (the server
                # wrote it, the client had given up) — still ours, deleted at the version read now —
                # or by another run that took it over, whose it is.
                current = self._still_ours()
                if current is None:
                    return None
                lease = current
            except (ApiError, UnreachableError) as failure:
                return (
                    f"could not release the lock of plan {self.plan} ({failure}); it expires on its own "
                    f"{self.holder.seconds}s after its last renewal"
                )
        return f"could not release the lock of plan {self.plan}: it kept changing; it expires on its own"

    def _still_ours(self) -> Manifest | None:
        """The Lease as it is now, when this run still holds it (None: gone, or another run's)."""
        try:
            lease = self.client.request("GET", self.path, verb="get")
        except (ApiError, UnreachableError):
            return None
        return lease if Holder.of(lease).identity == self.holder.identity else None


class _Renewer:
    """Renews every lock this process holds: one scheduling thread keeps the locks in a heap by when
    each is due and hands the due ones to `RENEW_WORKERS` daemon threads, so the threads stay few
    however many locks a run holds; a lock is never renewed twice at once."""

    def __init__(self, workers: int = RENEW_WORKERS) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, RunLock]] = []
        self._entry: dict[RunLock, int] = {}  # a lock's live heap entry; older entries are skipped
        self._busy: set[RunLock] = set()
        self._ready: queue.SimpleQueue[RunLock] = queue.SimpleQueue()
        self._counter = itertools.count()
        self._workers = workers
        self._started = False

    def add(self, lock: RunLock, after: float | None = None) -> None:
        with self._cond:
            self._schedule(lock, lock.interval if after is None else after)
            if not self._started:
                self._started = True
                threading.Thread(target=self._schedule_loop, name="lock-renewals", daemon=True).start()
                for number in range(self._workers):
                    threading.Thread(target=self._work, name=f"lock-renew-{number}", daemon=True).start()
            self._cond.notify_all()

    def remove(self, lock: RunLock, *, timeout: float) -> None:
        """Stop renewing `lock`, waiting (at most `timeout`) for a renewal in flight to end."""
        with self._cond:
            self._entry.pop(lock, None)
            self._cond.wait_for(lambda: lock not in self._busy, timeout)

    def _schedule(self, lock: RunLock, after: float) -> None:
        entry = next(self._counter)
        self._entry[lock] = entry
        heapq.heappush(self._heap, (time.monotonic() + after, entry, lock))

    def _schedule_loop(self) -> None:
        while True:
            with self._cond:
                while self._heap and self._entry.get(self._heap[0][2]) != self._heap[0][1]:
                    heapq.heappop(self._heap)  # removed, or scheduled again since
                pause = self._heap[0][0] - time.monotonic() if self._heap else None
                if pause is None or pause > 0:
                    self._cond.wait(pause)
                    continue
                _, _, lock = heapq.heappop(self._heap)
                del self._entry[lock]
                self._busy.add(lock)
            self._ready.put(lock)

    def _work(self) -> None:
        while True:
            lock = self._ready.get()
            after: float | None = None
            try:
                after = lock.renew_once()
            finally:
                with self._cond:
                    self._busy.discard(lock)
                    if after is not None and not lock.stopped:
                        self._schedule(lock, after)
                    self._cond.notify_all()


_RENEWER = _Renewer()  # one per process, made at import: two threads' first locks must share it


def _renewer() -> _Renewer:
    return _RENEWER


def _forget_the_parent() -> None:
    """A forked child is another lock holder, and the renewal threads were not forked with it."""
    global _RENEWER, _SEEN_LOCK
    _RENEWER = _Renewer()
    _SEEN_LOCK = threading.Lock()  # a parent's thread may have held it at the fork
    run_identity.cache_clear()
    this_process.cache_clear()


os.register_at_fork(after_in_child=_forget_the_parent)


class UnleasedLock:
    """The lock of a plan whose namespace is being deleted, where no Lease can be created: nothing to
    renew or release, never lost."""

    def __init__(self, *, plan: str, namespace: str) -> None:
        self.plan, self.namespace = plan, namespace

    def start(self) -> UnleasedLock:
        return self

    def lost(self) -> str | None:
        return None

    def release(self) -> str | None:
        return None


class HeldLocks:
    """The locks of one run, taken in a fixed order (namespace, then plan) so two runs over the same
    plans never wait for each other in a circle; `lost()` is the first loss among them."""

    def __init__(self) -> None:
        self.locks: list[RunLock | UnleasedLock] = []

    def lost(self) -> str | None:
        return next((why for lock in self.locks if (why := lock.lost()) is not None), None)

    def release(self, notice: Notice) -> None:
        """Release every lock, a few at once (a run of many plans holds thousands)."""
        if not self.locks:
            return
        if len(self.locks) == 1:  # a reconcile's one lock: no pool (its threads cost more than the DELETE)
            problem = self.locks[0].release()
            if problem:
                notice(problem)
            return
        with ThreadPoolExecutor(max_workers=RENEW_WORKERS, thread_name_prefix="lock-release") as pool:
            for problem in pool.map(lambda lock: lock.release(), reversed(self.locks)):
                if problem:
                    notice(problem)


def _release_if_ours(client: KubeClient, plan: str, namespace: str) -> None:
    """The lock an interrupted acquire may have taken before it could be counted as held: deleted when
    this process holds it (preconditions: the Lease read)."""
    path = resource_path(LEASE, namespace, lease_name(plan))
    try:
        lease = client.request("GET", path, verb="get")
        if Holder.of(lease).identity != run_identity():
            return
        metadata = metadata_of(lease)
        preconditions = {"uid": metadata.get("uid"), "resourceVersion": metadata.get("resourceVersion")}
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}
        client.request("DELETE", path, body=body, verb="delete")
    except (ApiError, UnreachableError):
        return  # gone, taken, or unreachable: its lease expires on its own


def for_many(options: LockOptions, count: int, notice: Notice) -> LockOptions:
    """The lock options for a run holding `count` locks: each lease long enough that renewing them all
    (each every third of its duration) stays within RENEWALS_PER_SECOND — a run of 5,000 plans would
    otherwise send 500 renewals a second and lose its locks to its own load. A dead run's locks are still
    taken over at once on its host; elsewhere they last that longer duration."""
    needed = math.ceil(3 * count / RENEWALS_PER_SECOND)
    if needed <= options.seconds:
        return options
    notice(
        f"holding {count} run locks: each lease lasts {needed}s (renewed every {needed // 3}s), not "
        f"{options.seconds}s, so their renewals stay under {RENEWALS_PER_SECOND:g} a second"
    )
    return dataclasses.replace(options, duration=float(needed))


@contextlib.contextmanager
def holding(
    client: KubeClient,
    plans: Sequence[tuple[str, str]],
    *,
    options: LockOptions,
    notice: Notice,
    stop: threading.Event | None = None,
    progress: Progress | None = None,
) -> Iterator[HeldLocks]:
    """Hold the lock of every `(plan, namespace)` for the block, released on the way out whatever
    happens (an error, Ctrl-C, SIGTERM turned into Ctrl-C by the CLI) — also the one being taken when
    it happened. The wait of `options.timeout` is shared by all of them; `progress` hears of each."""
    held = HeldLocks()
    deadline = time.monotonic() + options.timeout
    ordered = sorted(set(plans), key=lambda pair: (pair[1], pair[0]))
    options = for_many(options, len(ordered), notice)
    taking: tuple[str, str] | None = None
    try:
        for taking in ordered:
            plan, namespace = taking
            remaining = LockOptions(duration=options.duration, timeout=max(0.0, deadline - time.monotonic()))
            held.locks.append(
                acquire(client, plan=plan, namespace=namespace, options=remaining, notice=notice, stop=stop)
            )
            taking = None
            if progress is not None:
                progress(len(held.locks), len(ordered))
        yield held
    except ApiError:
        taking = None  # the server answered the take (a 403, say): it left no Lease of ours to release
        raise
    finally:
        held.release(notice)
        if taking is not None:
            _release_if_ours(client, *taking)


# --- reading and breaking ----------------------------------------------------------------------------


def read_holder(client: KubeClient, plan: str, namespace: str) -> tuple[Holder, datetime] | None:
    """Who holds the lock of `plan` now, and the server's clock at the read; None when nobody does."""
    try:
        lease, server_now = client.request_dated(
            "GET", resource_path(LEASE, namespace, lease_name(plan)), verb="get"
        )
    except NotFoundError:
        return None
    holder = Holder.of(lease)
    now = server_now or datetime.now(UTC)
    if not holder.identity:
        return None
    return holder, now


def break_lock(client: KubeClient, plan: str, namespace: str) -> tuple[Holder, datetime] | None:
    """`unlock --force`: delete the lock of `plan` whoever holds it (preconditions: the Lease read, so a
    lock taken in between by another run is not broken unseen). Returns the holder removed, None when
    there was no lock."""
    path = resource_path(LEASE, namespace, lease_name(plan))
    for _ in range(3):
        try:
            lease, server_now = client.request_dated("GET", path, verb="get")
        except NotFoundError:
            return None
        metadata = metadata_of(lease)
        preconditions = {"uid": metadata.get("uid"), "resourceVersion": metadata.get("resourceVersion")}
        try:
            client.request(
                "DELETE",
                path,
                body={"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions},
                verb="delete",
            )
        except NotFoundError:
            return None
        except ConflictError:
            continue  # renewed in between: read it again
        return Holder.of(lease), server_now or datetime.now(UTC)
    raise PlannerError(f"the lock of plan {plan} keeps changing; is its holder still running?")


__all__ = [
    "ANNOTATION_HOLDER_PROCESS",
    "DEFAULT_DURATION",
    "HeldLocks",
    "Holder",
    "HolderProcess",
    "LockOptions",
    "Progress",
    "RunLock",
    "acquire",
    "break_lock",
    "held_message",
    "holding",
    "lease_body",
    "lease_name",
    "micro_time",
    "process_started",
    "read_holder",
    "run_identity",
    "this_process",
    "took_over_message",
    "unlock_command",
]

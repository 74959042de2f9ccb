"""Leader election: among controller replicas, one leads (writes); the others stand by, ready.

A `coordination.k8s.io/v1` Lease `planner-controller` (`planner-controller-KEY` for a shard) with controller-runtime's timings: lease
duration 15 s, renew deadline 10 s, retry period 2 s. The Lease API directly, with resourceVersion
preconditions, rather than the official client's `kubernetes.leaderelection`: only `planner.kube`
talks to the client (its rate limit, request log and errors), and that module neither releases the
Lease on shutdown (client-go's `ReleaseOnCancel`) nor lets a caller ask "am I leading right now?"
between writes — both of which the controller needs.

- Every retry period a candidate reads the Lease. Missing: it creates it (a 409 means another won).
  Held by another and renewed within the lease duration — `renewTime` against the server's clock (the
  read's `Date`), or, whatever the clocks say, unchanged on the reader's own clock for a whole
  duration — it waits. Expired or released (empty holder): it takes it over with a PUT carrying the
  read's resourceVersion (a 409 means another won).
- The leader renews (PUT `renewTime`, same precondition) every retry period. `leading()` turns False
  as soon as a renew finds another holder, or when no renew has succeeded for the renew deadline: the
  controller stops writing then, 5 s before anyone may take over.
- `release()` (SIGTERM) empties `holderIdentity`, so a standby takes over at its next read.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from planner.controller.sharding import LEASE_NAME
from planner.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError, UnreachableError
from planner.kinds import LEASE
from planner.kube.client import KubeClient, resource_path
from planner.objects import Manifest, metadata_of
from planner.state.runlock import lease_body, micro_time, parse_time

FIELD_MANAGER = "planner-controller"


@dataclass(frozen=True, kw_only=True)
class ElectionTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """Runs the election in a daemon thread; `leading()` and `healthy()` are safe from any thread."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        identity: str,
        timings: ElectionTimings | None = None,
        name: str = LEASE_NAME,
    ) -> None:
        self.timings = timings or ElectionTimings()
        self.client = client.with_options(retries=0, connect_retries=0, timeout=self.timings.retry_period * 2)
        self.namespace, self.identity, self.name = namespace, identity, name
        self.path = resource_path(LEASE, namespace, name)
        self._lease: Manifest | None = None
        self._leading = False
        self._renewed_at = 0.0  # monotonic: last successful acquire or renew
        self._seen_version, self._seen_at = "", 0.0
        self._last_contact = 0.0  # monotonic: last successful request of any kind
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    def start(self) -> LeaderElector:
        self._thread.start()
        return self

    def leading(self) -> bool:
        with self._mutex:
            if self._leading and time.monotonic() - self._renewed_at > self.timings.renew_deadline:
                self._leading = False
            return self._leading

    def healthy(self) -> bool:
        """Leading, or standing by with the Lease read within the lease duration."""
        with self._mutex:
            recent = time.monotonic() - self._last_contact <= self.timings.lease_duration
        return self.leading() or recent

    def release(self) -> None:
        """Stop, and if leading, hand the Lease back (empty holder) so a standby takes over at once."""
        self._stop.set()
        self._thread.join(timeout=self.timings.retry_period * 2)
        with self._mutex:
            lease, was_leading = self._lease, self._leading
            self._leading = False
        if lease is None or not was_leading:
            return
        try:
            self._put(self._body(lease, holder="", renew=False))
        except (ApiError, UnreachableError):
            return  # it expires on its own

    # --- the loop ---

    def _run(self) -> None:
        while not self._stop.is_set():
            # A failed request is judged by the clock: a leader that cannot renew stops at the deadline.
            with contextlib.suppress(ApiError, UnreachableError):
                self._step()
            self._stop.wait(self.timings.retry_period)

    def _step(self) -> None:
        if self.leading():
            self._renew()
            return
        try:
            lease, server_now = self.client.request_dated("GET", self.path, verb="get")
        except NotFoundError:
            self._create()
            return
        self._contact()
        if self._free(lease, server_now or datetime.now(UTC)):
            self._take(lease)

    def _contact(self) -> None:
        with self._mutex:
            self._last_contact = time.monotonic()

    def _free(self, lease: Manifest, server_now: datetime) -> bool:
        """Released, ours, or expired: by the server's clock against `renewTime`, or — whatever the
        clocks say — unchanged on this reader's clock for a whole lease duration."""
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        if not holder or holder == self.identity:
            return True
        version = str(metadata_of(lease).get("resourceVersion") or "")
        now = time.monotonic()
        if version != self._seen_version:
            self._seen_version, self._seen_at = version, now
        duration = float(spec.get("leaseDurationSeconds") or self.timings.lease_duration)
        renewed = parse_time(spec.get("renewTime"))
        expired = renewed is not None and (server_now - renewed).total_seconds() > duration
        return expired or now - self._seen_at > duration

    def _create(self) -> None:
        body = self._lease_body(transitions=0)
        sent = time.monotonic()
        try:
            created = self.client.request(
                "POST",
                resource_path(LEASE, self.namespace),
                query={"fieldManager": FIELD_MANAGER},
                body=body,
                verb="create",
            )
        except AlreadyExistsError:
            return
        self._won(created, sent)

    def _take(self, lease: Manifest) -> None:
        transitions = int((lease.get("spec") or {}).get("leaseTransitions") or 0) + 1
        body = {**self._body(lease, holder=self.identity, renew=True)}
        body["spec"] = {**body["spec"], **self._lease_body(transitions=transitions)["spec"]}
        sent = time.monotonic()
        try:
            taken = self._put(body)
        except (ConflictError, NotFoundError):
            return
        self._won(taken, sent)

    def _renew(self) -> None:
        with self._mutex:
            lease = self._lease
        if lease is None:
            return
        sent = time.monotonic()
        try:
            renewed = self._put(self._body(lease, holder=self.identity, renew=True))
        except (ConflictError, NotFoundError):
            with self._mutex:  # another holder now, or the Lease was deleted: stop writing at once
                self._leading, self._lease = False, None
            return
        self._won(renewed, sent)

    def _put(self, lease: Manifest) -> Manifest:
        """Write the Lease (its resourceVersion is the precondition: a 409 means another wrote first)."""
        return self.client.request(
            "PUT", self.path, query={"fieldManager": FIELD_MANAGER}, body=lease, verb="update"
        )

    def _won(self, lease: Manifest, sent: float) -> None:
        with self._mutex:
            self._lease, self._leading, self._renewed_at = lease, True, sent
            self._last_contact = time.monotonic()

    def _lease_body(self, *, transitions: int) -> Manifest:
        return lease_body(
            self.name,
            self.namespace,
            identity=self.identity,
            seconds=round(self.timings.lease_duration),
            now=datetime.now(UTC),
            transitions=transitions,
        )

    def _body(self, lease: Manifest, *, holder: str, renew: bool) -> Manifest:
        metadata = metadata_of(lease)
        spec = {**(lease.get("spec") or {}), "holderIdentity": holder}
        if renew:
            spec["renewTime"] = micro_time(datetime.now(UTC))
        return {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": {key: metadata.get(key) for key in ("name", "namespace", "uid", "resourceVersion")},
            "spec": spec,
        }

"""The controller's watches of PVCs and Pods, one each for the whole process: the warm pools (their
members' events), the reaper, the sandbox metrics and the web view read them, and so do every
reconcile's waits (through the same `Informers`). Before they start (`--once` runs without them) or sync,
what needs the PVCs lists them."""

from __future__ import annotations

from collections.abc import Iterable

from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD
from planner.kube.client import KubeClient
from planner.kube.informer import Informer, Informers, Subscriber
from planner.monitor.pool_members import listed_claims
from planner.objects import Manifest


class SandboxCaches:
    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.claims: Informer | None = None
        self.pods: Informer | None = None

    def start(self, informers: Informers, subscriber: Subscriber) -> None:
        """Start both watches, each event of either handed to `subscriber`."""
        self.claims = informers.informer(PERSISTENT_VOLUME_CLAIM)
        self.pods = informers.informer(POD)
        for informer in (self.claims, self.pods):
            informer.subscribe(subscriber)

    def informers(self) -> tuple[Informer | None, Informer | None]:
        return self.claims, self.pods

    def snapshot(self) -> tuple[list[Manifest], list[Manifest]]:
        """The PVCs and the Pods as last watched (none before a watch has synced)."""
        claims = self.claims.items() if self.claims is not None and self.claims.synced else []
        pods = self.pods.items() if self.pods is not None and self.pods.synced else []
        return claims, pods

    def claims_now(self, namespaces: Iterable[str]) -> list[Manifest]:
        """The PVCs of `namespaces` from the watch cache (no request), or listed when there is none
        (`--once`) or it has not synced yet."""
        if self.claims is not None and self.claims.synced:
            return self.claims.items(namespaces)
        return listed_claims(self.client, namespaces)

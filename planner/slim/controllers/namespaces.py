"""Namespace lifecycle: the contents every namespace gets, and teardown behind the `kubernetes` finalizer.

An active namespace always holds the `default` ServiceAccount (the serviceaccount controller) and
the `kube-root-ca.crt` ConfigMap (the root-ca-cert-publisher); deleting either brings it back. The
API core also creates both with the namespace (`lifecycle.created_with_namespace`), so a client that
creates a Pod right after its namespace never races this controller (a real cluster makes clients
retry).

A deleted namespace is `Terminating`: every object in it is deleted (their own finalizers and grace
periods still apply: the garbage collector and node agent finish them), and once it is empty the
`kubernetes` spec finalizer is dropped, which lets the API core remove the namespace.

Keys are namespaces: a Namespace event dirties it, a ServiceAccount or ConfigMap event dirties the
namespace it is in. A terminating namespace looks again every 0.1 s until it is empty.
"""

from __future__ import annotations

from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import CONTROLLER_MANAGER, Writer, deleting, key, keys_of, name_of
from planner.slim.kind_hooks import TERMINATING, namespace_contents
from planner.slim.reconcilers import CONTROLLERS, Key
from planner.slim.store import WatchEvent
from planner.slim.verbhelpers import resource_key

Obj = dict[str, Any]
NAMESPACE_FINALIZER = "kubernetes"
TEARDOWN_POLL_SECONDS = 0.1


def namespace_keys(event: WatchEvent) -> list[Key]:
    """A Namespace event dirties that namespace; anything else the namespace it is in."""
    name = event.name if event.resource == key("Namespace") else event.namespace
    return [Key(key("Namespace"), "", name)]


class NamespaceController:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (key("Namespace"), key("ServiceAccount"), key("ConfigMap"))
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, CONTROLLER_MANAGER)

    def observe(self, event: WatchEvent) -> list[Key]:
        return namespace_keys(event)

    def resync(self) -> list[Key]:
        return keys_of(self.api.store, key("Namespace"))

    def sync(self, namespace_key: Key, now: float) -> float | None:
        namespace = self.api.store.get(*namespace_key)
        if namespace is None:
            return None
        if not deleting(namespace):
            self._populate(name_of(namespace))
            return None
        return now + TEARDOWN_POLL_SECONDS if self._tear_down(namespace) else None

    def _populate(self, namespace: str) -> None:
        for kind, body in namespace_contents():
            if self.api.store.get(key(kind), namespace, body["metadata"]["name"]) is None:
                self.writer.create(kind, namespace, body)

    def _tear_down(self, namespace: Obj) -> bool:
        """Delete what is left; True while something is still there."""
        name = name_of(namespace)
        if (namespace.get("status") or {}).get("phase") != TERMINATING:
            self.writer.write_status(
                "Namespace", namespace, {**(namespace.get("status") or {}), "phase": TERMINATING}
            )
        remaining = False
        for rt in self.api.kinds.stored():
            if not rt.namespaced:
                continue
            for obj in list(self.api.store.list(resource_key(rt), name)):
                remaining = True
                if not deleting(obj):
                    self.writer.delete(rt, obj, policy="Background")
        if remaining:
            return True
        current = self.api.store.get(key("Namespace"), "", name)
        if current is not None and NAMESPACE_FINALIZER in (
            (current.get("spec") or {}).get("finalizers") or []
        ):
            self.writer.finalize_namespace(name)
        return False

"""ClusterRole aggregation: an aggregated ClusterRole holds the rules of the ClusterRoles its
`aggregationRule` selects (the `rbac.authorization.k8s.io/aggregate-to-*` labels).

As kube-controller-manager's clusterrole-aggregation controller: any ClusterRole event may change
what any aggregated role selects, so every event dirties every aggregated role; a sync computes the
role's rules (`rbac.aggregated_rules`: selector order, then name order, duplicates dropped) and, when
they differ, applies them with server-side apply under the field manager
`clusterrole-aggregation-controller`. A role aggregating another converges over a few passes, each
write being an event.
"""

from __future__ import annotations

from planner.slim.api import Api
from planner.slim.authorizer import GROUP, aggregated_rules
from planner.slim.controllers.base import Writer, key, name_of
from planner.slim.reconcilers import CONTROLLERS, Key
from planner.slim.store import WatchEvent

MANAGER = "clusterrole-aggregation-controller"


class ClusterRoleAggregator:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (key("ClusterRole"),)
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, MANAGER)

    def observe(self, event: WatchEvent) -> list[Key]:
        return self.resync()

    def resync(self) -> list[Key]:
        roles = self.api.store.list(key("ClusterRole"), "")
        return [
            Key(key("ClusterRole"), "", name_of(r)) for r in roles if r.get("aggregationRule") is not None
        ]

    def sync(self, role_key: Key, now: float) -> float | None:
        role = self.api.store.get(*role_key)
        if role is None:
            return None
        rules = aggregated_rules(role, self.api.store.list(key("ClusterRole"), ""))
        if rules is not None and rules != role.get("rules"):
            name = name_of(role)
            body = {
                "apiVersion": f"{GROUP}/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            }
            self.writer.apply("ClusterRole", "", name, body)
        return None

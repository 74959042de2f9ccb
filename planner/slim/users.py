"""Who a request comes from: the user names and groups the apiserver's authenticators produce.

A ServiceAccount authenticates as `system:serviceaccount:<namespace>:<name>` in the groups
`system:serviceaccounts`, `system:serviceaccounts:<namespace>` and `system:authenticated`; a request
without credentials is `system:anonymous` in `system:unauthenticated`; the embedded cluster's admin
(the token `planner cluster up --rbac` writes into its kubeconfig) is `kubernetes-admin` in
`system:masters`, the group the apiserver lets do anything, as a kubeadm cluster's admin kubeconfig is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def as_user_info(self) -> dict[str, Any]:
        """The `authentication.k8s.io/v1` UserInfo of this user (empty fields omitted, as Go's are)."""
        info: dict[str, Any] = {"username": self.name}
        if self.uid:
            info["uid"] = self.uid
        if self.groups:
            info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {key: list(values) for key, values in self.extra.items()}
        return info


ANONYMOUS = User("system:anonymous", groups=(UNAUTHENTICATED,))
ADMIN = User("kubernetes-admin", groups=(MASTERS, AUTHENTICATED))


def service_account_name(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED)


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    return User(service_account_name(namespace, name), uid, service_account_groups(namespace))


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a ServiceAccount's user name, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return (namespace, name) if sep and namespace and name and ":" not in name else None

"""Authentication and authorization of HTTP requests, as the apiserver's filters do them.

**Who asks.** A bearer token is the admin token (`--token`: the user `kubernetes-admin` in
`system:masters`, which `planner cluster up` writes into its kubeconfig) or a ServiceAccount token the
server issued (TokenRequest) for a ServiceAccount that still exists with the same uid; any other token
is rejected (401, on every path, as the apiserver does). A request without a token is
`system:anonymous`, who may do only what RBAC grants `system:unauthenticated` — `/healthz`, `/livez`,
`/readyz` and `/version` (the bootstrap role `system:public-info-viewer`) — else 403 with the
apiserver's message. A server with neither an admin token nor `--rbac` (`--insecure-no-auth`) lets
everyone do everything, but still recognizes tokens, so the request log names who asked.
`Impersonate-User`/`-Group`/`-Uid` headers (`kubectl --as`) switch the user once the requester may
`impersonate` them.

**What they may do.** `system:masters` may do everything (the apiserver's privileged group). With
`--rbac` everyone else may do what RBAC allows (`rbac.Authorizer` over the stored roles and bindings);
without it, every authenticated user may do everything. The in-process controllers call the API core
directly and are never asked.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.slim import status_errors
from planner.slim.api import Api
from planner.slim.authorizer import Attributes, Authorizer, Decision, Rules, forbidden
from planner.slim.requestinfo import RequestInfo
from planner.slim.resources import by_kind
from planner.slim.tokens import API_AUDIENCES
from planner.slim.users import (
    ADMIN,
    ANONYMOUS,
    AUTHENTICATED,
    MASTERS,
    UNAUTHENTICATED,
    User,
    service_account_user,
    split_service_account,
)
from planner.slim.verbhelpers import resource_key

Obj = dict[str, Any]
ALL_RESOURCES = Rules(
    [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
)


class StorePolicy:
    """`rbac.Policy` over the store: the roles and bindings as they are now, in name order."""

    def __init__(self, api: Api) -> None:
        self.store = api.store
        self._keys = {kind: resource_key(by_kind(kind)) for kind in _RBAC_KINDS}

    def cluster_role_bindings(self) -> list[Obj]:
        return self.store.list(self._keys["ClusterRoleBinding"], "")

    def role_bindings(self, namespace: str) -> list[Obj]:
        return self.store.list(self._keys["RoleBinding"], namespace)

    def cluster_role(self, name: str) -> Obj | None:
        return self.store.get(self._keys["ClusterRole"], "", name)

    def role(self, namespace: str, name: str) -> Obj | None:
        return self.store.get(self._keys["Role"], namespace, name)


_RBAC_KINDS = ("ClusterRoleBinding", "RoleBinding", "ClusterRole", "Role")


@dataclass
class Auth:
    api: Api
    admin_token: str = ""
    rbac: bool = False
    audiences: tuple[str, ...] = API_AUDIENCES
    authorizer: Authorizer = field(init=False)

    def __post_init__(self) -> None:
        self.authorizer = Authorizer(StorePolicy(self.api))

    # --- authentication ------------------------------------------------------------------------------

    @property
    def guarded(self) -> bool:
        """Whether requests need credentials at all (an admin token or RBAC)."""
        return bool(self.admin_token) or self.rbac

    def authenticate(self, authorization: str) -> User | None:
        """The user an `Authorization` header names (anonymous without one); None means 401."""
        scheme, _, token = authorization.partition(" ")
        if not authorization or scheme.lower() != "bearer" or not token.strip():
            return ANONYMOUS
        user = self.authenticate_token(token.strip())
        if user is None and not self.guarded:
            return ANONYMOUS  # an open server: any credentials will do
        return user

    def authenticate_token(self, token: str) -> User | None:
        if self.admin_token and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return ADMIN
        claims = self.api.tokens.verify(token, self.audiences)
        if claims is None:
            return None
        account = self.api.store.get(resource_key(by_kind("ServiceAccount")), claims.namespace, claims.name)
        if account is None or account["metadata"].get("uid") != claims.uid:
            return None
        return service_account_user(claims.namespace, claims.name, claims.uid)

    def impersonate(self, user: User, headers: Mapping[str, str]) -> User:
        """The user the `Impersonate-*` headers ask for, once `user` may impersonate each part."""
        name = headers.get("Impersonate-User", "")
        groups = tuple(_all(headers, "Impersonate-Group"))
        if not name:
            if groups:
                raise status_errors.internal("requested impersonation of groups without impersonating a user")
            return user
        account = split_service_account(name)
        if account is not None:
            self._may_impersonate(user, "serviceaccounts", account[1], namespace=account[0])
        else:
            self._may_impersonate(user, "users", name)
        for group in groups:
            self._may_impersonate(user, "groups", group)
        uid = headers.get("Impersonate-Uid", "")
        if uid:
            self._may_impersonate(user, "uids", uid, api_group="authentication.k8s.io")
        return _impersonated(name, groups, uid)

    def _may_impersonate(self, user: User, resource: str, name: str, **where: str) -> None:
        asked = RequestInfo(
            True,
            "",
            "impersonate",
            api_group=where.get("api_group", ""),
            namespace=where.get("namespace", ""),
            resource=resource,
            name=name,
        )
        attrs = Attributes(user, asked)
        decision = self.decide(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)

    # --- authorization -------------------------------------------------------------------------------

    def decide(self, attrs: Attributes) -> Decision:
        if not self._by_rbac(attrs.user):
            return Decision(True)
        return self.authorizer.authorize(attrs)

    def _by_rbac(self, user: User) -> bool:
        """Whether RBAC decides for `user`: with `--rbac` everyone but `system:masters`; on a server
        that only needs a token, the anonymous user (who then may read the public paths only)."""
        if not self.guarded or MASTERS in user.groups:
            return False
        return self.rbac or user.name == ANONYMOUS.name

    def check(self, user: User, info: RequestInfo) -> None:
        """Raise the 403 for a request `user` may not make."""
        attrs = Attributes(user, info)
        decision = self.decide(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)

    def rules_for(self, user: User, namespace: str) -> Rules:
        return self.authorizer.rules_for(user, namespace) if self._by_rbac(user) else ALL_RESOURCES


def _all(headers: Mapping[str, str], name: str) -> list[str]:
    getall = getattr(headers, "getall", None)
    if getall is not None:
        return list(getall(name, []))
    value = headers.get(name)
    return [value] if value else []


def _impersonated(name: str, groups: tuple[str, ...], uid: str) -> User:
    """As the apiserver fills in an impersonated user: a ServiceAccount's groups when none are given,
    and `system:authenticated` for everyone but the anonymous user."""
    account = split_service_account(name)
    if account is not None and not groups:
        groups = service_account_user(*account).groups
    elif name != ANONYMOUS.name and UNAUTHENTICATED not in groups and AUTHENTICATED not in groups:
        groups = (*groups, AUTHENTICATED)
    return User(name, uid, groups)

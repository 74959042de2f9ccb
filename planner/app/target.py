"""Which cluster a command talks to, shared by every command family."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from planner.errors import ForbiddenError, NoClusterError, NotFoundError, PlannerError
from planner.kinds import NAMESPACE, SECRET
from planner.kube.client import ClientOptions, KubeClient, resource_path
from planner.kube.config import choose_context, default_namespace
from planner.kube.discovery import served_api_versions
from planner.objects import metadata_of
from planner.plan.helm_engine import Capabilities
from planner.plan.secrets import SecretRefs
from planner.savedplan import ClusterIdentity

IDENTITY_NAMESPACE = "kube-system"  # every cluster has it, and its uid lives as long as the cluster


@dataclass(frozen=True, kw_only=True)
class Target:
    """Which cluster, and the runtime's default namespace there. The client is built on first use and
    then shared by every step of the command (one connection pool, one request log, one rate limit)."""

    namespace: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    options: ClientOptions | None = None

    @cached_property
    def client(self) -> KubeClient:
        return KubeClient.from_config(kubeconfig=self.kubeconfig, context=self.context, options=self.options)

    @cached_property
    def user(self) -> str:
        """The kubeconfig user of the chosen context, as generations record who applied them ("" in-
        cluster, or when the kubeconfig cannot say); the impersonated user with `--as`. Read once, as the
        client is."""
        if self.options is not None and self.options.impersonate:
            return self.options.impersonate
        try:
            return choose_context(kubeconfig=self.kubeconfig, context=self.context).user or ""
        except PlannerError:
            return ""

    def default_namespace(self) -> str:
        """`-n`, else the kubeconfig context's namespace, else `default` (docs/design.md §3)."""
        return default_namespace(namespace=self.namespace, kubeconfig=self.kubeconfig, context=self.context)

    def in_namespace(self, namespace: str) -> Target:
        """The same cluster, and the same client once it is built, with another default namespace."""
        moved = dataclasses.replace(self, namespace=namespace)
        for cached in ("client", "user"):  # a cached_property keeps its value in the instance's __dict__
            if cached in self.__dict__:
                moved.__dict__[cached] = self.__dict__[cached]
        return moved

    def impersonating(self, user: str) -> Target:
        """The same cluster, every request made as `user` (a ServiceAccount's
        `system:serviceaccount:NS:NAME`) through the API server's impersonation, over the same
        connection pool once the client is built."""
        options = dataclasses.replace(
            self.options or ClientOptions(), impersonate=user, impersonate_groups=()
        )
        moved = dataclasses.replace(self, options=options)
        if "client" in self.__dict__:
            moved.__dict__["client"] = self.client.with_options(impersonate=user, impersonate_groups=())
        return moved

    def described(self) -> str:
        """The cluster as a reader of a plan knows it: the server URL and the kubeconfig context."""
        chosen = choose_context(kubeconfig=self.kubeconfig, context=self.context)
        where = f"kubeconfig context `{chosen.context}`" if chosen.context else "in-cluster credentials"
        return f"`{self.client.host}` ({where})"

    def identity(self) -> ClusterIdentity:
        """Which cluster this really is: its `kube-system` Namespace's uid (one GET; "" without the
        permission to read it) and the server URL."""
        try:
            namespace = self.client.request(
                "GET", resource_path(NAMESPACE, name=IDENTITY_NAMESPACE), verb="get"
            )
        except (ForbiddenError, NotFoundError):
            return ClusterIdentity(uid="", server=self.client.host)
        uid = str(metadata_of(namespace).get("uid") or "")
        return ClusterIdentity(uid=uid, server=self.client.host)


def secret_refs(target: Target, namespace: str | None = None) -> SecretRefs:
    """Reads a plan's `valueFrom.secretKeyRef` from the cluster: the Secret in the plan's namespace
    (`namespace` when given, as for a Plan object, else the plan's own or the target's default). One
    GET per value, made only when a plan has one; nothing of it is ever printed."""

    def read(plan_namespace: str | None, name: str, key: str) -> str:
        where = namespace or plan_namespace or target.default_namespace()
        try:
            secret = target.client.request("GET", resource_path(SECRET, where, name), verb="get")
        except NotFoundError:
            raise LookupError(f'Secret "{name}" not found in namespace {where}') from None
        encoded = (secret.get("data") or {}).get(key)
        if not isinstance(encoded, str):
            raise LookupError(f'Secret "{name}" in namespace {where} has no key "{key}"')
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise LookupError(
                f'key "{key}" of Secret "{name}" in namespace {where} is not UTF-8 text'
            ) from None

    return read


def chart_capabilities(target: Target) -> Callable[[], Capabilities]:
    """What the target cluster serves, for Helm's `.Capabilities`: asked once, on first use (only a plan
    with charts asks), from its discovery. With no cluster configured at all (`planner render` on a
    machine without a kubeconfig), Helm's defaults, as `helm template` without a cluster."""

    @functools.cache
    def ask() -> Capabilities:
        try:
            client = target.client
        except NoClusterError:
            return Capabilities()
        version, api_versions = served_api_versions(client)
        return Capabilities(kube_version=version or None, api_versions=api_versions)

    return ask

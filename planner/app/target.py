"""Which cluster a command talks to, shared by every command family."""

from __future__ import annotations

from dataclasses import dataclass

from planner.kube.client import ClientOptions, KubeClient
from planner.kube.config import default_namespace


@dataclass(frozen=True, kw_only=True)
class Target:
    """Which cluster, and the runtime's default namespace there."""

    namespace: str | None = None
    kubeconfig: str | None = None
    context: str | None = None
    options: ClientOptions | None = None

    def client(self) -> KubeClient:
        return KubeClient.from_config(kubeconfig=self.kubeconfig, context=self.context, options=self.options)

    def default_namespace(self) -> str:
        """`-n`, else the kubeconfig context's namespace, else `default` (DESIGN §3)."""
        return default_namespace(namespace=self.namespace, kubeconfig=self.kubeconfig, context=self.context)

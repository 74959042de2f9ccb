"""Multi-tenancy: as whom a Plan object is reconciled, and what the platform's lockdown refuses
(docs/controller.md, "Multi-tenancy"). Pure: the controller asks, then impersonates and writes.

A Plan names `serviceAccountName` (in its own namespace), else the controller's
`--default-service-account` applies; every request made for the Plan is then made as that account
through the API server's impersonation, so the account's RBAC — not the controller's — decides what the
Plan may do. The lockdown flags are the platform admin's, never the tenant's: `--no-cross-namespace-refs`
refuses every object outside the Plan's namespace, and cluster-scoped objects unless the Plan's
namespace is one `--cluster-scoped-namespaces` names (`allowClusterScoped` is the plan's own word, which
a tenant writes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from planner.objects import Manifest, ref_of


def service_account_user(namespace: str, name: str) -> str:
    """The user name Kubernetes gives a ServiceAccount, as impersonation names it."""
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True, kw_only=True)
class Tenancy:
    default_service_account: str | None = None
    no_cross_namespace_refs: bool = False
    cluster_scoped_namespaces: frozenset[str] = frozenset()

    def account_of(self, named: str | None) -> str | None:
        """The ServiceAccount a Plan is reconciled as: the one it names, else the default (None: the
        controller's own identity)."""
        return named or self.default_service_account

    def refusals(self, namespace: str, manifests: Iterable[Manifest]) -> list[str]:
        """Why the lockdown refuses a Plan in `namespace` that renders `manifests`: a sentence per object,
        none when it is allowed (or no lockdown is on)."""
        if not self.no_cross_namespace_refs:
            return []
        found = []
        for manifest in manifests:
            ref = ref_of(manifest)
            if ref.namespace is None and namespace not in self.cluster_scoped_namespaces:
                found.append(
                    f"{ref}: cluster-scoped, and the controller's --cluster-scoped-namespaces does not "
                    f"name namespace {namespace} (allowClusterScoped alone is the plan's own word)"
                )
            elif ref.namespace is not None and ref.namespace != namespace:
                found.append(
                    f"{ref}: in namespace {ref.namespace}, outside the Plan's namespace {namespace} "
                    "(--no-cross-namespace-refs)"
                )
        return found

"""What creating and deleting objects of a kind does beyond the generic rules: the lifecycle hooks
of the resource table that are not defaulting, admission or validation.

- A new Namespace comes with what controllers put in every namespace (its `default` ServiceAccount
  and the `kube-root-ca.crt` ConfigMap); the API core creates them at once, so a Pod created right
  after its namespace never races the controller that would otherwise add them.
- A Namespace being deleted is `Terminating`; its removal waits for `spec.finalizers`.
- A Pod bound to a node is deleted gracefully: the request's grace period, else its
  `terminationGracePeriodSeconds`, during which the node agent stops its containers. An unscheduled
  or finished Pod has nothing to stop and goes at once.

The functions here only read and change the objects they are given; `api.Api` does the writes.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

TERMINATING = "Terminating"
DEFAULT_GRACE_SECONDS = 30
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)
ROOT_CA_PLACEHOLDER = (
    "-----BEGIN CERTIFICATE-----\nplanner-embedded-cluster-has-no-tls\n-----END CERTIFICATE-----\n"
)


# --- namespaces ---------------------------------------------------------------------------------------


def namespace_contents() -> list[tuple[str, Obj]]:
    """(kind, body) of what every namespace holds: the `default` ServiceAccount and the root CA
    ConfigMap (a placeholder: there is no TLS)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    root_ca = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-root-ca.crt",
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {"ca.crt": ROOT_CA_PLACEHOLDER},
    }
    return [("ServiceAccount", account), ("ConfigMap", root_ca)]


def created_with_namespace(namespace: Obj) -> list[tuple[str, str, Obj]]:
    """(kind, namespace, body) of the objects a new Namespace is created with."""
    name = str(namespace["metadata"]["name"])
    return [(kind, name, body) for kind, body in namespace_contents()]


def mark_terminating(namespace: Obj) -> None:
    namespace.setdefault("status", {})["phase"] = TERMINATING


# --- pods ---------------------------------------------------------------------------------------------


def pod_grace_period(pod: Obj, requested: int | None) -> int:
    """Seconds a deleted Pod waits for the node agent: none unless it is bound and still running."""
    spec = pod.get("spec") or {}
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(requested, 0)
    return int(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))

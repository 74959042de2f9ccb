"""Which cluster and namespace a command means, read from kubeconfig the way kubectl does.

Reading the kubeconfig file is the only thing here: no connection is made, so `render` can use the
context's namespace without a reachable cluster.
"""

from __future__ import annotations

import os

from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION, list_kube_config_contexts

DEFAULT_NAMESPACE = "default"


def kubeconfig_path(explicit: str | None) -> str:
    """`--kubeconfig`, else `KUBECONFIG` (colon-separated paths allowed), else `~/.kube/config`."""
    return explicit or os.environ.get("KUBECONFIG") or os.path.expanduser(KUBE_CONFIG_DEFAULT_LOCATION)


def context_namespace(*, kubeconfig: str | None, context: str | None) -> str | None:
    """The namespace of the chosen (or current) context, or None when there is no usable kubeconfig."""
    try:
        contexts, current = list_kube_config_contexts(config_file=kubeconfig_path(kubeconfig))
    except (ConfigException, OSError, TypeError):
        return None
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else None


def default_namespace(*, namespace: str | None, kubeconfig: str | None, context: str | None) -> str:
    """The runtime's default namespace: `-n`, else the kubeconfig context's, else `default` (DESIGN §3)."""
    return namespace or context_namespace(kubeconfig=kubeconfig, context=context) or DEFAULT_NAMESPACE

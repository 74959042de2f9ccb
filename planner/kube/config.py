"""Which cluster and namespace a command means, read from kubeconfig the way kubectl does — but never
guessed.

kubectl's rule decides the source: `--kubeconfig`, else `KUBECONFIG` (colon-separated files, merged),
else `~/.kube/config`; in-cluster credentials only when none of these names a file. Unlike the official
client, a source that is named but unusable is an error that says what is wrong, never a silent fall back
to in-cluster credentials: inside a pod, a typo in `--context` would otherwise reach the pod's own
cluster. Reading the files is all that happens here; no connection is made, so `render` can use the
context's namespace without a reachable cluster.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigMerger

from planner.errors import KubeconfigError, NoClusterError

DEFAULT_NAMESPACE = "default"
DEFAULT_KUBECONFIG = "~/.kube/config"
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True, kw_only=True)
class KubeconfigContext:
    """The context a command uses: from `files` (merged in order), or in-cluster when `files` is empty."""

    files: tuple[str, ...]
    context: str | None = None
    namespace: str | None = None
    user: str | None = None
    server: str | None = None

    @property
    def in_cluster(self) -> bool:
        return not self.files

    @property
    def config_file(self) -> str:
        """The files as the official client takes them (one path, or several joined by `:`)."""
        return str(ENV_KUBECONFIG_PATH_SEPARATOR).join(self.files)


IN_CLUSTER = KubeconfigContext(files=())


def named_files(explicit: str | None) -> tuple[str, ...] | None:
    """The kubeconfig files the user named (`--kubeconfig`, else `KUBECONFIG`), or None when neither is."""
    source = explicit or os.environ.get("KUBECONFIG", "")
    files = tuple(path for path in source.split(ENV_KUBECONFIG_PATH_SEPARATOR) if path)
    return files or None


def choose_context(*, kubeconfig: str | None, context: str | None) -> KubeconfigContext:
    """The context to use; raises KubeconfigError naming what is wrong with a named source, and
    NoClusterError when nothing is named, `~/.kube/config` is absent and this is not a pod."""
    files = named_files(kubeconfig)
    if files is None:
        default = os.path.expanduser(DEFAULT_KUBECONFIG)
        if os.path.exists(default):
            files = (default,)
        elif context:
            raise KubeconfigError(
                f'context "{context}" not found: no kubeconfig (--kubeconfig and KUBECONFIG are unset '
                f"and {DEFAULT_KUBECONFIG} does not exist)"
            )
        elif os.environ.get(IN_CLUSTER_ENV):
            return IN_CLUSTER
        else:
            raise NoClusterError()
    return _context_in(files, context)


def _context_in(files: tuple[str, ...], wanted: str | None) -> KubeconfigContext:
    for path in files:
        if not os.path.isfile(path):
            what = "is a directory" if os.path.isdir(path) else "no such file"
            raise KubeconfigError(f"kubeconfig {path}: {what}")
    merged = _merged(files)
    shown = ", ".join(files)
    contexts = {str(c.get("name")): c.get("context") or {} for c in _entries(merged, "contexts")}
    listing = f"(contexts: {', '.join(sorted(contexts)) or 'none'})"
    name = wanted or merged.get("current-context")
    if not name:
        raise KubeconfigError(f"kubeconfig {shown} sets no current-context: pass --context {listing}")
    if name not in contexts:
        raise KubeconfigError(f'context "{name}" not found in {shown} {listing}')
    chosen = contexts[name]
    clusters = {str(c.get("name")): c.get("cluster") or {} for c in _entries(merged, "clusters")}
    server = clusters.get(str(chosen.get("cluster")), {}).get("server")
    return KubeconfigContext(
        files=files,
        context=str(name),
        namespace=str(chosen["namespace"]) if chosen.get("namespace") else None,
        user=str(chosen["user"]) if chosen.get("user") else None,
        server=str(server) if server else None,
    )


def _merged(files: tuple[str, ...]) -> dict[str, Any]:
    shown = ", ".join(files)
    try:
        merger = KubeConfigMerger(ENV_KUBECONFIG_PATH_SEPARATOR.join(files))
    except ConfigException as broken:
        raise KubeconfigError(f"kubeconfig {shown}: {_one_line(broken)}") from broken
    except (TypeError, AttributeError, KeyError) as broken:
        raise KubeconfigError(f"kubeconfig {shown}: {_NOT_A_KUBECONFIG}") from broken
    except Exception as broken:  # the YAML parser's errors share no narrower class
        raise KubeconfigError(f"kubeconfig {shown}: not valid YAML: {_one_line(broken)}") from broken
    value = merger.config.value if merger.config is not None else None
    if not isinstance(value, dict):
        raise KubeconfigError(f"kubeconfig {shown}: {_NOT_A_KUBECONFIG}")
    return value


_NOT_A_KUBECONFIG = "not a kubeconfig (expected a mapping with clusters, contexts and users)"


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def _entries(merged: dict[str, Any], section: str) -> list[dict[str, Any]]:
    """A merged section's entries (the merger wraps each in a node holding its dict as `value`)."""
    entries = [getattr(entry, "value", entry) for entry in merged.get(section) or []]
    return [entry for entry in entries if isinstance(entry, dict)]


def default_namespace(*, namespace: str | None, kubeconfig: str | None, context: str | None) -> str:
    """The runtime's default namespace: `-n`, else the kubeconfig context's, else `default` (docs/design.md §3).

    With `-n` given the kubeconfig is not read at all; otherwise a named but unusable kubeconfig or
    context is an error, as it would be for any command that reaches the cluster."""
    if namespace:
        return namespace
    try:
        chosen = choose_context(kubeconfig=kubeconfig, context=context)
    except NoClusterError:
        return DEFAULT_NAMESPACE
    return chosen.namespace or DEFAULT_NAMESPACE

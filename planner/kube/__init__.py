"""The only code that talks to a cluster, and the only importer of the kubernetes client (docs/design.md §2).

The `kubernetes` package's own `__init__` imports every sub-package it has: the dynamic client (and
with it kubernetes-validate and jsonschema's specifications), the websocket stream, watch, leader
election, the informer and utils, none of which planner uses, for 0.1–0.3 s of every command that
talks to a cluster. planner imports the modules it does use by their full names
(`kubernetes.client`, `kubernetes.config.kube_config`, ...), so the package is registered here
without running its `__init__`: each of those still runs its own module code, unchanged.
"""

from __future__ import annotations

import importlib.util
import sys


def _client_package_without_its_init() -> None:
    """Register the `kubernetes` package (its `__path__`, so its modules import as usual) without
    running its `__init__`; nothing to do when it was imported already."""
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return
    sys.modules["kubernetes"] = importlib.util.module_from_spec(spec)


_client_package_without_its_init()

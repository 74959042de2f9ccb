"""ConfigMaps and Secrets: the plan's own, and the Opaque Secret shape sandboxes reuse for `secretEnv`.

Secret values arrive resolved (the loader read files and environment variables); here they are only
base64-encoded. Printing them is the printers' business, and they mask them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from planner.kinds import CONFIG_MAP, SECRET
from planner.objects import Manifest, present
from planner.plan.model import Plan
from planner.render.identity import Stamp


def config_map(name: str, data: Mapping[str, str], *, stamp: Stamp, namespace: str) -> Manifest:
    return {
        "apiVersion": CONFIG_MAP.api_version,
        "kind": CONFIG_MAP.kind,
        "metadata": stamp.metadata(name=name, namespace=namespace),
        **present(data=dict(data)),
    }


def opaque_secret(
    name: str,
    values: Mapping[str, str],
    *,
    stamp: Stamp,
    namespace: str,
    annotations: Mapping[str, str] | None = None,
) -> Manifest:
    encoded = {key: base64.b64encode(value.encode("utf-8")).decode("ascii") for key, value in values.items()}
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": stamp.metadata(name=name, namespace=namespace, annotations=annotations),
        "type": "Opaque",
        **present(data=encoded),
    }


def render_config(plan: Plan, *, stamp: Stamp, namespace: str) -> list[Manifest]:
    """The plan's ConfigMaps, then its Secrets, each in plan order."""
    config_maps = [config_map(c.name, c.data, stamp=stamp, namespace=namespace) for c in plan.config_maps]
    secrets = [opaque_secret(s.name, s.data, stamp=stamp, namespace=namespace) for s in plan.secrets]
    return config_maps + secrets

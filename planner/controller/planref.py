"""How the controller names and addresses a Plan object: its work-queue key `NAMESPACE/NAME`, its name
in messages (`plan/NAME -n NAMESPACE`, as the loader's diagnostics say it), its API path, and a merge
patch sent to it."""

from __future__ import annotations

from typing import Any

from planner.kinds import PLAN
from planner.kube.client import KubeClient, resource_path
from planner.objects import Manifest, metadata_of
from planner.plan.load import plan_object_source

MERGE_PATCH = "application/merge-patch+json"


def object_key(plan: Manifest) -> str:
    """A Plan's work-queue key: `NAMESPACE/NAME`."""
    metadata = metadata_of(plan)
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def source_name(key: str) -> str:
    namespace, _, name = key.partition("/")
    return plan_object_source(namespace, name)


def namespace_of(plan: Manifest) -> str:
    return str(metadata_of(plan).get("namespace", ""))


def plan_path(plan: Manifest) -> str:
    metadata = metadata_of(plan)
    return resource_path(PLAN, str(metadata.get("namespace")), str(metadata.get("name")))


def patch_plan(client: KubeClient, path: str, patch: dict[str, Any]) -> Manifest:
    """Send `patch` as a JSON merge patch to the Plan (or its subresource) at `path`; the Plan as written."""
    return client.request("PATCH", path, body=patch, content_type=MERGE_PATCH, verb="patch")

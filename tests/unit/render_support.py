"""Builders and checks shared by the renderer's tests (no tests of its own).

Plans are built from the model's dataclasses directly, so the renderer is tested apart from the
loader. `rendered` validates every manifest of every test plan against the Kubernetes 1.28 schema,
strictly, so no test plan can render something a real API server would reject.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from typing import Any

import kubernetes_validate
import kubernetes_validate.utils

from planner.plan.model import Plan, Workload
from planner.render import render

KUBERNETES_VERSION = "1.28.0"

# kubernetes-validate reads and parses two schema files (the kind's and ~1 MB of definitions) on every
# call; parsing them once per process makes validating every manifest of every test plan affordable.
# The result of each validation is unchanged: the same schemas, only not re-read.
if not hasattr(kubernetes_validate.utils.schema_contents, "cache_info"):
    kubernetes_validate.utils.schema_contents = functools.lru_cache(maxsize=64)(
        kubernetes_validate.utils.schema_contents
    )
IMAGE = "ghcr.io/acme/web:1.4.2"
HASH = "planner.dev/hash"


def expected_applyset_id(plan: str, namespace: str) -> str:
    """KEP-3659, written out: sha256 of `<name>.<namespace>.<Kind>.<group>`, base64url without padding."""
    digest = hashlib.sha256(f"{plan}.{namespace}.Secret.".encode()).digest()
    return "applyset-" + base64.urlsafe_b64encode(digest).decode().rstrip("=") + "-v1"


SHOP_APPLYSET = expected_applyset_id("shop", "shop")


def sha256_of_canonical(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def workload(name: str = "web", **fields: Any) -> Workload:
    fields.setdefault("kind", "deployment")
    fields.setdefault("image", IMAGE)
    return Workload(name=name, **fields)


def plan(*, name: str = "shop", namespace: str | None = "shop", runtime: str = "k8s", **entries: Any) -> Plan:
    return Plan(name=name, namespace=namespace, runtime=runtime, **entries)  # type: ignore[arg-type]


def validate(manifests: list[dict[str, Any]]) -> None:
    for manifest in manifests:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def rendered(the_plan: Plan, default_namespace: str = "default") -> list[dict[str, Any]]:
    """Render and validate every manifest."""
    manifests = render(the_plan, default_namespace)
    validate(manifests)
    return manifests


def find(manifests: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def rendered_object(
    the_plan: Plan, kind: str, name: str, default_namespace: str = "default"
) -> dict[str, Any]:
    return find(rendered(the_plan, default_namespace), kind, name)


def without_hash(manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of the manifest without its hash annotation, whose value the hash tests check by formula."""
    copied: dict[str, Any] = json.loads(json.dumps(manifest))
    copied["metadata"]["annotations"].pop(HASH)
    return copied


def kinds_and_names(manifests: list[dict[str, Any]]) -> list[str]:
    return [f"{m['kind']}/{m['metadata']['name']}" for m in manifests]


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def main_container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod_spec(manifest)["containers"][0]
    return container

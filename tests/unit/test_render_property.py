"""Property: every plan the loader accepts renders without error, and every manifest it renders passes
the Kubernetes 1.28 schema strictly, carries the plan's identity and hashes to its own content.

Plans come from `tests/strategies.plan_documents()`, which reaches every property of the plan schema,
and go through the real loader, so the renderer sees exactly what `planner render` would give it.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from planner.render import render
from planner.state.applyset import applyset_id
from tests.strategies import load_document, plan_documents
from tests.unit.render_support import sha256_of_canonical, validate, without_hash


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(document=plan_documents())
def test_every_valid_plan_renders_manifests_kubernetes_accepts(document: dict[str, Any]) -> None:
    plan = load_document(document)
    manifests = render(plan, "default")
    validate(manifests)
    applyset = applyset_id(plan.name, plan.namespace or "default")
    for manifest in manifests:
        metadata = manifest["metadata"]
        assert metadata["labels"]["applyset.kubernetes.io/part-of"] == applyset
        assert metadata["annotations"]["planner.dev/hash"] == sha256_of_canonical(without_hash(manifest))
    names = [f"{m['kind']}/{m['metadata']['namespace']}/{m['metadata']['name']}" for m in manifests]
    assert len(names) == len(set(names)), "two rendered objects share a kind, namespace and name"
    assert json.dumps(render(plan, "default"), sort_keys=True) == json.dumps(manifests, sort_keys=True)

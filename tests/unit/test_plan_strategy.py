"""The plan_documents() strategy reaches every property of the schema, and what it makes loads."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import NoSuchExample

from tests.strategies import load_document, locations_in, plan_documents, schema_locations

pytestmark = pytest.mark.unit

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def test_schema_locations_name_properties_by_their_place_in_the_schema() -> None:
    locations = schema_locations()
    expected = {"#.workloads", "#.metadata.namespace", "#workload.readinessProbe", "#probe.httpGet.port"}
    expected |= {"#secretValue.valueFrom.file", "#sandbox.rootfs.generation", "#.warmPools[].template"}
    assert expected <= locations
    assert len(locations) == 119


def test_the_strategy_reaches_every_property_of_the_schema() -> None:
    wanted = schema_locations()
    seen: set[str] = set()

    def everything_seen(document: dict[str, Any]) -> bool:
        seen.update(locations_in(document))
        return seen >= wanted

    deterministic = settings(
        max_examples=2000,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=SLOW_OK,
    )
    with contextlib.suppress(NoSuchExample):
        find(plan_documents(), everything_seen, settings=deterministic)
    assert sorted(wanted - seen) == []


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(plan_documents())
def test_every_generated_document_loads(document: dict[str, Any]) -> None:
    plan = load_document(document)
    assert plan.name == document["metadata"]["name"]
    assert len(plan.workloads) == len(document.get("workloads", []))
    assert len(plan.sandboxes) == len(document.get("sandboxes", []))

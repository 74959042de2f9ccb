"""The plan_documents() strategy reaches every property of the schema, and what it makes loads."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner.errors import PlanError
from tests.strategies import load_document, locations_in, plan_documents, schema_locations

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def test_schema_locations_name_properties_by_their_place_in_the_schema() -> None:
    locations = schema_locations()
    expected = {"#.workloads", "#.metadata.namespace", "#workload.readinessProbe", "#probe.httpGet.port"}
    expected |= {"#secretValue.valueFrom.file", "#sandbox.rootfs.generation", "#.warmPools[].template"}
    assert expected <= locations
    assert len(locations) == 213  # `charts` are not generated (test_plan_charts.py has their own tests)


class _EverythingSeen(Exception):
    """Raised from inside a property to stop generating once every location was seen."""


def test_the_strategy_reaches_every_property_of_the_schema() -> None:
    wanted = schema_locations()
    seen: set[str] = set()

    # Plain generation, as every property test draws (find() searches differently and needs far more).
    @settings(
        max_examples=1000,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=SLOW_OK,
    )
    @given(plan_documents())
    def look(document: dict[str, Any]) -> None:
        seen.update(locations_in(document))
        if seen >= wanted:
            raise _EverythingSeen

    with contextlib.suppress(_EverythingSeen):
        look()
    assert sorted(wanted - seen) == []


@settings(max_examples=40, deadline=None, suppress_health_check=SLOW_OK)
@given(plan_documents())
def test_every_generated_document_loads(document: dict[str, Any]) -> None:
    plan = load_document(document)
    assert plan.name == document["metadata"]["name"]
    assert len(plan.workloads) == len(document.get("workloads", []))
    assert len(plan.sandboxes) == len(document.get("sandboxes", []))


JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(plan_documents(), st.data())
def test_a_document_with_any_node_replaced_loads_or_fails_with_diagnostics(
    document: dict[str, Any], data: st.DataObject
) -> None:
    document = copy.deepcopy(document)
    _replace_one_node(document, data)
    try:
        load_document(document)
    except PlanError as error:
        assert error.diagnostics
        assert all(diagnostic.line >= 1 and diagnostic.column >= 1 for diagnostic in error.diagnostics)


def _replace_one_node(document: dict[str, Any], data: st.DataObject) -> None:
    """Replace one randomly chosen node of `document` (not the root) with junk."""
    parents: list[tuple[Any, Any]] = []
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            parents.append((node, key))
            stack.append(node[key])
    parent, key = data.draw(st.sampled_from(parents))
    parent[key] = data.draw(JUNK)

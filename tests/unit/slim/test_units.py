"""Unit tables for the pure parts of the embedded server: quantities, selectors, ages, omitempty,
defaulting helpers and the continue token."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from planner import quantities
from planner.slim import columns, defaults
from planner.slim.meta import prune_empty
from planner.slim.selectors import field_getter, parse_field_selector, parse_label_selector
from planner.slim.status_errors import StatusError

QUANTITIES = [
    ("0.5", "500m"),
    ("1000m", "1"),
    ("1024Mi", "1Gi"),
    ("1536Mi", "1536Mi"),
    ("0.5Gi", "512Mi"),
    ("1.5", "1500m"),
    ("2000", "2k"),
    ("1500", "1500"),
    ("1e3", "1e3"),
    ("100Ki", "100Ki"),
    ("512", "512"),
    ("1Ki", "1Ki"),
    ("0", "0"),
    ("250m", "250m"),
    ("1G", "1G"),
    ("2048Ki", "2Mi"),
    ("1.1Ki", "1126400m"),
    ("0.0000000001", "1n"),
    ("8Ei", "9223372036854775807"),
    ("1e400", "10e399"),
    ("1000E", "1e21"),
    ("-1.5Gi", "-1536Mi"),
]


@pytest.mark.parametrize(
    ("given", "canonical"), QUANTITIES, ids=[f"{g} prints as {c}" for g, c in QUANTITIES]
)
def test_quantity_canonical_form(given: str, canonical: str) -> None:
    assert quantities.canonical(given) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [("lots", quantities.FORMAT_WRONG), ("1e3Mi", quantities.FORMAT_WRONG), ("1K", quantities.SUFFIX_WRONG)],
)
def test_quantity_rejects_what_the_apiserver_rejects(text: str, message: str) -> None:
    with pytest.raises(quantities.QuantityError, match=re.escape(message)):
        quantities.canonical(text)


LABELS = {"app": "web", "tier": "front", "n": "7"}
LABEL_CASES = [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app!=web", False),
    ("app in (db,web)", True),
    ("app notin (web)", False),
    ("tier", True),
    ("!tier", False),
    ("missing", False),
    ("!missing", True),
    ("n>5", True),
    ("n<5", False),
    ("app=web,tier=back", False),
    ("app=web, tier in (front)", True),
]


@pytest.mark.parametrize(
    ("text", "matches"),
    LABEL_CASES,
    ids=[f"{t!r} {'matches' if m else 'does not match'} app=web,tier=front,n=7" for t, m in LABEL_CASES],
)
def test_label_selector(text: str, matches: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is matches


def test_field_selector_rejects_unknown_fields() -> None:
    with pytest.raises(StatusError) as failure:
        parse_field_selector("spec.secret=1", {"metadata.name": field_getter("metadata.name")})
    assert (
        failure.value.code == 400
        and failure.value.body["message"] == "field label not supported: spec.secret"
    )


AGES = [
    (5, "5s"),
    (119, "119s"),
    (303, "5m3s"),
    (600, "10m"),
    (11400, "3h10m"),
    (36000, "10h"),
    (190800, "2d5h"),
    (864000, "10d"),
    (800 * 86400, "2y70d"),
]


@pytest.mark.parametrize(("seconds", "shown"), AGES, ids=[f"{s} seconds is {a}" for s, a in AGES])
def test_age_like_kubectl(seconds: int, shown: str) -> None:
    assert columns.human_duration(timedelta(seconds=seconds)) == shown


PRUNES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("nulls and empty strings go", {"a": None, "b": "", "c": 1}, {"c": 1}),
    ("empty lists go", {"args": [], "x": [1]}, {"x": [1]}),
    (
        "empty structs stay",
        {"resources": {}, "securityContext": {}},
        {"resources": {}, "securityContext": {}},
    ),
    ("empty maps go", {"labels": {}, "data": {}}, {}),
    ("empty label values stay", {"labels": {"a": ""}}, {"labels": {"a": ""}}),
    (
        "template creationTimestamp null stays",
        {"metadata": {"creationTimestamp": None}},
        {"metadata": {"creationTimestamp": None}},
    ),
    ("zero numbers and false stay", {"a": 0, "b": False, "c": 0.0}, {"a": 0, "b": False, "c": 0.0}),
    (
        "list items stay as they are, objects in them are pruned",
        {"x": [None, "", 0, [{"a": None, "b": "1"}], []]},
        {"x": [None, "", 0, [{"b": "1"}], []]},
    ),
    (
        "a selector of strings is a map, any other a struct",
        {"selector": {"a": ""}, "spec": {"selector": {"matchLabels": {}}}},
        {"selector": {"a": ""}, "spec": {}},
    ),
]


@pytest.mark.parametrize(("why", "given", "kept"), PRUNES, ids=[p[0] for p in PRUNES])
def test_prune_empty_like_go_omitempty(why: str, given: dict[str, Any], kept: dict[str, Any]) -> None:
    assert prune_empty(given) == kept
    assert prune_empty(given, decoded=True) == kept


def test_field_sets_of_maps_alone_are_shared_and_the_rest_is_copied() -> None:
    fields = {"f:data": {"f:a": {}}}
    entry = {"manager": "m", "operation": "Update", "subresource": "", "fieldsV1": fields}
    obj = {"metadata": {"name": "x", "managedFields": [entry]}, "data": {"a": "1"}}
    pruned = prune_empty(obj, decoded=True)
    assert pruned["metadata"]["managedFields"] == [
        {"manager": "m", "operation": "Update", "fieldsV1": fields}
    ]
    assert pruned["metadata"]["managedFields"][0]["fieldsV1"] is fields
    assert pruned["metadata"] is not obj["metadata"] and pruned["data"] is not obj["data"]
    assert prune_empty(obj)["metadata"]["managedFields"][0]["fieldsV1"] is fields


def test_an_undecoded_field_set_holding_more_than_maps_is_pruned_as_a_copy() -> None:
    fields = {"f:data": {"f:a": {}, "f:b": None, "f:c": "", "f:d": []}, "f:spec": {"labels": {}}}
    obj = {"metadata": {"managedFields": [{"manager": "m", "fieldsV1": fields}]}}
    pruned = prune_empty(obj)["metadata"]["managedFields"][0]["fieldsV1"]
    assert pruned == {"f:data": {"f:a": {}}, "f:spec": {}}
    assert fields["f:data"] == {"f:a": {}, "f:b": None, "f:c": "", "f:d": []}
    assert prune_empty(obj, decoded=True)["metadata"]["managedFields"][0]["fieldsV1"] is fields


PULL = [
    ("nginx", "Always"),
    ("nginx:latest", "Always"),
    ("nginx:1.25", "IfNotPresent"),
    ("registry:5000/app", "Always"),
    ("registry:5000/app:v1", "IfNotPresent"),
    ("app@sha256:abc", "IfNotPresent"),
]


@pytest.mark.parametrize(("image", "policy"), PULL, ids=[f"{i} pulls {p}" for i, p in PULL])
def test_image_pull_policy_default(image: str, policy: str) -> None:
    container: dict[str, Any] = {"name": "c", "image": image}
    defaults.default_container(container)
    assert container["imagePullPolicy"] == policy


def test_pod_requests_default_from_limits_and_qos() -> None:
    pod: dict[str, Any] = {
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1024Mi"}}}
            ]
        }
    }
    defaults.default_pod(pod)
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
    assert pod["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}

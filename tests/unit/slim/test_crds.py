"""The CustomResourceDefinition kind's hooks: defaults, validation causes, accepted names and
conditions, and the kinds an Established CRD serves (versions in Kubernetes' priority order)."""

from __future__ import annotations

import copy
from typing import Any

from planner.slim import admission, crds
from planner.slim.customresources import custom_types
from planner.slim.resources import version_priority
from planner.slim.status_errors import Target

Obj = dict[str, Any]
SCHEMA = {"openAPIV3Schema": {"type": "object"}}


def crd(plural: str = "widgets", group: str = "example.com", **names: Any) -> Obj:
    return {
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": "Widget", **names},
            "versions": [
                {"name": "v1beta1", "served": True, "storage": False, "schema": SCHEMA},
                {"name": "v1", "served": True, "storage": True, "schema": SCHEMA},
                {"name": "v1alpha1", "served": False, "storage": False, "schema": SCHEMA},
            ],
        },
    }


def admitted(new: Obj, others: list[Obj], old: Obj | None = None) -> Obj:
    cluster = admission.Admission(
        lambda kind, ns, name: None, lambda kind: others if kind == crds.KIND else []
    )
    crds.default_crd(new)
    assert (
        crds.admit_crd(
            cluster, new, old, Target("apiextensions.k8s.io", "customresourcedefinitions", crds.KIND)
        )
        == []
    )
    return new


def test_defaults_fill_names_and_conversion() -> None:
    body = crd()
    crds.default_crd(body)
    assert body["spec"]["conversion"] == {"strategy": "None"}
    assert body["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }


def test_a_valid_crd_has_no_causes_and_each_problem_has_its_own() -> None:
    body = crd()
    crds.default_crd(body)
    assert crds.validate_crd(body) == []
    bad = copy.deepcopy(body)
    bad["spec"]["names"]["plural"] = "Widgets"
    bad["spec"]["versions"][0]["storage"] = True
    bad["spec"]["versions"][2]["name"] = "v1"
    del bad["spec"]["versions"][1]["schema"]
    assert [(c.reason, c.field) for c in crds.validate_crd(bad)] == [
        ("FieldValueInvalid", "metadata.name"),
        ("FieldValueInvalid", "spec.names.plural"),
        ("FieldValueRequired", "spec.versions[1].schema.openAPIV3Schema"),
        ("FieldValueDuplicate", "spec.versions[2].name"),
        ("FieldValueInvalid", "spec.versions"),
    ]
    assert [
        c.field for c in crds.update_crd({**body, "spec": {**body["spec"], "group": "other.io"}}, body)
    ] == ["spec.group"]


def test_an_accepted_crd_is_established_and_records_its_storage_version() -> None:
    body = admitted(crd(shortNames=["wd"]), [])
    status = body["status"]
    assert status["acceptedNames"] == {
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "kind": "Widget",
        "listKind": "WidgetList",
    }
    assert status["storedVersions"] == ["v1"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("NamesAccepted", "True", "NoConflicts"),
        ("Established", "True", "InitialNamesAccepted"),
    ]
    assert crds.established(body)


def test_a_name_another_crd_of_the_group_holds_is_a_conflict_only_in_that_group() -> None:
    first = admitted(crd(shortNames=["wd"]), [])
    clash = admitted(crd("gadgets", singular="gadget", shortNames=["wd"]), [first])
    names, established = clash["status"]["conditions"]
    assert (names["status"], names["reason"], names["message"]) == (
        "False",
        "ShortNamesConflict",
        '"wd" is already in use',
    )
    assert (established["status"], established["reason"]) == ("False", "NotAccepted")
    assert "shortNames" not in clash["status"]["acceptedNames"]
    assert custom_types(clash) == []
    elsewhere = admitted(crd(group="other.io", shortNames=["wd"]), [first])
    assert crds.established(elsewhere)


def test_an_established_crd_serves_its_served_versions_preferred_first() -> None:
    body = admitted(crd(), [])
    served = custom_types(body)
    assert [(t.group, t.version, t.kind, t.plural, t.namespaced) for t in served] == [
        ("example.com", "v1", "Widget", "widgets", True),
        ("example.com", "v1beta1", "Widget", "widgets", True),
    ]
    assert not served[0].structured and served[0].subresources == ()


def test_version_priority_is_kubernetes_order() -> None:
    versions = [
        "v1alpha1",
        "v11alpha2",
        "foo1",
        "v10beta3",
        "v1",
        "v2",
        "v10",
        "v12alpha1",
        "v3beta1",
        "foo10",
    ]
    assert sorted(versions, key=version_priority) == [
        "v10",
        "v2",
        "v1",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "v1alpha1",
        "foo1",
        "foo10",
    ]

"""Server-side apply and managedFields: ownership, pruning, list merging, conflicts, force, no-ops,
Update ownership, and a replay of the golden `ssa_*` sequence recorded from a real apiserver."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.slim.fieldmanager import (
    ApplyConflict,
    apply,
    compare,
    decode_fields,
    encode_fields,
    manager_from_user_agent,
    missing_field_manager_status,
    path_string,
    update,
)
from planner.slim.mergekeys import schema_for
from planner.slim.strategic import PatchError
from tests.paths import GOLDEN

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    return data


def request_body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = YAML(typ="safe").load(golden(name)["request"]["body"])
    return body


def config_map(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data}


def apply_cm(live: dict[str, Any] | None, config: dict[str, Any], manager: str, **kw: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"force": False, "now": T0, **kw}
    return apply(live, config, kind="ConfigMap", api_version="v1", manager=manager, **options)


def managers(obj: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(e["manager"], e["operation"], e["fieldsV1"]) for e in obj["metadata"].get("managedFields", [])]


def without_times(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in entry.items() if k != "time"} for entry in entries]


def deployment_config(*containers: dict[str, Any], replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers)}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}


def apply_deploy(
    live: dict[str, Any] | None, config: dict[str, Any], manager: str, **kw: Any
) -> dict[str, Any]:
    options: dict[str, Any] = {"force": False, "now": T0, **kw}
    return apply(live, config, kind="Deployment", api_version="apps/v1", manager=manager, **options)


# ------------------------------------------------------------------------------------------ ownership


def test_apply_on_create_owns_exactly_the_applied_fields() -> None:
    created = apply_cm(None, config_map(a="1", b="2"), "planner")
    assert created["data"] == {"a": "1", "b": "2"}
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "planner",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}},
        }
    ]


def test_a_field_the_applier_stops_applying_is_removed() -> None:
    live = apply_cm(None, config_map(a="1", b="2"), "planner")
    again = apply_cm(live, config_map(a="1"), "planner", now=T1)
    assert again["data"] == {"a": "1"}
    assert managers(again) == [("planner", "Apply", {"f:data": {"f:a": {}}})]


def test_a_dropped_field_another_manager_also_owns_stays() -> None:
    live = apply_cm(None, config_map(a="1", b="2"), "planner")
    shared = apply_cm(live, config_map(b="2"), "other", now=T1)
    after = apply_cm(shared, config_map(a="1"), "planner", now=T2)
    assert after["data"] == {"a": "1", "b": "2"}
    # The object did not change, so planner's entry keeps its time (T0) and sorts before other's (T1).
    assert managers(after) == [
        ("planner", "Apply", {"f:data": {"f:a": {}}}),
        ("other", "Apply", {"f:data": {"f:b": {}}}),
    ]


def test_a_dropped_container_goes_with_its_defaulted_fields() -> None:
    web = {"name": "web", "image": "nginx"}
    sidecar = {"name": "sidecar", "image": "busybox"}
    live = apply_deploy(None, deployment_config(web, sidecar), "planner")
    live["spec"]["template"]["spec"]["containers"][1]["terminationMessagePath"] = "/dev/termination-log"
    after = apply_deploy(live, deployment_config(web), "planner", now=T1)
    assert after["spec"]["template"]["spec"]["containers"] == [web]


def test_lists_merge_by_their_apply_keys() -> None:
    live = apply_deploy(None, deployment_config({"name": "web", "image": "nginx"}), "planner")
    added = apply_deploy(live, deployment_config({"name": "log", "image": "fluentd"}), "other", now=T1)
    assert added["spec"]["template"]["spec"]["containers"] == [
        {"name": "web", "image": "nginx"},
        {"name": "log", "image": "fluentd"},
    ]
    other_fields = {m[0]: m[2] for m in managers(added)}["other"]
    assert other_fields["f:spec"]["f:template"]["f:spec"] == {
        "f:containers": {'k:{"name":"log"}': {".": {}, "f:image": {}, "f:name": {}}}
    }


def test_container_ports_are_keyed_by_port_and_defaulted_protocol() -> None:
    config = deployment_config({"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]})
    fields = managers(apply_deploy(None, config, "planner"))[0][2]
    container = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }


def test_finalizers_are_a_set_in_managed_fields() -> None:
    config = {**config_map(), "metadata": {"name": "cfg", "finalizers": ["a/b"]}}
    # An empty map sets no field of its own, so `data: {}` is not owned.
    assert managers(apply_cm(None, config, "planner"))[0][2] == {
        "f:metadata": {"f:finalizers": {'v:"a/b"': {}}}
    }


COMPARED: list[tuple[str, Any, Any, set[str], set[str], set[str]]] = [
    (
        "a new branch is added to its every path",
        {},
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        {
            ".spec",
            ".spec.template",
            ".spec.template.spec",
            ".spec.template.spec.containers",
            '.spec.template.spec.containers[name="c"]',
            '.spec.template.spec.containers[name="c"].name',
            '.spec.template.spec.containers[name="c"].image',
        },
        set(),
        set(),
    ),
    (
        "a changed item in a keyed list",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "j"}]}}}},
        set(),
        {'.spec.template.spec.containers[name="c"].image'},
        set(),
    ),
    (
        "a set's items are values, maps included",
        {"metadata": {"finalizers": ["a"]}},
        {"metadata": {"finalizers": [{"x": "1"}]}},
        {'.metadata.finalizers[={"x":"1"}]'},
        set(),
        {'.metadata.finalizers[="a"]'},
    ),
    (
        "a map where a list belongs has no members",
        {},
        {"metadata": {"finalizers": {"x": "1"}}, "spec": {"template": {"spec": {"volumes": {"v": 1}}}}},
        {
            ".metadata",
            ".metadata.finalizers",
            ".spec",
            ".spec.template",
            ".spec.template.spec",
            ".spec.template.spec.volumes",
        },
        set(),
        set(),
    ),
    (
        "a removed branch",
        {"spec": {"paused": True, "strategy": {"type": "Recreate"}}},
        {"spec": {"paused": True}},
        set(),
        set(),
        {".spec.strategy", ".spec.strategy.type"},
    ),
    (
        "a null map that gets members: they are added, the map was there",
        {"spec": {"template": None}},
        {"spec": {"template": {"metadata": {"name": "x"}}}},
        {".spec.template.metadata", ".spec.template.metadata.name"},
        set(),
        set(),
    ),
    (
        "an atomic map changes whole",
        {"spec": {"selector": {"matchLabels": {"a": "1"}}}},
        {"spec": {"selector": {"matchLabels": {"a": "2"}}}},
        set(),
        {".spec.selector"},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("why", "old", "new", "added", "modified", "removed"), COMPARED, ids=[c[0] for c in COMPARED]
)
def test_compare_finds_what_changed_from_one_object_to_another(
    why: str, old: Any, new: Any, added: set[str], modified: set[str], removed: set[str]
) -> None:
    diff = compare(old, new, schema_for("Deployment"))
    shown = [{path_string(p) for p in paths} for paths in (diff.added, diff.modified, diff.removed)]
    assert shown == [added, modified, removed]


# ------------------------------------------------------------------------------------------ conflicts


def test_a_conflict_carries_the_exact_status_body() -> None:
    live = apply_deploy(None, deployment_config({"name": "web", "image": "nginx"}, replicas=2), "planner")
    with pytest.raises(ApplyConflict) as raised:
        apply_deploy(live, deployment_config({"name": "web", "image": "nginx"}, replicas=5), "other")
    assert raised.value.pairs == [("planner", ".spec.replicas")]
    assert raised.value.status_body() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "planner": .spec.replicas',
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "planner"',
                    "field": ".spec.replicas",
                }
            ]
        },
        "code": 409,
    }


def test_several_conflicts_are_listed_by_manager() -> None:
    live = apply_deploy(None, deployment_config({"name": "web", "image": "nginx"}, replicas=2), "planner")
    with pytest.raises(ApplyConflict) as raised:
        apply_deploy(live, deployment_config({"name": "web", "image": "httpd"}, replicas=5), "other")
    assert raised.value.message == (
        'Apply failed with 2 conflicts: conflicts with "planner"\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="web"].image'
    )


def test_applying_the_same_value_as_another_manager_shares_ownership_without_conflict() -> None:
    live = apply_cm(None, config_map(a="1"), "planner")
    shared = apply_cm(live, config_map(a="1"), "other", now=T1)
    assert managers(shared) == [
        ("planner", "Apply", {"f:data": {"f:a": {}}}),
        ("other", "Apply", {"f:data": {"f:a": {}}}),
    ]


def test_force_moves_ownership_of_the_conflicting_field() -> None:
    live = apply_cm(None, config_map(a="1", b="2"), "planner")
    forced = apply_cm(live, config_map(a="9"), "other", force=True, now=T1)
    assert forced["data"] == {"a": "9", "b": "2"}
    assert managers(forced) == [
        ("planner", "Apply", {"f:data": {"f:b": {}}}),
        ("other", "Apply", {"f:data": {"f:a": {}}}),
    ]


def test_a_conflict_with_an_update_manager_names_its_api_version() -> None:
    live = apply_cm(None, config_map(a="1"), "planner")
    edited = copy.deepcopy(live)
    edited["data"]["a"] = "2"
    edited = update(
        live, edited, kind="ConfigMap", api_version="v1", manager="kubectl-edit", subresource=None, now=T1
    )
    with pytest.raises(ApplyConflict) as raised:
        apply_cm(edited, config_map(a="3"), "planner", now=T2)
    assert raised.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'
    )


def test_kubectl_server_side_apply_takes_over_fields_from_client_side_apply() -> None:
    last_applied = json.dumps(config_map(a="1"))
    live = config_map(a="1")
    live["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last_applied}
    live = update(
        None,
        live,
        kind="ConfigMap",
        api_version="v1",
        manager="kubectl-client-side-apply",
        subresource=None,
        now=T0,
    )
    config = config_map(a="2")
    after = apply_cm(live, config, "kubectl", now=T1)
    assert after["data"] == {"a": "2"}
    assert (
        json.loads(after["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
        == config
    )


# ------------------------------------------------------------------------------------------ no-ops


def test_an_identical_reapply_returns_live_unchanged_without_bumping_the_time() -> None:
    live = apply_cm(None, config_map(a="1"), "planner", now=T0)
    again = apply_cm(live, config_map(a="1"), "planner", now=T2)
    assert again == live
    assert again["metadata"]["managedFields"][0]["time"] == T0


def test_an_update_that_changes_nothing_leaves_managed_fields_alone() -> None:
    live = apply_cm(None, config_map(a="1"), "planner", now=T0)
    same = update(
        live,
        copy.deepcopy(live),
        kind="ConfigMap",
        api_version="v1",
        manager="kubectl",
        subresource=None,
        now=T1,
    )
    assert same["metadata"]["managedFields"] == live["metadata"]["managedFields"]


def test_apply_refuses_a_config_carrying_managed_fields() -> None:
    config = {**config_map(), "metadata": {"name": "cfg", "managedFields": []}}
    with pytest.raises(PatchError) as raised:
        apply_cm(None, config, "planner")
    assert (raised.value.code, raised.value.message) == (400, "metadata.managedFields must be nil")


# ------------------------------------------------------------------------------------------ updates


def test_an_update_takes_the_fields_it_changes_from_the_applier() -> None:
    live = apply_deploy(None, deployment_config({"name": "web", "image": "nginx"}, replicas=2), "planner")
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    scaled = update(
        live, scaled, kind="Deployment", api_version="apps/v1", manager="kubectl", subresource=None, now=T1
    )
    entries = {m[0]: m[2] for m in managers(scaled)}
    assert entries["kubectl"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries["planner"]["f:spec"]


def test_repeated_updates_by_one_manager_accumulate_in_one_entry() -> None:
    live = update(
        None,
        config_map(a="1"),
        kind="ConfigMap",
        api_version="v1",
        manager="kubectl",
        subresource=None,
        now=T0,
    )
    changed = copy.deepcopy(live)
    changed["data"]["b"] = "2"
    changed = update(
        live, changed, kind="ConfigMap", api_version="v1", manager="kubectl", subresource=None, now=T1
    )
    assert changed["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}}},
        }
    ]


def _updated_by_each(managers_and_times: list[tuple[str, str]]) -> dict[str, Any]:
    """A ConfigMap that manager i (at its time) gave key `k<i>`, one Update each."""
    live: dict[str, Any] | None = None
    for index, (manager, now) in enumerate(managers_and_times):
        changed = copy.deepcopy(live) if live else config_map()
        changed.setdefault("data", {})[f"k{index}"] = "v"
        live = update(
            live, changed, kind="ConfigMap", api_version="v1", manager=manager, subresource=None, now=now
        )
    assert live is not None
    return live


def test_ten_update_managers_are_kept_as_they_are() -> None:
    live = _updated_by_each([(f"m{i:02d}", T0) for i in range(10)])
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == [f"m{i:02d}" for i in range(10)]


def test_update_managers_beyond_ten_fold_oldest_first_into_ancient_changes() -> None:
    # Twelve managers in one second: ordered by name, m00 is set aside as the bucket's seed and m01,
    # m02 are folded into it, leaving ten Update entries.
    live = _updated_by_each([(f"m{i:02d}", T0) for i in range(12)])
    entries = {e["manager"]: e for e in live["metadata"]["managedFields"]}
    assert sorted(entries) == ["ancient-changes"] + [f"m{i:02d}" for i in range(3, 12)]
    # m00 created the data map, so the bucket owns it ("."), too.
    assert entries["ancient-changes"]["fieldsV1"] == {"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}
    assert entries["ancient-changes"]["operation"] == "Update"
    assert entries["m03"]["fieldsV1"] == {"f:data": {"f:k3": {}}}


def test_the_oldest_update_managers_are_folded_whatever_their_names() -> None:
    # zz wrote a minute before the others, so it is the oldest and seeds the bucket.
    live = _updated_by_each([("zz", T0)] + [(f"m{i:02d}", T1) for i in range(10)])
    entries = {e["manager"]: e for e in live["metadata"]["managedFields"]}
    assert "zz" not in entries and "m00" not in entries and "m01" in entries
    assert entries["ancient-changes"]["fieldsV1"] == {"f:data": {".": {}, "f:k0": {}, "f:k1": {}}}
    assert entries["ancient-changes"]["time"] == T1


def test_an_owner_reference_is_owned_as_one_atomic_item() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u-1", "controller": True}
    config = {**config_map(a="1"), "metadata": {"name": "cfg", "ownerReferences": [owner]}}
    created = apply_cm(None, config, "planner")
    assert managers(created)[0][2]["f:metadata"] == {"f:ownerReferences": {'k:{"uid":"u-1"}': {}}}


def test_a_status_write_is_recorded_with_its_subresource_and_does_not_own_spec() -> None:
    live = apply_deploy(None, deployment_config({"name": "web", "image": "nginx"}), "planner")
    written = copy.deepcopy(live)
    written["status"] = {"replicas": 1}
    written["spec"]["replicas"] = 3
    written = update(
        live,
        written,
        kind="Deployment",
        api_version="apps/v1",
        manager="controller",
        subresource="status",
        now=T1,
    )
    entry = written["metadata"]["managedFields"][1]
    assert (entry["manager"], entry["subresource"], entry["fieldsV1"]) == (
        "controller",
        "status",
        {"f:status": {"f:replicas": {}}},
    )


def test_a_main_resource_write_never_owns_status() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    pod["status"] = {"phase": "Pending"}
    created = update(
        None, pod, kind="Pod", api_version="v1", manager="python-requests", subresource=None, now=T0
    )
    assert managers(created) == []


def test_managed_fields_sent_with_a_put_replace_the_live_ones() -> None:
    live = apply_cm(None, config_map(a="1"), "planner")
    cleared = copy.deepcopy(live)
    cleared["metadata"]["managedFields"] = [{}]
    cleared["data"]["b"] = "2"
    after = update(
        live, cleared, kind="ConfigMap", api_version="v1", manager="kubectl", subresource=None, now=T1
    )
    assert managers(after) == [("kubectl", "Update", {"f:data": {"f:b": {}}})]


def test_the_first_apply_to_an_object_without_managed_fields_credits_before_first_apply() -> None:
    live = config_map(a="1")
    after = apply_cm(live, config_map(a="1", b="2"), "planner", now=T1)
    assert managers(after) == [
        ("planner", "Apply", {"f:data": {"f:a": {}, "f:b": {}}}),
        # A ConfigMap's zero value has no data map, so the map itself was added too.
        ("before-first-apply", "Update", {"f:data": {".": {}, "f:a": {}}}),
    ]


CREATE_CASES = [
    ("a Deployment", "deployment_create", "Deployment", "apps/v1", {}),
    ("a ConfigMap", "configmap_create", "ConfigMap", "v1", {}),
    ("a Secret, whose stringData arrives as data", "secret_create", "Secret", "v1", {}),
    (
        "a PVC before its protection finalizer is added",
        "pvc_create",
        "PersistentVolumeClaim",
        "v1",
        {"metadata": ["finalizers"]},
    ),
    (
        "a Service before its cluster IP is allocated",
        "service_create",
        "Service",
        "v1",
        {"spec": ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"]},
    ),
]


@pytest.mark.parametrize(
    ("name", "kind", "api_version", "server_set"),
    [c[1:] for c in CREATE_CASES],
    ids=[c[0] for c in CREATE_CASES],
)
def test_create_ownership_matches_the_real_apiserver(
    name: str, kind: str, api_version: str, server_set: dict[str, list[str]]
) -> None:
    response = copy.deepcopy(golden(name)["response_body"])
    expected = response["metadata"].pop("managedFields")
    for section, fields in server_set.items():
        for field_name in fields:
            response[section].pop(field_name)
    created = update(
        None,
        response,
        kind=kind,
        api_version=api_version,
        manager="python-requests",
        subresource=None,
        now=expected[0]["time"],
    )
    assert created["metadata"]["managedFields"] == expected


# ------------------------------------------------------------------------------------------ golden replay


def test_golden_ssa_sequence_replays_exactly() -> None:
    config = request_body("ssa_apply_create")
    created_response = golden("ssa_apply_create")["response_body"]
    created = apply_deploy(None, config, "planner", now=created_response["metadata"]["creationTimestamp"])
    assert created["metadata"]["managedFields"] == created_response["metadata"]["managedFields"]
    assert {k: v for k, v in created["spec"].items()} == {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
        },
    }

    # The caller defaults and stores: the live object is the recorded response.
    noop = apply_deploy(created_response, request_body("ssa_apply_again_noop"), "planner", now=T2)
    assert noop == golden("ssa_apply_again_noop")["response_body"]

    # The deployment controller writes status and the revision annotation through /status.
    later = golden("ssa_get")["response_body"]
    written = copy.deepcopy(created_response)
    written["metadata"]["annotations"] = later["metadata"]["annotations"]
    written["status"] = later["status"]
    controller_write = update(
        created_response,
        written,
        kind="Deployment",
        api_version="apps/v1",
        manager="kube-controller-manager",
        subresource="status",
        now=created_response["metadata"]["creationTimestamp"],
    )
    assert controller_write["metadata"]["managedFields"][1] == later["metadata"]["managedFields"][2]

    with pytest.raises(ApplyConflict) as conflict:
        apply_deploy(controller_write, request_body("ssa_conflict_other_manager"), "other")
    assert conflict.value.status_body() == golden("ssa_conflict_other_manager")["response_body"]

    forced = apply_deploy(
        controller_write, request_body("ssa_force_other_manager"), "other", force=True, now=T2
    )
    forced_response = golden("ssa_force_other_manager")["response_body"]
    assert without_times(forced["metadata"]["managedFields"]) == without_times(
        forced_response["metadata"]["managedFields"]
    )
    assert forced["spec"] == forced_response["spec"]

    json_config = json.loads(golden("ssa_apply_json_body")["request"]["body"])
    with pytest.raises(ApplyConflict) as co_owned:
        apply_deploy(forced_response, json_config, "planner")
    assert co_owned.value.status_body() == golden("ssa_apply_json_body")["response_body"]


def test_missing_field_manager_status_is_the_recorded_one() -> None:
    assert missing_field_manager_status() == golden("ssa_missing_field_manager")["response_body"]


# ------------------------------------------------------------------------------------------ formats


def test_fields_v1_round_trips_the_recorded_entries() -> None:
    for entry in golden("ssa_get")["response_body"]["metadata"]["managedFields"]:
        assert encode_fields(decode_fields(entry["fieldsV1"])) == entry["fieldsV1"]


PATH_CASES = [
    ("a field path", ("f:spec", "f:replicas"), ".spec.replicas"),
    (
        "a keyed list item",
        ("f:spec", "f:containers", 'k:{"name":"web"}', "f:image"),
        '.spec.containers[name="web"].image',
    ),
    (
        "a key of two fields",
        ("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}'),
        '.ports[containerPort=80,protocol="TCP"]',
    ),
    ("a set value", ("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]'),
]


@pytest.mark.parametrize(("path", "text"), [c[1:] for c in PATH_CASES], ids=[c[0] for c in PATH_CASES])
def test_path_strings(path: tuple[str, ...], text: str) -> None:
    assert path_string(path) == text


USER_AGENT_CASES = [
    ("kubectl", "kubectl/v1.28.7 (linux/amd64) kubernetes/c8dcb00", "kubectl"),
    ("the Python client", "OpenAPI-Generator/28.1.0/python", "OpenAPI-Generator"),
    ("python-requests", "python-requests/2.31.0", "python-requests"),
    ("no slash", "curl", "curl"),
    ("control characters are dropped", "my\ttool/1.0", "mytool"),
    ("long names are cut at 128 bytes", "x" * 200 + "/1", "x" * 128),
]


@pytest.mark.parametrize(
    ("agent", "manager"), [c[1:] for c in USER_AGENT_CASES], ids=[c[0] for c in USER_AGENT_CASES]
)
def test_manager_from_user_agent(agent: str, manager: str) -> None:
    assert manager_from_user_agent(agent) == manager

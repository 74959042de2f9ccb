"""Server-side apply through the API core, as one table: each row is a sequence of applies (and
plain updates) by named managers, and what the stored Deployment and its managedFields must be after
it — ownership, removal of fields a manager stopped applying, lists merged by key, conflicts, force
and the no-op re-apply. Expected values are written by hand from the apiserver's documented rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from planner.slim.api import Api, WriteOptions
from planner.slim.bootstrap import seed
from planner.slim.fieldmanager import decode_fields, path_string
from planner.slim.patch import APPLY_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from planner.slim.resources import by_kind
from planner.slim.status_errors import StatusError
from planner.slim.store import Store

DEPLOYMENT = by_kind("Deployment")


def deployment(*containers: dict[str, Any], replicas: int | None = None, **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": list(containers)}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict[str, Any] = {"name": "web"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": spec}


NGINX = {"name": "nginx", "image": "nginx:1.25"}
SIDECAR = {"name": "log", "image": "busybox"}


@dataclass(frozen=True)
class Step:
    manager: str
    body: dict[str, Any]
    force: bool = False
    content_type: str = APPLY_PATCH


@dataclass(frozen=True)
class Case:
    sentence: str
    steps: tuple[Step, ...]
    containers: list[tuple[str, str]] = field(default_factory=list)  # (name, image) after the steps
    replicas: int = 1
    labels: dict[str, str] | None = None
    owners: dict[str, set[str]] = field(default_factory=dict)  # manager → some of the paths it owns
    not_owned: dict[str, set[str]] = field(default_factory=dict)  # manager → paths it must not own
    conflict: list[tuple[str, str]] | None = None  # the last step's 409 causes: (field, message)


CASES = [
    Case(
        "the first apply creates the object and owns exactly what it applied",
        (Step("planner", deployment(NGINX, replicas=2)),),
        containers=[("nginx", "nginx:1.25")],
        replicas=2,
        owners={"planner": {".spec.replicas", '.spec.template.spec.containers[name="nginx"].image'}},
        not_owned={"planner": {".spec.strategy", ".spec.revisionHistoryLimit"}},
    ),
    Case(
        "a field the manager stops applying is removed",
        (
            Step("planner", deployment(NGINX, replicas=2, tier="front")),
            Step("planner", deployment(NGINX, replicas=2)),
        ),
        containers=[("nginx", "nginx:1.25")],
        replicas=2,
        labels=None,
        not_owned={"planner": {".metadata.labels.tier"}},
    ),
    Case(
        "a dropped field another manager still owns stays",
        (
            Step("planner", deployment(NGINX, tier="front")),
            Step("other", {**deployment(NGINX), "metadata": {"name": "web", "labels": {"tier": "front"}}}),
            Step("planner", deployment(NGINX)),
        ),
        containers=[("nginx", "nginx:1.25")],
        labels={"tier": "front"},
        owners={"other": {".metadata.labels.tier"}},
    ),
    Case(
        "a dropped replica count falls back to the default",
        (Step("planner", deployment(NGINX, replicas=4)), Step("planner", deployment(NGINX))),
        containers=[("nginx", "nginx:1.25")],
        replicas=1,
    ),
    Case(
        "container lists merge by name: each manager keeps its own container",
        (Step("planner", deployment(NGINX)), Step("sidecars", deployment(SIDECAR))),
        containers=[("nginx", "nginx:1.25"), ("log", "busybox")],
        owners={
            "planner": {'.spec.template.spec.containers[name="nginx"].image'},
            "sidecars": {'.spec.template.spec.containers[name="log"].image'},
        },
        not_owned={"sidecars": {'.spec.template.spec.containers[name="nginx"].image'}},
    ),
    Case(
        "a container the manager stops applying is removed from the list",
        (Step("planner", deployment(NGINX, SIDECAR)), Step("planner", deployment(NGINX))),
        containers=[("nginx", "nginx:1.25")],
    ),
    Case(
        "changing a field another applier owns is a conflict",
        (
            Step("planner", deployment(NGINX, replicas=2)),
            Step("other", deployment(NGINX, replicas=5)),
        ),
        containers=[("nginx", "nginx:1.25")],
        replicas=2,
        conflict=[(".spec.replicas", 'conflict with "planner"')],
    ),
    Case(
        "changing a field an updater owns names its operation in the conflict",
        (
            Step("planner", deployment(NGINX, replicas=2)),
            Step("kubectl-edit", {"spec": {"replicas": 3}}, content_type=MERGE_PATCH),
            Step("planner", deployment(NGINX, replicas=2)),
        ),
        containers=[("nginx", "nginx:1.25")],
        replicas=3,
        conflict=[(".spec.replicas", 'conflict with "kubectl-edit" using apps/v1')],
    ),
    Case(
        "force takes the field and moves its ownership",
        (
            Step("planner", deployment(NGINX, replicas=2)),
            Step("other", deployment(NGINX, replicas=5), force=True),
        ),
        containers=[("nginx", "nginx:1.25")],
        replicas=5,
        owners={"other": {".spec.replicas"}},
        not_owned={"planner": {".spec.replicas"}},
    ),
    Case(
        "applying the value another manager set shares the field without a conflict",
        (
            Step("planner", deployment(NGINX, replicas=2)),
            Step("other", deployment(NGINX, replicas=2)),
        ),
        containers=[("nginx", "nginx:1.25")],
        replicas=2,
        owners={"planner": {".spec.replicas"}, "other": {".spec.replicas"}},
    ),
    Case(
        "a strategic-merge update takes the field it changes from the applier",
        (
            Step("planner", deployment(NGINX)),
            Step(
                "kubectl-patch",
                {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.26"}]}}}},
                content_type=STRATEGIC_MERGE_PATCH,
            ),
        ),
        containers=[("nginx", "nginx:1.26")],
        owners={"kubectl-patch": {'.spec.template.spec.containers[name="nginx"].image'}},
        not_owned={"planner": {'.spec.template.spec.containers[name="nginx"].image'}},
    ),
]


def owned_paths(obj: dict[str, Any]) -> dict[str, set[str]]:
    return {
        entry["manager"]: {path_string(p) for p in decode_fields(entry["fieldsV1"])}
        for entry in obj["metadata"].get("managedFields", [])
    }


def run(api: Api, namespace: str, step: Step) -> dict[str, Any]:
    body = json.dumps(step.body).encode()
    options = WriteOptions(field_manager=step.manager, force=step.force)
    return api.patch_or_create(DEPLOYMENT, namespace, "web", body, step.content_type, options)[0]


@pytest.fixture
def api() -> Api:
    core = Api(Store(None))
    seed(core)
    return core


@pytest.mark.parametrize("case", CASES, ids=[c.sentence for c in CASES])
def test_server_side_apply(api: Api, case: Case) -> None:
    *setup, last = case.steps
    for step in setup:
        run(api, "default", step)
    if case.conflict is not None:
        with pytest.raises(StatusError) as refused:
            run(api, "default", last)
        assert refused.value.code == 409
        causes = refused.value.body["details"]["causes"]
        assert [(c["field"], c["message"]) for c in causes] == case.conflict
        assert {c["reason"] for c in causes} == {"FieldManagerConflict"}
    else:
        run(api, "default", last)
    stored = api.get(DEPLOYMENT, "default", "web")
    shown = [(c["name"], c["image"]) for c in stored["spec"]["template"]["spec"]["containers"]]
    assert shown == case.containers
    assert stored["spec"]["replicas"] == case.replicas
    assert stored["metadata"].get("labels") == case.labels
    owners = owned_paths(stored)
    for manager, paths in case.owners.items():
        assert paths <= owners.get(manager, set()), manager
    for manager, paths in case.not_owned.items():
        assert not paths & owners.get(manager, set()), manager


def test_an_identical_reapply_writes_nothing(api: Api) -> None:
    events = api.store.subscribe("apps/deployments")
    first = run(api, "default", Step("planner", deployment(NGINX, replicas=2)))
    again = run(api, "default", Step("planner", deployment(NGINX, replicas=2)))
    assert again == first
    assert events.queue.qsize() == 1  # the create; the re-apply emits no event


def test_apply_without_a_field_manager_is_refused(api: Api) -> None:
    with pytest.raises(StatusError) as refused:
        api.patch_or_create(DEPLOYMENT, "default", "web", b"{}", APPLY_PATCH, WriteOptions())
    assert refused.value.code == 422
    assert refused.value.body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_an_apply_yaml_body_with_a_stale_resource_version_is_a_conflict(api: Api) -> None:
    run(api, "default", Step("planner", deployment(NGINX)))
    stale = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, resourceVersion: '1'}\n"
    with pytest.raises(StatusError) as refused:
        api.patch_or_create(
            DEPLOYMENT, "default", "web", stale, APPLY_PATCH, WriteOptions(field_manager="planner")
        )
    assert refused.value.code == 409
    assert "the object has been modified" in refused.value.body["message"]


def test_an_apply_to_status_is_recorded_as_an_apply_of_the_status_subresource(api: Api) -> None:
    run(api, "default", Step("planner", deployment(NGINX)))
    status = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {replicas: 1}\n"
    options = WriteOptions(field_manager="rollout")
    written, _ = api.patch_or_create(
        DEPLOYMENT, "default", "web", status, APPLY_PATCH, options, subresource="status"
    )
    again, _ = api.patch_or_create(
        DEPLOYMENT, "default", "web", status, APPLY_PATCH, options, subresource="status"
    )
    assert written["status"] == {"replicas": 1}
    entry = next(e for e in written["metadata"]["managedFields"] if e["manager"] == "rollout")
    assert (entry["operation"], entry["subresource"]) == ("Apply", "status")
    assert entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    assert again["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]


def test_a_yaml_apply_body_keeps_timestamps_as_strings(api: Api) -> None:
    body = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        b"data: {when: 2024-05-18T18:26:46Z, day: 2024-05-18}\n"
    )
    created, _ = api.patch_or_create(
        by_kind("ConfigMap"), "default", "c", body, APPLY_PATCH, WriteOptions(field_manager="p")
    )
    assert created["data"] == {"when": "2024-05-18T18:26:46Z", "day": "2024-05-18"}

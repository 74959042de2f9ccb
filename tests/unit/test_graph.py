"""graph.solve: hand-built ChangeSets mirroring the example plans, the solved task list compared as text.

The manifests carry only what the solver reads (identity annotations, pod-spec references,
`dataSource`); the expected task lists are written by hand from DESIGN §4's rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from planner.diff import Action, Change, ChangeSet, Transition
from planner.graph import GraphError, parse_depends_on, solve
from planner.objects import ANNOTATION_RUN_KEY, ObjectRef
from planner.state.applyset import ParentRecord, RunRecord

Manifest = dict[str, Any]
GROUPS = {"Deployment": "apps", "Job": "batch"}
API_VERSIONS = {"Deployment": "apps/v1", "Job": "batch/v1"}


def manifest(kind: str, name: str, namespace: str, *, owner: str | None = None, **fields: Any) -> Manifest:
    annotations: dict[str, str] = fields.pop("annotations", {})
    if owner is not None:
        runtime_kind = "sandbox" if kind in ("Pod", "PersistentVolumeClaim") else kind.lower()
        annotations["planner.dev/runtime-id"] = f"k8s-{namespace}|{runtime_kind}|{owner}"
    metadata = {"name": name, "namespace": namespace, "annotations": annotations}
    return {"apiVersion": API_VERSIONS.get(kind, "v1"), "kind": kind, "metadata": metadata, **fields}


def pod_spec(*, volumes: Sequence[Manifest] = (), env_secret: str | None = None) -> Manifest:
    container: Manifest = {"name": "main", "image": "example:1"}
    if env_secret:
        container["envFrom"] = [{"secretRef": {"name": env_secret}}]
    return {"containers": [container], "volumes": list(volumes)}


def config_volume(name: str) -> Manifest:
    return {"name": name, "configMap": {"name": name}}


def secret_volume(name: str) -> Manifest:
    return {"name": name, "secret": {"secretName": name}}


def claim_volume(name: str) -> Manifest:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def depends(*refs: str) -> dict[str, Any]:
    return {"annotations": {"config.kubernetes.io/depends-on": ",".join(refs)}}


def ref_of(obj: Manifest) -> ObjectRef:
    kind = obj["kind"]
    return ObjectRef(
        group=GROUPS.get(kind, ""),
        kind=kind,
        namespace=obj["metadata"].get("namespace"),
        name=obj["metadata"]["name"],
    )


def change(
    action: Action, obj: Manifest, *, transition: Transition | None = None, live: Manifest | None = None
) -> Change:
    runtime_id = obj["metadata"]["annotations"].get("planner.dev/runtime-id", "")
    owner = runtime_id.split("|")[2] if runtime_id else None
    desired = None if action == "delete" else obj
    if action != "create" and live is None:
        live = obj  # a delete, update or replace has a live object; a test passes it when it differs
    return Change(
        ref=ref_of(obj), action=action, desired=desired, live=live, transition=transition, owner=owner
    )


def changeset(plan: str, namespace: str, *changes: Change) -> ChangeSet:
    return ChangeSet(plan=plan, namespace=namespace, changes=changes)


# --- plans/web-stack.yaml ---

SHOP = "shop"
WEB_CONFIG = manifest("ConfigMap", "web-config", SHOP, data={"LOG_LEVEL": "info"})
DB_CREDENTIALS = manifest("Secret", "db-credentials", SHOP, data={"username": "c2hvcA=="})
MIGRATE = manifest(
    "Job",
    "migrate",
    SHOP,
    owner="migrate",
    annotations={"planner.dev/run-key": "runkey-migrate-1"},
    spec={"template": {"spec": pod_spec(volumes=[secret_volume("db-credentials")])}},
)
WEB = manifest(
    "Deployment",
    "web",
    SHOP,
    owner="web",
    **depends("batch/namespaces/shop/Job/migrate"),
    spec={
        "template": {"spec": pod_spec(volumes=[config_volume("web-config"), secret_volume("db-credentials")])}
    },
)
WEB_SVC = manifest("Service", "web-svc", SHOP, owner="web", spec={"ports": [{"port": 8080}]})
SHOP_NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
SHOP_NAMESPACE_REF = ObjectRef(group="", kind="Namespace", namespace=None, name="shop")
WEB_TIMEOUTS = {"migrate": 300.0, "web": 180.0}

FIRST_APPLY = changeset(
    SHOP,
    SHOP,
    Change(ref=SHOP_NAMESPACE_REF, action="create", desired=SHOP_NAMESPACE, live=None),
    change("create", WEB_CONFIG),
    change("create", DB_CREDENTIALS),
    change("create", MIGRATE),
    change("create", WEB),
    change("create", WEB_SVC),
)

WEB_STACK_CASES = [
    pytest.param(
        FIRST_APPLY,
        True,
        """\
ensure namespace/shop
parent secret/shop/shop <- ensure namespace/shop
create configmap/shop/web-config <- parent secret/shop/shop
create secret/shop/db-credentials <- parent secret/shop/shop
create job/shop/migrate <- create secret/shop/db-credentials
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 5m] <- create job/shop/migrate
create deployment/shop/web <- create configmap/shop/web-config, wait-ready job/shop/migrate
wait-ready deployment/shop/web [timeout 3m] <- create deployment/shop/web
create service/shop/web-svc <- parent secret/shop/shop
""",
        id="first apply: namespace, parent, config and secret before the job, the job complete before web",
    ),
    pytest.param(
        FIRST_APPLY,
        False,
        """\
ensure namespace/shop
parent secret/shop/shop <- ensure namespace/shop
create configmap/shop/web-config <- parent secret/shop/shop
create secret/shop/db-credentials <- parent secret/shop/shop
create job/shop/migrate <- create secret/shop/db-credentials
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 5m] <- create job/shop/migrate
create deployment/shop/web <- create configmap/shop/web-config, wait-ready job/shop/migrate
create service/shop/web-svc <- parent secret/shop/shop
""",
        id="without waiting, the job is still waited for because web depends on it; web itself is not",
    ),
    pytest.param(
        changeset(
            SHOP,
            SHOP,
            change("noop", WEB_CONFIG),
            change("noop", DB_CREDENTIALS),
            change("noop", MIGRATE),
            change("update", WEB),
            change("noop", WEB_SVC),
        ),
        True,
        """\
wait-ready job/shop/migrate [timeout 5m]
parent secret/shop/shop
apply deployment/shop/web <- wait-ready job/shop/migrate, parent secret/shop/shop
wait-ready deployment/shop/web [timeout 3m] <- apply deployment/shop/web
""",
        id="an image update of web still waits for its unchanged dependency job to be complete",
    ),
    pytest.param(
        changeset(
            SHOP,
            SHOP,
            Change(ref=ref_of(MIGRATE), action="noop", desired=MIGRATE, live=None, transition="already-ran"),
            change("update", WEB),
        ),
        True,
        """\
parent secret/shop/shop
apply deployment/shop/web <- parent secret/shop/shop
wait-ready deployment/shop/web [timeout 3m] <- apply deployment/shop/web
""",
        id="a dependency job whose run-key already ran (and is gone) is not waited for",
    ),
    pytest.param(
        changeset(SHOP, SHOP, change("replace", MIGRATE), change("noop", WEB)),
        True,
        """\
parent secret/shop/shop
delete job/shop/migrate <- parent secret/shop/shop
wait-gone job/shop/migrate [timeout 5m] <- delete job/shop/migrate
create job/shop/migrate <- wait-gone job/shop/migrate
record-run job/shop/migrate <- create job/shop/migrate
wait-ready job/shop/migrate [timeout 5m] <- create job/shop/migrate
""",
        id="a job template change replaces it: delete, wait until gone, create, record the run, wait",
    ),
    pytest.param(
        changeset(
            SHOP,
            SHOP,
            change("create", manifest("ConfigMap", "feature-flags", SHOP)),
            change("delete", WEB),
            change("delete", WEB_SVC),
            change("delete", WEB_CONFIG),
        ),
        True,
        """\
parent secret/shop/shop
create configmap/shop/feature-flags <- parent secret/shop/shop
delete deployment/shop/web <- create configmap/shop/feature-flags
wait-gone deployment/shop/web [timeout 3m] <- delete deployment/shop/web
delete configmap/shop/web-config <- wait-gone deployment/shop/web
wait-gone configmap/shop/web-config <- delete configmap/shop/web-config
delete service/shop/web-svc <- create configmap/shop/feature-flags
wait-gone service/shop/web-svc [timeout 3m] <- delete service/shop/web-svc
""",
        id="prunes come last, and the config web used is deleted only after web is gone",
    ),
    pytest.param(
        changeset(SHOP, SHOP, change("noop", WEB_CONFIG), change("noop", MIGRATE), change("noop", WEB)),
        True,
        "",
        id="a plan equal to the cluster has no tasks at all",
    ),
]


@pytest.mark.parametrize(("changes", "wait", "expected"), WEB_STACK_CASES)
def test_web_stack_order(changes: ChangeSet, wait: bool, expected: str) -> None:
    assert solve(changes, wait=wait, timeouts=WEB_TIMEOUTS).as_text() == expected


def test_every_wait_without_a_timeout_of_its_own_gets_the_default() -> None:
    changes = changeset(
        SHOP, SHOP, change("noop", MIGRATE), change("replace", WEB_CONFIG), change("update", WEB)
    )
    assert solve(changes, timeouts={"web": 180.0}, default_timeout=30.0).as_text() == (
        """\
wait-ready job/shop/migrate [timeout 30s]
parent secret/shop/shop
delete configmap/shop/web-config <- parent secret/shop/shop
wait-gone configmap/shop/web-config [timeout 30s] <- delete configmap/shop/web-config
create configmap/shop/web-config <- wait-gone configmap/shop/web-config
apply deployment/shop/web <- wait-ready job/shop/migrate, create configmap/shop/web-config
wait-ready deployment/shop/web [timeout 3m] <- apply deployment/shop/web
"""
    )


# --- plans/sandboxes.yaml ---

BOXES = "sandboxes"


def sandbox_pvc(
    name: str, owner: str, *, clone_of: str | None = None, storage_class: str | None = None
) -> Manifest:
    spec: Manifest = {"volumeMode": "Block", "resources": {"requests": {"storage": "10Gi"}}}
    if clone_of:
        spec["dataSource"] = {"kind": "PersistentVolumeClaim", "name": clone_of}
    if storage_class:
        spec["storageClassName"] = storage_class
    return manifest("PersistentVolumeClaim", name, BOXES, owner=owner, spec=spec)


def sandbox_pod(name: str, *, generation: int = 1, env_secret: str | None = None) -> Manifest:
    volumes = [claim_volume(f"{name}-rootfs-g{generation}"), claim_volume(f"{name}-workspace")]
    return manifest("Pod", name, BOXES, owner=name, spec=pod_spec(volumes=volumes, env_secret=env_secret))


SANDBOX_CASES = [
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change("create", manifest("Secret", "alice-env", BOXES, owner="alice")),
            change("create", sandbox_pvc("alice-rootfs-g1", "alice")),
            change("create", sandbox_pvc("alice-workspace", "alice")),
            change("create", sandbox_pod("alice", env_secret="alice-env")),
        ),
        """\
parent secret/sandboxes/devboxes
create persistentvolumeclaim/sandboxes/alice-rootfs-g1 <- parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/alice-rootfs-g1 <- create persistentvolumeclaim/sandboxes/alice-rootfs-g1
create persistentvolumeclaim/sandboxes/alice-workspace <- parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/alice-workspace <- create persistentvolumeclaim/sandboxes/alice-workspace
create secret/sandboxes/alice-env <- parent secret/sandboxes/devboxes
create pod/sandboxes/alice <- wait-ready persistentvolumeclaim/sandboxes/alice-rootfs-g1, \
wait-ready persistentvolumeclaim/sandboxes/alice-workspace, create secret/sandboxes/alice-env
wait-ready pod/sandboxes/alice <- create pod/sandboxes/alice
""",
        id="a new sandbox: its env secret is created and both PVCs are ready before its pod",
    ),
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change("create", sandbox_pvc("carol-rootfs-g1", "carol", storage_class="wait")),
            change("create", sandbox_pvc("carol-workspace", "carol", storage_class="wait")),
            change("create", sandbox_pod("carol")),
        ),
        """\
parent secret/sandboxes/devboxes
create persistentvolumeclaim/sandboxes/carol-rootfs-g1 <- parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/carol-rootfs-g1 [timeout 5m] <- create persistentvolumeclaim/sandboxes/carol-rootfs-g1
create persistentvolumeclaim/sandboxes/carol-workspace <- parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/carol-workspace [timeout 5m] <- create persistentvolumeclaim/sandboxes/carol-workspace
create pod/sandboxes/carol <- wait-ready persistentvolumeclaim/sandboxes/carol-rootfs-g1, \
wait-ready persistentvolumeclaim/sandboxes/carol-workspace
wait-ready pod/sandboxes/carol [timeout 5m] <- create pod/sandboxes/carol
""",
        id="PVCs are ready before the pod: Bound, or Pending in a WaitForFirstConsumer class",
    ),
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change("noop", sandbox_pvc("alice-rootfs-g1", "alice")),
            change("noop", sandbox_pvc("alice-workspace", "alice")),
            change("noop", sandbox_pod("alice")),
            change(
                "create",
                sandbox_pvc("alice-experiment-rootfs-g1", "alice-experiment", clone_of="alice-rootfs-g1"),
                transition="fork",
            ),
            change(
                "create",
                sandbox_pvc("alice-experiment-workspace", "alice-experiment", clone_of="alice-workspace"),
                transition="fork",
            ),
            change("create", sandbox_pod("alice-experiment")),
        ),
        """\
wait-ready persistentvolumeclaim/sandboxes/alice-rootfs-g1
wait-ready persistentvolumeclaim/sandboxes/alice-workspace
parent secret/sandboxes/devboxes
create persistentvolumeclaim/sandboxes/alice-experiment-rootfs-g1 <- wait-ready persistentvolumeclaim/sandboxes/alice-rootfs-g1, parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/alice-experiment-rootfs-g1 <- create persistentvolumeclaim/sandboxes/alice-experiment-rootfs-g1
create persistentvolumeclaim/sandboxes/alice-experiment-workspace <- wait-ready persistentvolumeclaim/sandboxes/alice-workspace, parent secret/sandboxes/devboxes
wait-ready persistentvolumeclaim/sandboxes/alice-experiment-workspace <- create persistentvolumeclaim/sandboxes/alice-experiment-workspace
create pod/sandboxes/alice-experiment <- wait-ready persistentvolumeclaim/sandboxes/alice-experiment-rootfs-g1, wait-ready persistentvolumeclaim/sandboxes/alice-experiment-workspace
wait-ready pod/sandboxes/alice-experiment <- create pod/sandboxes/alice-experiment
""",
        id="fork: the source's PVCs are waited for (Bound) before the fork's PVCs clone them",
    ),
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change("delete", sandbox_pod("bob"), transition="pause"),
            change("noop", sandbox_pvc("bob-rootfs-g1", "bob")),
            change("update", sandbox_pvc("bob-workspace", "bob"), transition="pause"),
        ),
        """\
parent secret/sandboxes/devboxes
delete pod/sandboxes/bob <- parent secret/sandboxes/devboxes
wait-gone pod/sandboxes/bob <- delete pod/sandboxes/bob
apply persistentvolumeclaim/sandboxes/bob-workspace <- wait-gone pod/sandboxes/bob
""",
        id="pause: delete the pod, wait until it is gone, then mark the workspace paused",
    ),
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change("noop", sandbox_pvc("bob-rootfs-g1", "bob")),
            change("update", sandbox_pvc("bob-workspace", "bob"), transition="resume"),
            change("create", sandbox_pod("bob"), transition="resume"),
        ),
        """\
parent secret/sandboxes/devboxes
apply persistentvolumeclaim/sandboxes/bob-workspace <- parent secret/sandboxes/devboxes
create pod/sandboxes/bob <- apply persistentvolumeclaim/sandboxes/bob-workspace
wait-ready pod/sandboxes/bob <- create pod/sandboxes/bob
""",
        id="resume: mark the workspace running, then create the pod and wait for it",
    ),
    pytest.param(
        changeset(
            "devboxes",
            BOXES,
            change(
                "replace", sandbox_pod("carol", generation=2), live=sandbox_pod("carol"), transition="rebase"
            ),
            change(
                "delete", sandbox_pvc("carol-rootfs-g1", "carol", storage_class="wait"), transition="rebase"
            ),
            change(
                "create", sandbox_pvc("carol-rootfs-g2", "carol", storage_class="wait"), transition="rebase"
            ),
            change(
                "update", sandbox_pvc("carol-workspace", "carol", storage_class="wait"), transition="rebase"
            ),
        ),
        """\
parent secret/sandboxes/devboxes
delete pod/sandboxes/carol <- parent secret/sandboxes/devboxes
wait-gone pod/sandboxes/carol [timeout 5m] <- delete pod/sandboxes/carol
delete persistentvolumeclaim/sandboxes/carol-rootfs-g1 <- wait-gone pod/sandboxes/carol
wait-gone persistentvolumeclaim/sandboxes/carol-rootfs-g1 [timeout 5m] <- delete persistentvolumeclaim/sandboxes/carol-rootfs-g1
create persistentvolumeclaim/sandboxes/carol-rootfs-g2 <- wait-gone persistentvolumeclaim/sandboxes/carol-rootfs-g1
wait-ready persistentvolumeclaim/sandboxes/carol-rootfs-g2 [timeout 5m] <- create persistentvolumeclaim/sandboxes/carol-rootfs-g2
apply persistentvolumeclaim/sandboxes/carol-workspace <- wait-gone pod/sandboxes/carol
create pod/sandboxes/carol <- wait-ready persistentvolumeclaim/sandboxes/carol-rootfs-g2, \
apply persistentvolumeclaim/sandboxes/carol-workspace
wait-ready pod/sandboxes/carol [timeout 5m] <- create pod/sandboxes/carol
""",
        id="rebase g1 to g2: pod gone, old rootfs gone, new rootfs created, pod created; workspace kept",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), SANDBOX_CASES)
def test_sandbox_order(changes: ChangeSet, expected: str) -> None:
    assert solve(changes, timeouts={"carol": 300.0}).as_text() == expected


def test_a_workload_in_another_namespace_waits_for_that_namespace_and_for_the_parent() -> None:
    other = ObjectRef(group="", kind="Namespace", namespace=None, name="batch")
    report = manifest("Job", "report", "batch", owner="report")
    report["metadata"].setdefault("annotations", {})[ANNOTATION_RUN_KEY] = "0123abcd"  # a workload's Job
    changes = changeset(
        SHOP,
        SHOP,
        Change(
            ref=other,
            action="create",
            desired={"kind": "Namespace", "metadata": {"name": "batch"}},
            live=None,
        ),
        change("create", report),
    )
    assert solve(changes).as_text() == (
        "ensure namespace/batch\n"
        "parent secret/shop/shop\n"
        "create job/batch/report <- ensure namespace/batch, parent secret/shop/shop\n"
        "record-run job/batch/report <- create job/batch/report\n"
        "wait-ready job/batch/report <- create job/batch/report\n"
    )


def test_a_sandbox_depending_on_a_paused_sandbox_waits_for_its_workspace_pvc() -> None:
    dave = sandbox_pod("dave")
    dave["metadata"]["annotations"]["config.kubernetes.io/depends-on"] = (
        "/namespaces/sandboxes/PersistentVolumeClaim/bob-workspace"
    )
    changes = changeset(
        "devboxes",
        BOXES,
        change("noop", sandbox_pvc("bob-workspace", "bob")),
        change("noop", sandbox_pvc("dave-rootfs-g1", "dave")),
        change("noop", sandbox_pvc("dave-workspace", "dave")),
        change("create", dave),
    )
    assert solve(changes).as_text() == (
        "wait-ready persistentvolumeclaim/sandboxes/bob-workspace\n"
        "parent secret/sandboxes/devboxes\n"
        "create pod/sandboxes/dave <- wait-ready persistentvolumeclaim/sandboxes/bob-workspace, "
        "parent secret/sandboxes/devboxes\n"
        "wait-ready pod/sandboxes/dave <- create pod/sandboxes/dave\n"
    )


def test_a_delete_and_a_create_of_one_object_are_solved_as_its_replace() -> None:
    old, new = sandbox_pod("carol"), sandbox_pod("carol", generation=2)
    as_pair = changeset("devboxes", BOXES, change("delete", old), change("create", new))
    as_replace = changeset("devboxes", BOXES, change("replace", new, live=old))
    assert solve(as_pair).as_text() == solve(as_replace).as_text()


def test_the_parent_record_covers_every_object_desired_or_live() -> None:
    other = manifest("ConfigMap", "shared", "other")
    changes = changeset(SHOP, SHOP, change("create", MIGRATE), change("delete", WEB), change("noop", other))
    parent = solve(changes).tasks[0]
    assert parent.id == "parent secret/shop/shop"
    assert parent.parent == ParentRecord(
        group_kinds=("ConfigMap", "Deployment.apps", "Job.batch"),
        namespaces=("other", "shop"),
        run_keys=("runkey-migrate-1",),
        runs=(PENDING_MIGRATE,),
    )


PENDING_MIGRATE = RunRecord(
    run_key="runkey-migrate-1", namespace=SHOP, name="migrate", runtime_id="k8s-shop|job|migrate"
)


@pytest.mark.parametrize(
    "action",
    ["create", "replace"],
    ids=["a created Job is recorded pending by the parent", "a replaced Job is recorded pending again"],
)
def test_the_parent_records_every_job_it_is_about_to_create_as_pending(action: Action) -> None:
    parent = solve(changeset(SHOP, SHOP, change(action, MIGRATE))).task("parent secret/shop/shop")
    assert parent.parent is not None and parent.parent.runs == (PENDING_MIGRATE,)


def test_a_live_job_whose_run_is_unrecorded_makes_an_otherwise_empty_apply_write_the_parent() -> None:
    ran = RunRecord(run_key="runkey-migrate-1", namespace=SHOP, name="migrate", uid="u1")
    unrecorded = ChangeSet(plan=SHOP, namespace=SHOP, changes=(change("noop", MIGRATE),), unrecorded=(ran,))
    plan = solve(unrecorded)
    assert plan.as_text() == "parent secret/shop/shop\n"
    assert plan.tasks[0].parent is not None and plan.tasks[0].parent.runs == (ran,)
    assert solve(changeset(SHOP, SHOP, change("noop", MIGRATE))).as_text() == ""


def test_deletes_carry_foreground_propagation_and_creates_carry_the_manifest() -> None:
    plan = solve(changeset(SHOP, SHOP, change("replace", MIGRATE)))
    assert plan.task("delete job/shop/migrate").propagation == "Foreground"
    assert plan.task("create job/shop/migrate").manifest == MIGRATE
    assert plan.task("wait-ready job/shop/migrate").runtime_id == "k8s-shop|job|migrate"


def test_a_dependency_cycle_is_reported_with_its_members() -> None:
    first = manifest("Deployment", "a", SHOP, **depends("apps/namespaces/shop/Deployment/b"))
    second = manifest("Deployment", "b", SHOP, **depends("apps/namespaces/shop/Deployment/a"))
    with pytest.raises(GraphError, match=r"dependency cycle: .*deployment/shop/a"):
        solve(changeset(SHOP, SHOP, change("create", first), change("create", second)))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            "batch/namespaces/shop/Job/migrate",
            [ObjectRef(group="batch", kind="Job", namespace="shop", name="migrate")],
            id="a namespaced reference names group, namespace, kind and name",
        ),
        pytest.param(
            "/namespaces/sandboxes/Pod/alice,apps/namespaces/shop/Deployment/web",
            [
                ObjectRef(group="", kind="Pod", namespace="sandboxes", name="alice"),
                ObjectRef(group="apps", kind="Deployment", namespace="shop", name="web"),
            ],
            id="comma-separated references, the core group empty",
        ),
        pytest.param(
            "/Namespace/shop",
            [ObjectRef(group="", kind="Namespace", namespace=None, name="shop")],
            id="a cluster-scoped reference has no namespaces segment",
        ),
    ],
)
def test_depends_on_references_parse(value: str, expected: list[ObjectRef]) -> None:
    assert parse_depends_on(value) == expected


def test_a_malformed_depends_on_quotes_the_expected_form_and_the_bad_value() -> None:
    with pytest.raises(GraphError, match=r"expected <group>/namespaces/.*but was 'apps/Deployment'"):
        parse_depends_on("apps/Deployment")


# --- unchanged objects that are not ready (issue 39, item 1) ---


def test_an_unchanged_object_that_is_not_ready_is_waited_for_and_nothing_is_written() -> None:
    unready = dataclasses.replace(change("noop", WEB), unready="available 0/2")
    changes = changeset(SHOP, SHOP, change("noop", WEB_CONFIG), unready)
    assert solve(changes, timeouts=WEB_TIMEOUTS).as_text() == "wait-ready deployment/shop/web [timeout 3m]\n"


def test_an_unchanged_object_that_is_not_ready_is_waited_for_beside_the_writes() -> None:
    unready = dataclasses.replace(change("noop", WEB), unready="available 0/2")
    changes = changeset(SHOP, SHOP, change("update", WEB_CONFIG), unready)
    assert solve(changes, timeouts=WEB_TIMEOUTS).as_text() == (
        """\
wait-ready deployment/shop/web [timeout 3m]
parent secret/shop/shop
apply configmap/shop/web-config <- parent secret/shop/shop
"""
    )


def test_no_wait_leaves_out_the_wait_for_an_unchanged_object_that_is_not_ready() -> None:
    unready = dataclasses.replace(change("noop", WEB), unready="available 0/2")
    assert solve(changeset(SHOP, SHOP, unready), wait=False).as_text() == ""


def test_no_wait_keeps_the_wait_of_an_unchanged_object_already_failed_before_its_dependents() -> None:
    migrate = manifest("Job", "migrate", SHOP, spec={"template": {"spec": pod_spec()}})
    web = manifest("Deployment", "web", SHOP, **depends("batch/namespaces/shop/Job/migrate"))
    failed = dataclasses.replace(change("noop", migrate), unready="failed", failed=True)
    plan = solve(changeset(SHOP, SHOP, failed, change("create", web)), wait=False)
    assert plan.as_text() == (
        """\
wait-ready job/shop/migrate
parent secret/shop/shop
create deployment/shop/web <- wait-ready job/shop/migrate, parent secret/shop/shop
"""
    )
    assert plan.task("wait-ready job/shop/migrate").failed == "failed"
    assert solve(changeset(SHOP, SHOP, failed), wait=False).as_text() == "wait-ready job/shop/migrate\n"


# --- a chart's hook Job with a Helm delete policy ---


def hook_job(policy: str) -> Manifest:
    annotations = {ANNOTATION_RUN_KEY: "runkey-hook-1", "helm.sh/hook-delete-policy": policy}
    return manifest(
        "Job", "web-migrate", SHOP, annotations=annotations, spec={"template": {"spec": pod_spec()}}
    )


def test_a_hook_job_deleted_on_success_is_deleted_after_its_wait_and_its_run_is_recorded() -> None:
    web = manifest(
        "Deployment",
        "web",
        SHOP,
        spec={"template": {"spec": pod_spec()}},
        **depends("batch/namespaces/shop/Job/web-migrate"),
    )
    changes = changeset(
        "charted",
        SHOP,
        change("create", hook_job("before-hook-creation,hook-succeeded")),
        change("create", web),
    )
    assert solve(changes).as_text() == (
        "parent secret/shop/charted\n"
        "create job/shop/web-migrate <- parent secret/shop/charted\n"
        "record-run job/shop/web-migrate <- create job/shop/web-migrate\n"
        "wait-ready job/shop/web-migrate <- create job/shop/web-migrate\n"
        "create deployment/shop/web <- wait-ready job/shop/web-migrate\n"
        "wait-ready deployment/shop/web <- create deployment/shop/web\n"
        "delete-hook job/shop/web-migrate <- wait-ready job/shop/web-migrate\n"
    )
    assert solve(changes).task("delete-hook job/shop/web-migrate").policies == ("hook-succeeded",)


def test_a_replaced_hook_job_is_deleted_first_then_created_run_and_deleted_again() -> None:
    job = hook_job("hook-failed,hook-succeeded")
    old = {**job, "metadata": {**job["metadata"], "annotations": {ANNOTATION_RUN_KEY: "runkey-hook-0"}}}
    plan = solve(changeset("charted", SHOP, change("replace", job, live=old)))
    assert plan.as_text() == (
        "parent secret/shop/charted\n"
        "delete job/shop/web-migrate <- parent secret/shop/charted\n"
        "wait-gone job/shop/web-migrate <- delete job/shop/web-migrate\n"
        "create job/shop/web-migrate <- wait-gone job/shop/web-migrate\n"
        "record-run job/shop/web-migrate <- create job/shop/web-migrate\n"
        "wait-ready job/shop/web-migrate <- create job/shop/web-migrate\n"
        "delete-hook job/shop/web-migrate <- wait-ready job/shop/web-migrate\n"
    )
    assert plan.task("delete-hook job/shop/web-migrate").policies == ("hook-failed", "hook-succeeded")


@pytest.mark.parametrize(
    ("policy", "annotations"),
    [
        ("before-hook-creation", {ANNOTATION_RUN_KEY: "runkey-hook-1"}),
        ("hook-succeeded", {}),  # no run-key: not a chart's hook Job, nothing records its run
    ],
    ids=["no policy that deletes after the run", "a Job without a run-key"],
)
def test_no_delete_hook_task_without_a_policy_for_it_or_a_run_key(policy: str, annotations: Manifest) -> None:
    job = manifest(
        "Job",
        "web-migrate",
        SHOP,
        annotations={**annotations, "helm.sh/hook-delete-policy": policy},
        spec={"template": {"spec": pod_spec()}},
    )
    assert "delete-hook" not in solve(changeset("charted", SHOP, change("create", job))).as_text()


def hook(kind: str, name: str, phase: str, policy: str, *needs: str, run_key: str | None = None) -> Manifest:
    annotations = {"helm.sh/hook": phase, "helm.sh/hook-delete-policy": policy}
    annotations |= {ANNOTATION_RUN_KEY: run_key} if run_key else {}
    annotations |= depends(*needs)["annotations"] if needs else {}
    spec = {"spec": {"template": {"spec": pod_spec()}}} if kind == "Job" else {}
    return manifest(kind, name, SHOP, annotations=annotations, **spec)


def test_another_hook_deleted_on_success_is_recorded_and_deleted_once_its_phases_hook_jobs_ran() -> None:
    account = hook("ServiceAccount", "migrator", "pre-install", "hook-succeeded", run_key="runkey-sa-1")
    job = hook(
        "Job", "migrate", "pre-install", "before-hook-creation", "/namespaces/shop/ServiceAccount/migrator",
        run_key="runkey-migrate-1",
    )  # fmt: skip
    later = hook("ConfigMap", "announce", "post-install", "hook-succeeded", run_key="runkey-cm-1")
    kept = hook("ConfigMap", "kept", "post-install", "hook-failed")
    changes = changeset("charted", SHOP, *(change("create", obj) for obj in (account, job, later, kept)))
    assert solve(changes).as_text() == (
        "parent secret/shop/charted\n"
        "create configmap/shop/announce <- parent secret/shop/charted\n"
        "record-run configmap/shop/announce <- create configmap/shop/announce\n"
        "delete-hook configmap/shop/announce <- record-run configmap/shop/announce\n"
        "create configmap/shop/kept <- parent secret/shop/charted\n"
        "create serviceaccount/shop/migrator <- parent secret/shop/charted\n"
        "record-run serviceaccount/shop/migrator <- create serviceaccount/shop/migrator\n"
        "wait-ready serviceaccount/shop/migrator <- create serviceaccount/shop/migrator\n"
        "create job/shop/migrate <- wait-ready serviceaccount/shop/migrator\n"
        "record-run job/shop/migrate <- create job/shop/migrate\n"
        "wait-ready job/shop/migrate <- create job/shop/migrate\n"
        "delete-hook serviceaccount/shop/migrator <- record-run serviceaccount/shop/migrator, "
        "wait-ready job/shop/migrate\n"
    )
    assert solve(changes).task("delete-hook serviceaccount/shop/migrator").policies == ("hook-succeeded",)


def test_another_hook_kept_live_by_an_earlier_planner_is_applied_recorded_and_deleted() -> None:
    account = hook("ServiceAccount", "migrator", "pre-install", "hook-succeeded", run_key="runkey-sa-1")
    before = {**account, "metadata": {**account["metadata"], "annotations": {}}}  # no run-key yet
    assert solve(changeset("charted", SHOP, change("update", account, live=before))).as_text() == (
        "parent secret/shop/charted\n"
        "apply serviceaccount/shop/migrator <- parent secret/shop/charted\n"
        "record-run serviceaccount/shop/migrator <- apply serviceaccount/shop/migrator\n"
        "wait-ready serviceaccount/shop/migrator <- apply serviceaccount/shop/migrator\n"
        "delete-hook serviceaccount/shop/migrator <- record-run serviceaccount/shop/migrator, "
        "wait-ready serviceaccount/shop/migrator\n"
    )


def test_another_hook_that_already_ran_gets_no_task_and_is_no_dependency_to_wait_for() -> None:
    account = hook("ServiceAccount", "migrator", "pre-install", "hook-succeeded", run_key="runkey-sa-1")
    ran = Change(ref=ref_of(account), action="noop", desired=account, live=None, transition="already-ran")
    web = manifest("ConfigMap", "web", SHOP, **depends("/namespaces/shop/ServiceAccount/migrator"))
    assert solve(changeset("charted", SHOP, ran, change("create", web))).as_text() == (
        "parent secret/shop/charted\ncreate configmap/shop/web <- parent secret/shop/charted\n"
    )


def test_a_hook_job_that_already_ran_gets_no_task() -> None:
    ran = Change(
        ref=ref_of(hook_job("hook-succeeded")),
        action="noop",
        desired=hook_job("hook-succeeded"),
        live=None,
        transition="already-ran",
    )
    assert solve(changeset("charted", SHOP, ran)).as_text() == ""

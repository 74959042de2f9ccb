"""`planner controller` reconciling Plan objects end to end: the CRD installed with `planner crd`, Plans
written and read with real kubectl (`apply`, `wait --for=condition=Ready`, `get events`), the workloads
they make checked through kubectl too.
"""

from __future__ import annotations

import base64
import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.paths import PLANS
from tests.simulated import eventually

__all__ = ["controllers"]  # the fixture, shared with test_controller


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def shop_plan(namespace: str, *, replicas: int = 1, name: str = "shop", password: str = "") -> str:
    """A Plan with one Deployment and a Secret whose password comes from `password` (a valueFrom
    form, as YAML flow text), or the Secret `db`'s key `password` when none is given."""
    value = password or "{valueFrom: {secretKeyRef: {name: db, key: password}}}"
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        "secrets:\n"
        f"  - name: {name}-db\n"
        f"    data: {{password: {value}}}\n"
        "workloads:\n"
        f"  - name: {name}-web\n"
        "    image: ghcr.io/acme/shop-web:1.4.2\n"
        "    port: 8080\n"
        f"    replicas: {replicas}\n"
    )


def install_crd(planner: Runner, kubectl: Runner) -> None:
    crd = planner("crd")
    assert crd.returncode == 0, crd.stderr
    installed = kubectl("apply", "-f", "-", stdin=crd.stdout)
    assert installed.returncode == 0, installed.stderr
    established = kubectl("wait", "--for=condition=Established", "crd/plans.planner.dev", "--timeout=30s")
    assert established.returncode == 0, established.stderr


def get_json(kubectl: Runner, *args: str) -> dict[str, Any]:
    done = kubectl("get", *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def conditions(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {each["type"]: each for each in plan.get("status", {}).get("conditions", [])}


def wait_ready(kubectl: Runner, namespace: str, name: str) -> None:
    done = kubectl("wait", "--for=condition=Ready", f"plan/{name}", "-n", namespace, "--timeout=120s")
    assert done.returncode == 0, done.stdout + done.stderr


def events_of_plan(kubectl: Runner, namespace: str, name: str) -> list[dict[str, Any]]:
    selector = f"involvedObject.kind=Plan,involvedObject.name={name}"
    items: list[dict[str, Any]] = get_json(kubectl, "events", "-n", namespace, "--field-selector", selector)[
        "items"
    ]
    return items


def plan_events(kubectl: Runner, namespace: str, name: str) -> list[tuple[str, str, str]]:
    return [(e["reason"], e["type"], e["message"]) for e in events_of_plan(kubectl, namespace, name)]


def test_plan_objects_are_reconciled_into_their_status_and_events(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    made = kubectl("create", "secret", "generic", "db", "-n", namespace, "--from-literal=password=hunter2")
    assert made.returncode == 0, made.stderr
    # A Plan there before the controller: its first list and its start both find it; one reconcile.
    assert kubectl("apply", "-f", "-", stdin=knob_plan(namespace, "startup")).returncode == 0
    running = controllers("-n", namespace, "--interval", "1h")

    # A new Plan: applied, Ready, its workloads there, its secret value read from the Secret `db`.
    applied = kubectl("apply", "-f", "-", stdin=shop_plan(namespace))
    assert applied.returncode == 0, applied.stderr
    wait_ready(kubectl, namespace, "shop")
    deployment = get_json(kubectl, "deployment", "shop-web", "-n", namespace)
    assert deployment["spec"]["replicas"] == 1
    secret = get_json(kubectl, "secret", "shop-db", "-n", namespace)
    assert base64.b64decode(secret["data"]["password"]) == b"hunter2"
    plan = get_json(kubectl, "plan", "shop", "-n", namespace)
    status = plan["status"]
    assert status["observedGeneration"] == 1 and status["lastAppliedGeneration"] == 1
    assert status["inventory"]["objects"] == {"Deployment": 1, "Secret": 1}
    assert conditions(plan)["Ready"]["reason"] == "ReconciliationSucceeded"
    assert set(conditions(plan)) == {"Ready"}  # Reconciling and Stalled only while True
    listed = kubectl("get", "plans", "-n", namespace)
    assert listed.returncode == 0 and listed.stdout.split("\n")[1].split()[:2] == ["shop", "True"], (
        listed.stdout
    )

    # A change, with the revision a GitOps tool would set: a new generation observed and applied.
    changed = kubectl("apply", "-f", "-", stdin=shop_plan(namespace, replicas=2))
    assert changed.returncode == 0, changed.stderr
    annotated = kubectl("annotate", "plan", "shop", "-n", namespace, "planner.dev/revision=main@sha1:abc123")
    assert annotated.returncode == 0, annotated.stderr
    observed = kubectl(
        "wait", "--for=jsonpath={.status.lastAttemptedRevision}=main@sha1:abc123", "plan/shop",
        "-n", namespace, "--timeout=120s",
    )  # fmt: skip
    assert observed.returncode == 0, observed.stderr
    wait_ready(kubectl, namespace, "shop")
    plan = get_json(kubectl, "plan", "shop", "-n", namespace)
    assert plan["status"]["observedGeneration"] == plan["metadata"]["generation"] == 2
    assert plan["status"]["lastAppliedGeneration"] == 2
    assert plan["status"]["lastAppliedRevision"] == "main@sha1:abc123"
    assert get_json(kubectl, "deployment", "shop-web", "-n", namespace)["spec"]["replicas"] == 2

    # A Plan that cannot load (its Secret is missing), and one that asks for a local file: both
    # refused in their status, with a Warning Event, and nothing of theirs written.
    for name, value in (
        ("broken", "{valueFrom: {secretKeyRef: {name: missing, key: x}}}"),
        ("local", "{valueFrom: {file: /etc/passwd}}"),
    ):
        done = kubectl("apply", "-f", "-", stdin=shop_plan(namespace, name=name, password=value))
        assert done.returncode == 0, done.stderr
    for name, says in (
        ("broken", f'Secret "missing" not found in namespace {namespace}'),
        ("local", "valueFrom.file cannot be used in a Plan object"),
    ):
        refused = kubectl(
            "wait", "--for=condition=Ready=False", f"plan/{name}", "-n", namespace, "--timeout=60s"
        )
        assert refused.returncode == 0, refused.stderr
        plan = get_json(kubectl, "plan", name, "-n", namespace)
        ready, stalled = conditions(plan)["Ready"], conditions(plan)["Stalled"]
        assert ready["reason"] == "ReconciliationFailed" and stalled["status"] == "True"
        assert says in ready["message"] and f"plan/{name} -n {namespace}" in ready["message"]
        assert says in plan["status"]["lastError"]
        assert any(
            e[:2] == ("ReconcileFailed", "Warning") and says in e[2]
            for e in plan_events(kubectl, namespace, name)
        )
        assert kubectl("get", "deployment", f"{name}-web", "-n", namespace).returncode != 0

    # A Plan that loads but whose apply fails (an image that never pulls): Ready False, not Stalled (it
    # is retried), a Warning Event saying which workload.
    stuck = knob_plan(namespace, "stuck", reconcile="{timeout: 5s}", image="registry.invalid/web:1")
    assert kubectl("apply", "-f", "-", stdin=stuck).returncode == 0
    failed = kubectl("wait", "--for=condition=Ready=False", "plan/stuck", "-n", namespace, "--timeout=90s")
    assert failed.returncode == 0, failed.stderr + running.output()
    plan = get_json(kubectl, "plan", "stuck", "-n", namespace)
    assert conditions(plan)["Ready"]["reason"] == "ReconciliationFailed", running.output()
    assert "Stalled" not in conditions(plan)
    assert "stuck-web" in plan["status"]["lastError"]
    assert any(e[:2] == ("ReconcileFailed", "Warning") for e in plan_events(kubectl, namespace, "stuck"))

    reasons = [e[0] for e in plan_events(kubectl, namespace, "shop")]
    assert reasons.count("Reconciled") >= 2, reasons
    wait_ready(kubectl, namespace, "startup")
    early = [e[0] for e in plan_events(kubectl, namespace, "startup")]
    assert early == ["Reconciled"], early
    assert "hunter2" not in running.output()

    # The web view lists every Plan with the Ready its status says, and shows none's Secret value.
    status, index = running.get("/")
    assert status == 200, index
    rows = {
        name: re.search(rf'{namespace}/{name}</a></td><td>([^<]*)</td><td><span class="\w+">(\w+)', index)
        for name in ("shop", "broken", "local", "stuck")
    }
    shown = {name: found.groups() if found else None for name, found in rows.items()}
    assert shown == {
        "shop": (f"plan/shop -n {namespace}", "True"),
        "broken": (f"plan/broken -n {namespace}", "False"),
        "local": (f"plan/local -n {namespace}", "False"),
        "stuck": (f"plan/stuck -n {namespace}", "False"),
    }, index
    status, page = running.get(f"/plans/{namespace}/shop")
    assert status == 200 and "<td>2</td><td>converged</td>" in page, page
    assert "hunter2" not in index + page and base64.b64encode(b"hunter2").decode() not in index + page


def knob_plan(
    namespace: str,
    name: str,
    *,
    reconcile: str = "",
    sandbox: bool = False,
    settings: bool = True,
    image: str = "ghcr.io/acme/shop-web:1.4.2",
) -> str:
    """A Plan with a ConfigMap `<name>-settings` (with `settings`), a Deployment `<name>-web` (and with
    `sandbox`, a sandbox `<name>-box`, whose disks are PVCs), and `reconcile` as the flow text of its
    `reconcile:` section."""
    text = (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        + (f"configMaps: [{{name: {name}-settings, data: {{MODE: fast}}}}]\n" if settings else "")
        + "workloads:\n"
        f"  - {{name: {name}-web, image: {image}, port: 8080}}\n"
    )
    if sandbox:
        text += (
            "sandboxes:\n"
            f"  - {{name: {name}-box, image: ghcr.io/acme/devbox:1, rootfs: {{size: 1Gi}}, workspace: {{size: 1Gi}}}}\n"
        )
    return text + (f"reconcile: {reconcile}\n" if reconcile else "")


def mode(kubectl: Runner, namespace: str, name: str) -> str:
    return str(get_json(kubectl, "configmap", f"{name}-settings", "-n", namespace)["data"]["MODE"])


def drift(kubectl: Runner, namespace: str, name: str) -> None:
    edited = kubectl(
        "patch",
        "configmap",
        f"{name}-settings",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"data":{"MODE":"x"}}',
    )
    assert edited.returncode == 0, edited.stderr


def test_reconcile_knobs_depends_on_suspend_requested_at_and_a_deletion_that_keeps_pvcs(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1h")

    # dependsOn: `app` waits, Ready False (DependencyNotReady) and nothing written, until `db` is Ready.
    applied = kubectl(
        "apply", "-f", "-", stdin=knob_plan(namespace, "app", reconcile="{dependsOn: [{name: db}]}")
    )
    assert applied.returncode == 0, applied.stderr
    waiting = kubectl(
        "wait",
        "--for=jsonpath={.status.conditions[0].reason}=DependencyNotReady",
        "plan/app",
        "-n",
        namespace,
        "--timeout=60s",
    )
    assert waiting.returncode == 0, waiting.stderr + running.output()
    app = get_json(kubectl, "plan", "app", "-n", namespace)
    assert (
        conditions(app)["Ready"]["status"] == "False" and conditions(app)["Reconciling"]["status"] == "True"
    )
    assert "db (not found)" in conditions(app)["Ready"]["message"]
    assert kubectl("get", "deployment", "app-web", "-n", namespace).returncode != 0
    applied = kubectl("apply", "-f", "-", stdin=knob_plan(namespace, "db", sandbox=True))
    assert applied.returncode == 0, applied.stderr
    wait_ready(kubectl, namespace, "db")
    wait_ready(kubectl, namespace, "app")
    assert mode(kubectl, namespace, "app") == "fast"

    # suspend: a change of the Plan is not applied, a drift stays, and a requestedAt is not answered.
    suspended = knob_plan(namespace, "app", reconcile="{dependsOn: [{name: db}], suspend: true}")
    assert kubectl("apply", "-f", "-", stdin=suspended).returncode == 0
    drift(kubectl, namespace, "app")
    unanswered = planner("reconcile", "--now", "plan/app", "-n", namespace, "--timeout", "3s")
    assert unanswered.returncode == 1, unanswered.stderr
    assert unanswered.stderr.startswith(
        f"error: plan/app -n {namespace} is suspended (reconcile.suspend: true): the controller reconciles it "
        "only once it is resumed, so nothing was asked"
    ), unanswered.stderr
    asked = get_json(kubectl, "plan", "app", "-n", namespace)["metadata"].get("annotations") or {}
    assert "reconcile.planner.dev/requestedAt" not in asked, asked
    assert "plan/app -n " + namespace + ": suspended" in running.output()
    assert mode(kubectl, namespace, "app") == "x"

    # Resumed, then asked with `reconcile --now`: the drift is corrected at once, and said so (drift
    # correction at its interval, so only the request corrects it: test_drift_correction.py has the
    # watch's own).
    resumed = knob_plan(
        namespace, "app", reconcile="{dependsOn: [{name: db}], suspend: false, driftCorrection: interval}"
    )
    assert kubectl("apply", "-f", "-", stdin=resumed).returncode == 0
    wait_ready(kubectl, namespace, "app")
    drift(kubectl, namespace, "app")
    now = planner("reconcile", "--now", "plan/app", "-n", namespace, "--timeout", "60s")
    assert now.returncode == 0, now.stdout + now.stderr
    assert now.stdout.startswith(
        f"plan/app -n {namespace}: Ready=True ReconciliationSucceeded: applied 1 drift"
    )
    assert mode(kubectl, namespace, "app") == "fast"
    assert ("DriftCorrected", "Normal") in {e[:2] for e in plan_events(kubectl, namespace, "app")}
    status = get_json(kubectl, "plan", "app", "-n", namespace)["status"]
    assert status["inventory"]["driftFound"] == status["inventory"]["driftCorrected"] == 1

    # Deleting a Plan prunes its objects through the finalizer, but keeps its PVCs (no allowDataLoss).
    db = get_json(kubectl, "plan", "db", "-n", namespace)
    assert db["metadata"]["finalizers"] == ["planner.dev/prune"]
    deleted = kubectl("delete", "plan", "db", "-n", namespace, "--timeout=90s")
    assert deleted.returncode == 0, deleted.stderr + running.output()
    assert kubectl("get", "deployment", "db-web", "-n", namespace).returncode != 0
    assert kubectl("get", "pod", "db-box", "-n", namespace).returncode != 0
    claims = get_json(kubectl, "pvc", "-n", namespace)["items"]
    assert sorted(c["metadata"]["name"] for c in claims) == ["db-box-rootfs-g1", "db-box-workspace"]

    # prune: false keeps what left the plan (here its ConfigMap); no dependsOn, now that db is gone.
    unpruned = knob_plan(namespace, "app", reconcile="{prune: false}", settings=False)
    assert kubectl("apply", "-f", "-", stdin=unpruned).returncode == 0
    wait_ready(kubectl, namespace, "app")
    app = get_json(kubectl, "plan", "app", "-n", namespace)
    assert app["status"]["inventory"]["objects"] == {"Deployment": 1}, (app, running.output())
    assert mode(kubectl, namespace, "app") == "fast"
    # prune back on: the ConfigMap the plan kept goes now, a pending change of the plan, not drift.
    pruned = knob_plan(namespace, "app", reconcile="{prune: true}", settings=False)
    assert kubectl("apply", "-f", "-", stdin=pruned).returncode == 0
    eventually(lambda: kubectl("get", "configmap", "app-settings", "-n", namespace).returncode != 0)
    wait_ready(kubectl, namespace, "app")
    inventory = get_json(kubectl, "plan", "app", "-n", namespace)["status"]["inventory"]
    assert inventory["driftFound"] == 0, (inventory, running.output())


def sharded(text: str, shard: str) -> str:
    """The Plan `text` labelled for `shard`."""
    head, _, rest = text.partition("metadata: {")
    return f"{head}metadata: {{labels: {{planner.dev/shard: {shard}}}, {rest}"


def lease_holder(kubectl: Runner, namespace: str, name: str) -> str:
    done = kubectl("get", "lease", name, "-n", namespace, "-o", "jsonpath={.spec.holderIdentity}")
    return done.stdout if done.returncode == 0 else ""


def generation_records(kubectl: Runner, namespace: str, plan: str) -> list[str]:
    selector = f"planner.dev/plan={plan},planner.dev/generation"
    listed = get_json(kubectl, "secrets", "-n", namespace, "-l", selector)
    return sorted(item["metadata"]["name"] for item in listed["items"])


def reporters(kubectl: Runner, namespace: str, name: str) -> set[str]:
    return {e.get("reportingInstance", "") for e in events_of_plan(kubectl, namespace, name)}


def test_workers_reconcile_plans_at_once_and_each_shard_only_its_own(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """With the cluster's controllers paused no rollout ends, so a reconcile holds its plan's run lock
    (a Lease) until they resume: four locks held at once are four reconciles at once. A Plan changed
    meanwhile is reconciled again only after (the server never answered a lock's create with 409).
    Then shards: a, b and the unlabelled, each with its own leader Lease, each Plan's Events from the
    controller holding its shard's Lease."""
    install_crd(planner, kubectl)
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    elect = ("-n", namespace, "--interval", "1h", "--leader-elect", "--lease-namespace", namespace)
    names = ["p1", "p2", "p3", "p4"]
    admin.pause("controllers")
    try:
        first = controllers(*elect, "--shard", "a", "--concurrent", "4")
        for name in names:
            assert kubectl("apply", "-f", "-", stdin=sharded(knob_plan(namespace, name), "a")).returncode == 0
        locks = [f"planner-lock-{name}" for name in names]
        eventually(lambda: all(lease_holder(kubectl, namespace, lock) for lock in locks), timeout=60)
        holders = {lease_holder(kubectl, namespace, lock) for lock in locks}
        assert len(holders) == 1 and f"/{first.process.pid}/" in holders.pop()
        for name in ("p1", "p2"):
            changed = knob_plan(namespace, name, image="ghcr.io/acme/shop-web:1.5.0")
            assert kubectl("apply", "-f", "-", stdin=sharded(changed, "a")).returncode == 0
    finally:
        admin.resume("controllers")
    for name in ("p1", "p2"):
        observed = kubectl(
            "wait", "--for=jsonpath={.status.observedGeneration}=2", f"plan/{name}", "-n", namespace,
            "--timeout=120s",
        )  # fmt: skip
        assert observed.returncode == 0, observed.stderr + first.output()
    for name in names:
        wait_ready(kubectl, namespace, name)
    p1 = get_json(kubectl, "plan", "p1", "-n", namespace)
    assert conditions(p1)["Ready"]["observedGeneration"] == 2 and p1["status"]["lastAppliedGeneration"] == 2
    web = get_json(kubectl, "deployment", "p1-web", "-n", namespace)
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "ghcr.io/acme/shop-web:1.5.0"
    lock_creates = [
        e
        for e in admin.requests()
        if e["namespace"] == namespace and e["resource"] == "leases" and e["verb"] == "create"
    ]
    assert lock_creates and all(e["code"] == 201 for e in lock_creates), lock_creates
    assert ": locked" not in first.output()

    # A deleted Plan keeps only the newest --history-max generation records: the shard's controller
    # restarted with --history-max 1; p1's prune records generation 3, p2's (its objects deleted by
    # hand first) has nothing to record, and both are trimmed to one.
    shard_a = {lease_holder(kubectl, namespace, "planner-controller-a")}
    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(timeout=60) == 0, first.output()
    first = controllers(*elect, "--shard", "a", "--history-max", "1")
    leader = eventually(
        lambda: (h := lease_holder(kubectl, namespace, "planner-controller-a")) not in shard_a and h,
        timeout=60,
    )
    # Its first look at p2 over, and p2 suspended (a reconcile would put back what is deleted by hand
    # next, and one may come at any time: the objects' own watch events queue it); a deletion still prunes.
    eventually(lambda: leader in reporters(kubectl, namespace, "p2"), timeout=60)
    suspend = kubectl(
        "patch", "plan", "p2", "-n", namespace, "--type=merge", "-p", '{"reconcile":{"suspend":true}}'
    )
    assert suspend.returncode == 0, suspend.stderr
    eventually(
        lambda: (
            conditions(get_json(kubectl, "plan", "p2", "-n", namespace))["Ready"]["reason"] == "Suspended"
        ),
        timeout=60,
    )
    assert kubectl("delete", "deployment/p2-web", "configmap/p2-settings", "-n", namespace).returncode == 0
    for name in ("p1", "p2"):
        deleted = kubectl("delete", "plan", name, "-n", namespace, "--timeout=90s")
        assert deleted.returncode == 0, deleted.stderr + first.output()
    assert generation_records(kubectl, namespace, "p1") == ["planner.p1.g3"]
    assert generation_records(kubectl, namespace, "p2") == ["planner.p2.g2"]
    assert generation_records(kubectl, namespace, "p3") == ["planner.p3.g1"]
    pruned = [e for e in plan_events(kubectl, namespace, "p2") if e[0] == "Pruned"]
    assert pruned and "deleted 1 generation records past --history-max 1" in pruned[0][2], pruned

    # Shards: b and the unlabelled beside a, each reconciling only its own Plans.
    second = controllers(*elect, "--shard", "b")
    unsharded = controllers(*elect)
    assert kubectl("apply", "-f", "-", stdin=sharded(knob_plan(namespace, "q-b"), "b")).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=knob_plan(namespace, "q-none")).returncode == 0
    for name in ("q-b", "q-none"):
        wait_ready(kubectl, namespace, name)
    leaders = {
        lease: lease_holder(kubectl, namespace, lease)
        for lease in ("planner-controller-a", "planner-controller-b", "planner-controller")
    }
    assert len(set(leaders.values())) == 3 and all(leaders.values()), leaders
    shard_a.add(leaders["planner-controller-a"])
    assert reporters(kubectl, namespace, "p3") <= shard_a, (shard_a, leaders)
    for name, lease in {"q-b": "planner-controller-b", "q-none": "planner-controller"}.items():
        assert reporters(kubectl, namespace, name) == {leaders[lease]}, (
            name,
            leaders,
            second.output(),
            unsharded.output(),
        )


def test_plan_objects_as_a_user_meets_them_columns_suspension_and_literal_secrets(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """`kubectl get plans` names planner's generation as such and shows a suspended Plan, whose Ready
    message says it is suspended; a literal secret value is warned of once (issue 39, item 11)."""
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=shop_plan(namespace, password="hunter2")).returncode == 0
    wait_ready(kubectl, namespace, "shop")
    (warning,) = [e for e in plan_events(kubectl, namespace, "shop") if e[0] == "LiteralSecretValue"]
    assert warning[1] == "Warning" and warning[2].startswith("secrets[0].data.password: written literally")
    assert "hunter2" not in warning[2] + running.output()

    suspended = shop_plan(namespace, password="hunter2", replicas=2) + "reconcile: {suspend: true}\n"
    assert kubectl("apply", "-f", "-", stdin=suspended).returncode == 0

    def says_suspended() -> dict[str, Any] | None:
        ready = conditions(get_json(kubectl, "plan", "shop", "-n", namespace)).get("Ready") or {}
        return ready if ready.get("reason") == "Suspended" else None

    ready = eventually(says_suspended, timeout=60)
    assert ready["status"] == "True" and ready["observedGeneration"] == 1, ready  # spoke for generation 1
    assert ready["message"].startswith("suspended (reconcile.suspend): not reconciled; the last reconcile: ")
    listed = kubectl("get", "plans", "-n", namespace).stdout.splitlines()
    assert listed[0].split() == ["NAME", "READY", "STATUS", "APPLIED-GEN", "REVISION", "SUSPENDED", "AGE"]
    assert " true " in f" {listed[1]} ", listed
    assert get_json(kubectl, "deployment", "shop-web", "-n", namespace)["spec"]["replicas"] == 1


EXAMPLES = {
    "web-stack": ("shop", "shop"),
    "pod-fidelity": ("fidelity", "fidelity"),
    "stateful-app": ("notes", "notes"),
    "sandboxes": ("devboxes", "sandboxes"),
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_every_example_plan_works_as_a_plan_object_as_it_is(
    controllers: Start, planner: Runner, kubectl: Runner, example: str
) -> None:
    """docs/controller.md's recipe, command by command, for every example plan (issue 39, item 11): the
    plan file is a Plan object as it is, becomes Ready with its objects, and is warned of for its literal
    demo secret values."""
    name, namespace = EXAMPLES[example]
    install_crd(planner, kubectl)
    created = kubectl("create", "namespace", namespace)
    assert created.returncode == 0 or "AlreadyExists" in created.stderr, created.stderr
    assert kubectl("apply", "-f", str(PLANS / f"{example}.yaml")).returncode == 0
    running = controllers("-n", namespace, "--interval", "1h")
    ready = kubectl("wait", "--for=condition=Ready", f"plan/{name}", "-n", namespace, "--timeout=180s")
    assert ready.returncode == 0, ready.stderr + running.output()
    listed = kubectl("get", "plans", "-n", namespace).stdout.splitlines()
    assert listed[1].split()[:2] == [name, "True"], listed
    objects = get_json(kubectl, "plan", name, "-n", namespace)["status"]["inventory"]["objects"]
    assert objects, objects


def test_planner_build_of_an_environment_pipes_into_kubectl_apply_and_becomes_ready(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """`planner build env.yaml | kubectl apply -f -` (#42): an environment importing a base becomes one
    Plan object, which the server accepts and the controller makes Ready with the merged objects."""
    install_crd(planner, kubectl)
    made = kubectl("create", "secret", "generic", "db", "-n", namespace, "--from-literal=password=hunter2")
    assert made.returncode == 0, made.stderr
    (tmp_path / ".git").mkdir()
    base = shop_plan(namespace).split("secrets:\n", 1)[1]
    (tmp_path / "base.yaml").write_text("secrets:\n" + base)
    (tmp_path / "prod.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "imports: [base.yaml]\nworkloads:\n  - {name: shop-web, replicas: 2}\n"
    )
    built = planner("build", str(tmp_path / "prod.yaml"))
    assert built.returncode == 0, built.stderr
    assert "imports" not in built.stdout
    checked = kubectl("apply", "--dry-run=server", "-f", "-", stdin=built.stdout)
    assert checked.returncode == 0, checked.stderr
    (tmp_path / "built.yaml").write_text(built.stdout)
    validated = planner("validate", str(tmp_path / "built.yaml"))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=built.stdout).returncode == 0
    ready = kubectl("wait", "--for=condition=Ready", "plan/shop", "-n", namespace, "--timeout=120s")
    assert ready.returncode == 0, ready.stderr + running.output()
    assert get_json(kubectl, "deployment", "shop-web", "-n", namespace)["spec"]["replicas"] == 2

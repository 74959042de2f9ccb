"""Saved plans end to end (DESIGN §4): `plan --out FILE` then `apply FILE` applies exactly what was
reviewed, or refuses — an edited plan file, a `kubectl annotate` or a deleted object in between make it
stale and name what moved — while the cluster's own motion (status writes, scaling of undeclared
replicas, `kubectl rollout restart`) never does. State is read through kubectl and raw HTTP only.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, http, put_retrying, write_plan

SECRET_VALUE = "s3cr3t-never-stored"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def shop_plan(namespace: str, *, image: str = "nginx:1.27", log_level: str = "info") -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{LOG_LEVEL: {log_level}}}}}\n"
        f"secrets:\n  - {{name: token, data: {{token: {SECRET_VALUE}}}}}\n"
        "workloads:\n"
        f"  - {{name: web, image: '{image}', port: 8080, expose: true}}\n"
    )


def get(cluster: ClusterHandle, path: str) -> Any:
    status, body = http(cluster, "GET", path)
    assert status == 200, body
    return body


def image_of(cluster: ClusterHandle, namespace: str) -> str:
    deployment = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    image: str = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


@pytest.fixture
def reviewed(planner: Runner, namespace: str, tmp_path: Path) -> tuple[Path, Path]:
    """The shop applied at nginx:1.27, then a saved plan that moves it to nginx:1.28."""
    plan = write_plan(tmp_path, shop_plan(namespace))
    first = planner("apply", str(plan), "--no-wait")
    assert first.returncode == 0, first.stdout + first.stderr
    write_plan(tmp_path, shop_plan(namespace, image="nginx:1.28"))
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved), "--detailed-exitcode")
    assert made.returncode == 2, made.stdout + made.stderr
    return plan, saved


def test_a_saved_plan_applies_exactly_its_changes_and_never_holds_a_secret_value(
    planner: Runner, cluster: ClusterHandle, namespace: str, reviewed: tuple[Path, Path]
) -> None:
    plan, saved = reviewed
    assert SECRET_VALUE not in saved.read_text()
    document = json.loads(saved.read_text())["plans"][0]
    assert [c["object"] for c in document["changes"]] == [f"deployment/{namespace}/web"]
    applied = planner("apply", str(saved), "--timeout", "60s")  # waits: the plan after has nothing to do
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert image_of(cluster, namespace) == "nginx:1.28"
    token = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/token")["data"]["token"]
    assert token == "czNjcjN0LW5ldmVyLXN0b3JlZA=="  # base64 of the value, resolved again at apply
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr


def _status_write(cluster: ClusterHandle, kubectl: Runner, namespace: str) -> None:
    """A status PUT, read again and retried on a conflict as client-go's RetryOnConflict does: the
    Deployment controller writes the same status meanwhile."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"

    def reported(live: dict[str, Any]) -> dict[str, Any]:
        return live | {"status": {**(live.get("status") or {}), "observedGeneration": 1, "replicas": 7}}

    put_retrying(cluster, f"{path}/status", reported, read=path)


def _hpa_scaling(cluster: ClusterHandle, kubectl: Runner, namespace: str) -> None:
    scaled = kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr


def _rollout_restart(cluster: ClusterHandle, kubectl: Runner, namespace: str) -> None:
    restarted = kubectl("rollout", "restart", "-n", namespace, "deployment/web")
    assert restarted.returncode == 0, restarted.stderr


@pytest.mark.parametrize(
    "motion",
    [_status_write, _hpa_scaling, _rollout_restart],
    ids=[
        "a status write does not make the plan stale",
        "scaling the undeclared replicas (as an HPA does) does not make the plan stale",
        "kubectl rollout restart does not make the plan stale",
    ],
)
def test_the_clusters_own_motion_keeps_a_saved_plan_fresh(
    planner: Runner,
    kubectl: Runner,
    cluster: ClusterHandle,
    namespace: str,
    reviewed: tuple[Path, Path],
    motion: Callable[[ClusterHandle, Runner, str], None],
) -> None:
    _, saved = reviewed
    motion(cluster, kubectl, namespace)
    applied = planner("apply", str(saved), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert image_of(cluster, namespace) == "nginx:1.28"


@pytest.mark.parametrize(
    ("command", "moved"),
    [
        (("annotate", "configmap/settings", "owner=someone"), "configmap/{ns}/settings: changed"),
        (("annotate", "deployment/web", "team=payments"), "deployment/{ns}/web: changed"),
        (("delete", "service/web-svc"), "service/{ns}/web-svc: deleted"),
    ],
    ids=[
        "kubectl annotate on an unchanged object makes the plan stale, naming it",
        "kubectl annotate on the object the plan changes makes it stale, naming it",
        "a deleted object makes the plan stale, naming it",
    ],
)
def test_a_moved_object_makes_a_saved_plan_stale_and_nothing_is_written(
    planner: Runner,
    kubectl: Runner,
    cluster: ClusterHandle,
    namespace: str,
    reviewed: tuple[Path, Path],
    command: tuple[str, ...],
    moved: str,
) -> None:
    _, saved = reviewed
    done = kubectl(*command, "-n", namespace)
    assert done.returncode == 0, done.stderr
    refused = planner("apply", str(saved), "--no-wait")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: plan is stale: objects moved since the plan was made; plan again:\n"
        f"  {moved.format(ns=namespace)}\n"
    )
    assert image_of(cluster, namespace) == "nginx:1.27"


def test_an_object_that_appears_makes_a_saved_plan_stale(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop_plan(namespace))
    saved = tmp_path / "first.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    status, body = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "settings"}}
    )
    assert status == 201, body
    refused = planner("apply", str(saved), "--no-wait")
    assert refused.returncode == 1
    assert f"  configmap/{namespace}/settings: appeared\n" in refused.stderr
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[0] == 404


def test_an_edited_plan_file_makes_a_saved_plan_refused(
    planner: Runner, cluster: ClusterHandle, namespace: str, reviewed: tuple[Path, Path]
) -> None:
    plan, saved = reviewed
    write_plan(plan.parent, shop_plan(namespace, image="nginx:1.28", log_level="debug"))
    refused = planner("apply", str(saved), "--no-wait")
    assert refused.returncode == 1
    assert refused.stderr == f"error: plan files changed since the plan was made: {plan} (plan shop)\n"
    assert image_of(cluster, namespace) == "nginx:1.27"


def test_a_secret_whose_value_alone_changed_is_named_as_such_and_nothing_is_written(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """The plan files are untouched: the apply job resolves `valueFrom: env` to another value."""
    text = shop_plan(namespace).replace(f"{{token: {SECRET_VALUE}}}", "{token: {valueFrom: {env: TOKEN}}}")
    plan = write_plan(tmp_path, text)
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved), env={"TOKEN": "reviewed-token"})
    assert made.returncode == 0, made.stdout + made.stderr
    refused = planner("apply", str(saved), "--no-wait", env={"TOKEN": "another-token"})
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: secret values changed since the plan was made: secret/{namespace}/token (plan shop): the "
        "plan files are the same, but a secret they read from the environment or a file now resolves to "
        "another value than the one reviewed; give apply the same secrets, or plan again\n"
    )
    assert "another-token" not in refused.stderr and "reviewed-token" not in saved.read_text()
    listed = kubectl("get", "deployments,secrets", "-n", namespace, "-o", "name")
    assert "token" not in listed.stdout and "deployment" not in listed.stdout, listed.stdout
    applied = planner("apply", str(saved), "--no-wait", env={"TOKEN": "reviewed-token"})
    assert applied.returncode == 0, applied.stdout + applied.stderr


def test_apply_file_from_another_directory_finds_the_plan_files_where_plan_ran(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    (checkout / "plans").mkdir(parents=True)
    elsewhere.mkdir()
    write_plan(checkout / "plans", shop_plan(namespace), "shop.yaml")
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", "plans/shop.yaml", "--out", str(saved), cwd=checkout)
    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(saved.read_text())["plans"][0]["files"] == ["plans/shop.yaml"]  # portable
    moved = tmp_path / "moved"
    checkout.rename(moved)
    refused = planner("apply", str(saved), "--no-wait", cwd=elsewhere)
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: plan shop: plan files not found: plans/shop.yaml: a saved plan's relative paths are "
        f"relative to the directory `plan` ran in ({checkout}), which does not hold them either; run "
        "`apply` from a checkout with the same layout, at its top (where `plan` ran)\n"
    )
    moved.rename(checkout)
    applied = planner("apply", str(saved), "--no-wait", cwd=elsewhere)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert image_of(cluster, namespace) == "nginx:1.27"


def test_a_saved_plan_is_applied_alone_with_its_own_options(
    planner: Runner, namespace: str, reviewed: tuple[Path, Path]
) -> None:
    _, saved = reviewed
    refused = planner("apply", str(saved), "--allow-data-loss")
    assert refused.returncode == 1
    assert "a saved plan is applied alone and carries its own options" in refused.stderr


def kube_system_uid(cluster: ClusterHandle) -> str:
    return str(get(cluster, "/api/v1/namespaces/kube-system")["metadata"]["uid"])


def test_a_saved_plan_made_against_another_cluster_is_refused_before_any_write(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop_plan(namespace))
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    here = kube_system_uid(cluster)
    assert json.loads(saved.read_text())["cluster"] == {"uid": here, "server": cluster.url}

    with running_cluster(simulate=True, paused=("controllers", "nodeagent")) as other:
        admin = SlimAdmin.of(other)
        before = admin.request_counts()
        refused = planner("apply", str(saved), env={"KUBECONFIG": str(other.kubeconfig)})
        requests = {key: n - before.get(key, 0) for key, n in admin.request_counts().items()}
        there = kube_system_uid(other)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr == (
        f"error: {saved}: plan was made against cluster {here} at {cluster.url}; "
        f"this is cluster {there} at {other.url}\n"
    )
    assert {key: n for key, n in requests.items() if n} == {("get", "namespaces", "200"): 1}
    applied = planner("apply", str(saved), "--no-wait")  # the cluster it was made against takes it
    assert applied.returncode == 0, applied.stdout + applied.stderr


def test_a_saved_plan_records_the_lock_holder_it_saw(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop_plan(namespace))
    quiet, busy = tmp_path / "quiet.plan.json", tmp_path / "busy.plan.json"
    assert planner("plan", str(plan), "--out", str(quiet)).returncode == 0
    now = "2026-11-29T10:00:00.000000Z"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "planner-lock-shop", "namespace": namespace},
        "spec": {"holderIdentity": "ci@runner/7/0badc0de", "leaseDurationSeconds": 30, "acquireTime": now},
    }
    status, body = http(cluster, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", lease)
    assert status == 201, body

    made = planner("plan", str(plan), "--out", str(busy))

    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(quiet.read_text())["plans"][0]["lock"] is None
    assert json.loads(busy.read_text())["plans"][0]["lock"] == {
        "holder": "ci@runner/7/0badc0de",
        "since": "2026-11-29T10:00:00Z",
    }
    warning = "warning: plan shop is locked by ci@runner/7/0badc0de since 2026-11-29T10:00:00Z ("
    assert made.stderr.startswith(warning), made.stderr
    assert made.stderr.endswith("s ago: that run probably died, and the next apply takes its lock over\n")


# --- Secret values: digested under a key the cluster keeps, never the saved plan -------------------

PIN = "4821"


def pin_plan(namespace: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: vault, namespace: {namespace}}}\n"
        f"secrets:\n  - {{name: door, data: {{pin: '{PIN}'}}}}\n"
    )


def parent_of(cluster: ClusterHandle, namespace: str, plan: str = "vault") -> dict[str, Any] | None:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/{plan}")
    assert status in (200, 404), body
    return body if status == 200 else None


def test_plan_out_of_a_never_applied_plan_keeps_its_digest_key_in_the_cluster_and_nothing_guessable_in_the_file(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, pin_plan(namespace))
    planned = planner("plan", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert parent_of(cluster, namespace) is None  # plan without --out writes nothing
    saved = tmp_path / "door.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    parent = parent_of(cluster, namespace)
    assert parent is not None and parent["type"] == "planner.dev/applyset"
    assert list(parent["data"]) == ["planner.digest-key"]  # only the key: it lists no member yet
    key = base64.b64decode(parent["data"]["planner.digest-key"])
    assert len(key) == 32
    text = saved.read_text()
    digests = set(re.findall(r"[0-9a-f]{64}", text))
    for candidate in (f"{n:04d}" for n in range(10_000)):
        encoded = base64.b64encode(candidate.encode()).decode()
        assert not {sha256(candidate), sha256(encoded)} & digests, candidate
    assert key.hex() not in text and parent["data"]["planner.digest-key"] not in text
    document = json.loads(text)["plans"][0]
    assert document["digest_key_id"] == hmac.new(key, b"planner.dev/digest-key-id", "sha256").hexdigest()[:16]

    applied = planner("apply", str(saved), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    pin = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/door")["data"]["pin"]
    assert base64.b64decode(pin).decode() == PIN
    after = parent_of(cluster, namespace)
    assert after is not None and after["data"]["planner.digest-key"] == parent["data"]["planner.digest-key"]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_saved_plan_whose_digest_key_is_gone_is_stale_and_nothing_is_written(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, pin_plan(namespace))
    saved = tmp_path / "door.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    status, body = http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/secrets/vault")
    assert status == 200, body
    refused = planner("apply", str(saved), "--no-wait")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: plan is stale: objects moved since the plan was made; plan again:\n"
        f"  secret/{namespace}/vault: its key for digesting Secret values is gone "
        "(the parent was deleted or replaced)\n"
    )
    assert parent_of(cluster, namespace) is None


def test_plan_out_into_a_namespace_that_does_not_exist_writes_nothing_and_says_why(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    missing = f"{namespace}-nowhere"
    plan = write_plan(tmp_path, pin_plan(missing))
    saved = tmp_path / "door.plan.json"
    refused = planner("plan", str(plan), "--out", str(saved))
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: plan --out: namespace {missing} does not exist, so plan vault has nowhere to keep the key "
        "that hides its Secret values in the saved plan; create the namespace (or apply the plan once), "
        "then plan again\n"
    )
    assert not saved.exists()
    assert http(cluster, "GET", f"/api/v1/namespaces/{missing}")[0] == 404


def test_a_saved_plan_for_a_namespace_that_does_not_exist_yet_is_applied_and_says_it_created_it(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """The run creates the namespace before taking the run lock (its Lease lives there), so before the
    plan is made again; that is the saved plan's own create of it, not a cluster that moved."""
    fresh = f"{namespace}-new"
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {fresh}}}\n"
        "configMaps:\n  - {name: settings, data: {LOG_LEVEL: info}}\n",
    )
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"  + create namespace/{fresh} (namespace does not exist)" in made.stdout.splitlines()

    applied = planner("apply", str(saved), "--no-wait")

    assert applied.returncode == 0, applied.stdout + applied.stderr
    said = f"namespace/{fresh}: namespace created (the run lock lives there)"
    assert said in applied.stderr.splitlines(), applied.stderr
    assert get(cluster, f"/api/v1/namespaces/{fresh}/configmaps/settings")["data"] == {"LOG_LEVEL": "info"}


def test_replicas_an_autoscaler_owns_never_make_a_saved_plan_stale(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """`replicas: 2` with `autoscale:`: the count is create-only, so the autoscaler's scaling (here as
    `kubectl scale` does it) leaves a saved plan fresh (issue 39, item 8)."""
    autoscaled = "    replicas: 2\n    autoscale: {min: 2, max: 5, cpuUtilization: 80}\n    cpu: 100m\n"

    def text(image: str) -> str:
        return (
            "apiVersion: planner.dev/v1\nkind: Plan\n"
            f"metadata: {{name: shop, namespace: {namespace}}}\n"
            f"workloads:\n  - name: web\n    image: '{image}'\n{autoscaled}"
        )

    plan = write_plan(tmp_path, text("nginx:1.27"))
    first = planner("apply", str(plan), "--no-wait")
    assert first.returncode == 0, first.stdout + first.stderr
    write_plan(tmp_path, text("nginx:1.28"))
    saved = tmp_path / "shop.plan.json"
    made = planner("plan", str(plan), "--out", str(saved), "--detailed-exitcode")
    assert made.returncode == 2, made.stdout + made.stderr

    scaled = kubectl("scale", "-n", namespace, "deployment/web", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    applied = planner("apply", str(saved), "--no-wait")

    assert applied.returncode == 0, applied.stdout + applied.stderr
    deployment = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert deployment["spec"]["replicas"] == 3
    assert image_of(cluster, namespace) == "nginx:1.28"

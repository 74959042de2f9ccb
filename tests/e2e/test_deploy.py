"""deploy/: real `kubectl apply -k` accepts it, and its ClusterRole is exactly what the controller uses —
the controller runs with a token bound to only those roles (on an RBAC cluster) through a scenario
that exercises every path (reconcile and prune, pools, the reaper, leader election, events; then a
Plan object reconciled into its status); nothing is refused, and every verb of the role was made (the
server's request log) but the recovery-only `get`s listed below."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests import slimcluster
from tests.paths import REPO
from tests.simulated import eventually

DEPLOY = REPO / "deploy"
USER = "system:serviceaccount:planner-system:planner-controller"
# The role's verbs only a create answered 409 AlreadyExists uses (planner reads the object to tell a
# retry of its own create from someone else's object), a Plan's finalizer patch answered 409 (the
# Plan read again), and an Event's repeat: a scenario cannot count on making them.
RECOVERY_ONLY = {
    (group, resource, "get")
    for group, resource in [
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "services"),
        ("", "pods"),
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("networking.k8s.io", "ingresses"),
        ("planner.dev", "plans"),
    ]
} | {("", "events", "patch")}  # an Event repeated within ten minutes, aggregated into the first


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True, simulate=True, time_scale=0.1) as handle:
        yield handle


def kubectl(
    cluster: ClusterHandle, *args: str, kubeconfig: Path | None = None
) -> subprocess.CompletedProcess[str]:
    config = kubeconfig or cluster.kubeconfig
    return subprocess.run(
        ["kubectl", f"--kubeconfig={config}", *args], capture_output=True, text=True, check=False
    )


def admin(cluster: ClusterHandle, method: str, path: str, body: Any = None) -> Any:
    reply = slimcluster.http(cluster, method, path, body)
    assert reply.status < 300, reply.body
    return reply.body


def token_kubeconfig(
    cluster: ClusterHandle,
    directory: Path,
    *,
    namespace: str = "planner-system",
    account: str = "planner-controller",
) -> Path:
    """A kubeconfig for a ServiceAccount (the controller's by default), with a token from TokenRequest."""
    token = admin(cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", {})
    config = YAML(typ="safe").load(Path(cluster.kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": token["status"]["token"]}
    path = directory / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


def verbs_of(verb: str, code: int) -> tuple[str, ...]:
    """The RBAC verbs a request was authorized for: a server-side apply that created its object (201)
    needs `create` as well as `patch`, on a real apiserver as on the embedded one."""
    return (verb, "create") if verb == "patch" and code == 201 else (verb,)


def role_rules(*names: str) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) for every rule of deploy/rbac.yaml's ClusterRoles (the controller's
    own and the deployer's: a controller reconciling as itself uses both), or of the named ones."""
    documents = list(YAML(typ="safe").load_all((DEPLOY / "rbac.yaml").read_text()))
    roles = [
        d for d in documents if d["kind"] == "ClusterRole" and (not names or d["metadata"]["name"] in names)
    ]
    return {
        (group, resource, verb)
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def deploy_listen_flags() -> list[str]:
    """deploy/'s --listen and --web-listen flags, each on a free port (a test shares the machine)."""
    documents = YAML(typ="safe").load_all((DEPLOY / "deployment.yaml").read_text())
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    flags = [arg for arg in container["args"] if arg.startswith(("--listen=", "--web-listen="))]
    return [re.sub(r":\d+$", ":0", flag) for flag in flags]


def deploy_addresses(log: Path) -> tuple[str, str]:
    """(probes, web view) addresses a controller started with `deploy_listen_flags()` logs it serves
    on: the probes on every address (reached here through the loopback), the web view on the loopback."""
    served = r"/metrics on 0\.0\.0\.0:(\d+) \(and the read-only web view at / on (127\.0\.0\.1:\d+)\)"
    found = eventually(lambda: re.search(served, log.read_text()))
    return f"127.0.0.1:{found.group(1)}", found.group(2)


def check_web_view_apart(probes: str, web: str) -> None:
    """The web view is served on its own address only, and the probes and metrics never there."""
    assert fetch(probes, "/") == (404, "not found\n")
    status, page = fetch(web, "/")
    assert status == 200 and "<h1>planner controller</h1>" in page, page
    assert (fetch(web, "/healthz")[0], fetch(web, "/metrics")[0]) == (404, 404)


def fetch(address: str, path: str) -> tuple[int, str]:
    """(status, body) of GET `path` on `address`."""
    try:
        with urllib.request.urlopen(f"http://{address}{path}", timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def scenario_plan(namespace: str, *, full: bool) -> str:
    text = (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: everything, namespace: {namespace}}}\n"
        "warmPools:\n"
        f"  - name: dev\n    size: {1 if full else 0}\n"
        "    template: {image: ghcr.io/acme/devbox:1, rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n"
    )
    text += "configMaps:\n  - {name: settings, data: {MODE: fast}}\n"
    if full:
        text += (
            "  - {name: extra, data: {MODE: slow}}\n"
            "secrets:\n  - {name: creds, data: {TOKEN: s3cr3t}}\n"
            "workloads:\n"
            "  - {name: web, image: nginx:1.27, port: 80, expose: true, ingress: {host: shop.example.com},"
            " autoscale: {min: 1, max: 2}}\n"
            "  - {name: db, kind: statefulset, image: postgres:16, replicas: 1}\n"
            "  - {name: agent, kind: daemonset, image: busybox:1, command: [sleep, '3600']}\n"
            '  - {name: migrate, kind: job, image: busybox:1, command: ["true"]}\n'
            "  - {name: nightly, kind: cronjob, image: busybox:1, schedule: '@yearly'}\n"
            "sandboxes:\n"
            "  - {name: alice, image: ghcr.io/acme/devbox:1, rootfs: {size: 1Gi}, workspace: {size: 1Gi}, idleTimeout: 1s}\n"
        )
    return text


def start_controller(
    tmp_path: Path, kubeconfig: Path, plans: Path | None, *options: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """`planner controller --plans PLANS` (None: of Plan objects) as its Deployment runs it (only the
    kubeconfig's credentials), listening on a free port, its output in the returned log."""
    log = tmp_path / ("controller.log" if plans else "controller-objects.log")
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}
    command = [sys.executable, "-m", "planner", "controller", "--listen", "127.0.0.1:0"]
    command += ["--plans", str(plans)] if plans else []
    with log.open("wb") as stream:
        process = subprocess.Popen(
            [*command, *options], cwd=REPO, env=environment, stdout=stream, stderr=subprocess.STDOUT
        )
    return process, log


def test_kubectl_apply_k_accepts_deploy(cluster: ClusterHandle) -> None:
    applied = kubectl(cluster, "apply", "-k", str(DEPLOY))

    assert applied.returncode == 0, applied.stderr
    deployment = json.loads(
        kubectl(
            cluster, "get", "deployment", "planner-controller", "-n", "planner-system", "-o", "json"
        ).stdout
    )
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in container["args"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["requests"] == {"cpu": "50m", "memory": "128Mi"}
    assert not any(arg.startswith("--plans") for arg in container["args"])  # it reconciles Plan objects
    assert kubectl(cluster, "create", "namespace", "devboxes").returncode == 0
    example = kubectl(cluster, "apply", "-f", str(DEPLOY / "plans" / "example.yaml"))
    assert example.returncode == 0, example.stderr
    assert kubectl(cluster, "get", "plan", "devboxes", "-n", "devboxes").returncode == 0


def test_the_role_is_exactly_what_the_controller_uses(cluster: ClusterHandle, tmp_path: Path) -> None:
    assert kubectl(cluster, "apply", "-k", str(DEPLOY)).returncode == 0
    assert (
        kubectl(
            cluster, "scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0"
        ).returncode
        == 0
    )
    kubeconfig = token_kubeconfig(cluster, tmp_path)
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = plans / "plan.yaml"
    plan.write_text(scenario_plan("scenario", full=True))
    process, log = start_controller(
        tmp_path,
        kubeconfig,
        plans,
        "--leader-elect",
        "--lease-namespace",
        "planner-system",
        "--resync",
        "0.5s",
        "--poll",
        "0.2s",
        "--interval",
        "1h",
        "--allow-data-loss",
        "-n",
        "scenario",
    )
    try:
        eventually(lambda: "plan everything: applied" in log.read_text(), timeout=60)
        eventually(lambda: "paused (idle)" in log.read_text(), timeout=30)
        eventually(lambda: re.search(r"pool dev \(plan everything\): created 1", log.read_text()), timeout=30)
        plan.write_text(scenario_plan("scenario", full=False))
        eventually(lambda: log.read_text().count("plan everything: applied") >= 2, timeout=60)
        eventually(
            lambda: re.search(r"pool dev \(plan everything\): created 0, deleted 1", log.read_text()),
            timeout=30,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0, log.read_text()
    assert kubectl(cluster, "create", "namespace", "objects").returncode == 0
    object_plan = tmp_path / "object.yaml"
    object_plan.write_text(scenario_plan("objects", full=False))
    assert kubectl(cluster, "apply", "-f", str(object_plan)).returncode == 0
    process, log = start_controller(tmp_path, kubeconfig, None, "-n", "objects", "--interval", "1h")
    try:
        ready = kubectl(
            cluster, "wait", "--for=condition=Ready", "plan/everything", "-n", "objects", "--timeout=60s"
        )
        assert ready.returncode == 0, ready.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    made = SlimAdmin.of(cluster).requests(user=USER)

    assert code == 0, log.read_text()
    refused = [r for r in made if r["code"] == 403]
    assert not refused, refused
    used = {
        (r["apiGroup"], r["resource"] + (f"/{r['subresource']}" if r.get("subresource") else ""), verb)
        for r in made
        if r["resource"]
        for verb in verbs_of(r["verb"], r["code"])
    }
    assert used <= role_rules(), used - role_rules()
    assert role_rules() - used <= RECOVERY_ONLY, role_rules() - used - RECOVERY_ONLY


def test_health_and_readiness_fail_when_the_controller_may_not_watch(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    """A controller whose token may do nothing: its informers fail for good (403), so /healthz and
    /readyz answer 503 naming why, and it still shuts down cleanly. It listens as deploy/ says: the
    probes on every address, the web view on the loopback only and not beside the probes."""
    admin(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": "nobody"}})
    admin(cluster, "POST", "/api/v1/namespaces/nobody/serviceaccounts", {"metadata": {"name": "nobody"}})
    kubeconfig = token_kubeconfig(cluster, tmp_path, namespace="nobody", account="nobody")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "plan.yaml").write_text(scenario_plan("nobody", full=False))
    flags = deploy_listen_flags()
    assert [flag.split("=")[0] for flag in flags] == ["--listen", "--web-listen"]
    process, log = start_controller(tmp_path, kubeconfig, plans, "-n", "nobody", *flags)
    try:
        address, web = deploy_addresses(log)
        healthz = eventually(lambda: (reply := fetch(address, "/healthz"))[0] == 503 and reply)
        readyz = fetch(address, "/readyz")
        check_web_view_apart(address, web)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)

    assert healthz[1].startswith("informers failed:"), healthz
    assert "403 Forbidden: " in healthz[1] and 'User "system:serviceaccount:nobody:nobody"' in healthz[1], (
        healthz
    )
    said = [line for line in log.read_text().splitlines() if line.endswith(": it is not retried")]
    assert said and len(said) == len(set(said)), log.read_text()  # each failure logged once
    assert all("403 Forbidden" in line for line in said), said
    assert readyz == (503, "informers not synced\n")
    assert code == 0, log.read_text()


def test_a_multi_tenant_controller_needs_only_its_own_role_and_impersonation(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    """The controller's own ClusterRole shrinks to what it needs for itself (issue 40): bound to only
    `planner-controller` and deploy/tenancy.yaml's `planner-impersonator`, with
    `--default-service-account`, it reconciles a Plan as the tenant account bound to `planner-tenant`;
    none of its own requests is refused, and it writes none of the Plan's objects itself."""
    assert kubectl(cluster, "apply", "-k", str(DEPLOY)).returncode == 0
    kubectl(cluster, "scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0")
    account, user = "tenant-controller", "system:serviceaccount:planner-system:tenant-controller"
    assert kubectl(cluster, "create", "serviceaccount", account, "-n", "planner-system").returncode == 0
    for role in ("planner-controller", "planner-impersonator"):
        bound = kubectl(
            cluster, "create", "clusterrolebinding", f"{account}-{role}", f"--clusterrole={role}",
            f"--serviceaccount=planner-system:{account}",
        )  # fmt: skip
        assert bound.returncode == 0, bound.stderr
    namespace = "tenant-a"
    assert kubectl(cluster, "create", "namespace", namespace).returncode == 0
    assert kubectl(cluster, "create", "serviceaccount", "deployer", "-n", namespace).returncode == 0
    tenant = kubectl(
        cluster, "create", "rolebinding", "deployer", "--clusterrole=planner-tenant",
        f"--serviceaccount={namespace}:deployer", "-n", namespace,
    )  # fmt: skip
    assert tenant.returncode == 0, tenant.stderr
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: shop, namespace: {namespace}}}\n"
        "workloads:\n  - {name: web, image: 'nginx:1.27', port: 8080, expose: true}\n"
        "configMaps:\n  - {name: settings, data: {a: b}}\n"
    )
    assert kubectl(cluster, "apply", "-f", str(plan)).returncode == 0
    kubeconfig = token_kubeconfig(cluster, tmp_path, account=account)
    process, log = start_controller(
        tmp_path, kubeconfig, None, "-n", namespace, "--interval", "1h", "--default-service-account", "deployer"
    )  # fmt: skip
    try:
        ready = kubectl(
            cluster, "wait", "--for=condition=Ready", "plan/shop", "-n", namespace, "--timeout=60s"
        )
        assert ready.returncode == 0, ready.stderr + log.read_text()
        # The namespace's deletion takes the tenant's account: the Plan cannot be pruned as it, and the
        # controller, seeing the namespace go with its own role, lets it go instead of holding it.
        gone = kubectl(cluster, "delete", "namespace", namespace, "--timeout=60s")
        assert gone.returncode == 0, gone.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    made = SlimAdmin.of(cluster).requests(user=user)
    assert code == 0, log.read_text()
    refused = [r for r in made if r["code"] == 403]
    assert not refused, refused
    own_writes = [
        r
        for r in made
        if r["verb"] in ("create", "patch", "update", "delete")
        and r["resource"] not in ("plans", "events", "leases", "serviceaccounts")
    ]
    assert own_writes == [], (
        own_writes
    )  # the Plan's objects were written as the tenant, not by the controller
    written = {
        r["resource"]
        for r in SlimAdmin.of(cluster).requests(user=f"system:serviceaccount:{namespace}:deployer")
        if r["verb"] in ("create", "patch")
    }
    assert {"deployments", "services", "configmaps"} <= written, written

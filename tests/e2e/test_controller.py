"""`planner controller` and the `sandbox` commands end to end: controllers run as subprocesses against
an embedded cluster (simulated, time-scaled) over HTTP; what they did is read with kubectl or raw HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster, write_kubeconfig
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, http, write_bad_plan_files, write_plan
from tests.paths import REPO
from tests.simulated import eventually


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def pool_plan(namespace: str, *, size: int, idle_timeout: str = "", name: str = "devboxes") -> str:
    idle = f"      idleTimeout: {idle_timeout}\n" if idle_timeout else ""
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: {name}, namespace: {namespace}}}\n"
        "warmPools:\n"
        f"  - name: dev\n"
        f"    size: {size}\n"
        "    template:\n"
        "      image: ghcr.io/acme/devbox:1\n"
        "      rootfs: {size: 1Gi}\n"
        "      workspace: {size: 1Gi}\n"
        f"{idle}"
    )


def sandbox_plan(namespace: str, *, idle_timeout: str, sandboxes: tuple[str, ...] = ("alice",)) -> str:
    text = (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: desks, namespace: {namespace}}}\n"
        "sandboxes:\n"
    )
    for name in sandboxes:
        text += (
            f"  - name: {name}\n"
            "    image: ghcr.io/acme/devbox:1\n"
            "    rootfs: {size: 1Gi}\n"
            "    workspace: {size: 1Gi}\n"
            f"    idleTimeout: {idle_timeout}\n"
        )
    return text


# --- the controller as a subprocess ---------------------------------------------------------------


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    log: Path
    address: str = ""

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://{self.address}{path}", timeout=5) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def metrics(self) -> dict[str, float]:
        """Each sample line of /metrics, `name{labels}` -> value."""
        status, text = self.get("/metrics")
        assert status == 200, text
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                samples[key] = float(value)
        return samples


Start = Callable[..., Running]


def start_controller(
    cluster: ClusterHandle, home: Path, log: Path, *args: str, kubeconfig: Path | None = None
) -> Running:
    """Start `planner controller ARGS` serving on a free port (as the user of `kubeconfig` when given),
    once it says where it serves."""
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig or cluster.kubeconfig),
    }
    command = [sys.executable, "-m", "planner", "controller", "--listen", "127.0.0.1:0", *args]
    with log.open("wb") as stream:
        process = subprocess.Popen(
            command, cwd=REPO, env=environment, stdout=stream, stderr=subprocess.STDOUT
        )
    running = Running(process, log)
    found = eventually(  # a generous bound: a cold start on a loaded machine takes a while
        lambda: re.search(r"/metrics on (\S+)", running.output()) or process.poll() is not None,
        timeout=60,
    )
    if not isinstance(found, re.Match):
        running.stop()
        raise AssertionError(running.output())
    running.address = found.group(1)
    return running


@pytest.fixture
def controllers(cluster: ClusterHandle, home: Path, tmp_path: Path) -> Iterator[Start]:
    """Start `planner controller ARGS` (`start_controller`); every one started is stopped after."""
    started: list[Running] = []

    def start(*args: str, kubeconfig: Path | None = None) -> Running:
        log = tmp_path / f"controller-{len(started)}.log"
        running = start_controller(cluster, home, log, *args, kubeconfig=kubeconfig)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def kubectl_json(kubectl: Runner, *args: str) -> dict[str, Any]:
    done = kubectl(*args, "-o", "json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def workspaces(kubectl: Runner, namespace: str, selector: str) -> list[dict[str, Any]]:
    listed = kubectl_json(kubectl, "get", "pvc", "-n", namespace, "-l", selector)
    return [i for i in listed["items"] if i["metadata"]["name"].endswith("-workspace")]


def member_names(kubectl: Runner, namespace: str, *, claimed: bool) -> set[str]:
    selector = f"planner.dev/pool=dev,planner.dev/claimed={'true' if claimed else 'false'}"
    return {w["metadata"]["labels"]["gobrave-workload"] for w in workspaces(kubectl, namespace, selector)}


def unclaimed_when(kubectl: Runner, namespace: str, count: int) -> set[str]:
    """The unclaimed members, once there are `count` of them."""

    def probe() -> set[str] | None:
        found = member_names(kubectl, namespace, claimed=False)
        return found if len(found) == count else None

    return eventually(probe, timeout=30)


def ready_members(kubectl: Runner, namespace: str) -> set[str]:
    pods = kubectl_json(
        kubectl, "get", "pods", "-n", namespace, "-l", "planner.dev/pool=dev,planner.dev/claimed=false"
    )
    return {
        p["metadata"]["name"]
        for p in pods["items"]
        if any(
            c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", [])
        )
    }


def start_pool(
    controllers: Start, tmp_path: Path, namespace: str, *args: str, size: int = 2
) -> tuple[Running, Path]:
    plans = tmp_path / "plans"
    plans.mkdir(exist_ok=True)
    plan = write_plan(plans, pool_plan(namespace, size=size))
    running = controllers("--plans", str(plans), "-n", namespace, "--resync", "1s", "--poll", "0.2s", *args)
    return running, plan


# --- warm pools and claims ------------------------------------------------------------------------


def test_a_pool_fills_to_its_size_and_refills_after_a_claim(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    start_pool(controllers, tmp_path, namespace)
    first = unclaimed_when(kubectl, namespace, 2)

    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)

    assert claimed.returncode == 0, claimed.stderr
    runtime_id = claimed.stdout.strip()
    name = runtime_id.rsplit("|", 1)[-1]
    assert runtime_id == f"k8s-{namespace}|sandbox|{name}" and name in first
    refilled = unclaimed_when(kubectl, namespace, 2)
    assert name not in refilled and len(refilled - first) == 1
    assert member_names(kubectl, namespace, claimed=True) == {name}
    (workspace,) = workspaces(kubectl, namespace, "planner.dev/owner=alice")
    assert workspace["metadata"]["name"] == f"{name}-workspace"
    pod = kubectl_json(kubectl, "get", "pod", name, "-n", namespace)
    assert pod["metadata"]["labels"]["planner.dev/claimed"] == "true"
    assert pod["spec"]["runtimeClassName"] == "kata-qemu"


def test_a_member_whose_pod_is_deleted_is_repaired_and_the_metrics_say_so_meanwhile(
    controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    a_member_pod_deleted(controllers, kubectl, namespace, tmp_path)


def a_member_pod_deleted(controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path) -> None:
    """A pool member's Pod deleted by hand (its PVCs stay): the member's Pod is made again under its
    name, and `cubepod_warmpool_ready` counts what kubectl sees ready (the real tier runs it too)."""
    running, _ = start_pool(controllers, tmp_path, namespace)
    members = eventually(lambda: len(found := ready_members(kubectl, namespace)) == 2 and found, timeout=90)
    lost = sorted(members)[0]
    before = kubectl_json(kubectl, "get", "pod", lost, "-n", namespace)["metadata"]["uid"]

    deleted = kubectl("delete", "pod", lost, "-n", namespace, "--wait=true", "--timeout=60s")

    assert deleted.returncode == 0, deleted.stderr

    def repaired() -> str | None:
        if ready_members(kubectl, namespace) != members:
            return None
        uid: str = kubectl_json(kubectl, "get", "pod", lost, "-n", namespace)["metadata"]["uid"]
        return uid if uid != before else None

    eventually(repaired, timeout=90)
    assert member_names(kubectl, namespace, claimed=False) == members  # no member leaked or added
    metric = f'cubepod_warmpool_ready{{namespace="{namespace}",pool="dev"}}'
    eventually(lambda: running.metrics().get(metric) == 2.0, timeout=30)
    assert "repaired " + lost in running.output()


def test_two_concurrent_claims_get_distinct_sandboxes(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    running, _ = start_pool(controllers, tmp_path, namespace)
    eventually(lambda: len(member_names(kubectl, namespace, claimed=False)) == 2)
    running.process.send_signal(signal.SIGTERM)  # nobody refills: the two claims race for two members
    assert running.process.wait(timeout=30) == 0, running.output()

    with ThreadPoolExecutor(2) as pool:
        claims = list(
            pool.map(
                lambda owner: planner("sandbox", "claim", "dev", "--name", owner, "-n", namespace),
                ["ann", "bob"],
            )
        )

    assert [c.returncode for c in claims] == [0, 0], [c.stderr for c in claims]
    assert len({c.stdout.strip() for c in claims}) == 2
    owners = {
        w["metadata"]["labels"]["planner.dev/owner"]
        for w in workspaces(kubectl, namespace, "planner.dev/claimed=true")
    }
    assert owners == {"ann", "bob"}
    third = planner("sandbox", "claim", "dev", "--name", "cat", "-n", namespace)
    assert third.returncode == 1 and "no unclaimed sandbox" in third.stderr


def test_shrinking_a_pool_deletes_only_unclaimed_members(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    _, plan = start_pool(controllers, tmp_path, namespace, size=3)
    eventually(lambda: len(member_names(kubectl, namespace, claimed=False)) == 3)
    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)
    assert claimed.returncode == 0, claimed.stderr
    eventually(lambda: len(member_names(kubectl, namespace, claimed=False)) == 3)
    members = member_names(kubectl, namespace, claimed=False)
    shown = planner("plan", str(plan), "--detailed-exitcode")
    applied = planner("apply", str(plan), "--allow-empty")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert member_names(kubectl, namespace, claimed=False) == members  # apply's prune never sees members
    assert re.search(rf"warm pool {namespace}/dev: \d ready, 3 unclaimed of size 3, 1 claimed", shown.stdout)
    summary = json.loads(planner("plan", str(plan), "-o", "json").stdout.splitlines()[-1])
    (pool,) = summary["warmPools"]
    assert {k: v for k, v in pool.items() if k != "ready"} == {
        "name": "dev",
        "namespace": namespace,
        "size": 3,
        "unclaimed": 3,
        "claimed": 1,
    }
    markdown = planner("plan", str(plan), "-o", "markdown").stdout
    assert re.search(rf"- warm pool `{namespace}/dev`: \d ready, 3 unclaimed of size 3, 1 claimed", markdown)

    plan.write_text(pool_plan(namespace, size=1))

    eventually(lambda: len(member_names(kubectl, namespace, claimed=False)) == 1)
    mine = claimed.stdout.strip().rsplit("|", 1)[-1]
    assert member_names(kubectl, namespace, claimed=True) == {mine}
    pods = kubectl_json(kubectl, "get", "pods", "-n", namespace, "-l", "planner.dev/pool=dev")
    assert {p["metadata"]["name"] for p in pods["items"]} == {mine} | member_names(
        kubectl, namespace, claimed=False
    )

    plan.write_text(pool_plan(namespace, size=1).replace("- name: dev\n", "- name: web\n"))

    eventually(lambda: not member_names(kubectl, namespace, claimed=False), timeout=30)
    assert member_names(kubectl, namespace, claimed=True) == {mine}
    eventually(
        lambda: len(workspaces(kubectl, namespace, "planner.dev/pool=web,planner.dev/claimed=false")) == 1
    )


def test_release_deletes_the_pod_and_only_with_allow_data_loss_the_pvcs(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    start_pool(controllers, tmp_path, namespace, size=1)
    eventually(lambda: len(member_names(kubectl, namespace, claimed=False)) == 1)
    name = (
        planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)
        .stdout.strip()
        .rsplit("|", 1)[-1]
    )
    assert name

    kept = planner("sandbox", "release", "alice", "-n", namespace)
    claims_kept = {
        i["metadata"]["name"]
        for i in kubectl_json(kubectl, "get", "pvc", "-n", namespace, "-l", f"gobrave-workload={name}")[
            "items"
        ]
    }
    eventually(lambda: kubectl("get", "pod", name, "-n", namespace).returncode != 0)
    gone = planner("sandbox", "release", "alice", "-n", namespace, "--allow-data-loss")

    assert kept.returncode == 0 and gone.returncode == 0, kept.stderr + gone.stderr
    assert claims_kept == {f"{name}-rootfs-g1", f"{name}-workspace"}
    assert (
        kubectl_json(kubectl, "get", "pvc", "-n", namespace, "-l", f"gobrave-workload={name}")["items"] == []
    )
    missing = planner("sandbox", "release", "alice", "-n", namespace)
    assert missing.returncode == 4, missing.stderr


def test_metrics_equal_the_counts_kubectl_sees(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    running, _ = start_pool(controllers, tmp_path, namespace, size=3)
    eventually(lambda: len(ready_members(kubectl, namespace)) == 3, timeout=30)
    assert planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace).returncode == 0

    def agree() -> dict[str, float] | None:
        samples = running.metrics()
        ready, claimed = ready_members(kubectl, namespace), member_names(kubectl, namespace, claimed=True)
        running_ = [
            w
            for w in workspaces(kubectl, namespace, "gobrave-workload")
            if w["metadata"]["annotations"].get("planner.dev/sandbox-state") == "running"
        ]
        wanted = {
            f'cubepod_warmpool_ready{{namespace="{namespace}",pool="dev"}}': float(len(ready)),
            f'planner_warmpool_claimed{{namespace="{namespace}",pool="dev"}}': float(len(claimed)),
            f'cubepod_active_sandboxes{{namespace="{namespace}"}}': float(len(running_)),
            f'cubepod_paused_sandboxes{{namespace="{namespace}"}}': 0.0,
        }
        matches = (
            all(samples.get(k) == v for k, v in wanted.items()) and len(ready) == 3 and len(claimed) == 1
        )
        return samples if matches else None

    samples = eventually(agree, timeout=30)
    assert samples["planner_workqueue_depth"] >= 0
    assert any(k.startswith("planner_leader{") and v == 1.0 for k, v in samples.items())


# --- the idle reaper --------------------------------------------------------------------------------


def workspace_annotations(kubectl: Runner, namespace: str, sandbox: str) -> dict[str, str]:
    claim = kubectl_json(kubectl, "get", "pvc", f"{sandbox}-workspace", "-n", namespace)
    annotations: dict[str, str] = claim["metadata"]["annotations"]
    return annotations


def pod_exists(kubectl: Runner, namespace: str, name: str) -> bool:
    return kubectl("get", "pod", name, "-n", namespace).returncode == 0


def test_an_idle_sandbox_is_paused_a_touched_one_is_not_and_apply_does_not_resume_it(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = write_plan(plans, sandbox_plan(namespace, idle_timeout="6s", sandboxes=("alice", "bob")))
    applied = planner("apply", str(plan))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    quiet = threading.Event()

    def keep_touching_bob() -> None:
        while not quiet.is_set():
            touched = planner("sandbox", "touch", "bob", "-n", namespace)
            assert touched.returncode == 0, touched.stderr

    with ThreadPoolExecutor(1) as toucher:
        touching = toucher.submit(keep_touching_bob)
        try:  # the toucher stops whatever fails, a controller that does not start included
            running = controllers(
                "--plans", str(plans), "-n", namespace, "--resync", "0.5s", "--poll", "0.2s"
            )
            eventually(
                lambda: (
                    workspace_annotations(kubectl, namespace, "alice").get("planner.dev/paused-reason")
                    == "idle"
                ),
                timeout=30,
                interval=0.2,
            )
            eventually(lambda: not pod_exists(kubectl, namespace, "alice"))
            reaped = running.metrics().get("planner_reaped_total")
            running.process.send_signal(signal.SIGTERM)
            assert running.process.wait(timeout=30) == 0, running.output()
        finally:
            quiet.set()
        touching.result()

    assert reaped == 1.0, running.output()
    alice = workspace_annotations(kubectl, namespace, "alice")
    assert alice["planner.dev/sandbox-state"] == "paused"
    assert workspace_annotations(kubectl, namespace, "bob")["planner.dev/sandbox-state"] == "running"
    assert pod_exists(kubectl, namespace, "bob")
    assert kubectl("get", "pvc", "alice-rootfs-g1", "-n", namespace).returncode == 0

    planned = planner("plan", str(plan), "--detailed-exitcode")
    reapplied = planner("apply", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert f"paused (idle since {alice['planner.dev/last-activity']})" in planned.stdout
    assert reapplied.returncode == 0, reapplied.stderr
    assert not pod_exists(kubectl, namespace, "alice")

    touched = planner("sandbox", "touch", "alice", "-n", namespace)
    resumed = planner("apply", str(plan))
    assert touched.returncode == 0 and resumed.returncode == 0, touched.stderr + resumed.stderr
    assert pod_exists(kubectl, namespace, "alice")
    assert workspace_annotations(kubectl, namespace, "alice")["planner.dev/sandbox-state"] == "running"


def test_the_controller_never_resumes_a_sandbox_its_plan_says_is_paused(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    text = sandbox_plan(namespace, idle_timeout="1s").replace(
        "    idleTimeout", "    state: paused\n    idleTimeout"
    )
    plan = write_plan(plans, text)
    assert planner("apply", str(plan)).returncode == 0
    running = controllers("--plans", str(plans), "-n", namespace, "--resync", "0.3s", "--poll", "0.2s")

    eventually(lambda: running.metrics().get(f'cubepod_paused_sandboxes{{namespace="{namespace}"}}') == 1.0)
    eventually(lambda: "plan desks: unchanged" in running.output())

    assert not pod_exists(kubectl, namespace, "alice")
    assert workspace_annotations(kubectl, namespace, "alice")["planner.dev/sandbox-state"] == "paused"


# --- health, leadership and shutdown --------------------------------------------------------------

ELECTION = ("--leader-elect", "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "0.5s")


def lease(cluster: ClusterHandle, namespace: str, name: str = "planner-controller") -> dict[str, Any] | None:
    status, body = http(cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
    return body if status == 200 else None


def rewrite_lease(cluster: ClusterHandle, namespace: str, **spec: Any) -> None:
    """Change the controllers' Lease as another holder would, reading it again after a 409: the leader
    renews it every half second, so a write can lose to a renewal between its read and its PUT."""
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-controller"

    def written() -> bool:
        current = lease(cluster, namespace) or {}
        current["spec"] |= spec
        status, body = http(cluster, "PUT", path, current)
        assert status in (200, 409), body
        return status == 200

    eventually(written)


def leads(running: Running) -> bool:
    return any(k.startswith("planner_leader{") and v == 1.0 for k, v in running.metrics().items())


def test_one_of_two_controllers_leads_and_the_other_takes_over_after_a_kill(
    cluster: ClusterHandle,
    controllers: Start,
    planner: Runner,
    kubectl: Runner,
    namespace: str,
    tmp_path: Path,
) -> None:
    first, _ = start_pool(controllers, tmp_path, namespace, *ELECTION, "--lease-namespace", namespace)
    eventually(lambda: leads(first))
    second = controllers(
        "--plans",
        str(tmp_path / "plans"),
        "-n",
        namespace,
        "--resync",
        "1s",
        *ELECTION,
        "--lease-namespace",
        namespace,
    )
    unclaimed_when(kubectl, namespace, 2)

    standby = eventually(lambda: (reply := second.get("/readyz"))[0] == 200 and reply[1])
    assert standby.strip() == "standing by" and not leads(second)
    assert first.get("/readyz") == (200, "leading\n") and first.get("/healthz")[0] == 200
    holder = (lease(cluster, namespace) or {})["spec"]["holderIdentity"]
    assert re.search(rf'planner_leader{{identity="{re.escape(holder)}"}} 1.0', first.get("/metrics")[1])

    first.process.kill()
    killed = time.monotonic()
    eventually(lambda: leads(second), timeout=20)
    took = time.monotonic() - killed
    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)

    assert took < 4 + 2 * 0.5 + 2, took  # the lease duration, two retry periods and the scrape's slack
    assert claimed.returncode == 0, claimed.stderr
    unclaimed_when(kubectl, namespace, 2)
    assert (lease(cluster, namespace) or {})["spec"]["holderIdentity"] != holder


def test_sigterm_hands_back_the_lease_and_readiness_follows(
    cluster: ClusterHandle, controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    first, _ = start_pool(controllers, tmp_path, namespace, *ELECTION, "--lease-namespace", namespace)
    eventually(lambda: first.get("/readyz") == (200, "leading\n"))
    second = controllers(
        "--plans", str(tmp_path / "plans"), "-n", namespace, *ELECTION, "--lease-namespace", namespace
    )
    eventually(lambda: second.get("/readyz") == (200, "standing by\n"))

    identities = {
        name: re.findall(r'planner_leader{identity="([^"]+)"}', c.get("/metrics")[1])[0]
        for name, c in (("first", first), ("second", second))
    }

    first.process.send_signal(signal.SIGTERM)
    code = first.process.wait(timeout=30)
    holder = (lease(cluster, namespace) or {})["spec"].get("holderIdentity") or ""

    assert code == 0, first.output()
    assert holder in ("", identities["second"]), (holder, identities)
    eventually(lambda: second.get("/readyz") == (200, "leading\n"), timeout=10)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://{first.address}/healthz", timeout=2)


def test_between_sigterm_and_exit_readiness_is_503_and_liveness_stays_200(
    cluster: ClusterHandle, controllers: Start, namespace: str, tmp_path: Path
) -> None:
    """A reconcile stuck in the client's retries (every ConfigMap request answered 429, Retry-After 5 s)
    keeps the controller from exiting after SIGTERM until the fault is cleared: in that window /readyz
    says 503 (a Service stops routing to it) while /healthz stays 200 (nothing restarts it mid-drain)."""
    admin = SlimAdmin.of(cluster)
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans, config_plan(namespace, "fast"))

    refused_before = admin.request_count(resource="configmaps", code="429")

    with admin.faults(errorRates={"429": 1.0}, errorResources=["configmaps"], retryAfterSeconds=5):
        running = controllers("--plans", str(plans), "-n", namespace, "--poll", "0.2s")
        eventually(lambda: running.get("/readyz") == (200, "leading\n"))
        eventually(lambda: admin.request_count(resource="configmaps", code="429") > refused_before)
        running.process.send_signal(signal.SIGTERM)
        readyz = eventually(lambda: (reply := running.get("/readyz"))[0] != 200 and reply)
        healthz = running.get("/healthz")
        metrics = running.get("/metrics")[0]
        exited_meanwhile = running.process.poll()

    probes_until_exit = []
    while running.process.poll() is None:
        with contextlib.suppress(urllib.error.URLError, ConnectionError):
            probes_until_exit.append(running.get("/healthz"))
    lock = lease(cluster, namespace, "planner-lock-settings")
    log = running.output()

    assert (readyz, healthz, metrics) == ((503, "shutting down\n"), (200, "ok\n"), 200)
    assert exited_meanwhile is None, log
    assert running.process.wait(timeout=60) == 0, log
    assert probes_until_exit and set(probes_until_exit) == {(200, "ok\n")}, probes_until_exit
    assert log.index("draining: ") < log.index("drained: "), log
    assert lock is None or not lock["spec"].get("holderIdentity"), lock  # the reconcile's lock is released
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://{running.address}/healthz", timeout=2)


def test_a_probe_is_answered_beside_500_idle_and_half_sent_connections(
    controllers: Start, namespace: str, tmp_path: Path
) -> None:
    """Connections that send nothing, or half a request, neither hold the probe up nor stay open for
    ever: the probe is answered, and a half-sent one is closed by the server after its read timeout."""
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans, config_plan(namespace, "fast"))
    running = controllers("--plans", str(plans), "-n", namespace)
    host, port = running.address.rsplit(":", 1)
    held: list[socket.socket] = []
    try:
        for index in range(500):
            connection = socket.create_connection((host, int(port)), timeout=30)
            if index % 2:
                connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\n")  # no blank line: half-sent
            held.append(connection)
        probe = running.get("/healthz")
        closed_by_server = held[-1].recv(1)
    finally:
        for connection in held:
            connection.close()

    assert probe == (200, "ok\n")
    assert closed_by_server == b""


# --- continuous reconcile under the run lock ---------------------------------------------------------


def config_plan(namespace: str, mode: str) -> str:
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: settings, namespace: {namespace}}}\n"
        "configMaps:\n"
        f"  - name: app\n    data: {{MODE: {mode}}}\n"
    )


def config_mode(kubectl: Runner, namespace: str) -> str | None:
    found = kubectl("get", "configmap", "app", "-n", namespace, "-o", "jsonpath={.data.MODE}")
    return found.stdout if found.returncode == 0 else None


def event_reasons(kubectl: Runner, namespace: str) -> list[str]:
    listed = kubectl_json(kubectl, "get", "events", "-n", namespace)
    return [e["reason"] for e in listed["items"] if e["involvedObject"]["name"] == "settings"]


def test_a_changed_plan_is_reconciled_never_while_another_run_holds_its_lock(
    cluster: ClusterHandle, controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = write_plan(plans, config_plan(namespace, "fast"))
    running = controllers("--plans", str(plans), "-n", namespace, "--poll", "0.2s", "--interval", "2s")
    eventually(lambda: config_mode(kubectl, namespace) == "fast")
    eventually(lambda: "Reconciled" in event_reasons(kubectl, namespace))
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    held = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "planner-lock-settings", "namespace": namespace},
        "spec": {
            "holderIdentity": "someone@elsewhere/1/abcd",
            "leaseDurationSeconds": 3600,
            "acquireTime": now,
            "renewTime": now,
        },
    }
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    # The controller reconciles every 2 s under this very lock: take it between two of its runs.
    eventually(lambda: http(cluster, "POST", leases, held)[0] == 201)

    plan.write_text(config_plan(namespace, "slow"))
    eventually(lambda: "plan settings: locked" in running.output())
    mode_while_held = config_mode(kubectl, namespace)
    status, body = http(cluster, "DELETE", f"{leases}/planner-lock-settings")
    assert status == 200, body

    assert mode_while_held == "fast", running.output()
    eventually(lambda: config_mode(kubectl, namespace) == "slow", timeout=30)
    edited = kubectl(
        "patch", "configmap", "app", "-n", namespace, "--type=merge", "-p", '{"data":{"MODE":"x"}}'
    )
    assert edited.returncode == 0, edited.stderr
    eventually(lambda: "DriftCorrected" in event_reasons(kubectl, namespace), timeout=30)
    assert config_mode(kubectl, namespace) == "slow"
    samples = running.metrics()
    assert samples[f'planner_reconcile_total{{namespace="{namespace}",plan="settings",result="locked"}}'] >= 1
    assert (
        samples[f'planner_reconcile_total{{namespace="{namespace}",plan="settings",result="applied"}}'] >= 3
    )


def test_bad_files_beside_a_plan_are_said_once_and_never_stall_its_reconciles(
    controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """A symlink loop, a FIFO, a link to /dev/zero and an unreadable file among the plans: each is one
    line of the log, the good plan keeps being reconciled (before and after the FIFO goes) and the
    controller stays healthy, truthfully: its loops keep moving."""
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = write_plan(plans, config_plan(namespace, "fast"))
    bad = write_bad_plan_files(plans)

    running = controllers("--plans", str(plans), "-n", namespace, "--poll", "0.2s")
    eventually(lambda: config_mode(kubectl, namespace) == "fast", timeout=30)
    plan.write_text(config_plan(namespace, "slow"))
    eventually(lambda: config_mode(kubectl, namespace) == "slow", timeout=30)
    (plans / "f.yaml").unlink()
    plan.write_text(config_plan(namespace, "steady"))
    eventually(lambda: config_mode(kubectl, namespace) == "steady", timeout=30)
    healthz = running.get("/healthz")
    output = running.output()

    assert healthz == (200, "ok\n"), output
    assert running.process.poll() is None, output
    for name, reason in bad.items():
        said = f"{plans / name}:1:1: cannot read plan file: {reason}"
        assert output.count(said) == 1, (said, output)


def test_healthz_fails_while_the_worker_makes_no_progress(
    cluster: ClusterHandle, controllers: Start, namespace: str, tmp_path: Path
) -> None:
    """A reconcile stuck in the client's retries (every ConfigMap request answered 429) past
    --progress-deadline: /healthz says which loop is stuck at what, and is 200 again once it moves."""
    admin = SlimAdmin.of(cluster)
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans, config_plan(namespace, "fast"))

    with admin.faults(errorRates={"429": 1.0}, errorResources=["configmaps"], retryAfterSeconds=1):
        running = controllers(
            "--plans", str(plans), "-n", namespace, "--timeout", "1s", "--progress-deadline", "2s"
        )
        stalled = eventually(lambda: (reply := running.get("/healthz"))[0] == 503 and reply[1], timeout=30)
    recovered = eventually(lambda: running.get("/healthz") == (200, "ok\n"), timeout=30)

    assert re.fullmatch(r"worker \d has made no progress for \d+s \(at plan:\S+plan\.yaml\)\n", stalled)
    assert recovered


def token_plan(namespace: str) -> str:
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: tokens, namespace: {namespace}}}\n"
        "secrets:\n"
        "  - name: api\n"
        "    data: {token: {valueFrom: {file: mounted/token}}}\n"
    )


def secret_token(kubectl: Runner, namespace: str) -> str | None:
    found = kubectl("get", "secret", "api", "-n", namespace, "-o", "jsonpath={.data.token}")
    return base64.b64decode(found.stdout).decode() if found.returncode == 0 and found.stdout else None


def test_a_rotated_secret_file_is_applied_without_waiting_for_the_interval(
    controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """As a mounted Secret volume rotates: `mounted/token` is a symlink into a timestamped directory,
    swapped for one into a new directory. The file is missing at first (the plan is broken until it
    appears). The interval is an hour, so only the poll can see any of it."""
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans, token_plan(namespace))
    mounted = plans / "mounted"
    mounted.mkdir()
    running = controllers("--plans", str(plans), "-n", namespace, "--poll", "0.2s", "--interval", "1h")
    eventually(lambda: 'secret file "mounted/token" does not exist' in running.output())
    assert secret_token(kubectl, namespace) is None

    def mount(version: str, value: str) -> None:
        (mounted / version).mkdir()
        (mounted / version / "token").write_text(value + "\n")
        (mounted / "next").symlink_to(f"{version}/token")
        (mounted / "next").replace(mounted / "token")  # atomically, as the kubelet swaps `..data`

    mount("..v1", "first-token")
    eventually(lambda: secret_token(kubectl, namespace) == "first-token", timeout=30)
    mount("..v2", "second-token")
    eventually(lambda: secret_token(kubectl, namespace) == "second-token", timeout=30)
    assert "second-token" not in running.output() and "first-token" not in running.output()


def web_plan(namespace: str, version: str) -> str:
    """Plan `race`: a ConfigMap and a Deployment at `version`; an apply of it waits until the Deployment
    has rolled out, holding the plan's lock all the while (so as long as the cluster's controllers are
    paused)."""
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: race, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{VERSION: '{version}'}}}}\n"
        f"workloads:\n  - {{name: web, image: 'web:{version}'}}\n"
    )


def service_account_kubeconfig(cluster: ClusterHandle, namespace: str, tmp_path: Path) -> tuple[Path, str]:
    """A kubeconfig with a token for a new ServiceAccount `controller`, and the user the server logs its
    requests as: the controller's requests tell apart from the test's and `planner apply`'s."""
    status, body = http(
        cluster,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        {"metadata": {"name": "controller"}},
    )
    assert status == 201, body
    status, issued = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/controller/token", {}
    )
    assert status == 201, issued
    token = issued["status"]["token"]
    kubeconfig = write_kubeconfig(tmp_path / "controller.kubeconfig", cluster.url, token, cluster.ca)
    return kubeconfig, f"system:serviceaccount:{namespace}:controller"


LOCK = "planner-lock-race"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}
# Written outside a plan's run lock by design: the lock itself, the Event a reconcile records after it
# released the lock, and the test's own ServiceAccount.
UNLOCKED = {"leases", "events", "serviceaccounts"}


@dataclass
class Hold:
    user: str
    writes: list[str]


def lock_holds(requests: list[dict[str, Any]]) -> list[Hold]:
    """The run lock's holds in the server's request log, each with the writes made during it, checking
    that every write of the plan's namespace falls inside a hold of the same user. The run lock is the
    namespace's only Lease (no leader election here): a create names none, it posts to the collection."""
    holds: list[Hold] = []
    open_hold: Hold | None = None
    for entry in requests:
        user, verb, resource = entry["user"], entry["verb"], entry["resource"]
        if resource == "leases":
            if verb == "create" and entry["code"] == 201:
                assert open_hold is None, (entry, holds)
                open_hold = Hold(user, [])
                holds.append(open_hold)
            elif verb == "delete" and entry["code"] == 200:
                assert open_hold is not None and open_hold.user == user, (entry, holds)
                open_hold = None
        elif verb in WRITES and resource not in UNLOCKED:
            assert open_hold is not None and open_hold.user == user, (entry, holds)
            open_hold.writes.append(f"{verb} {resource}/{entry['name']}")
    assert open_hold is None, holds
    return holds


def lock_holder(cluster: ClusterHandle, namespace: str) -> str:
    return str(((lease(cluster, namespace, LOCK) or {}).get("spec") or {}).get("holderIdentity") or "")


def test_a_controller_and_an_apply_of_the_same_plan_never_interleave_their_writes(
    cluster: ClusterHandle, controllers: Start, home: Path, namespace: str, tmp_path: Path
) -> None:
    """The cluster's controllers paused keep whichever run holds the lock waiting for its Deployment's
    rollout, so the other is sure to meet the lock: first the controller holds it and an apply waits,
    then an apply holds it and the controller's reconcile is locked out. The server's request log then
    shows every write of the plan's namespace inside a lock hold of the run that made it."""
    admin = SlimAdmin.of(cluster)
    kubeconfig, controller_user = service_account_kubeconfig(cluster, namespace, tmp_path)
    plans, elsewhere = tmp_path / "plans", tmp_path / "apply"
    plans.mkdir()
    elsewhere.mkdir()
    watched = write_plan(plans, web_plan(namespace, "a1"))
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "KUBECONFIG": str(cluster.kubeconfig),
    }

    applies: list[subprocess.Popen[str]] = []

    def apply(version: str) -> subprocess.Popen[str]:
        plan = write_plan(elsewhere, web_plan(namespace, version), name=f"{version}.yaml")
        command = [sys.executable, "-m", "planner", "apply", str(plan), "--lock-timeout", "120s"]
        applies.append(
            subprocess.Popen(
                command, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
        return applies[-1]

    def apply_met_the_lock() -> bool:
        return any(
            e["resource"] == "leases"
            and e["verb"] == "create"
            and e["code"] == 409
            and e["user"] != controller_user
            for e in admin.requests()
            if e["namespace"] == namespace
        )

    admin.pause("controllers")
    try:
        running = controllers(
            "--plans",
            str(plans),
            "-n",
            namespace,
            "--poll",
            "0.2s",
            "--interval",
            "3600s",
            kubeconfig=kubeconfig,
        )
        eventually(lambda: f"/{running.process.pid}/" in lock_holder(cluster, namespace), timeout=30)
        first = apply("b1")
        eventually(apply_met_the_lock, timeout=30)
        admin.resume("controllers")
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err

        admin.pause("controllers")
        second = apply("b2")
        eventually(lambda: f"/{second.pid}/" in lock_holder(cluster, namespace), timeout=30)
        watched.write_text(web_plan(namespace, "a2"))
        eventually(lambda: "plan race: locked" in running.output(), timeout=30)
        admin.resume("controllers")
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, out + err
        eventually(lambda: running.output().count("plan race: applied") == 2, timeout=60)
    finally:
        admin.resume("controllers")
        for process in applies:
            if process.poll() is None:
                process.kill()
                process.communicate()
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=30) == 0, running.output()

    holds = lock_holds([e for e in admin.requests() if e["namespace"] == namespace])
    writing = [hold for hold in holds if hold.writes]
    apply_user = writing[1].user
    assert apply_user != controller_user
    assert [hold.user for hold in writing] == [controller_user, apply_user, apply_user, controller_user], (
        holds
    )
    assert all("patch configmaps/settings" in hold.writes for hold in writing[1:]), holds
    status, settings = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")
    assert status == 200 and settings["data"] == {"VERSION": "a2"}, settings


def test_once_runs_one_pass_and_exits(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    write_plan(plans, pool_plan(namespace, size=2))
    write_plan(plans, config_plan(namespace, "fast"), name="settings.yaml")
    write_plan(
        plans,
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: broken}\nworkloads: 3\n",
        name="broken.yaml",
    )

    done = planner("controller", "--once", "--plans", str(plans), "-n", namespace)

    assert done.returncode == 1, done.stdout + done.stderr
    assert "broken.yaml" in done.stderr
    assert len(member_names(kubectl, namespace, claimed=False)) == 2
    assert config_mode(kubectl, namespace) == "fast"


def test_once_records_generations_as_its_history_flags_say(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    history = ("--history-max", "1", "--no-secret-history")
    for mode, revision in (("fast", "rev-a"), ("slow", "rev-b")):
        write_plan(plans, config_plan(namespace, mode), name="settings.yaml")
        args = ("controller", "--once", "--plans", str(plans), "-n", namespace, *history)
        done = planner(*args, "--source-revision", revision)
        assert done.returncode == 0, done.stdout + done.stderr
    assert config_mode(kubectl, namespace) == "slow"

    selector = "planner.dev/plan=settings,planner.dev/generation"
    kept = kubectl_json(kubectl, "get", "secrets", "-n", namespace, "-l", selector)["items"]
    assert [record["metadata"]["name"] for record in kept] == ["planner.settings.g2"]
    (record,) = kept
    assert record["metadata"]["annotations"]["planner.dev/revision"] == "rev-b"
    document = json.loads(gzip.decompress(base64.b64decode(record["data"]["generation"])))
    assert (document["generation"], document["revision"], document["secretData"]) == (2, "rev-b", False)


def test_a_leader_whose_lease_is_taken_stops_writing_at_once(
    cluster: ClusterHandle,
    controllers: Start,
    planner: Runner,
    kubectl: Runner,
    namespace: str,
    tmp_path: Path,
) -> None:
    running, _ = start_pool(controllers, tmp_path, namespace, *ELECTION, "--lease-namespace", namespace)
    eventually(lambda: leads(running))
    unclaimed_when(kubectl, namespace, 2)
    rewrite_lease(cluster, namespace, holderIdentity="someone-else", leaseDurationSeconds=3600)

    eventually(lambda: not leads(running))
    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)
    assert claimed.returncode == 0, claimed.stderr
    assert running.get("/readyz") == (200, "standing by\n")

    # Three resyncs (1 s each) and the claim's watch events go by: a replica that does not lead writes
    # nothing, so the pool stays one short the whole time.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert len(member_names(kubectl, namespace, claimed=False)) == 1
    rewrite_lease(cluster, namespace, holderIdentity="")
    eventually(lambda: leads(running))
    unclaimed_when(kubectl, namespace, 2)


def test_a_failed_reconcile_is_a_warning_event_on_the_plans_parent(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = write_plan(plans, sandbox_plan(namespace, idle_timeout="1h"))
    running = controllers("--plans", str(plans), "-n", namespace, "--poll", "0.2s")
    eventually(lambda: pod_exists(kubectl, namespace, "alice"), timeout=30)

    plan.write_text(
        sandbox_plan(namespace, idle_timeout="1h").replace(
            "workspace: {size: 1Gi}", "workspace: {size: 1Gi, storageClass: fast}"
        )
    )

    def failed_event() -> dict[str, Any] | None:
        listed = kubectl_json(kubectl, "get", "events", "-n", namespace)
        found = [e for e in listed["items"] if e["reason"] == "ReconcileFailed"]
        return found[0] if found else None

    event = eventually(failed_event, timeout=30)
    assert event["type"] == "Warning"
    involved = event["involvedObject"]
    assert (involved["kind"], involved["name"], involved["namespace"]) == ("Secret", "desks", namespace)
    assert "alice-workspace" in event["message"], event["message"]
    assert (
        running.metrics()[f'planner_reconcile_total{{namespace="{namespace}",plan="desks",result="failed"}}']
        >= 1
    )


def test_every_answer_forbids_scripts_framing_and_sniffing(
    controllers: Start, namespace: str, tmp_path: Path
) -> None:
    """The web view and the probes send a Content-Security-Policy that allows no script, no frame and no
    form, and `X-Content-Type-Options: nosniff` (issue 39, item 13)."""
    running, _ = start_pool(controllers, tmp_path, namespace)
    for path in ("/", "/healthz", "/metrics", "/no-such-page"):
        request = urllib.request.Request(f"http://{running.address}{path}")
        try:
            reply = urllib.request.urlopen(request, timeout=5)
        except urllib.error.HTTPError as error:
            reply = error
        with reply:
            policy = reply.headers["Content-Security-Policy"]
            assert reply.headers["X-Content-Type-Options"] == "nosniff", path
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy, (path, policy)
        assert "script-src" not in policy, policy  # default-src 'none' forbids every script

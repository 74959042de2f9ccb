"""The run lock end to end: `planner apply` processes against the embedded cluster over HTTP, the Lease
and the objects checked through raw HTTP.

Two applies of different versions never interleave: the second exits 3 naming the holder, or waits
(`--lock-timeout`) and applies on top; the server's own event history (one resourceVersion counter
for every kind) shows every write of each version inside its run's lease and the two leases one after
the other. A SIGKILLed holder's lock is taken over at once on this host (a live holder's never: the
first test's holder is on this host too), and waited out until it expires when its holder ran on
another host; a run that cannot renew
(503 on leases only) stops writing and exits 1; `unlock --force` breaks a lock and its run notices.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from planner.kube.client import KubeClient
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.state.runlock import LockOptions, acquire
from planner.testing.slimadmin import SlimAdmin, urlopen
from tests.e2e.conftest import Runner, current_rv, events_since, http, write_plan
from tests.paths import REPO
from tests.simulated import eventually

TIME_SCALE = 0.2  # simulated delays below are divided by 5 in real time


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True) as handle:
        yield handle


def shop(namespace: str, version: str, *, job_seconds: float = 1.0, ready_seconds: float = 1.0) -> str:
    """A migration Job, then the web Deployment that depends on it, at `version`; the delays are real
    seconds."""
    run = job_seconds / TIME_SCALE
    ready = ready_seconds / TIME_SCALE
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{VERSION: '{version}'}}}}\n"
        "workloads:\n"
        f"  - name: migrate\n    kind: job\n    image: 'shop-migrate:{version}'\n"
        f"    podAnnotations: {{sim.planner.dev/run-seconds: '{run:g}'}}\n"
        f"  - name: web\n    image: 'shop:{version}'\n    dependsOn: [migrate]\n"
        "    volumes: [{configMap: settings, mountPath: /etc/shop}]\n"
        f"    podAnnotations: {{sim.planner.dev/ready-after-seconds: '{ready:g}'}}\n"
    )


def start(cluster: ClusterHandle, home_env: dict[str, str], *args: str, **env: str) -> subprocess.Popen[str]:
    """`planner ARGS` in the background, as `planner(...)` runs it in the foreground."""
    command = [sys.executable, "-m", "planner", *args]
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=home_env | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def paused_node(cluster: ClusterHandle) -> Iterator[SlimAdmin]:
    """The node agent paused, so a first apply waits for its Job (holding its lock) until the test
    resumes it: the second run is sure to meet the lock, with no race on timing."""
    admin = SlimAdmin.of(cluster)
    admin.pause("nodeagent")
    try:
        yield admin
    finally:
        admin.resume("nodeagent")


@pytest.fixture
def background(cluster: ClusterHandle, home: Path) -> Iterator[Any]:
    """Starts `planner` processes in the background; any still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}

    def run(*args: str, **extra: str) -> subprocess.Popen[str]:
        process = start(cluster, env, *args, **extra)
        started.append(process)
        return process

    yield run
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def lease_path(namespace: str, plan: str = "shop") -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-lock-{plan}"


def lease(cluster: ClusterHandle, namespace: str, plan: str = "shop") -> dict[str, Any] | None:
    status, body = http(cluster, "GET", lease_path(namespace, plan))
    return body if status == 200 else None


def held_by(
    cluster: ClusterHandle, namespace: str, process: subprocess.Popen[str], plan: str = "shop"
) -> dict[str, Any] | None:
    """The Lease while `process` holds it (its pid is part of the holder identity), else None."""
    found = lease(cluster, namespace, plan)
    holder = (found or {}).get("spec", {}).get("holderIdentity", "")
    return found if f"/{process.pid}/" in holder else None


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def image(cluster: ClusterHandle, namespace: str, kind: str, name: str) -> str:
    collection = "deployments" if kind == "Deployment" else "jobs"
    group = "apps" if kind == "Deployment" else "batch"
    status, body = http(cluster, "GET", f"/apis/{group}/v1/namespaces/{namespace}/{collection}/{name}")
    assert status == 200, body
    return str(body["spec"]["template"]["spec"]["containers"][0]["image"])


MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_a_second_apply_exits_3_naming_the_holder_while_the_first_runs_and_the_lock_costs_two_requests(
    cluster: ClusterHandle,
    planner: Runner,
    background: Any,
    paused_node: SlimAdmin,
    namespace: str,
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    write_plan(first, shop(namespace, "3.0.0"))
    write_plan(second, shop(namespace, "3.1.0"))
    before = paused_node.request_counts()
    running = background("apply", str(first / "plan.yaml"))
    held = eventually(lambda: held_by(cluster, namespace, running))

    refused = planner("apply", str(second / "plan.yaml"))
    saved = planner("plan", str(second / "plan.yaml"), "--out", str(tmp_path / "b.plan.json"))
    paused_node.resume("nodeagent")

    spec = held["spec"]
    assert re.fullmatch(rf"[^@]+@[^/]+/{running.pid}/[0-9a-f]{{8}}", spec["holderIdentity"])
    assert spec["leaseDurationSeconds"] == 30
    assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
    assert refused.returncode == 3, refused.stdout + refused.stderr
    message = refused.stderr.strip()
    assert message.startswith(
        f"error: plan shop (namespace {namespace}) is locked by {spec['holderIdentity']} "
    )
    assert f"since {spec['acquireTime'][:19]}Z" in message
    assert message.endswith(f"to break it now: planner unlock shop -n {namespace} --force")
    assert saved.returncode == 0, saved.stdout + saved.stderr  # plan never takes the lock, but says so
    assert saved.stderr.startswith(f"warning: plan shop is being applied by {spec['holderIdentity']} since ")
    code, out, err = finished(running)
    assert code == 0, out + err
    assert image(cluster, namespace, "Deployment", "web") == "shop:3.0.0"
    assert image(cluster, namespace, "Job", "migrate") == "shop-migrate:3.0.0"
    assert lease(cluster, namespace) is None
    after = paused_node.request_counts()
    writes = {
        (verb, code): after[key] - before.get(key, 0)
        for key in after
        if (verb := key[0]) in ("create", "update", "delete") and key[1] == "leases" and (code := key[2])
    }
    # The first run: one POST to take the lock and one DELETE to release it, plus one renewing PUT per
    # 10 s it ran (none on an idle machine; a loaded one may take longer); the refused run: one POST
    # answered 409 (then a GET, not counted here: the test reads too).
    writes.pop(("update", "200"), None)
    assert {key: n for key, n in writes.items() if n} == {
        ("create", "201"): 1,
        ("create", "409"): 1,
        ("delete", "200"): 1,
    }


def _version(obj: dict[str, Any]) -> str:
    """The plan version an object was written at, from what each version writes differently."""
    if obj["kind"] == "ConfigMap":
        return str((obj.get("data") or {}).get("VERSION"))
    return str(obj["spec"]["template"]["spec"]["containers"][0]["image"]).rsplit(":", 1)[-1]


def planner_writes(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(resourceVersion, what) of every write a planner run made to a member, told from the
    controllers' status updates by what changed: a create or a change of the version the object
    carries (`3.1.0`), or a deletion request (`delete 3.0.0`: the version deleted)."""
    writes: list[tuple[int, str]] = []
    last: dict[tuple[str, str], tuple[str, bool]] = {}
    for event in sorted(events, key=lambda e: int(e["object"]["metadata"]["resourceVersion"])):
        obj = event["object"]
        key = (obj["kind"], obj["metadata"]["name"])
        state = (_version(obj), bool(obj["metadata"].get("deletionTimestamp")))
        before, last[key] = last.get(key), state
        if event["type"] == "DELETED" or state == before:
            continue  # the garbage collector's removal, or a status update
        version, deleting = state
        writes.append((int(obj["metadata"]["resourceVersion"]), f"delete {version}" if deleting else version))
    return writes


def lease_windows(events: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """(holder pid, first resourceVersion, last resourceVersion) of each lease, in order."""
    windows: list[tuple[str, int, int]] = []
    for event in events:
        obj = event["object"]
        rv = int(obj["metadata"]["resourceVersion"])
        pid = obj["spec"]["holderIdentity"].split("/")[1]
        if event["type"] == "ADDED":
            windows.append((pid, rv, rv))
        else:
            holder, begun, _ = windows[-1]
            assert holder == pid, (holder, pid)
            windows[-1] = (pid, begun, rv)
    return windows


def test_a_second_apply_waits_for_the_lock_then_applies_on_top_and_the_writes_never_interleave(
    cluster: ClusterHandle, background: Any, paused_node: SlimAdmin, namespace: str, tmp_path: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    write_plan(first, shop(namespace, "3.0.0"))
    write_plan(second, shop(namespace, "3.1.0"))
    since = current_rv(cluster)
    running = background("apply", str(first / "plan.yaml"))
    eventually(lambda: held_by(cluster, namespace, running))
    waiting = background("apply", str(second / "plan.yaml"), "--lock-timeout", "1m")
    assert waiting.stderr is not None
    announced = waiting.stderr.readline()  # the second run is waiting: let the first one finish
    paused_node.resume("nodeagent")

    first_code, first_out, first_err = finished(running)
    second_code, second_out, second_err = finished(waiting)

    assert (first_code, second_code) == (0, 0), first_out + first_err + second_out + second_err
    assert announced.startswith(f"waiting for the lock of plan shop (namespace {namespace}), held by ")
    assert f"/{running.pid}/" in announced
    assert image(cluster, namespace, "Deployment", "web") == "shop:3.1.0"
    assert image(cluster, namespace, "Job", "migrate") == "shop-migrate:3.1.0"
    leases = events_since(cluster, f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", since)
    windows = lease_windows(leases)
    assert [pid for pid, _, _ in windows] == [str(running.pid), str(waiting.pid)]
    (_, a_from, a_to), (_, b_from, b_to) = windows
    assert a_to < b_from  # the first lock was released before the second was taken
    members = [
        event
        for collection in (
            f"/api/v1/namespaces/{namespace}/configmaps",
            f"/apis/apps/v1/namespaces/{namespace}/deployments",
            f"/apis/batch/v1/namespaces/{namespace}/jobs",
        )
        for event in events_since(cluster, collection, since)
    ]
    writes = planner_writes(members)
    assert {version for _, version in writes} == {"3.0.0", "3.1.0", "delete 3.0.0"}
    for rv, version in writes:
        # The second run replaces the first one's Job: its deletion is the second run's write.
        window = (a_from, a_to) if version == "3.0.0" else (b_from, b_to)
        assert window[0] < rv < window[1], (rv, version, windows, writes)


def killed_holding_its_lock(
    cluster: ClusterHandle, planner: Runner, plan: Path, namespace: str, *, duration: str = "30s"
) -> dict[str, Any]:
    """Apply SIGKILLed after its first member write; the Lease it leaves behind."""
    env = {"PLANNER_TEST_CRASH_AT": "after-writes:1"}
    killed = planner("apply", str(plan), "--lock-duration", duration, env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    dead = lease(cluster, namespace)
    assert dead is not None, "a killed run leaves its lock behind"
    return dead


def test_a_sigkilled_holders_lock_on_this_host_is_taken_over_at_once_and_the_next_run_converges(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """The dead run held a 30 s lease; the next run waits for nothing (--lock-timeout 0) and says whose
    lock it took: the holder's process on this host is gone."""
    plan = write_plan(tmp_path, shop(namespace, "3.0.0"))
    dead = killed_holding_its_lock(cluster, planner, plan, namespace)
    holder = dead["spec"]["holderIdentity"]
    pid = holder.split("/")[1]

    again = planner("apply", str(plan))

    assert again.returncode == 0, again.stdout + again.stderr
    assert dead["spec"]["leaseDurationSeconds"] == 30
    assert json.loads(dead["metadata"]["annotations"]["planner.dev/holder-process"])["pid"] == int(pid)
    took_over = [line for line in again.stderr.splitlines() if "took over" in line]
    assert took_over == [
        f"took over the lock of plan shop from {holder}: its process {pid} on this host is gone"
    ], again.stderr
    assert "waiting for the lock" not in again.stderr
    assert lease(cluster, namespace) is None
    converged = planner("plan", str(plan), "--detailed-exitcode")
    assert converged.returncode == 0, converged.stdout + converged.stderr


def test_two_runs_taking_over_the_same_dead_lock_at_once_never_both_win(
    cluster: ClusterHandle, planner: Runner, background: Any, namespace: str, tmp_path: Path
) -> None:
    """Both read the dead holder's Lease and PUT with its resourceVersion: one PUT wins, the other is
    answered 409, reads again and finds a live holder (exit 3), or comes after the winner's release."""
    plan = write_plan(tmp_path, shop(namespace, "3.0.0"))
    dead = killed_holding_its_lock(cluster, planner, plan, namespace)
    since = current_rv(cluster)

    runs = [background("apply", str(plan)) for _ in range(2)]
    results = [finished(run) for run in runs]

    took_over = [err for _, _, err in results if "took over the lock" in err]
    assert len(took_over) == 1, results
    assert sorted(code for code, _, _ in results) in ([0, 0], [0, 3]), results
    leases = events_since(cluster, f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", since)
    taken_from_dead = [
        event
        for event in leases
        if event["type"] == "MODIFIED"
        and event["object"]["spec"]["leaseTransitions"] == dead["spec"]["leaseTransitions"] + 1
    ]
    assert len({event["object"]["spec"]["holderIdentity"] for event in taken_from_dead}) == 1, leases


def as_if_on_another_host(
    cluster: ClusterHandle, namespace: str, dead: dict[str, Any], *, renewed_ago: int = 0
) -> None:
    """Rewrite the dead holder's Lease as one from another boot (another host), last renewed
    `renewed_ago` seconds before the server's clock: only its expiry counts."""
    where = json.loads(dead["metadata"]["annotations"]["planner.dev/holder-process"])
    dead["metadata"]["annotations"]["planner.dev/holder-process"] = json.dumps(
        where | {"bootId": "elsewhere"}
    )
    if renewed_ago:
        with urlopen(cluster, "/version", timeout=10) as reply:
            server_now = parsedate_to_datetime(reply.headers["Date"])
        dead["spec"]["renewTime"] = (server_now - timedelta(seconds=renewed_ago)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
    status, body = http(cluster, "PUT", lease_path(namespace), dead)
    assert status == 200, body


def test_a_dead_holder_on_another_host_keeps_its_lock_until_it_expires(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0"))
    dead = killed_holding_its_lock(cluster, planner, plan, namespace)  # a 30 s lease
    as_if_on_another_host(cluster, namespace, dead)

    refused = planner("apply", str(plan))

    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert f"is locked by {dead['spec']['holderIdentity']} since " in refused.stderr
    assert "took over" not in refused.stderr
    assert lease(cluster, namespace) is not None


def test_an_expired_lock_of_a_holder_on_another_host_is_taken_over_at_once(
    cluster: ClusterHandle, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0"))
    dead = killed_holding_its_lock(cluster, planner, plan, namespace)
    as_if_on_another_host(cluster, namespace, dead, renewed_ago=60)  # expired 30 s ago

    again = planner("apply", str(plan))  # --lock-timeout 0: no waiting at all

    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(
        rf"took over the lock of plan shop from {re.escape(dead['spec']['holderIdentity'])}, expired \d+s ago",
        again.stderr,
    ), again.stderr
    assert "waiting for the lock" not in again.stderr
    assert lease(cluster, namespace) is None


def test_a_run_that_cannot_renew_its_lock_stops_writing_and_exits_1(
    cluster: ClusterHandle, background: Any, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0", job_seconds=20))
    admin = SlimAdmin.of(cluster)
    running = background("apply", str(plan), "--lock-duration", "3s")
    eventually(lambda: held_by(cluster, namespace, running))
    job = f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"
    eventually(lambda: http(cluster, "GET", job)[0] == 200)  # now waiting for the Job, the lock held
    try:
        with admin.faults(errorRates={"503": 1.0}, errorResources=["leases"]):
            since = current_rv(cluster)
            code, out, err = finished(running)
    finally:
        admin.clear_faults()

    assert code == 1, out + err
    assert f"error: lost the lock of plan shop (namespace {namespace}): could not renew it for 2s" in err
    assert f"skipped create deployment/{namespace}/web: lost the lock of plan shop" in out
    status, _ = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert status == 404  # the Job's dependent was never created: nothing is written after the loss
    for collection in (
        f"/api/v1/namespaces/{namespace}/configmaps",
        f"/apis/apps/v1/namespaces/{namespace}/deployments",
        f"/api/v1/namespaces/{namespace}/services",
    ):
        assert events_since(cluster, collection, since) == []


def test_unlock_refuses_without_force_and_with_it_breaks_the_lock_which_its_run_notices(
    cluster: ClusterHandle, planner: Runner, background: Any, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0", job_seconds=20))
    free = planner("unlock", "shop", "-n", namespace)
    assert (free.returncode, free.stdout) == (
        0,
        f"plan shop (namespace {namespace}) is not locked (no such plan: it has no ApplySet parent Secret)\n",
    )
    running = background("apply", str(plan), "--lock-duration", "3s")
    held = eventually(lambda: held_by(cluster, namespace, running))
    holder = held["spec"]["holderIdentity"]

    refused = planner("unlock", "shop", "-n", namespace)
    broken = planner("unlock", "shop", "-n", namespace, "--force")
    code, out, err = finished(running)

    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"error: plan shop (namespace {namespace}) is locked by {holder} since ")
    assert refused.stderr.strip().endswith("re-run with --force")
    assert broken.returncode == 0, broken.stdout + broken.stderr
    assert broken.stdout.startswith(
        f"removed the lock of plan shop (namespace {namespace}) held by {holder} since "
    )
    assert code == 1, out + err
    assert f"error: lost the lock of plan shop (namespace {namespace}): its Lease was deleted" in err
    status, _ = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert status == 404


def test_the_lease_is_renewed_while_the_run_holds_it(
    cluster: ClusterHandle, background: Any, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0", job_seconds=4))
    running = background("apply", str(plan), "--lock-duration", "3s")
    first = eventually(lambda: held_by(cluster, namespace, running))

    renewed = eventually(
        lambda: (
            (found := held_by(cluster, namespace, running))
            and found["spec"]["renewTime"] != first["spec"]["renewTime"]
            and found
        )
    )
    code, out, err = finished(running)

    assert code == 0, out + err
    assert renewed["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert renewed["spec"]["leaseDurationSeconds"] == 3
    assert renewed["metadata"]["uid"] == first["metadata"]["uid"]
    assert lease(cluster, namespace) is None


def job_run_recorded(cluster: ClusterHandle, namespace: str, plan: str = "shop") -> bool:
    """Whether the parent records the migrate Job's run as ran (its uid): the run records it only after
    it started waiting for the Job, so from then on that wait is in flight."""
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/{plan}")
    data = (parent.get("data") or {}) if status == 200 else {}
    runs = [json.loads(base64.b64decode(v)) for k, v in data.items() if not k.startswith("planner.")]
    return any(run.get("name") == "migrate" and run.get("uid") for run in runs)


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_sigterm_or_ctrl_c_stops_the_apply_and_releases_its_lock(
    cluster: ClusterHandle, background: Any, paused_node: SlimAdmin, namespace: str, tmp_path: Path, sent: int
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "3.0.0"))
    running = background("apply", str(plan))
    eventually(lambda: held_by(cluster, namespace, running))
    eventually(lambda: job_run_recorded(cluster, namespace))  # waiting for the Job the node never runs

    running.send_signal(sent)
    code, out, err = finished(running)  # at once: the waits in flight end with the run

    assert code == 1, out + err
    assert f"interrupted wait-ready job/{namespace}/migrate: interrupted" in out, out
    assert lease(cluster, namespace) is None
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[0] == 404


def test_ctrl_c_stops_every_plan_of_an_apply_not_just_the_one_that_waits(
    cluster: ClusterHandle, background: Any, paused_node: SlimAdmin, namespace: str, tmp_path: Path
) -> None:
    """Two plans in one apply, each waiting for its migrate Job, which the paused node never runs:
    one Ctrl-C interrupts both, and no Deployment (which waits for its Job) is ever written."""
    plans = {"shop": f"{namespace}-a", "shop2": f"{namespace}-b"}
    files = [
        write_plan(
            tmp_path, shop(space, "3.0.0").replace("name: shop,", f"name: {plan},"), name=f"{plan}.yaml"
        )
        for plan, space in plans.items()
    ]
    running = background("apply", *map(str, files))
    eventually(lambda: all(held_by(cluster, space, running, plan) for plan, space in plans.items()))
    eventually(lambda: all(job_run_recorded(cluster, space, plan) for plan, space in plans.items()))

    running.send_signal(signal.SIGINT)
    code, out, err = finished(running)

    assert code == 1, out + err
    for plan, space in plans.items():
        assert f"interrupted wait-ready job/{space}/migrate: interrupted" in out, out
        assert lease(cluster, space, plan) is None
        assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{space}/deployments/web")[0] == 404


def test_sigterm_stops_every_plan_of_a_reconcile_and_releases_their_locks(
    cluster: ClusterHandle, background: Any, paused_node: SlimAdmin, namespace: str, tmp_path: Path
) -> None:
    spaces = [f"{namespace}-a", f"{namespace}-b"]
    for each in spaces:
        write_plan(tmp_path, shop(each, "3.0.0"), name=f"{each}.yaml")
    running = background("reconcile", str(tmp_path))
    eventually(lambda: all(held_by(cluster, each, running) for each in spaces))

    running.send_signal(signal.SIGTERM)
    code, out, err = finished(running)

    assert code == 1, out + err
    assert err.strip().endswith("aborted")
    assert [lease(cluster, each) for each in spaces] == [None, None]


def test_a_release_after_a_renewal_whose_answer_was_lost_still_deletes_the_lease(
    cluster: ClusterHandle, namespace: str
) -> None:
    """A renewal the server wrote but whose answer the client gave up on leaves the run a stale
    resourceVersion: its release's DELETE meets a conflict, reads the Lease, sees it is still its own
    and deletes it then — no Lease is left behind (issue 39, item 14's flake)."""
    client = KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)
    lock = acquire(client, plan="shop", namespace=namespace, options=LockOptions(), notice=lambda _: None)
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-lock-shop"
    status, lease = http(cluster, "GET", path)
    assert status == 200, lease
    lease["metadata"]["annotations"] = {**(lease["metadata"].get("annotations") or {}), "renewed": "unseen"}
    status, body = http(cluster, "PUT", path, lease)
    assert status == 200, body

    assert lock.release() is None

    assert http(cluster, "GET", path)[0] == 404

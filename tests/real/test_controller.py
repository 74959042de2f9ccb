"""`planner controller` against a real control plane: a warm pool fills to its size and refills after a
claim, /metrics and the web view equal what kubectl counts, the idle reaper pauses an untouched sandbox, and of two
controllers one leads and the other takes over when the leader is killed (the Lease read through raw
HTTP).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

from tests.e2e.test_controller import (
    ELECTION,
    Start,
    a_member_pod_deleted,
    controllers,
    leads,
    member_names,
    ready_members,
    sandbox_plan,
    start_pool,
    workspace_annotations,
    workspaces,
)
from tests.real.conftest import Runner, eventually, http, write_plan
from tests.realplane import RealCluster

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def lease(cluster: RealCluster, namespace: str) -> dict[str, Any] | None:
    status, body = http(
        cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-controller"
    )
    return body if status == 200 else None


def unclaimed(kubectl: Runner, namespace: str, *, without: str = "") -> set[str]:
    """The pool's two unclaimed members, once there are two and `without` is not one of them."""

    def probe() -> set[str] | None:
        found = member_names(kubectl, namespace, claimed=False)
        return found if len(found) == 2 and without not in found else None

    found: set[str] = eventually(probe, timeout=90, what="two unclaimed members")
    return found


def test_a_pool_fills_refills_after_a_claim_and_its_metrics_equal_kubectls_counts(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    running, _ = start_pool(controllers, tmp_path, namespace)
    first = unclaimed(kubectl, namespace)
    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)
    assert claimed.returncode == 0, claimed.stderr
    name = claimed.stdout.strip().rsplit("|", 1)[-1]
    assert claimed.stdout.strip() == f"k8s-{namespace}|sandbox|{name}" and name in first
    refilled = unclaimed(kubectl, namespace, without=name)
    assert len(refilled - first) == 1
    assert member_names(kubectl, namespace, claimed=True) == {name}

    def agree() -> dict[str, float] | None:
        samples = running.metrics()
        ready = ready_members(kubectl, namespace)
        wanted = {
            f'cubepod_warmpool_ready{{namespace="{namespace}",pool="dev"}}': float(len(ready)),
            f'planner_warmpool_claimed{{namespace="{namespace}",pool="dev"}}': 1.0,
        }
        return samples if len(ready) == 2 and all(samples.get(k) == v for k, v in wanted.items()) else None

    samples = eventually(agree, timeout=90, what="/metrics agreeing with kubectl")
    assert any(k.startswith("planner_leader{") and v == 1.0 for k, v in samples.items())

    # The web view shows the same counts, and the plan Ready.
    pool_row = f"<tr><td>{namespace}</td><td>dev</td><td>2</td><td>2</td><td>2</td><td>1</td></tr>"

    def shows_the_pool() -> str | None:
        page = running.get("/")[1]
        return page if pool_row in page else None

    index: str = eventually(shows_the_pool, timeout=30, what="the pool's row in the web view")
    assert re.search(
        rf'{namespace}/devboxes</a></td><td>[^<]*</td><td><span class="ok">True</span>', index
    ), index


def test_a_member_whose_pod_is_deleted_is_repaired_and_the_metrics_say_so_meanwhile(
    controllers: Start, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    a_member_pod_deleted(controllers, kubectl, namespace, tmp_path)


def test_the_reaper_pauses_an_idle_sandbox(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = write_plan(plans, sandbox_plan(namespace, idle_timeout="3s", sandboxes=("alice",)))
    applied = planner("apply", str(plan), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    running = controllers("--plans", str(plans), "-n", namespace, "--resync", "0.5s", "--poll", "0.2s")
    eventually(
        lambda: workspace_annotations(kubectl, namespace, "alice").get("planner.dev/paused-reason") == "idle",
        timeout=90,
        what="alice paused as idle",
    )
    eventually(
        lambda: kubectl("get", "pod", "alice", "-n", namespace).returncode != 0, what="alice's pod gone"
    )
    assert running.metrics().get("planner_reaped_total") == 1.0
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(timeout=60) == 0, running.output()
    assert workspace_annotations(kubectl, namespace, "alice")["planner.dev/sandbox-state"] == "paused"
    assert kubectl("get", "pvc", "alice-rootfs-g1", "-n", namespace).returncode == 0
    assert workspaces(kubectl, namespace, "planner.dev/owner=alice") == []  # a plan's sandbox, not a pool's


def test_one_of_two_controllers_leads_and_the_other_takes_over_after_a_kill(
    cluster: RealCluster, controllers: Start, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    first, _ = start_pool(controllers, tmp_path, namespace, *ELECTION, "--lease-namespace", namespace)
    eventually(lambda: leads(first), timeout=60, what="the first controller leading")
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
    eventually(
        lambda: second.get("/readyz") == (200, "standing by\n"), timeout=60, what="the second standing by"
    )
    holder = (lease(cluster, namespace) or {})["spec"]["holderIdentity"]
    assert re.search(rf'planner_leader{{identity="{re.escape(holder)}"}} 1.0', first.get("/metrics")[1])

    first.process.kill()
    eventually(lambda: leads(second), timeout=60, what="the second controller taking over")
    claimed = planner("sandbox", "claim", "dev", "--name", "alice", "-n", namespace)
    assert claimed.returncode == 0, claimed.stderr
    unclaimed(kubectl, namespace, without="")
    assert (lease(cluster, namespace) or {})["spec"]["holderIdentity"] != holder

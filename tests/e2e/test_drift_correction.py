"""Event-driven drift correction end to end: a controller (interval 1h, so only its watch can answer)
reconciling Plan objects on the embedded cluster; foreign writes made with kubectl (`scale`, `set
image`), what the controller did read back with kubectl.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import events_of_plan, get_json, install_crd, wait_ready
from tests.simulated import eventually

__all__ = ["controllers"]  # the fixture, shared with test_controller

IMAGE = "ghcr.io/acme/shop-web:1.4.2"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def drift_plan(namespace: str, *, reconcile: str = "") -> str:
    """`web` (2 replicas, declared) and `auto` (autoscaled: its replicas are the autoscaler's, which
    scales it to its max, its pods' simulated CPU use being 4 times its target)."""
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - {{name: web, image: {IMAGE}, port: 8080, replicas: 2}}\n"
        f"  - {{name: auto, image: {IMAGE}, port: 8080, cpu: 100m, "
        "autoscale: {min: 1, max: 3, cpuUtilization: 50}, "
        'podAnnotations: {sim.planner.dev/cpu-utilization: "200"}}\n'
        + (f"reconcile: {reconcile}\n" if reconcile else "")
    )


def deployment(kubectl: Runner, namespace: str, name: str) -> dict[str, Any]:
    return get_json(kubectl, "deployment", name, "-n", namespace)


def image_of(kubectl: Runner, namespace: str, name: str) -> str:
    return str(deployment(kubectl, namespace, name)["spec"]["template"]["spec"]["containers"][0]["image"])


def replicas_of(kubectl: Runner, namespace: str, name: str) -> int:
    return int(deployment(kubectl, namespace, name)["spec"]["replicas"])


def drift_events(kubectl: Runner, namespace: str, reason: str = "DriftCorrected") -> list[str]:
    return [e["message"] for e in events_of_plan(kubectl, namespace, "shop") if e["reason"] == reason]


def run_ok(kubectl: Runner, *args: str, stdin: str | None = None) -> None:
    done = kubectl(*args, stdin=stdin) if stdin is not None else kubectl(*args)
    assert done.returncode == 0, done.stderr


def start_shop(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, reconcile: str = ""
) -> Any:
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1h")
    run_ok(kubectl, "apply", "-f", "-", stdin=drift_plan(namespace, reconcile=reconcile))
    wait_ready(kubectl, namespace, "shop")
    return running


def test_a_foreign_scale_and_set_image_are_reverted_by_the_watch_and_said_with_their_writer(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    running = start_shop(controllers, planner, kubectl, namespace)

    # kubectl scale: the declared replicas come back long before the 1h interval.
    run_ok(kubectl, "scale", "deployment/web", "-n", namespace, "--replicas=5")
    eventually(lambda: replicas_of(kubectl, namespace, "web") == 2, timeout=60)
    said = eventually(lambda: drift_events(kubectl, namespace), timeout=30)
    assert any(".spec.replicas (written by kubectl" in message for message in said), said

    # kubectl set image: the image comes back too, and the Event and the status name field and writer.
    run_ok(kubectl, "set", "image", "deployment/web", "-n", namespace, "web=ghcr.io/acme/other:9")
    eventually(lambda: image_of(kubectl, namespace, "web") == IMAGE, timeout=60)
    field = ".spec.template.spec.containers[name=web].image"
    said = eventually(lambda: [m for m in drift_events(kubectl, namespace) if field in m], timeout=30)
    assert f"deployment/{namespace}/web {field} (written by kubectl" in said[0], said
    last = get_json(kubectl, "plan", "shop", "-n", namespace)["status"]["lastDrift"]["fields"]
    assert [(f["object"], f["path"]) for f in last] == [(f"deployment/{namespace}/web", field)], last
    assert last[0]["writer"].startswith("kubectl"), last

    # The autoscaled workload's replicas are its HorizontalPodAutoscaler's: its scale to 3 is no drift.
    # Ordered after it on the same watch, a set image of that workload is reverted, and only the image
    # said; the autoscaler's replicas stay.
    eventually(lambda: replicas_of(kubectl, namespace, "auto") == 3, timeout=60)
    run_ok(kubectl, "set", "image", "deployment/auto", "-n", namespace, "auto=ghcr.io/acme/other:9")
    eventually(lambda: image_of(kubectl, namespace, "auto") == IMAGE, timeout=60)
    assert replicas_of(kubectl, namespace, "auto") == 3
    auto = f"deployment/{namespace}/auto"
    last = get_json(kubectl, "plan", "shop", "-n", namespace)["status"]["lastDrift"]["fields"]
    assert [(f["object"], f["path"]) for f in last] == [
        (auto, ".spec.template.spec.containers[name=auto].image")
    ], last
    assert f"{auto} .spec.replicas" not in running.output()
    assert not any(f"{auto} .spec.replicas" in m for m in drift_events(kubectl, namespace))

    # A deleted object is drift too: made again.
    uid = deployment(kubectl, namespace, "web")["metadata"]["uid"]
    run_ok(kubectl, "delete", "deployment/web", "-n", namespace, "--wait=false")

    def made_again() -> bool:
        found = kubectl("get", "deployment", "web", "-n", namespace, "-o", "jsonpath={.metadata.uid}")
        return found.returncode == 0 and found.stdout not in ("", uid)

    eventually(made_again, timeout=60)
    eventually(
        lambda: any(f"deployment/{namespace}/web (deleted)" in m for m in drift_events(kubectl, namespace)),
        timeout=30,
    )


def test_interval_leaves_drift_to_the_next_reconcile_and_off_leaves_it_for_good(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    running = start_shop(controllers, planner, kubectl, namespace, reconcile="{driftCorrection: interval}")
    run_ok(kubectl, "scale", "deployment/web", "-n", namespace, "--replicas=5")
    # No reconcile before the next one asked for (here at once, as `reconcile --now` asks), which
    # corrects the drift `interval` left to it.
    now = planner("reconcile", "--now", "plan/shop", "-n", namespace, "--timeout", "60s")
    assert now.returncode == 0, now.stdout + now.stderr + running.output()
    assert "applied 1 drift" in now.stdout, now.stdout
    assert replicas_of(kubectl, namespace, "web") == 2

    # off: the next reconcile leaves the drift as found, and says so.
    run_ok(kubectl, "apply", "-f", "-", stdin=drift_plan(namespace, reconcile='{driftCorrection: "off"}'))
    wait_ready(kubectl, namespace, "shop")
    run_ok(kubectl, "scale", "deployment/web", "-n", namespace, "--replicas=5")
    now = planner("reconcile", "--now", "plan/shop", "-n", namespace, "--timeout", "60s")
    assert now.returncode == 0, now.stdout + now.stderr + running.output()
    assert "1 object drifted, left as found (driftCorrection: off)" in now.stdout, now.stdout
    assert replicas_of(kubectl, namespace, "web") == 5
    inventory = get_json(kubectl, "plan", "shop", "-n", namespace)["status"]["inventory"]
    assert (inventory["driftFound"], inventory["driftCorrected"]) == (1, 0)  # found, left


def test_a_writer_that_fights_back_is_a_conflict_and_its_corrections_back_off(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    running = start_shop(controllers, planner, kubectl, namespace)
    stop = threading.Event()
    writes = []

    def fight() -> None:
        """A second controller: whenever web's replicas are not 5, it scales them to 5 again."""
        while not stop.is_set():
            if replicas_of(kubectl, namespace, "web") != 5:
                run_ok(kubectl, "scale", "deployment/web", "-n", namespace, "--replicas=5")
                writes.append(1)
            stop.wait(0.05)

    fighter = threading.Thread(target=fight, daemon=True)
    fighter.start()
    try:
        conflict = eventually(lambda: drift_events(kubectl, namespace, "DriftConflict"), timeout=120)
        assert f"deployment/{namespace}/web .spec.replicas: written back by kubectl" in conflict[0], conflict
        plan = get_json(kubectl, "plan", "shop", "-n", namespace)
        condition = {c["type"]: c for c in plan["status"]["conditions"]}["DriftConflict"]
        assert condition["status"] == "True" and condition["reason"] == "FightingWriter", condition
        # Backed off: while the fight goes on for ten more of the fighter's writes' worth of time,
        # corrections grow by at most the back-off's doublings, not one per write.
        corrected = len(drift_events(kubectl, namespace))
        stop.wait(8)
    finally:
        stop.set()
        fighter.join(timeout=30)
    later = len(drift_events(kubectl, namespace))
    # 8 s at back-offs of 5 s, 10 s, ...: at most 2 more corrections; an endless loop makes dozens.
    assert later - corrected <= 2, (corrected, later, running.output())
    assert len(writes) >= later - 1  # each correction but the last was fought back


def test_a_periodic_reconcile_of_an_unchanged_healthy_plan_makes_no_request(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """Served from the watch caches the drift watch keeps: a reconcile every second (`--interval 1s`),
    and not one request in the Plan's namespace but the watches, until the full reconcile of
    `--full-resync` (1h by default)."""
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1s")
    run_ok(kubectl, "apply", "-f", "-", stdin=drift_plan(namespace))
    wait_ready(kubectl, namespace, "shop")
    served = "plan shop: unchanged: the cluster matches plan shop (from the watch caches)"
    eventually(lambda: served in running.output(), timeout=60)
    admin = SlimAdmin.of(cluster)

    def three_passes() -> list[tuple[str, str, str]]:
        """The requests in the Plan's namespace, but watches, while three passes were served."""
        admin.clear_requests()
        before = running.output().count(served)
        eventually(lambda: running.output().count(served) >= before + 3, timeout=60)
        return [
            (e["verb"], e["resource"], e["name"])
            for e in admin.requests()
            if e["namespace"] == namespace and e["verb"] != "watch"
        ]

    # A pass the caches cannot answer (an object not ready for a moment on a loaded machine) is a full
    # reconcile and makes requests, rightly; three served passes in a row make none.
    made = three_passes()
    for _ in range(4):
        if made:
            made = three_passes()
    assert made == [], made

    # A drift is still corrected at once, by a full reconcile, and the passes after it are served again.
    run_ok(kubectl, "set", "image", "deployment/web", "-n", namespace, "web=ghcr.io/acme/other:9")
    eventually(lambda: image_of(kubectl, namespace, "web") == IMAGE, timeout=60)
    after = running.output().count(served)
    eventually(lambda: running.output().count(served) > after, timeout=60)

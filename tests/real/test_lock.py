"""The run lock between concurrent applies against a real kube-apiserver: while one apply waits for its
Job, a second exits 3 naming the holder, and a third given `--lock-timeout` waits, then applies on top;
the Lease history (a watch from a resourceVersion, as etcd keeps it) shows one lock after the other.

The first run holds its lock for as long as its Job runs, which is until the test shortens the pod's
`sim.planner.dev/run-seconds` (the node agent reads the knob on every change of the pod), so no step
depends on how fast the machine is.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.test_lock import background
from tests.real.conftest import Runner, admin_context, eventually, http, write_plan
from tests.realplane import RealCluster


def shop(namespace: str, version: str, *, job_seconds: int) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{VERSION: '{version}'}}}}\n"
        "workloads:\n"
        f"  - name: migrate\n    kind: job\n    image: 'shop-migrate:{version}'\n"
        f"    podAnnotations: {{sim.planner.dev/run-seconds: '{job_seconds}'}}\n"
        f"  - name: web\n    image: 'shop:{version}'\n    dependsOn: [migrate]\n"
    )


__all__ = ["background"]  # the e2e tier's fixture: it needs only `cluster.kubeconfig`


def holder(cluster: RealCluster, namespace: str) -> dict[str, Any] | None:
    status, body = http(
        cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-lock-shop"
    )
    return body if status == 200 else None


def lease_events(cluster: RealCluster, namespace: str, since: str) -> list[dict[str, Any]]:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urllib.request.urlopen(cluster.url + path, context=admin_context(cluster), timeout=30) as reply:
        return [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]


def test_a_second_apply_is_refused_a_third_waits_for_the_lock_then_applies_on_top(
    cluster: RealCluster,
    planner: Runner,
    kubectl: Runner,
    background: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    write_plan(first, shop(namespace, "3.0.0", job_seconds=3600))
    write_plan(second, shop(namespace, "3.1.0", job_seconds=0))
    since = http(cluster, "GET", "/api/v1/namespaces?limit=1")[1]["metadata"]["resourceVersion"]
    running = background("apply", str(first / "plan.yaml"), "--timeout", "5m")
    held = eventually(
        lambda: (
            (found := holder(cluster, namespace))
            and f"/{running.pid}/" in found["spec"]["holderIdentity"]
            and found
        ),
        what="the first apply's lock",
    )

    refused = planner("apply", str(second / "plan.yaml"))
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stderr.startswith(
        f"error: plan shop (namespace {namespace}) is locked by {held['spec']['holderIdentity']} "
    )

    waiting = background("apply", str(second / "plan.yaml"), "--lock-timeout", "5m", "--timeout", "5m")
    assert waiting.stderr is not None
    announced = waiting.stderr.readline()
    assert announced.startswith(f"waiting for the lock of plan shop (namespace {namespace}), held by ")
    finish = kubectl(
        "annotate",
        "pods",
        "-l",
        "job-name=migrate",
        "-n",
        namespace,
        "--overwrite",
        "sim.planner.dev/run-seconds=0",
    )
    assert finish.returncode == 0, finish.stderr

    first_out, first_err = running.communicate(timeout=300)
    second_out, second_err = waiting.communicate(timeout=300)
    assert (running.returncode, waiting.returncode) == (0, 0), first_out + first_err + second_out + second_err
    image = kubectl("get", "deploy/web", "job/migrate", "-n", namespace, "-o", "jsonpath={..image}")
    assert image.stdout.split() == ["shop:3.1.0", "shop-migrate:3.1.0"], image.stderr
    holders = [
        event["object"]["spec"]["holderIdentity"].split("/")[1]
        for event in lease_events(cluster, namespace, since)
        if event["type"] == "ADDED"
    ]
    assert holders == [str(running.pid), str(waiting.pid)]
    assert holder(cluster, namespace) is None

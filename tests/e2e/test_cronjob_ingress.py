"""A cronjob and an exposed workload's Ingress through the CLI on the embedded cluster (its controllers
and node agent running), checked through kubectl: one apply, then a run started from the CronJob
(`kubectl create job --from`, as an operator runs one now rather than waiting for the schedule)
reported by `planner monitor` with its exit code and Job name, `stop`/`start` as suspend,
`planner status`'s CronJob columns, and `planner delete` taking the workload's Ingress but not an
autoscaler of its name that another tool made."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan
from tests.e2e.test_monitor import Background

PLAN = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: nightly, namespace: {ns}}}
secrets:
  - name: web-tls
    data: {{tls.crt: cert, tls.key: key}}
workloads:
  - name: backup
    kind: cronjob
    image: busybox:1.36
    command: [backup]
    schedule: "0 3 1 1 *"
    timeZone: Europe/Berlin
    concurrencyPolicy: Forbid
    successfulJobsHistoryLimit: 1
    backoffLimit: 0
    podAnnotations: {{sim.planner.dev/exit-code: "3", sim.planner.dev/run-seconds: "0.2"}}
  - name: web
    image: nginx:1.27
    port: 8080
    expose: true
    ingress:
      host: shop.example.com
      className: nginx
      tls: {{secretName: web-tls}}
"""
FOREIGN_HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, labels: {team: ops}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 3
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def get_json(kubectl: Runner, namespace: str, *what: str) -> dict[str, object]:
    result = kubectl("get", *what, "-n", namespace, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_a_cronjob_runs_are_monitored_and_stop_start_suspend_it_beside_an_ingress(
    cluster: ClusterHandle, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path, home: Path
) -> None:
    path = write_plan(tmp_path, PLAN.format(ns=namespace))
    applied = planner("apply", str(path), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = planner("plan", str(path), "--detailed-exitcode")  # the server's defaults are not drift
    assert again.returncode == 0, again.stdout + again.stderr

    cronjob = get_json(kubectl, namespace, "cronjob", "backup")
    spec = cronjob["spec"]
    assert isinstance(spec, dict)
    assert (spec["schedule"], spec["timeZone"], spec["concurrencyPolicy"]) == (
        "0 3 1 1 *",
        "Europe/Berlin",
        "Forbid",
    )
    job_spec = spec["jobTemplate"]["spec"]
    assert job_spec["backoffLimit"] == 0
    assert "planner.dev/run-key" not in json.dumps(cronjob)
    ingress = get_json(kubectl, namespace, "ingress", "web")
    rule = ingress["spec"]["rules"][0]  # type: ignore[index]
    assert rule["host"] == "shop.example.com"
    assert rule["http"]["paths"][0]["backend"] == {"service": {"name": "web-svc", "port": {"number": 8080}}}
    assert ingress["spec"]["tls"] == [{"hosts": ["shop.example.com"], "secretName": "web-tls"}]  # type: ignore[index]

    rid = f"k8s-{namespace}|cronjob|backup"
    monitor = Background(cluster, home, rid, "--timeout", "60s", "-o", "json")
    created = kubectl("create", "job", "backup-now", "--from=cronjob/backup", "-n", namespace)
    assert created.returncode == 0, created.stderr
    started, failed = monitor.read_until(2)[:2]
    monitor.kill()
    assert (started["type"], started["runtime_id"], started["object"]) == (
        "ContainerStarted",
        rid,
        f"job/{namespace}/backup-now",
    )
    assert (failed["type"], failed["object"], failed["exit_code"]) == (
        "ContainerFailed",
        f"job/{namespace}/backup-now",
        3,
    )
    owner = get_json(kubectl, namespace, "job", "backup-now")["metadata"]["ownerReferences"][0]  # type: ignore[index]
    assert (owner["kind"], owner["name"]) == ("CronJob", "backup")
    run_job = get_json(kubectl, namespace, "job", "backup-now")
    assert "planner.dev/run-record" not in json.dumps(run_job["metadata"])  # no plan finalizer on runs

    stopped = planner("stop", rid)
    assert stopped.returncode == 0, stopped.stderr
    assert get_json(kubectl, namespace, "cronjob", "backup")["spec"]["suspend"] is True  # type: ignore[index]
    status = planner("status", rid)
    assert status.returncode == 0, status.stderr
    header, row = status.stdout.splitlines()[:2]
    assert header.split()[:9] == [
        "RUNTIME",
        "ID",
        "STATE",
        "READY",
        "RESTARTS",
        "STATUS",
        "SCHEDULE",
        "SUSPEND",
        "ACTIVE",
    ]
    assert "LAST SCHEDULE" in header
    assert row.split()[:2] == [rid, "Suspended"]
    assert "0 3 1 1 *" in row and " True " in row

    started_again = planner("start", rid)
    assert started_again.returncode == 0, started_again.stderr
    assert get_json(kubectl, namespace, "cronjob", "backup")["spec"]["suspend"] is False  # type: ignore[index]

    # An autoscaler named web that another tool made is not the workload's: delete leaves it alone.
    made = kubectl("create", "-n", namespace, "-f", "-", stdin=FOREIGN_HPA)
    assert made.returncode == 0, made.stderr
    web = f"k8s-{namespace}|deployment|web"
    deleted = planner("delete", web)
    assert deleted.returncode == 0, deleted.stderr
    assert "deleted ingress web, service web-svc" in deleted.stdout
    gone = kubectl("get", "ingress", "web", "-n", namespace)
    assert gone.returncode == 1 and "NotFound" in gone.stderr
    assert get_json(kubectl, namespace, "hpa", "web")["metadata"]["labels"] == {"team": "ops"}  # type: ignore[index]

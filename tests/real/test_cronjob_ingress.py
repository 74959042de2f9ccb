"""A cronjob and an Ingress against kube-apiserver v1.28.7: what `planner render` writes passes
`kubectl apply --dry-run=server --validate=strict` (nothing silently dropped), and after an apply a run
started from the CronJob is reported by `planner monitor` with its Job name and exit code, `stop`
suspends it, and the Ingress routes to the workload's Service."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import write_plan
from tests.e2e.test_cronjob_ingress import PLAN
from tests.e2e.test_monitor import Background
from tests.real.conftest import Runner
from tests.realplane import RealCluster


def test_a_cronjob_and_an_ingress_on_a_real_api_server(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path, home: Path
) -> None:
    path = write_plan(tmp_path, PLAN.format(ns=namespace))
    rendered = planner("render", str(path), "--show-secrets")
    assert rendered.returncode == 0, rendered.stderr
    dry_run = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=rendered.stdout)
    assert dry_run.returncode == 0, dry_run.stderr
    assert "cronjob.batch/backup created (server dry run)" in dry_run.stdout
    assert "ingress.networking.k8s.io/web created (server dry run)" in dry_run.stdout

    applied = planner("apply", str(path), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    ingress = json.loads(kubectl("get", "ingress", "web", "-n", namespace, "-o", "json").stdout)
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]
    assert backend == {"service": {"name": "web-svc", "port": {"number": 8080}}}

    rid = f"k8s-{namespace}|cronjob|backup"
    monitor = Background(cluster, home, rid, "--timeout", "90s", "-o", "json")  # type: ignore[arg-type]
    created = kubectl("create", "job", "backup-now", "--from=cronjob/backup", "-n", namespace)
    assert created.returncode == 0, created.stderr
    events = monitor.read_until(2)[:2]
    monitor.kill()
    assert [(e["type"], e["object"], e.get("exit_code")) for e in events] == [
        ("ContainerStarted", f"job/{namespace}/backup-now", None),
        ("ContainerFailed", f"job/{namespace}/backup-now", 3),
    ]

    assert planner("stop", rid).returncode == 0
    cronjob = json.loads(kubectl("get", "cronjob", "backup", "-n", namespace, "-o", "json").stdout)
    assert cronjob["spec"]["suspend"] is True

"""Cronjobs and Ingresses through the stages after render, on hand-built objects: the graph orders an
Ingress after the TLS Secret and Service it names; readiness judges a CronJob and an Ingress ready once
they exist; the monitor's mapping finds a CronJob's runs by owner; `status` reads kubectl's CronJob
columns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from planner.graph import solve
from planner.monitor.status import Schedule, schedule_of
from planner.wait.readiness import Readiness, ReadinessContext, readiness
from planner.workloads.cronjob import owning_cronjob
from planner.workloads.cronjob import runs as cronjob_runs
from tests.unit.test_graph import change, changeset, manifest

INGRESS_SPEC = {
    "rules": [
        {
            "host": "shop.example.com",
            "http": {
                "paths": [
                    {
                        "path": "/",
                        "pathType": "Prefix",
                        "backend": {"service": {"name": "web-svc", "port": {"number": 80}}},
                    }
                ]
            },
        }
    ],
    "tls": [{"hosts": ["shop.example.com"], "secretName": "web-tls"}],
}


def test_an_ingress_is_written_after_its_tls_secret_and_its_service() -> None:
    ingress = manifest("Ingress", "web", "shop", spec=INGRESS_SPEC)
    ingress["apiVersion"] = "networking.k8s.io/v1"
    changes = changeset(
        "shop",
        "shop",
        change("create", manifest("Secret", "web-tls", "shop", data={"tls.crt": "eA=="})),
        change("create", manifest("Service", "web-svc", "shop", spec={"ports": [{"port": 80}]})),
        change("create", ingress),
    )
    lines = solve(changes, wait=True, timeouts={}).as_text().splitlines()
    assert "create ingress/shop/web <- create secret/shop/web-tls, create service/shop/web-svc" in lines


def test_a_cronjob_is_ready_once_it_exists_whatever_its_runs() -> None:
    cronjob = {
        "kind": "CronJob",
        "metadata": {"name": "backup", "generation": 2},
        "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Berlin", "suspend": True},
    }
    assert readiness(cronjob, ReadinessContext(now=0.0)) == Readiness(
        status="Current", message="suspended, schedule 0 3 * * * (Europe/Berlin)"
    )


def test_an_ingress_is_ready_once_it_exists_and_shows_an_address_when_reported() -> None:
    bare: dict[str, Any] = {"kind": "Ingress", "metadata": {"name": "web"}, "spec": INGRESS_SPEC}
    assert readiness(bare, ReadinessContext(now=0.0)) == Readiness(
        status="Current", message="exists (no address reported)"
    )
    served = bare | {
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example"}]}}
    }
    assert readiness(served, ReadinessContext(now=0.0)) == Readiness(
        status="Current", message="address 203.0.113.7, lb.example"
    )


def run(name: str, created: str, owner: str | None, namespace: str = "shop") -> dict[str, Any]:
    references = [{"apiVersion": "batch/v1", "kind": "CronJob", "name": owner}] if owner else []
    metadata = {
        "name": name,
        "namespace": namespace,
        "creationTimestamp": created,
        "ownerReferences": references,
    }
    return {"kind": "Job", "metadata": metadata}


def test_a_cronjobs_runs_are_the_jobs_it_owns_in_its_namespace_oldest_first() -> None:
    jobs = [
        run("backup-2", "2026-12-02T03:00:00Z", "backup"),
        run("etl", "2026-12-02T01:00:00Z", None),
        run("backup-1", "2026-12-01T03:00:00Z", "backup"),
        run("backup-9", "2026-12-01T03:00:00Z", "backup", namespace="other"),
        run("report-1", "2026-12-01T03:00:00Z", "report"),
    ]
    assert [job["metadata"]["name"] for job in cronjob_runs("backup", "shop", jobs)] == [
        "backup-1",
        "backup-2",
    ]
    assert owning_cronjob(jobs[1]) is None
    assert owning_cronjob(jobs[4]) == "report"


def test_status_reads_kubectls_cronjob_columns() -> None:
    now = datetime(2026, 12, 2, 4, 30, tzinfo=UTC).timestamp()
    cronjob = {
        "kind": "CronJob",
        "spec": {"schedule": "0 3 * * *"},
        "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": "2026-12-02T03:00:00Z"},
    }
    assert schedule_of(cronjob, now) == Schedule(
        schedule="0 3 * * *", suspend="False", active=1, last_schedule="90m"
    )
    assert schedule_of({"kind": "CronJob", "spec": {"schedule": "@daily", "suspend": True}}, now) == Schedule(
        schedule="@daily", suspend="True", active=0, last_schedule="<none>"
    )

"""`kind: cronjob` becomes a CronJob whose job template is the Job a job would be, without the run-key;
an exposed workload's `ingress` becomes an Ingress `<name>` to its `<name>-svc` Service. Expected
manifests are written out by hand; `rendered` also checks each against the 1.28 schema, strictly."""

from __future__ import annotations

from planner.plan.model import Ingress
from planner.workloads.cronjob import CronJobSpec, CronSchedule
from planner.workloads.job import JobSpec
from tests.unit.render_support import (
    IMAGE,
    SHOP_APPLYSET,
    kinds_and_names,
    plan,
    rendered,
    rendered_object,
    without_hash,
    workload,
)

BACKUP_LABELS = {"app": "backup", "gobrave-workload": "backup"}
WEB_LABELS = {"app": "web", "gobrave-workload": "web"}


def test_a_cronjob_whole_manifest() -> None:
    backup = workload(
        "backup",
        kind="cronjob",
        entrypoint=("/bin/backup",),
        spec=CronJobSpec(
            schedule=CronSchedule(
                schedule="0 3 * * *",
                time_zone="Europe/Berlin",
                concurrency_policy="Forbid",
                starting_deadline_seconds=300,
                successful_jobs_history_limit=2,
                failed_jobs_history_limit=0,
                suspend=False,
            ),
            job=JobSpec(backoff_limit=1, active_deadline_seconds=900, ttl_seconds_after_finished=3600),
        ),
    )
    cronjob = rendered_object(plan(workloads=(backup,)), "CronJob", "backup")
    assert without_hash(cronjob) == {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "backup",
            "namespace": "shop",
            "labels": {**BACKUP_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/runtime-id": "k8s-shop|cronjob|backup"},
        },
        "spec": {
            "schedule": "0 3 * * *",
            "timeZone": "Europe/Berlin",
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 300,
            "successfulJobsHistoryLimit": 2,
            "failedJobsHistoryLimit": 0,
            "suspend": False,
            "jobTemplate": {
                "metadata": {"labels": BACKUP_LABELS},
                "spec": {
                    "template": {
                        "metadata": {"labels": BACKUP_LABELS},
                        "spec": {
                            "containers": [{"name": "backup", "image": IMAGE, "command": ["/bin/backup"]}],
                            "restartPolicy": "Never",
                        },
                    },
                    "backoffLimit": 1,
                    "activeDeadlineSeconds": 900,
                    "ttlSecondsAfterFinished": 3600,
                },
            },
        },
    }


def test_a_cronjob_with_a_schedule_alone_leaves_every_other_field_to_kubernetes() -> None:
    nightly = workload(
        "nightly", kind="cronjob", spec=CronJobSpec(schedule=CronSchedule(schedule="@daily"), job=JobSpec())
    )
    spec = rendered_object(plan(workloads=(nightly,)), "CronJob", "nightly")["spec"]
    assert set(spec) == {"schedule", "jobTemplate"}
    assert spec["schedule"] == "@daily"
    assert spec["jobTemplate"]["spec"] == {
        "template": {
            "metadata": {"labels": {"app": "nightly", "gobrave-workload": "nightly"}},
            "spec": {"containers": [{"name": "nightly", "image": IMAGE}], "restartPolicy": "Never"},
        }
    }


def test_a_dependency_on_a_cronjob_names_the_cronjob() -> None:
    nightly = workload(
        "nightly", kind="cronjob", spec=CronJobSpec(schedule=CronSchedule(schedule="@daily"), job=JobSpec())
    )
    web = workload("web", depends_on=("nightly",))
    deployment = rendered_object(plan(workloads=(nightly, web)), "Deployment", "web")
    depends_on = deployment["metadata"]["annotations"]["config.kubernetes.io/depends-on"]
    assert depends_on == "batch/namespaces/shop/CronJob/nightly"


def test_an_exposed_workload_with_an_ingress_gets_it_after_its_service() -> None:
    web = workload(
        port=8080,
        expose=True,
        ingress=Ingress(
            host="shop.example.com",
            path="/api",
            path_type="Exact",
            class_name="nginx",
            tls_secret="shop-tls",
            annotations={"cert-manager.io/cluster-issuer": "letsencrypt"},
        ),
    )
    manifests = rendered(plan(workloads=(web,)))
    assert kinds_and_names(manifests) == ["Deployment/web", "Service/web-svc", "Ingress/web"]
    assert without_hash(manifests[2]) == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {**WEB_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {
                "cert-manager.io/cluster-issuer": "letsencrypt",
                "planner.dev/plan": "shop",
                "planner.dev/runtime-id": "k8s-shop|deployment|web",
            },
        },
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {
                    "host": "shop.example.com",
                    "http": {
                        "paths": [
                            {
                                "path": "/api",
                                "pathType": "Exact",
                                "backend": {"service": {"name": "web-svc", "port": {"number": 8080}}},
                            }
                        ]
                    },
                }
            ],
            "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
        },
    }


def test_an_ingress_without_host_or_tls_matches_every_host_on_slash() -> None:
    web = workload(port=80, expose=True, ingress=Ingress(), runtime_namespace="edge")
    spec = rendered_object(plan(workloads=(web,)), "Ingress", "web")["spec"]
    assert spec == {
        "rules": [
            {
                "http": {
                    "paths": [
                        {
                            "path": "/",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": "web-svc", "port": {"number": 80}}},
                        }
                    ]
                }
            }
        ]
    }

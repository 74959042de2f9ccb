"""Plan rules of `kind: cronjob` and `ingress`: the exact `file:LINE:COL: path: message` of each mistake
(bodies start on line 5, after `write_plan`'s header; positions counted by hand), and the model a good
plan builds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.model import Ingress
from planner.workloads.cronjob import CronJobSpec, CronSchedule
from planner.workloads.deployment import DeploymentSpec
from planner.workloads.job import JobSpec

CRONJOB = "workloads:\n  - name: backup\n    kind: cronjob\n    image: busybox:1.36\n"

CASES: list[tuple[str, str, list[str]]] = [
    (
        "a schedule out of range names the field and the parser's reason",
        CRONJOB + "    schedule: 61 * * * *\n",
        [
            '{f}:9:15: workloads[0].schedule: bad schedule "61 * * * *": end of range (61) above maximum '
            "(59): 61 (expected cron's five fields or a macro as @daily)"
        ],
    ),
    (
        "a schedule with four fields",
        CRONJOB + "    schedule: '0 3 * *'\n",
        [
            '{f}:9:15: workloads[0].schedule: bad schedule "0 3 * *": expected exactly 5 fields, found 4: '
            "[0 3 * *] (expected cron's five fields or a macro as @daily)"
        ],
    ),
    (
        "TZ= in the schedule is refused as the API server refuses it",
        CRONJOB + "    schedule: TZ=UTC 0 3 * * *\n",
        [
            "{f}:9:15: workloads[0].schedule: TZ= or CRON_TZ= in the schedule is refused by Kubernetes: "
            "use timeZone instead"
        ],
    ),
    (
        "an unknown time zone",
        CRONJOB + "    schedule: '@daily'\n    timeZone: Mars/Olympus\n",
        [
            '{f}:10:15: workloads[0].timeZone: unknown time zone "Mars/Olympus": expected an IANA name as '
            "`Europe/Berlin`"
        ],
    ),
    (
        "a cronjob without a schedule is reported at its kind",
        CRONJOB,
        [
            "{f}:7:5: workloads[0].kind: a cronjob needs a schedule (cron's five fields, as `0 3 * * *`, "
            "or `@daily`)"
        ],
    ),
    (
        "cronjob fields on a deployment",
        "workloads:\n  - name: web\n    image: nginx:1.27\n    schedule: '@daily'\n    suspend: true\n",
        [
            "{f}:8:5: workloads[0].schedule: schedule is for cronjobs only; this workload is a deployment",
            "{f}:9:5: workloads[0].suspend: suspend is for cronjobs only; this workload is a deployment",
        ],
    ),
    (
        "job fields are for jobs and cronjobs, deployment fields not for a cronjob",
        CRONJOB + "    schedule: '@daily'\n    replicas: 2\n",
        [
            "{f}:10:5: workloads[0].replicas: replicas is for deployments and statefulsets only; this workload is a cronjob"
        ],
    ),
    (
        "a job field on a deployment names both kinds that take it",
        "workloads:\n  - name: web\n    image: nginx:1.27\n    backoffLimit: 2\n",
        [
            "{f}:8:5: workloads[0].backoffLimit: backoffLimit is for jobs and cronjobs only; this workload "
            "is a deployment"
        ],
    ),
    (
        "a cronjob is never exposed",
        CRONJOB + "    schedule: '@daily'\n    port: 80\n    expose: true\n",
        ["{f}:11:5: workloads[0].expose: expose is for deployments only: a cronjob gets no Service"],
    ),
    (
        "a cronjob name leaves room for its runs' Job names",
        "workloads:\n  - name: " + "n" * 53 + "\n    kind: cronjob\n    image: busybox:1.36\n"
        "    schedule: '@daily'\n",
        [
            "{f}:6:11: workloads[0].name: name is 53 characters, too long for a cronjob: at most 52, so "
            "that the Job of each run (`<name>-<minutes since the epoch>`) fits in 63"
        ],
    ),
    (
        "an Ingress annotation key the API server would refuse",
        "workloads:\n  - name: web\n    image: nginx:1.27\n    port: 80\n    expose: true\n"
        '    ingress:\n      annotations: {"bad key!": x}\n',
        [
            '{f}:11:21: workloads[0].ingress.annotations.bad key!: annotation key name "bad key!" is not valid: '
            "expected letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ],
    ),
    (
        "an ingress on a statefulset says what it can do instead, not to add the expose it refuses",
        "workloads:\n  - name: db\n    kind: statefulset\n    image: postgres:16\n    port: 5432\n"
        "    ingress: {host: db.example.com}\n",
        [
            "{f}:10:5: workloads[0].ingress: ingress is for deployments only (with expose: true and a port): "
            "a statefulset has only its headless Service <name>; to route to it, declare a Service and an "
            "Ingress under manifests"
        ],
    ),
    (
        "an ingress on a cronjob",
        CRONJOB + "    schedule: '@daily'\n    ingress: {host: shop.example.com}\n",
        [
            "{f}:10:5: workloads[0].ingress: ingress is for deployments only (with expose: true and a port): "
            "a cronjob gets no Service"
        ],
    ),
    (
        "an ingress on a workload that is not exposed",
        "workloads:\n  - name: web\n    image: nginx:1.27\n    port: 80\n    ingress: {host: shop.example.com}\n",
        [
            "{f}:9:5: workloads[0].ingress: ingress needs expose: true (and a port): it routes to the "
            "workload's Service <name>-svc"
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_prints_the_exact_diagnostic(
    write_plan: Callable[..., Path], body: str, expected: list[str]
) -> None:
    path = write_plan(body)
    with pytest.raises(PlanError) as raised:
        load_plans([path], environ={})
    assert [str(d) for d in raised.value.diagnostics] == [line.format(f=path) for line in expected]


def test_a_cronjob_and_an_ingress_build_the_model(write_plan: Callable[..., Path]) -> None:
    path = write_plan(
        "workloads:\n"
        "  - name: backup\n    kind: cronjob\n    image: busybox:1.36\n    schedule: '*/5 * * * *'\n"
        "    timeZone: Europe/Berlin\n    concurrencyPolicy: Forbid\n    startingDeadlineSeconds: 60\n"
        "    successfulJobsHistoryLimit: 1\n    failedJobsHistoryLimit: 2\n    suspend: true\n"
        "    backoffLimit: 0\n"
        "  - name: web\n    image: nginx:1.27\n    port: 80\n    expose: true\n"
        "    ingress:\n      host: shop.example.com\n      className: nginx\n      tls: {secretName: shop-tls}\n"
        "      annotations: {a.example.com/b: c}\n"
    )
    (loaded,) = load_plans([path], environ={}).plans
    backup, web = loaded.workloads
    assert backup.kind == "cronjob"
    assert backup.spec == CronJobSpec(
        schedule=CronSchedule(
            schedule="*/5 * * * *",
            time_zone="Europe/Berlin",
            concurrency_policy="Forbid",
            starting_deadline_seconds=60,
            successful_jobs_history_limit=1,
            failed_jobs_history_limit=2,
            suspend=True,
        ),
        job=JobSpec(backoff_limit=0),
    )
    assert web.spec == DeploymentSpec()
    assert web.ingress == Ingress(
        host="shop.example.com",
        path="/",
        path_type="Prefix",
        class_name="nginx",
        tls_secret="shop-tls",
        annotations={"a.example.com/b": "c"},
    )

"""Workloads: a Deployment, Job or CronJob named after the workload, its `<name>-svc` Service and its Ingress.

The workload labels (`app`, `gobrave-workload`) go on the object and on its pod template; the selectors use exactly those labels,
never user labels, because selectors are immutable and user labels change. A Job carries no selector
(the server generates one) and a run-key, so it runs once per change of what it would run. A CronJob's
job template is the Job's spec without the run-key: its runs are the schedule's, not the plan's, so it
carries neither the run-key nor, on its Jobs, the run-record finalizer of plan Jobs.
"""

from __future__ import annotations

from collections.abc import Callable

from planner.kinds import INGRESS, SERVICE, WORKLOAD_KINDS
from planner.objects import ANNOTATION_RUN_KEY, ANNOTATION_RUNTIME_ID, Manifest
from planner.plan.model import Container, CronSchedule, Ingress, Plan, RolloutStrategy, Workload
from planner.plan.names import service_name
from planner.render.confighash import ConfigHashes
from planner.render.identity import (
    Stamp,
    depends_on_annotation,
    run_key,
    workload_labels,
    workload_namespace,
    workload_runtime_id,
)
from planner.render.pods import Fields, container, node_affinity, pod_volumes, present, security_context


def main_container(workload: Workload) -> Container:
    """The workload's own container, named after it: `entrypoint` is its command, `command` its args."""
    return Container(
        name=workload.name,
        image=workload.image,
        command=workload.entrypoint,
        args=workload.command,
        env=workload.env,
        env_from=workload.env_from,
        workdir=workload.workdir,
        volumes=workload.volumes,
        cpu=workload.cpu,
        memory=workload.memory,
        readiness_probe=workload.readiness_probe,
        liveness_probe=workload.liveness_probe,
    )


def pod_template(workload: Workload, config: ConfigHashes) -> Fields:
    main = main_container(workload)
    main_fields = container(
        main,
        ports=[{"containerPort": workload.port}] if workload.port else None,
        securityContext=security_context(workload.user),
        imagePullPolicy=workload.pull_policy,
    )
    spec = {
        "containers": [main_fields, *(container(c) for c in workload.sidecars)],
        **present(
            initContainers=[container(c) for c in workload.init_containers],
            volumes=pod_volumes([main, *workload.sidecars, *workload.init_containers]),
            affinity=node_affinity(workload.scheduling),
        ),
        "restartPolicy": RESTART_POLICIES[workload.kind],
    }
    annotations = {**workload.pod_annotations, **config.annotation(workload)}
    metadata = present(labels=workload_labels(workload.name), annotations=annotations)
    return {"metadata": metadata, "spec": spec}


def deployment_spec(workload: Workload, config: ConfigHashes) -> Fields:
    return {
        "selector": {"matchLabels": workload_labels(workload.name)},
        "template": pod_template(workload, config),
        **present(
            replicas=workload.replicas,
            progressDeadlineSeconds=workload.progress_deadline_seconds,
            strategy=rollout_strategy(workload.strategy),
        ),
    }


def rollout_strategy(strategy: RolloutStrategy | None) -> Fields | None:
    if strategy is None:
        return None
    rolling = present(maxSurge=strategy.max_surge, maxUnavailable=strategy.max_unavailable)
    return {"type": strategy.type, **present(rollingUpdate=rolling)}


def job_spec(workload: Workload, config: ConfigHashes) -> Fields:
    return {
        "template": pod_template(workload, config),
        **present(
            backoffLimit=workload.backoff_limit,
            activeDeadlineSeconds=workload.active_deadline_seconds,
            ttlSecondsAfterFinished=workload.ttl_seconds_after_finished,
        ),
    }


def cronjob_spec(workload: Workload, config: ConfigHashes) -> Fields:
    schedule = workload.cron or CronSchedule(schedule="")
    return {
        "schedule": schedule.schedule,
        **present(
            timeZone=schedule.time_zone,
            concurrencyPolicy=schedule.concurrency_policy,
            startingDeadlineSeconds=schedule.starting_deadline_seconds,
            successfulJobsHistoryLimit=schedule.successful_jobs_history_limit,
            failedJobsHistoryLimit=schedule.failed_jobs_history_limit,
            suspend=schedule.suspend,
        ),
        "jobTemplate": {
            "metadata": {"labels": workload_labels(workload.name)},
            "spec": job_spec(workload, config),
        },
    }


# Per workload kind: its pod's restart policy and its object's spec.
RESTART_POLICIES: dict[str, str] = {"deployment": "Always", "job": "Never", "cronjob": "Never"}
SPECS: dict[str, Callable[[Workload, ConfigHashes], Fields]] = {
    "deployment": deployment_spec,
    "job": job_spec,
    "cronjob": cronjob_spec,
}


def workload_object(
    workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str, config: ConfigHashes
) -> Manifest:
    kind = WORKLOAD_KINDS[workload.kind]
    spec = SPECS[workload.kind](workload, config)
    annotations = {
        **workload.annotations,
        ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace)),
        **depends_on_annotation(plan, workload.depends_on, default_namespace),
    }
    if workload.kind == "job":
        annotations[ANNOTATION_RUN_KEY] = run_key({"spec": spec})
    metadata = stamp.metadata(
        name=workload.name,
        namespace=workload_namespace(plan, workload, default_namespace),
        labels={**workload.labels, **workload_labels(workload.name)},
        annotations=annotations,
    )
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": spec}


def service(workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str) -> Manifest:
    """The ClusterIP Service `<name>-svc` on the workload's port, selecting its pods by the workload labels."""
    metadata = stamp.metadata(
        name=service_name(workload.name),
        namespace=workload_namespace(plan, workload, default_namespace),
        labels=workload_labels(workload.name),
        annotations={ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace))},
    )
    spec = {
        "type": "ClusterIP",
        "selector": workload_labels(workload.name),
        "ports": [{"port": workload.port, "targetPort": workload.port}],
    }
    return {"apiVersion": SERVICE.api_version, "kind": SERVICE.kind, "metadata": metadata, "spec": spec}


def ingress(
    workload: Workload, routed: Ingress, *, plan: Plan, stamp: Stamp, default_namespace: str
) -> Manifest:
    """The Ingress `<name>` routing `routed`'s host and path to the exposed workload's `<name>-svc`."""
    backend = {"service": {"name": service_name(workload.name), "port": {"number": workload.port}}}
    path = {"path": routed.path, "pathType": routed.path_type, "backend": backend}
    tls = {**present(hosts=[routed.host] if routed.host else None), "secretName": routed.tls_secret}
    spec = {
        **present(ingressClassName=routed.class_name),
        "rules": [{**present(host=routed.host), "http": {"paths": [path]}}],
        **present(tls=[tls] if routed.tls_secret else None),
    }
    metadata = stamp.metadata(
        name=workload.name,
        namespace=workload_namespace(plan, workload, default_namespace),
        labels=workload_labels(workload.name),
        annotations={
            **routed.annotations,
            ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace)),
        },
    )
    return {"apiVersion": INGRESS.api_version, "kind": INGRESS.kind, "metadata": metadata, "spec": spec}


def is_exposed(workload: Workload) -> bool:
    """A Service only for a deployment with expose set and a port to expose."""
    return workload.kind == "deployment" and workload.expose and bool(workload.port)


def render_workload(
    workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str, config: ConfigHashes
) -> list[Manifest]:
    """The workload's object, then its Service when exposed, then its Ingress when it declares one."""
    objects = [
        workload_object(workload, plan=plan, stamp=stamp, default_namespace=default_namespace, config=config)
    ]
    if is_exposed(workload):
        objects.append(service(workload, plan=plan, stamp=stamp, default_namespace=default_namespace))
        if workload.ingress is not None:
            routed = workload.ingress
            objects.append(
                ingress(workload, routed, plan=plan, stamp=stamp, default_namespace=default_namespace)
            )
    return objects

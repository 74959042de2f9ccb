"""Workloads: a Deployment, Job or StatefulSet named after the workload, its Service (`<name>-svc` for
an exposed Deployment, the headless `<name>` a StatefulSet with a port governs) and its
HorizontalPodAutoscaler `<name>` when it autoscales.

An autoscaled workload's `replicas` is create-only (`planner.dev/create-only`): the autoscaler owns it
once the workload exists, so its scaling is never drift and an apply never resets it.
The workload labels (`app`, `gobrave-workload`) go on the object and on its pod template; the selectors use exactly those labels,
never user labels, because selectors are immutable and user labels change. A Job carries no selector
(the server generates one) and a run-key, so it runs once per change of what it would run.
"""

from __future__ import annotations

from planner.kinds import HORIZONTAL_POD_AUTOSCALER, SERVICE
from planner.objects import ANNOTATION_CREATE_ONLY, ANNOTATION_RUN_KEY, ANNOTATION_RUNTIME_ID, Manifest
from planner.plan.model import Autoscale, Container, Plan, RolloutStrategy, StatefulUpdate, Workload
from planner.plan.names import service_name
from planner.render.claims import claim_spec
from planner.render.identity import (
    Stamp,
    depends_on_annotation,
    run_key,
    workload_kind,
    workload_labels,
    workload_namespace,
    workload_runtime_id,
)
from planner.render.pods import (
    Fields,
    container,
    node_affinity,
    pod_volumes,
    present,
    security_context,
    shared_volumes,
)

REPLICAS = "spec.replicas"


def main_container(workload: Workload) -> Container:
    """The workload's own container, named after it: `entrypoint` is its command, `command` its args."""
    return Container(
        name=workload.name,
        image=workload.image,
        command=workload.entrypoint,
        args=workload.command,
        env=workload.env,
        workdir=workload.workdir,
        volumes=workload.volumes,
        cpu=workload.cpu,
        memory=workload.memory,
        readiness_probe=workload.readiness_probe,
        liveness_probe=workload.liveness_probe,
    )


def pod_template(workload: Workload) -> Fields:
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
        "restartPolicy": "Never" if workload.kind == "job" else "Always",
    }
    metadata = present(labels=workload_labels(workload.name), annotations=dict(workload.pod_annotations))
    return {"metadata": metadata, "spec": spec}


def deployment_spec(workload: Workload) -> Fields:
    return {
        "selector": {"matchLabels": workload_labels(workload.name)},
        "template": pod_template(workload),
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


def stateful_set_spec(workload: Workload) -> Fields:
    """`serviceName` is always the workload's name: the headless Service rendered when it has a port."""
    return {
        "selector": {"matchLabels": workload_labels(workload.name)},
        "serviceName": workload.name,
        "template": pod_template(workload),
        **present(
            replicas=workload.replicas,
            podManagementPolicy=workload.pod_management_policy,
            updateStrategy=stateful_update(workload.update_strategy),
            volumeClaimTemplates=claim_templates(workload),
        ),
    }


def stateful_update(strategy: StatefulUpdate | None) -> Fields | None:
    if strategy is None:
        return None
    return {"type": strategy.type, **present(rollingUpdate=present(partition=strategy.partition))}


def claim_templates(workload: Workload) -> list[Fields]:
    """One claim template per `claim` volume of the pod, named as the volume its containers mount."""
    main = main_container(workload)
    return [
        {
            "metadata": {"name": volume.name},
            "spec": claim_spec(volume.claim, access_modes=volume.claim.access_modes),
        }
        for volume in shared_volumes([main, *workload.sidecars, *workload.init_containers])
        if volume.claim is not None
    ]


def job_spec(workload: Workload) -> Fields:
    return {
        "template": pod_template(workload),
        **present(
            backoffLimit=workload.backoff_limit,
            activeDeadlineSeconds=workload.active_deadline_seconds,
            ttlSecondsAfterFinished=workload.ttl_seconds_after_finished,
        ),
    }


SPECS = {"deployment": deployment_spec, "job": job_spec, "statefulset": stateful_set_spec}


def workload_object(workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str) -> Manifest:
    kind = workload_kind(workload)
    spec = SPECS[workload.kind](workload)
    annotations = {
        **workload.annotations,
        ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace)),
        **depends_on_annotation(plan, workload.depends_on, default_namespace),
    }
    if workload.autoscale is not None:
        # Also without `replicas`: a workload that had them keeps its live count, never a default of 1.
        annotations[ANNOTATION_CREATE_ONLY] = REPLICAS
    if workload.kind == "job":
        annotations[ANNOTATION_RUN_KEY] = run_key({"spec": spec})
    metadata = stamp.metadata(
        name=workload.name,
        namespace=workload_namespace(plan, workload, default_namespace),
        labels={**workload.labels, **workload_labels(workload.name)},
        annotations=annotations,
    )
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": spec}


def owned_metadata(
    workload: Workload, name: str, *, plan: Plan, stamp: Stamp, default_namespace: str
) -> Fields:
    """Metadata of an object the workload brings along (its Service, its autoscaler): the workload's
    labels and runtime ID, so it is reported and timed as part of the workload."""
    return stamp.metadata(
        name=name,
        namespace=workload_namespace(plan, workload, default_namespace),
        labels=workload_labels(workload.name),
        annotations={ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace))},
    )


def service(workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str) -> Manifest:
    """The workload's Service on its port, selecting its pods by the workload labels: the ClusterIP
    `<name>-svc` of an exposed Deployment, or the headless `<name>` that gives a StatefulSet's pods
    their DNS names (`db-0.db`)."""
    headless = workload.kind == "statefulset"
    name = workload.name if headless else service_name(workload.name)
    metadata = owned_metadata(workload, name, plan=plan, stamp=stamp, default_namespace=default_namespace)
    spec = {
        "type": "ClusterIP",
        **({"clusterIP": "None"} if headless else {}),
        "selector": workload_labels(workload.name),
        "ports": [{"port": workload.port, "targetPort": workload.port}],
    }
    return {"apiVersion": SERVICE.api_version, "kind": SERVICE.kind, "metadata": metadata, "spec": spec}


def has_service(workload: Workload) -> bool:
    """A Service for a deployment with expose set and a port, and for a statefulset with a port."""
    if workload.kind == "statefulset":
        return bool(workload.port)
    return workload.kind == "deployment" and workload.expose and bool(workload.port)


def autoscaler(
    workload: Workload, scale: Autoscale, *, plan: Plan, stamp: Stamp, default_namespace: str
) -> Manifest:
    """The autoscaling/v2 HorizontalPodAutoscaler `<name>` scaling the workload on its Resource metrics."""
    kind = workload_kind(workload)
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": resource, "target": {"type": "Utilization", "averageUtilization": target}},
        }
        for resource, target in (("cpu", scale.cpu_utilization), ("memory", scale.memory_utilization))
        if target is not None
    ]
    spec = {
        "scaleTargetRef": {"apiVersion": kind.api_version, "kind": kind.kind, "name": workload.name},
        "minReplicas": scale.min,
        "maxReplicas": scale.max,
        **present(metrics=metrics),
    }
    metadata = owned_metadata(
        workload, workload.name, plan=plan, stamp=stamp, default_namespace=default_namespace
    )
    return {
        "apiVersion": HORIZONTAL_POD_AUTOSCALER.api_version,
        "kind": HORIZONTAL_POD_AUTOSCALER.kind,
        "metadata": metadata,
        "spec": spec,
    }


def render_workload(
    workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str
) -> list[Manifest]:
    """The workload's object, then its Service when it has one, then its autoscaler."""
    objects = [workload_object(workload, plan=plan, stamp=stamp, default_namespace=default_namespace)]
    if has_service(workload):
        objects.append(service(workload, plan=plan, stamp=stamp, default_namespace=default_namespace))
    if workload.autoscale is not None:
        scale = workload.autoscale
        objects.append(
            autoscaler(workload, scale, plan=plan, stamp=stamp, default_namespace=default_namespace)
        )
    return objects

"""Workloads: a Deployment, Job, CronJob or StatefulSet named after the workload, its Service
(`<name>-svc` for an exposed Deployment, the headless `<name>` a StatefulSet with a port governs), the
Ingress `<name>` of an exposed Deployment that declares one, and its HorizontalPodAutoscaler `<name>`
when it autoscales.

An autoscaled workload's `replicas` is create-only (`planner.dev/create-only`): the autoscaler owns it
once the workload exists, so its scaling is never drift and an apply never resets it.
The workload labels (`app`, `gobrave-workload`) go on the object and on its pod template; the selectors use exactly those labels,
never user labels, because selectors are immutable and user labels change. A Job carries no selector
(the server generates one) and a run-key, so it runs once per change of what it would run. A CronJob's
job template is the Job's spec without the run-key: its runs are the schedule's, not the plan's, so it
carries neither the run-key nor, on its Jobs, the run-record finalizer of plan Jobs.
"""

from __future__ import annotations

from planner import workloads
from planner.kinds import HORIZONTAL_POD_AUTOSCALER, INGRESS, SERVICE
from planner.objects import (
    ANNOTATION_CREATE_ONLY,
    ANNOTATION_RUN_KEY,
    ANNOTATION_RUNTIME_ID,
    Manifest,
    present,
)
from planner.plan.model import Autoscale, Container, Ingress, Plan, Workload
from planner.plan.names import service_name
from planner.render.claims import claim_spec
from planner.render.confighash import ConfigHashes
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
    security_context,
    shared_volumes,
)
from planner.workloads.kind import PodInputs

REPLICAS = "spec.replicas"


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
        "restartPolicy": workloads.named(workload.kind).restart_policy,
    }
    annotations = {**workload.pod_annotations, **config.annotation(workload)}
    metadata = present(labels=workload_labels(workload.name), annotations=annotations)
    return {"metadata": metadata, "spec": spec}


def claim_templates(workload: Workload) -> tuple[Fields, ...]:
    """One claim template per `claim` volume of the pod, named as the volume its containers mount."""
    main = main_container(workload)
    return tuple(
        {
            "metadata": {"name": volume.name},
            "spec": claim_spec(volume.claim, access_modes=volume.claim.access_modes),
        }
        for volume in shared_volumes([main, *workload.sidecars, *workload.init_containers])
        if volume.claim is not None
    )


def workload_spec(workload: Workload, config: ConfigHashes) -> Fields:
    """The object's spec, as its kind builds it around the pod template."""
    kind = workloads.named(workload.kind)
    inputs = PodInputs(
        name=workload.name,
        selector=workload_labels(workload.name),
        template=pod_template(workload, config),
        replicas=workload.replicas,
        claim_templates=claim_templates(workload) if kind.claim_templates else (),
    )
    return kind.render(workload.spec, inputs)


def workload_object(
    workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str, config: ConfigHashes
) -> Manifest:
    kind = workload_kind(workload)
    spec = workload_spec(workload, config)
    annotations = {
        **workload.annotations,
        ANNOTATION_RUNTIME_ID: str(workload_runtime_id(plan, workload, default_namespace)),
        **depends_on_annotation(plan, workload.depends_on, default_namespace),
    }
    if workload.autoscale is not None:
        # Also without `replicas`: a workload that had them keeps its live count, never a default of 1.
        annotations[ANNOTATION_CREATE_ONLY] = REPLICAS
    if workloads.named(workload.kind).runs_once:
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
    """Metadata of an object the workload brings along (its Service, Ingress, autoscaler): the workload's
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
    headless = workloads.named(workload.kind).service == "headless"
    name = workload.name if headless else service_name(workload.name)
    metadata = owned_metadata(workload, name, plan=plan, stamp=stamp, default_namespace=default_namespace)
    spec = {
        "type": "ClusterIP",
        **({"clusterIP": "None"} if headless else {}),
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
    metadata = owned_metadata(
        workload, workload.name, plan=plan, stamp=stamp, default_namespace=default_namespace
    )
    metadata["annotations"] = {**routed.annotations, **metadata["annotations"]}
    return {"apiVersion": INGRESS.api_version, "kind": INGRESS.kind, "metadata": metadata, "spec": spec}


def has_service(workload: Workload) -> bool:
    """A Service for an exposed workload of a kind that can be exposed, and a headless one for a
    workload of a kind that gets one, each only with a port."""
    shape = workloads.named(workload.kind).service
    if shape == "headless":
        return bool(workload.port)
    return shape == "exposed" and workload.expose and bool(workload.port)


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
    workload: Workload, *, plan: Plan, stamp: Stamp, default_namespace: str, config: ConfigHashes
) -> list[Manifest]:
    """The workload's object, then its Service when it has one, its Ingress when it declares one, then its
    autoscaler."""
    objects = [
        workload_object(workload, plan=plan, stamp=stamp, default_namespace=default_namespace, config=config)
    ]
    if has_service(workload):
        objects.append(service(workload, plan=plan, stamp=stamp, default_namespace=default_namespace))
    if workload.ingress is not None:  # validation allows it on an exposed deployment only
        routed = workload.ingress
        objects.append(ingress(workload, routed, plan=plan, stamp=stamp, default_namespace=default_namespace))
    if workload.autoscale is not None:
        scale = workload.autoscale
        objects.append(
            autoscaler(workload, scale, plan=plan, stamp=stamp, default_namespace=default_namespace)
        )
    return objects

"""Pod-level pieces shared by workloads and sandboxes: containers, probes, volumes and affinity.

A ContainerSpec maps onto one container, beside its sidecars, init containers, probes and the volumes
containers share. The main container of a workload is built as a `Container` too, so
sidecars and the main container go through the same code. Nothing is emitted for what the plan leaves
unset: an absent field and an empty one must hash the same on every render.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planner.objects import present
from planner.plan.model import Container, EnvFrom, EnvRef, EnvValue, Probe, Quantity, Scheduling, Volume

Fields = dict[str, Any]

_NUMBER = re.compile(r"[0-9]+")


def env_list(env: Mapping[str, EnvValue]) -> list[Fields]:
    """Env sorted by key, so the output is deterministic."""
    return [_env_var(key, env[key]) for key in sorted(env)]


def _env_var(name: str, value: EnvValue) -> Fields:
    if isinstance(value, str):
        return {"name": name, "value": value}
    return {"name": name, "valueFrom": {value.source: _env_source(value)}}


def _env_source(ref: EnvRef) -> Fields:
    if ref.source == "fieldRef":
        # apiVersion as the API server defaults it, so what is written is what is read back.
        return {"apiVersion": "v1", "fieldPath": ref.key}
    if ref.source == "resourceFieldRef":
        return {**present(containerName=ref.name), "resource": ref.key, **present(divisor=ref.divisor)}
    return {"name": ref.name, "key": ref.key, **present(optional=True if ref.optional else None)}


def env_from_list(sources: Sequence[EnvFrom]) -> list[Fields]:
    """envFrom in plan order (a later source's key wins over an earlier one's, as the kubelet reads them)."""
    return [
        {
            f"{source.source}Ref": {
                "name": source.name,
                **present(optional=True if source.optional else None),
            },
            **present(prefix=source.prefix),
        }
        for source in sources
    ]


def resources(cpu: Quantity | None, memory: Quantity | None) -> Fields | None:
    """cpu and memory become container limits, as written."""
    limits = present(cpu=cpu, memory=memory)
    return {"limits": limits} if limits else None


def probe(spec: Probe | None) -> Fields | None:
    if spec is None:
        return None
    return {
        spec.handler: _probe_handler(spec),
        **present(
            initialDelaySeconds=spec.initial_delay_seconds,
            periodSeconds=spec.period_seconds,
            timeoutSeconds=spec.timeout_seconds,
            successThreshold=spec.success_threshold,
            failureThreshold=spec.failure_threshold,
        ),
    }


def _probe_handler(spec: Probe) -> Fields:
    if spec.handler == "exec":
        return {"command": list(spec.command)}
    if spec.handler == "httpGet":
        return present(path=spec.path, port=spec.port)
    return {"port": spec.port}


def volume_mount(volume: Volume) -> Fields:
    return present(
        name=volume.name,
        mountPath=volume.mount_path,
        subPath=volume.sub_path,
        readOnly=True if volume.read_only else None,
    )


def pod_volume(volume: Volume) -> Fields:
    sources: dict[str, Fields] = {
        "hostPath": {"path": volume.ref},
        "emptyDir": {},
        "configMap": {"name": volume.ref},
        "secret": {"secretName": volume.ref},
        "persistentVolumeClaim": {"claimName": volume.ref},
    }
    return {"name": volume.name, volume.source: sources[volume.source]}


def shared_volumes(containers: Iterable[Container]) -> list[Volume]:
    """A volume named in several containers is one pod volume, listed once, in order of first
    appearance (the caller passes main, sidecars, then init containers)."""
    seen: dict[str, Volume] = {}
    for container in containers:
        for volume in container.volumes:
            seen.setdefault(volume.name, volume)
    return list(seen.values())


def pod_volumes(containers: Iterable[Container]) -> list[Fields]:
    """The pod's volumes; a StatefulSet's claim templates are none of them (its controller adds them)."""
    return [pod_volume(v) for v in shared_volumes(containers) if v.source != "claim"]


def container(spec: Container, **extra: Any) -> Fields:
    """A Kubernetes container from a plan container; `extra` adds main-container fields (ports,
    securityContext, imagePullPolicy) and is filtered like the rest."""
    return {
        "name": spec.name,
        "image": spec.image,
        **present(
            command=list(spec.command),
            args=list(spec.args),
            workingDir=spec.workdir,
            env=env_list(spec.env),
            envFrom=env_from_list(spec.env_from),
            resources=resources(spec.cpu, spec.memory),
            volumeMounts=[volume_mount(v) for v in spec.volumes],
            readinessProbe=probe(spec.readiness_probe),
            livenessProbe=probe(spec.liveness_probe),
            **extra,
        ),
    }


def security_context(user: str | None) -> Fields | None:
    """`uid` or `uid:gid` map to runAsUser (and runAsGroup) only when they are numbers."""
    if user is None:
        return None
    uid, colon, gid = user.partition(":")
    if not _NUMBER.fullmatch(uid) or (colon and not _NUMBER.fullmatch(gid)):
        return None
    return {"runAsUser": int(uid), **({"runAsGroup": int(gid)} if colon else {})}


def node_affinity(scheduling: Sequence[Scheduling]) -> Fields | None:
    """Node constraints become one required node-selector term, all expressions ANDed."""
    expressions = [_match_expression(rule) for rule in scheduling if rule.type == "node"]
    if not expressions:
        return None
    term = {"matchExpressions": expressions}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _match_expression(rule: Scheduling) -> Fields:
    expression: Fields = {"key": rule.key, "operator": rule.operator}
    if rule.operator in ("In", "NotIn"):
        expression["values"] = list(rule.values)
    return expression

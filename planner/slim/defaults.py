"""Defaulting and canonicalization per kind, as the apiserver applies them before validation.

Each `default_<kind>(obj)` mutates a freshly decoded object in place; the values and the presence or
absence of fields match the recorded objects in tests/golden/k8s. Decoders
(`decode_<kind>`) reject what the real server cannot even deserialize (400, not 422): invalid base64
in Secret data, a Lease MicroTime without six fractional digits, a quantity that does not parse
(found while the defaulter canonicalizes it, and answered as the decoder would).
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Any

from planner import quantities
from planner.slim.meta import json_copy, metadata
from planner.slim.status_errors import StatusError, bad_request

_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
Mutator = Callable[[dict[str, Any]], None]


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    if obj.get(key) in (None, ""):
        obj[key] = value


def cannot_handle(obj: dict[str, Any], reason: str) -> StatusError:
    """The 400 the apiserver answers when a body does not even decode into its type."""
    kind, version = obj.get("kind", ""), str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {reason}')


def _decodes_quantities(defaulter: Mutator) -> Mutator:
    """A bad quantity fails the apiserver's decoding, before any defaulting: a 400, not a 500."""

    @functools.wraps(defaulter)
    def default(obj: dict[str, Any]) -> None:
        try:
            defaulter(obj)
        except quantities.QuantityError as error:
            raise cannot_handle(obj, str(error)) from error

    return default


def default_container(container: dict[str, Any]) -> None:
    _set(container, "terminationMessagePath", "/dev/termination-log")
    _set(container, "terminationMessagePolicy", "File")
    _set(container, "imagePullPolicy", _pull_policy(str(container.get("image") or "")))
    resources = container.setdefault("resources", {})
    for key in ("limits", "requests"):
        if key in resources:
            resources[key] = quantities.canonical_map(resources[key])
    for port in container.get("ports") or []:
        _set(port, "protocol", "TCP")
    for probe_key in _PROBES:
        if isinstance(container.get(probe_key), dict):
            _default_probe(container[probe_key])
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field_ref, dict):
            _set(field_ref, "apiVersion", "v1")


def _pull_policy(image: str) -> str:
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: dict[str, Any]) -> None:
    _set(probe, "timeoutSeconds", 1)
    _set(probe, "periodSeconds", 10)
    _set(probe, "successThreshold", 1)
    _set(probe, "failureThreshold", 3)
    if isinstance(probe.get("httpGet"), dict):
        _set(probe["httpGet"], "path", "/")
        _set(probe["httpGet"], "scheme", "HTTP")
    if isinstance(probe.get("grpc"), dict):
        probe["grpc"].setdefault("service", "")


def _default_volume(volume: dict[str, Any]) -> None:
    for source in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(volume.get(source), dict):
            _set(volume[source], "defaultMode", 420)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")
    if isinstance(volume.get("emptyDir"), dict) and "sizeLimit" in volume["emptyDir"]:
        volume["emptyDir"]["sizeLimit"] = quantities.canonical(str(volume["emptyDir"]["sizeLimit"]))


def default_pod_spec(spec: dict[str, Any]) -> None:
    """Defaults shared by Pods and pod templates."""
    _set(spec, "restartPolicy", "Always")
    _set(spec, "terminationGracePeriodSeconds", 30)
    _set(spec, "dnsPolicy", "ClusterFirst")
    _set(spec, "schedulerName", "default-scheduler")
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict):
                default_container(container)
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            _default_volume(volume)


def default_template(template: dict[str, Any]) -> None:
    meta = template.setdefault("metadata", {})
    meta.setdefault("creationTimestamp", None)
    default_pod_spec(template.setdefault("spec", {}))


@_decodes_quantities
def default_pod(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    default_pod_spec(spec)
    _set(spec, "enableServiceLinks", True)
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            _copy_limits_to_requests(container)
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def _copy_limits_to_requests(container: dict[str, Any]) -> None:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    if limits:
        requests = resources.setdefault("requests", {})
        for name, value in limits.items():
            requests.setdefault(name, value)


def qos_class(spec: dict[str, Any]) -> str:
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    limits = [(c.get("resources") or {}).get("limits") or {} for c in containers]
    if not any(requests) and not any(limits):
        return "BestEffort"
    guaranteed = all(
        all(res in lim and lim.get(res) == req.get(res, lim.get(res)) for res in ("cpu", "memory"))
        for req, lim in zip(requests, limits, strict=True)
    )
    return "Guaranteed" if guaranteed else "Burstable"


@_decodes_quantities
def default_deployment(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "replicas", 1)
    strategy = spec.setdefault("strategy", {})
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        _set(rolling, "maxUnavailable", "25%")
        _set(rolling, "maxSurge", "25%")
    _set(spec, "revisionHistoryLimit", 10)
    _set(spec, "progressDeadlineSeconds", 600)
    default_template(spec.setdefault("template", {}))


@_decodes_quantities
def default_replicaset(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "replicas", 1)
    default_template(spec.setdefault("template", {}))
    if not obj.get("status"):
        obj["status"] = {"replicas": 0}  # ReplicaSetStatus.replicas is not omitempty; clients require it


@_decodes_quantities
def default_job(obj: dict[str, Any]) -> None:
    """Job defaults; the uid-derived selector and labels need the uid, so run after it is assigned."""
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _set(spec, "parallelism", 1)
    _set(spec, "backoffLimit", 6)
    _set(spec, "completionMode", "NonIndexed")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    template = spec.setdefault("template", {})
    default_template(template)
    if not spec.get("manualSelector"):
        _generate_job_selector(obj, spec, template)
    meta = metadata(obj)
    if not meta.get("labels"):
        meta["labels"] = dict(template["metadata"].get("labels") or {})


def _generate_job_selector(obj: dict[str, Any], spec: dict[str, Any], template: dict[str, Any]) -> None:
    labels = template["metadata"].setdefault("labels", {})
    for key, value in _generated_job_labels(obj).items():
        labels.setdefault(key, value)
    if spec.get("selector") is None:
        spec["selector"] = _generated_job_selector(obj)


def _generated_job_labels(job: dict[str, Any]) -> dict[str, str]:
    uid, name = metadata(job).get("uid", ""), metadata(job).get("name", "")
    return {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


def _generated_job_selector(job: dict[str, Any]) -> dict[str, Any]:
    return {"matchLabels": {"batch.kubernetes.io/controller-uid": metadata(job).get("uid", "")}}


def drop_generated_job_selector(job: dict[str, Any]) -> None:
    """Undo `_generate_job_selector` on a copy: what a Job's creator does not own in managedFields."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector"):
        return
    generated = _generated_job_labels(job)
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for labels in (template_labels, job["metadata"].get("labels") or {}):
        for key, value in generated.items():
            if labels.get(key) == value:
                del labels[key]
    if spec.get("selector") == _generated_job_selector(job):
        del spec["selector"]


def default_service(obj: dict[str, Any]) -> None:
    """Service defaults except the cluster IP, which the allocator fills in during admission."""
    spec = obj.setdefault("spec", {})
    _set(spec, "type", "ClusterIP")
    if spec["type"] != "ExternalName":
        _set(spec, "sessionAffinity", "None")
        _set(spec, "internalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer"):
        _set(spec, "externalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    for port in spec.get("ports") or []:
        _set(port, "protocol", "TCP")
        if port.get("targetPort") in (None, "", 0):
            port["targetPort"] = port.get("port")
    obj["status"] = {"loadBalancer": {}}


@_decodes_quantities
def default_pvc(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "volumeMode", "Filesystem")
    resources = spec.get("resources") or {}
    for key in ("requests", "limits"):
        if key in resources:
            resources[key] = quantities.canonical_map(resources[key])
    obj["status"] = {"phase": "Pending"}


@_decodes_quantities
def default_pv(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "persistentVolumeReclaimPolicy", "Retain")
    _set(spec, "volumeMode", "Filesystem")
    if "capacity" in spec:
        spec["capacity"] = quantities.canonical_map(spec["capacity"])
    obj["status"] = {"phase": "Pending"}


def default_storageclass(obj: dict[str, Any]) -> None:
    _set(obj, "reclaimPolicy", "Delete")
    _set(obj, "volumeBindingMode", "Immediate")


@_decodes_quantities
def default_node(obj: dict[str, Any]) -> None:
    status = obj.setdefault("status", {})
    for key in ("capacity", "allocatable"):
        if key in status:
            status[key] = quantities.canonical_map(status[key])


def default_namespace(obj: dict[str, Any]) -> None:
    meta = metadata(obj)
    labels = meta.setdefault("labels", {})
    labels["kubernetes.io/metadata.name"] = meta.get("name", "")
    obj.setdefault("spec", {})
    obj["status"] = {"phase": "Active"}


# --- the kinds served as stored (no controller runs them) ------------------------------------------------


def default_replicationcontroller(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    template = spec.setdefault("template", {})
    labels = (template.get("metadata") or {}).get("labels") or {}
    _set(spec, "replicas", 1)
    if not spec.get("selector"):
        spec["selector"] = dict(labels)
    meta = metadata(obj)
    if not meta.get("labels"):
        meta["labels"] = dict(labels)
    default_template(template)


# The apps/v1 form of a DaemonSet's templateGeneration, which its strategy sets to 1 on create and
# raises by one with each change of the template (`admission.admit_daemonset`).
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _zero_status(obj: dict[str, Any], zeros: tuple[str, ...]) -> None:
    """A new object's status prints the Go struct's non-omitempty counters (clients read them)."""
    if not obj.get("status"):
        obj["status"] = dict.fromkeys(zeros, 0)


def default_daemonset(obj: dict[str, Any]) -> None:
    metadata(obj).setdefault("annotations", {}).setdefault(TEMPLATE_GENERATION, "1")
    _zero_status(
        obj, ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
    )
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        _set(rolling, "maxUnavailable", 1)
        _set(rolling, "maxSurge", 0)
    _set(spec, "revisionHistoryLimit", 10)
    default_template(spec.setdefault("template", {}))


def default_statefulset(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "replicas", 1)
    _set(spec, "podManagementPolicy", "OrderedReady")
    strategy = spec.setdefault("updateStrategy", {})
    _set(strategy, "type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        _set(strategy.setdefault("rollingUpdate", {}), "partition", 0)
    _set(spec, "revisionHistoryLimit", 10)
    retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    _set(retention, "whenDeleted", "Retain")
    _set(retention, "whenScaled", "Retain")
    default_template(spec.setdefault("template", {}))
    for claim in spec.get("volumeClaimTemplates") or []:
        if isinstance(claim, dict):
            claim.update(kind="PersistentVolumeClaim", apiVersion="v1")  # as the apiserver prints them
            claim.setdefault("metadata", {}).setdefault("creationTimestamp", None)
            default_pvc(claim)
    _zero_status(obj, ("replicas", "availableReplicas"))


def default_cronjob(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    _set(spec, "concurrencyPolicy", "Allow")
    _set(spec, "suspend", False)
    _set(spec, "successfulJobsHistoryLimit", 3)
    _set(spec, "failedJobsHistoryLimit", 1)
    job_template = spec.setdefault("jobTemplate", {})
    job_template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    job_spec = job_template.setdefault("spec", {})
    default_template(job_spec.setdefault("template", {}))


# --- RBAC and autoscaling ---------------------------------------------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"


def default_role_binding(obj: dict[str, Any]) -> None:
    """A roleRef's group and a User or Group subject's group are RBAC's; a ServiceAccount's is core."""
    _set(obj.setdefault("roleRef", {}), "apiGroup", RBAC_GROUP)
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            _set(subject, "apiGroup", RBAC_GROUP)


DEFAULT_CPU_UTILIZATION = 80
_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def cpu_utilization_metric(percent: int) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": percent}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def default_hpa(obj: dict[str, Any]) -> None:
    """autoscaling/v2 defaults (the stored form): one replica at least, a CPU target of 80% when no
    metric is given, and the default scaling rules filled in when a `behavior` is given."""
    spec = obj.setdefault("spec", {})
    _set(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        for key, rules in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
            given = behavior.get(key) or {}
            behavior[key] = {**json_copy(rules), **{k: v for k, v in given.items() if v is not None}}
    if not obj.get("status"):
        obj["status"] = {"desiredReplicas": 0, "currentMetrics": None}  # neither is omitempty in Go


def default_secret(obj: dict[str, Any]) -> None:
    _set(obj, "type", "Opaque")
    string_data = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()

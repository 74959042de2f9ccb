"""Table printing: what `kubectl get` shows, computed by the server as the real one does.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the server's columns and
cells verbatim. A `Printer` pairs a kind's columns (`columns.py`) with the function that computes one
row's cells, following the apiserver's printers (`pkg/printers/internalversion`): pod
READY/STATUS/RESTARTS (`podstatus.pod_status_cells`), deployment READY as ready/desired, job
STATUS/COMPLETIONS/DURATION, service EXTERNAL-IP per type, PVC/PV access modes, node roles, event
sources, AGE. `to_table` builds the `meta.k8s.io/v1` Table; `partial_object_metadata(_list)`
answers `Accept: ...;as=PartialObjectMetadata(List)`, which clients that need only metadata
(client-go's metadata client and informers) send.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from planner.slim import columns
from planner.slim.clusterkinds import events_to_core
from planner.slim.columns import (
    access_modes,
    format_labels,
    format_selector,
    human_duration,
    parse_time,
    selector_string,
    since,
)
from planner.slim.defaults import TEMPLATE_GENERATION
from planner.slim.podstatus import pod_status_cells

META_V1: Final = "meta.k8s.io/v1"

Row = list[Any]
CellFn = Callable[[dict[str, Any], datetime], Row]
RowConditions = Callable[[dict[str, Any]], list[dict[str, str]] | None]


@dataclass(frozen=True)
class Printer:
    columns: tuple[columns.Column, ...]
    cells: CellFn
    row_conditions: RowConditions | None = None


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(_meta(obj).get("creationTimestamp"), now)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _get(obj: dict[str, Any], *path: str) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _containers_and_images(pod_spec: dict[str, Any] | None) -> tuple[str, str]:
    containers = (pod_spec or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


# ------------------------------------------------------------------------------------------ pods


def _pod_cells(pod: dict[str, Any], now: datetime) -> Row:
    ready, reason, restarts = pod_status_cells(pod, now)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        wanted = [g.get("conditionType") for g in gates]
        true = sum(1 for t in wanted if _first_condition_status(status, t) == "True")
        readiness = f"{true}/{len(gates)}"
    node = spec.get("nodeName") or "<none>"
    nominated = status.get("nominatedNodeName") or "<none>"
    return [
        _meta(pod).get("name", ""),
        ready,
        reason,
        restarts,
        _age(pod, now),
        pod_ip,
        node,
        nominated,
        readiness,
    ]


def _first_condition_status(status: dict[str, Any], kind: str | None) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def _pod_row_conditions(pod: dict[str, Any]) -> list[dict[str, str]] | None:
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return [_completed("Succeeded", "The pod has completed successfully.")]
    if phase == "Failed":
        return [_completed("Failed", "The pod failed.")]
    return None


def _completed(reason: str, message: str) -> dict[str, str]:
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


# ------------------------------------------------------------------------------------------ workloads


def _deployment_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(obj, now),
        names,
        images,
        selector_string(spec.get("selector")),
    ]


def _replicaset_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(obj, now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]


def job_status(job: dict[str, Any]) -> str:
    """Complete, Failed, Terminating, Suspended, FailureTarget or Running."""
    status = job.get("status") or {}
    for condition, label in (("Complete", "Complete"), ("Failed", "Failed")):
        if _first_condition_status(status, condition) == "True":
            return label
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget"):
        if _first_condition_status(status, condition) == "True":
            return condition
    return "Running"


def _job_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{int(spec['completions'])}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        job_status(obj),
        completions,
        _job_duration(status, now),
        _age(obj, now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]


def _job_duration(status: dict[str, Any], now: datetime) -> str:
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or now
    return human_duration(end - start)


# ------------------------------------------------------------------------------------------ network


def _service_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or []
    ports = ",".join(_port_string(p) for p in spec.get("ports") or []) or "<none>"
    return [
        _meta(obj).get("name", ""),
        spec.get("type", ""),
        cluster_ips[0] if cluster_ips else "<none>",
        _external_ip(obj),
        ports,
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _port_string(port: dict[str, Any]) -> str:
    protocol = port.get("protocol", "")
    if int(port.get("nodePort") or 0) > 0:
        return f"{port.get('port')}:{port['nodePort']}/{protocol}"
    return f"{port.get('port')}/{protocol}"


def _external_ip(service: dict[str, Any]) -> str:
    spec = service.get("spec") or {}
    kind, external = spec.get("type"), list(spec.get("externalIPs") or [])
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = _get(service, "status", "loadBalancer", "ingress") or []
        balancers = sorted(
            {i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")}
        )
        return ",".join(balancers + external) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _endpoints_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), _format_endpoints(obj.get("subsets") or []), _age(obj, now)]


def _format_endpoints(subsets: list[dict[str, Any]]) -> str:
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        targets = (
            [_join_host_port(ip, p.get("port")) for p in ports for ip in addresses] if ports else addresses
        )
        count += len(targets)
        shown.extend(targets[: max(0, 3 - len(shown))])
    text = ",".join(shown)
    return f"{text} + {count - 3} more..." if count > 3 else text


def _endpoint_slice_cells(obj: dict[str, Any], now: datetime) -> Row:
    ports = [str(p.get("port") or p.get("name") or "*") for p in obj.get("ports") or []]
    addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    return [
        _meta(obj).get("name", ""),
        str(obj.get("addressType", "")),
        _first_three(ports),
        _first_three(addresses),
        _age(obj, now),
    ]


def _first_three(items: list[str]) -> str:
    """kubectl's `a,b,c + N more...`, `<unset>` for none."""
    shown = ",".join(items[:3])
    if len(items) > 3:
        return f"{shown} + {len(items) - 3} more..."
    return shown or "<unset>"


def _join_host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


# ------------------------------------------------------------------------------------------ storage


def _storage_class(obj: dict[str, Any]) -> str:
    beta = (_meta(obj).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else (obj.get("spec") or {}).get("storageClassName") or "")


def _phase(obj: dict[str, Any]) -> str:
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase") or "")


def _pvc_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = bool(spec.get("volumeName"))
    return [
        _meta(obj).get("name", ""),
        _phase(obj),
        spec.get("volumeName", ""),
        str((status.get("capacity") or {}).get("storage", "0")) if bound else "",
        access_modes(status.get("accessModes")) if bound else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _pv_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    claim = spec.get("claimRef")
    return [
        _meta(obj).get("name", ""),
        str((spec.get("capacity") or {}).get("storage", "0")),
        access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        _phase(obj),
        f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _storage_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    annotations = _meta(obj).get("annotations") or {}
    default = "true" in (
        annotations.get("storageclass.kubernetes.io/is-default-class"),
        annotations.get("storageclass.beta.kubernetes.io/is-default-class"),
    )
    return [
        _meta(obj).get("name", "") + (" (default)" if default else ""),
        obj.get("provisioner", ""),
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        _age(obj, now),
    ]


# ------------------------------------------------------------------------------------------ cluster


def _namespace_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), (obj.get("status") or {}).get("phase", ""), _age(obj, now)]


def _node_cells(obj: dict[str, Any], now: datetime) -> Row:
    status = obj.get("status") or {}
    ready = _first_condition_status(status, "Ready")
    states = ["Unknown" if ready is None else ("Ready" if ready == "True" else "NotReady")]
    if (obj.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}
    return [
        _meta(obj).get("name", ""),
        ",".join(states),
        ",".join(_node_roles(_meta(obj).get("labels") or {})) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _node_roles(labels: dict[str, str]) -> list[str]:
    roles = {
        k.removeprefix("node-role.kubernetes.io/") for k in labels if k.startswith("node-role.kubernetes.io/")
    }
    if labels.get("kubernetes.io/role"):
        roles.add(labels["kubernetes.io/role"])
    return sorted(r for r in roles if r)


def _node_address(status: dict[str, Any], kind: str) -> str:
    for address in status.get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _event_cells(obj: dict[str, Any], now: datetime) -> Row:
    if "regarding" in obj or "note" in obj:  # an events.k8s.io/v1 Event
        obj = events_to_core(obj)
    first = (
        since(obj.get("firstTimestamp"), now)
        if obj.get("firstTimestamp")
        else since(obj.get("eventTime"), now)
    )
    last = since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        _event_source(obj),
        str(obj.get("message", "")).strip(),
        first,
        count,
        _meta(obj).get("name", ""),
    ]


def _event_source(event: dict[str, Any]) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {instance}" if instance else component


def _lease_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), (obj.get("spec") or {}).get("holderIdentity") or "", _age(obj, now)]


def _configmap_cells(obj: dict[str, Any], now: datetime) -> Row:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_meta(obj).get("name", ""), count, _age(obj, now)]


def _secret_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), obj.get("type", ""), len(obj.get("data") or {}), _age(obj, now)]


def _service_account_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), len(obj.get("secrets") or []), _age(obj, now)]


def _runtime_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), obj.get("handler", ""), _age(obj, now)]


def _hpa_cells(obj: dict[str, Any], now: datetime) -> Row:
    """autoscaling/v2 or v1 (whose CPU target is converted back to a metric first)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    metrics = spec.get("metrics") or []
    if "targetCPUUtilizationPercentage" in spec:
        target = {"type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    ref = spec.get("scaleTargetRef") or {}
    low = spec.get("minReplicas")
    return [
        _meta(obj).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_metrics(metrics, status.get("currentMetrics") or []),
        "<unset>" if low is None else str(low),
        int(spec.get("maxReplicas") or 0),
        int(status.get("currentReplicas") or 0),
        _age(obj, now),
    ]


HPA_METRICS_SHOWN = 2


def _hpa_metrics(specs: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> str:
    """The TARGETS cell: `current/target` per metric, two at most, then `+ N more...`."""
    if not specs:
        return "<none>"
    shown = [_hpa_metric(spec, statuses[i] if i < len(statuses) else {}) for i, spec in enumerate(specs)]
    text = ", ".join(shown[:HPA_METRICS_SHOWN])
    extra = len(shown) - HPA_METRICS_SHOWN
    return f"{text} + {extra} more..." if extra > 0 else text


def _hpa_metric(spec: dict[str, Any], status: dict[str, Any]) -> str:
    kind = spec.get("type", "")
    source_key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(kind)
    if source_key is None:
        source = spec.get(kind[:1].lower() + kind[1:]) or {}
        target = source.get("target") or {}
        wanted = target.get("averageValue") or target.get("value")
        return f"<unknown>/{wanted}" if wanted is not None else "<unknown type>"
    target = (spec.get(source_key) or {}).get("target") or {}
    current = ((status.get(source_key) or {}).get("current")) or {}
    if target.get("averageValue") is not None:
        return f"{current.get('averageValue', '<unknown>')}/{target['averageValue']}"
    now = current.get("averageUtilization")
    wanted = target.get("averageUtilization")
    return f"{'<unknown>' if now is None else f'{now}%'}/{'<auto>' if wanted is None else f'{wanted}%'}"


def _role_cells(obj: dict[str, Any], now: datetime) -> Row:
    created = parse_time(_meta(obj).get("creationTimestamp"))
    return [_meta(obj).get("name", ""), created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else ""]


def _binding_cells(obj: dict[str, Any], now: datetime) -> Row:
    ref = obj.get("roleRef") or {}
    subjects = obj.get("subjects") or []

    def named(kind: str) -> str:
        return ", ".join(s.get("name", "") for s in subjects if s.get("kind") == kind)

    accounts = ", ".join(
        f"{s.get('namespace', '')}:{s.get('name', '')}" for s in subjects if s.get("kind") == "ServiceAccount"
    )
    return [
        _meta(obj).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _age(obj, now),
        named("User"),
        named("Group"),
        accounts,
    ]


def _statefulset_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    ready = f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}"
    return [_meta(obj).get("name", ""), ready, _age(obj, now), names, images]


DAEMON_SET_COUNTS = (
    "desiredNumberScheduled",
    "currentNumberScheduled",
    "numberReady",
    "updatedNumberScheduled",
    "numberAvailable",
)


def _daemonset_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    counts = DAEMON_SET_COUNTS
    return [
        _meta(obj).get("name", ""),
        *(int(status.get(field) or 0) for field in counts),
        format_labels(_get(spec, "template", "spec", "nodeSelector")),
        _age(obj, now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]


def _cronjob_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    job_spec = _get(spec, "jobTemplate", "spec") or {}
    names, images = _containers_and_images(_get(job_spec, "template", "spec"))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    return [
        _meta(obj).get("name", ""),
        spec.get("schedule", ""),
        "<unset>" if suspend is None else str(bool(suspend)),
        len(status.get("active") or []),
        since(last, now) if last else "<none>",
        _age(obj, now),
        names,
        images,
        format_selector(job_spec.get("selector")),
    ]


def _generic_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), _age(obj, now)]


# ------------------------------------------------------------------------------------------ cluster kinds
# The kinds beyond workloads: their columns are the v1.28.7 server's, recorded (`printer_columns.json`).


def _created_at(obj: dict[str, Any], now: datetime) -> Row:
    """NAME and CREATED AT (a `date` cell: the creation timestamp as sent)."""
    return [_meta(obj).get("name", ""), _meta(obj).get("creationTimestamp") or ""]


def _none(value: Any) -> Any:
    return "<none>" if value is None or value == "" else value


def _api_service_cells(obj: dict[str, Any], now: datetime) -> Row:
    service = (obj.get("spec") or {}).get("service")
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Available"), None
    )
    state = "Unknown"
    if available is not None:
        state = str(available.get("status", ""))
        if state != "True" and available.get("reason"):
            state = f"{state} ({available['reason']})"
    return [_meta(obj).get("name", ""), where, state, _age(obj, now)]


def _component_status_cells(obj: dict[str, Any], now: datetime) -> Row:
    healthy: dict[str, Any] = next((c for c in obj.get("conditions") or [] if c.get("type") == "Healthy"), {})
    state = {"True": "Healthy", "False": "Unhealthy"}.get(str(healthy.get("status")), "Unknown")
    return [_meta(obj).get("name", ""), state, healthy.get("message", ""), healthy.get("error", "")]


def _controller_revision_cells(obj: dict[str, Any], now: datetime) -> Row:
    owner = next((o for o in _meta(obj).get("ownerReferences") or [] if o.get("controller")), None)
    controller = "<none>"
    if owner is not None:
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        kind = str(owner.get("kind", "")) + (f".{group}" if group else "")
        controller = f"{kind.lower()}/{owner.get('name', '')}"
    return [_meta(obj).get("name", ""), controller, int(obj.get("revision") or 0), _age(obj, now)]


def _csi_driver_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    tokens = ",".join(
        f"{t.get('audience', '')}:{t['expirationSeconds'] if t.get('expirationSeconds') is not None else '<unset>'}"
        for t in spec.get("tokenRequests") or []
    )
    return [
        _meta(obj).get("name", ""),
        spec.get("attachRequired") is not False,
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        tokens or "<unset>",
        bool(spec.get("requiresRepublish")),
        ",".join(spec.get("volumeLifecycleModes") or []),
        _age(obj, now),
    ]


def _csi_node_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), len((obj.get("spec") or {}).get("drivers") or []), _age(obj, now)]


def _csr_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    seconds = spec.get("expirationSeconds")
    duration = human_duration(timedelta(seconds=int(seconds))) if seconds is not None else "<none>"
    conditions = [str(c.get("type", "")) for c in status.get("conditions") or []]
    if status.get("certificate"):
        conditions.append("Issued")
    return [
        _meta(obj).get("name", ""),
        _age(obj, now),
        spec.get("signerName") or "<none>",
        spec.get("username", ""),
        duration,
        ",".join(conditions) or "Pending",
    ]


def _flow_schema_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    dangling = next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Dangling"), None
    )
    method = (spec.get("distinguisherMethod") or {}).get("type")
    return [
        _meta(obj).get("name", ""),
        (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
        int(spec.get("matchingPrecedence") or 0),
        method or "<none>",
        _age(obj, now),
        str(dangling.get("status")) if dangling else "?",
    ]


def _priority_level_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    limited = spec.get("limited") or {}
    shares = limited.get("nominalConcurrencyShares", limited.get("assuredConcurrencyShares"))
    queuing = (limited.get("limitResponse") or {}).get("queuing") or {}
    return [
        _meta(obj).get("name", ""),
        spec.get("type", ""),
        _none(shares),
        _none(queuing.get("queues")),
        _none(queuing.get("handSize")),
        _none(queuing.get("queueLengthLimit")),
        _age(obj, now),
    ]


def _ingress_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    parameters = spec.get("parameters")
    shown = "<none>"
    if parameters:
        group = parameters.get("apiGroup")
        shown = f"{parameters.get('kind', '')}{'.' + group if group else ''}/{parameters.get('name', '')}"
    return [_meta(obj).get("name", ""), spec.get("controller", ""), shown, _age(obj, now)]


def _webhooks_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), len(obj.get("webhooks") or []), _age(obj, now)]


def _network_policy_cells(obj: dict[str, Any], now: datetime) -> Row:
    selector = (obj.get("spec") or {}).get("podSelector")
    return [_meta(obj).get("name", ""), format_selector(selector), _age(obj, now)]


def _pdb_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [
        _meta(obj).get("name", ""),
        "N/A" if minimum is None else str(minimum),
        "N/A" if maximum is None else str(maximum),
        int((obj.get("status") or {}).get("disruptionsAllowed") or 0),
        _age(obj, now),
    ]


def _pod_template_cells(obj: dict[str, Any], now: datetime) -> Row:
    template = obj.get("template") or {}
    names, images = _containers_and_images(template.get("spec"))
    return [
        _meta(obj).get("name", ""),
        names,
        images,
        format_labels((template.get("metadata") or {}).get("labels")),
    ]


def _priority_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [
        _meta(obj).get("name", ""),
        int(obj.get("value") or 0),
        bool(obj.get("globalDefault")),
        _age(obj, now),
    ]


def _resource_quota_cells(obj: dict[str, Any], now: datetime) -> Row:
    status = obj.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        shown = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.startswith("limits.") else requests).append(shown)
    return [_meta(obj).get("name", ""), _age(obj, now), ", ".join(requests), ", ".join(limits)]


def _volume_attachment_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    return [
        _meta(obj).get("name", ""),
        spec.get("attacher", ""),
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName", ""),
        bool((obj.get("status") or {}).get("attached")),
        _age(obj, now),
    ]


def _recorded(kind: str, cells: CellFn) -> Printer:
    return Printer(columns.recorded(kind), cells)


CLUSTER_PRINTERS: Final[dict[str, Printer]] = {
    "APIService": _recorded("APIService", _api_service_cells),
    "ComponentStatus": _recorded("ComponentStatus", _component_status_cells),
    "ControllerRevision": _recorded("ControllerRevision", _controller_revision_cells),
    "CSIDriver": _recorded("CSIDriver", _csi_driver_cells),
    "CSINode": _recorded("CSINode", _csi_node_cells),
    "CSIStorageCapacity": _recorded("CSIStorageCapacity", _created_at),
    "CertificateSigningRequest": _recorded("CertificateSigningRequest", _csr_cells),
    "FlowSchema": _recorded("FlowSchema", _flow_schema_cells),
    "PriorityLevelConfiguration": _recorded("PriorityLevelConfiguration", _priority_level_cells),
    "IngressClass": _recorded("IngressClass", _ingress_class_cells),
    "LimitRange": _recorded("LimitRange", _created_at),
    "MutatingWebhookConfiguration": _recorded("MutatingWebhookConfiguration", _webhooks_cells),
    "ValidatingWebhookConfiguration": _recorded("ValidatingWebhookConfiguration", _webhooks_cells),
    "NetworkPolicy": _recorded("NetworkPolicy", _network_policy_cells),
    "PodDisruptionBudget": _recorded("PodDisruptionBudget", _pdb_cells),
    "PodTemplate": _recorded("PodTemplate", _pod_template_cells),
    "PriorityClass": _recorded("PriorityClass", _priority_class_cells),
    "ResourceQuota": _recorded("ResourceQuota", _resource_quota_cells),
    "VolumeAttachment": _recorded("VolumeAttachment", _volume_attachment_cells),
}


# ------------------------------------------------------------------------------------------ registry

PRINTERS: Final[dict[str, Printer]] = {
    "Pod": Printer(columns.POD, _pod_cells, _pod_row_conditions),
    "Deployment": Printer(columns.DEPLOYMENT, _deployment_cells),
    "ReplicaSet": Printer(columns.REPLICA_SET, _replicaset_cells),
    "Job": Printer(columns.JOB, _job_cells),
    "Service": Printer(columns.SERVICE, _service_cells),
    "Endpoints": Printer(columns.ENDPOINTS, _endpoints_cells),
    "EndpointSlice": Printer(columns.ENDPOINT_SLICE, _endpoint_slice_cells),
    "PersistentVolumeClaim": Printer(columns.PERSISTENT_VOLUME_CLAIM, _pvc_cells),
    "PersistentVolume": Printer(columns.PERSISTENT_VOLUME, _pv_cells),
    "StorageClass": Printer(columns.STORAGE_CLASS, _storage_class_cells),
    "Namespace": Printer(columns.NAMESPACE, _namespace_cells),
    "Node": Printer(columns.NODE, _node_cells),
    "Event": Printer(columns.EVENT, _event_cells),
    "Lease": Printer(columns.LEASE, _lease_cells),
    "ConfigMap": Printer(columns.CONFIG_MAP, _configmap_cells),
    "Secret": Printer(columns.SECRET, _secret_cells),
    "ServiceAccount": Printer(columns.SERVICE_ACCOUNT, _service_account_cells),
    "RuntimeClass": Printer(columns.RUNTIME_CLASS, _runtime_class_cells),
    "HorizontalPodAutoscaler": _recorded("HorizontalPodAutoscaler", _hpa_cells),
    "StatefulSet": _recorded("StatefulSet", _statefulset_cells),
    "DaemonSet": _recorded("DaemonSet", _daemonset_cells),
    "CronJob": _recorded("CronJob", _cronjob_cells),
    "Role": Printer(columns.ROLE, _role_cells),
    "ClusterRole": Printer(columns.ROLE, _role_cells),
    "RoleBinding": Printer(columns.ROLE_BINDING, _binding_cells),
    "ClusterRoleBinding": Printer(columns.CLUSTER_ROLE_BINDING, _binding_cells),
    # NAME and CREATED AT, as the apiextensions-apiserver prints CRDs.
    "CustomResourceDefinition": Printer(columns.ROLE, _role_cells),
}

GENERIC = Printer(columns.GENERIC, _generic_cells)


def printer_for(kind: str) -> Printer:
    return PRINTERS.get(kind) or CLUSTER_PRINTERS.get(kind, GENERIC)


# ------------------------------------------------------------------------------------------ responses


def partial_object_metadata(obj: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """`PartialObjectMetadata`: the object's metadata alone, as the apiserver reads it from the internal
    object, where a DaemonSet's template generation is a field and not an annotation."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if (kind or obj.get("kind")) == "DaemonSet" and TEMPLATE_GENERATION in annotations:
        kept = {k: v for k, v in annotations.items() if k != TEMPLATE_GENERATION}
        metadata = {k: v for k, v in metadata.items() if k != "annotations"} | (
            {"annotations": kept} if kept else {}
        )
    return {"kind": "PartialObjectMetadata", "apiVersion": META_V1, "metadata": metadata}


def _row_object(obj: dict[str, Any], include_object: str, kind: str | None) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return partial_object_metadata(obj, kind)


def _list_metadata(
    resource_version: str, continue_token: str | None, remaining_item_count: int | None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    return metadata


def to_table(
    kind: str | Printer,
    objects: list[dict[str, Any]],
    *,
    now: datetime,
    include_object: str = "Metadata",
    resource_version: str,
    continue_token: str | None = None,
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1` Table of `objects` (all of `kind`, or printed by the Printer given), rows in
    the order given.

    `include_object` is the request's `includeObject` (`None`, `Metadata` — the default — or
    `Object`); `resource_version` is the list's (or, for a single GET, the object's)."""
    printer = kind if isinstance(kind, Printer) else printer_for(kind)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer.cells(obj, now)}
        conditions = printer.row_conditions(obj) if printer.row_conditions else None
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object, kind if isinstance(kind, str) else None)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": META_V1,
        "metadata": _list_metadata(resource_version, continue_token, remaining_item_count),
        "columnDefinitions": [column.as_dict() for column in printer.columns],
        "rows": rows,
    }


def partial_object_metadata_list(
    objects: list[dict[str, Any]],
    *,
    kind: str | None = None,
    resource_version: str,
    continue_token: str | None = None,
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    """The answer to `Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io`."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": META_V1,
        "metadata": _list_metadata(resource_version, continue_token, remaining_item_count),
        "items": [partial_object_metadata(obj, kind) for obj in objects],
    }

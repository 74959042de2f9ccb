"""Defaulting and validation of the v1.28 kinds beyond workloads, as the apiserver's strategies do them.

These kinds are served so that everything a v1.28 server lists is there (`kubectl api-resources`):
limit ranges, quotas and pod templates; webhook configurations and APIServices; CSRs; events.k8s.io
Events; flow schemas and priority levels; ingress classes and network policies; disruption budgets;
priority classes; the CSI kinds. Each gets the defaults its Go type's `SetDefaults_…` functions give
(golden `tests/golden/apigroups/*_create.json`) and the validation a user meets; what they do to
other objects (quota, limits, priority, budgets) is admission (`quota.py`, `budgets.py`,
`admission.py`). `events_to_core`/`events_from_core` convert events.k8s.io/v1 Events to the core
Events they are stored as, as the apiserver stores both in one place.
"""

from __future__ import annotations

from typing import Any

from planner import quantities
from planner.slim import defaults
from planner.slim.meta import json_copy
from planner.slim.status_errors import Cause
from planner.slim.validators import forbidden, invalid_value, not_supported, required

Obj = dict[str, Any]

SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": (
        2000000000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if "
        "necessary.",
    ),
    "system-node-critical": (
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
}
HIGHEST_USER_PRIORITY = 1000000000


def _setdefault(obj: Obj, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


# --- core/v1 -------------------------------------------------------------------------------------------


def default_limit_range(obj: Obj) -> None:
    """A Container limit's `default` falls back to its `max`, its `defaultRequest` to `default`."""
    for item in (obj.get("spec") or {}).get("limits") or []:
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            if item.get(key):
                item[key] = {name: quantities.canonical(str(value)) for name, value in item[key].items()}
        if item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        request = item.setdefault("defaultRequest", {})
        for name, value in default.items():
            request.setdefault(name, value)
        if not default:
            del item["default"]
        if not request:
            del item["defaultRequest"]


def default_resource_quota(obj: Obj) -> None:
    spec = obj.get("spec") or {}
    if spec.get("hard"):
        spec["hard"] = {name: quantities.canonical(str(value)) for name, value in spec["hard"].items()}


def default_pod_template(obj: Obj) -> None:
    defaults.default_template(obj.setdefault("template", {}))


# --- admissionregistration.k8s.io ------------------------------------------------------------------------


def _default_webhook(webhook: Obj, *, mutating: bool) -> None:
    for rule in webhook.get("rules") or []:
        _setdefault(rule, "scope", "*")
    _setdefault(webhook, "failurePolicy", "Fail")
    _setdefault(webhook, "matchPolicy", "Equivalent")
    _setdefault(webhook, "namespaceSelector", {})
    _setdefault(webhook, "objectSelector", {})
    _setdefault(webhook, "timeoutSeconds", 10)
    service = (webhook.get("clientConfig") or {}).get("service")
    if service is not None:
        _setdefault(service, "port", 443)
    if mutating:
        _setdefault(webhook, "reinvocationPolicy", "Never")


def default_mutating_webhooks(obj: Obj) -> None:
    for webhook in obj.get("webhooks") or []:
        _default_webhook(webhook, mutating=True)


def default_validating_webhooks(obj: Obj) -> None:
    for webhook in obj.get("webhooks") or []:
        _default_webhook(webhook, mutating=False)


def validate_webhooks(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for i, webhook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        if not webhook.get("name"):
            causes.append(required(f"{path}.name"))
        if not webhook.get("sideEffects"):
            causes.append(not_supported(f"{path}.sideEffects", "", ("None", "NoneOnDryRun")))
        if not webhook.get("admissionReviewVersions"):
            causes.append(required(f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1"))
        config = webhook.get("clientConfig") or {}
        if bool(config.get("url")) == bool(config.get("service")):
            causes.append(required(f"{path}.clientConfig", "exactly one of url or service is required"))
    return causes


# --- apiregistration.k8s.io ------------------------------------------------------------------------------


def default_api_service(obj: Obj) -> None:
    service = (obj.get("spec") or {}).get("service")
    if service is not None:
        _setdefault(service, "port", 443)


# --- networking.k8s.io -----------------------------------------------------------------------------------


def default_network_policy(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    for rule in [*(spec.get("ingress") or []), *(spec.get("egress") or [])]:
        for port in rule.get("ports") or []:
            _setdefault(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


# --- scheduling.k8s.io -----------------------------------------------------------------------------------


def default_priority_class(obj: Obj) -> None:
    _setdefault(obj, "preemptionPolicy", "PreemptLowerPriority")


def validate_priority_class(obj: Obj) -> list[Cause]:
    name = str((obj.get("metadata") or {}).get("name", ""))
    value = obj.get("value")
    if name.startswith("system-"):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            detail = (
                "priority class names with 'system-' prefix are reserved for system use only. "
                f"error: {name} is not a known system priority class"
            )
            return [forbidden("metadata.name", detail)]
        if value != known[0]:
            return [forbidden("value", f"value of {name} must be {known[0]}")]
        return []
    if isinstance(value, int) and value > HIGHEST_USER_PRIORITY:
        return [
            forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}")
        ]
    return []


def update_priority_class(new: Obj, old: Obj) -> list[Cause]:
    if new.get("value") != old.get("value"):
        return [forbidden("value", "may not be changed in an update.")]
    return []


# --- policy ------------------------------------------------------------------------------------------


def validate_pdb(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        return [invalid_value("spec", spec, "minAvailable and maxUnavailable cannot be both set")]
    return []


# --- flowcontrol.apiserver.k8s.io ------------------------------------------------------------------------


def default_flow_schema(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    _setdefault(spec, "matchingPrecedence", 1000)
    obj.setdefault("status", {})


def default_priority_level(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    limited = spec.get("limited")
    if spec.get("type") == "Limited" and isinstance(limited, dict):
        _setdefault(limited, "nominalConcurrencyShares", 30)
        _setdefault(limited, "lendablePercent", 0)
        response = limited.setdefault("limitResponse", {"type": "Reject"})
        queuing = response.get("queuing")
        if response.get("type") == "Queue" and isinstance(queuing, dict):
            _setdefault(queuing, "queues", 64)
            _setdefault(queuing, "handSize", 8)
            _setdefault(queuing, "queueLengthLimit", 50)
    obj.setdefault("status", {})


def validate_priority_level(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    if spec.get("type") not in ("Exempt", "Limited"):
        return [not_supported("spec.type", spec.get("type", ""), ("Exempt", "Limited"))]
    response = (spec.get("limited") or {}).get("limitResponse") or {}
    if spec.get("type") == "Limited" and response.get("type") not in ("Queue", "Reject"):
        return [
            not_supported("spec.limited.limitResponse.type", response.get("type", ""), ("Queue", "Reject"))
        ]
    return []


def priority_level_from_v1beta2(obj: Obj) -> Obj:
    """v1beta2 calls v1beta3's `nominalConcurrencyShares` `assuredConcurrencyShares`."""
    return _rename_shares(obj, "assuredConcurrencyShares", "nominalConcurrencyShares", "v1beta3")


def priority_level_to_v1beta2(obj: Obj) -> Obj:
    return _rename_shares(obj, "nominalConcurrencyShares", "assuredConcurrencyShares", "v1beta2")


def _rename_shares(obj: Obj, old: str, new: str, version: str) -> Obj:
    converted = json_copy(obj)
    converted["apiVersion"] = f"flowcontrol.apiserver.k8s.io/{version}"
    limited = (converted.get("spec") or {}).get("limited")
    if isinstance(limited, dict) and old in limited:
        limited[new] = limited.pop(old)
    return converted


def flow_schema_as(version: str) -> Any:
    def convert(obj: Obj) -> Obj:
        return {**obj, "apiVersion": f"flowcontrol.apiserver.k8s.io/{version}"}

    return convert


# --- storage.k8s.io --------------------------------------------------------------------------------------


def default_csi_driver(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),
    ):
        _setdefault(spec, key, value)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def default_volume_attachment(obj: Obj) -> None:
    obj.setdefault("status", {}).setdefault("attached", False)


def default_storage_capacity(obj: Obj) -> None:
    for key in ("capacity", "maximumVolumeSize"):
        if obj.get(key) is not None:
            obj[key] = quantities.canonical(str(obj[key]))


# --- certificates.k8s.io ---------------------------------------------------------------------------------


REQUESTER_FIELDS = ("username", "uid", "groups", "extra")


def with_requester(obj: Obj, user_info: Obj) -> Obj:
    """A new CSR with its requesting user in `spec`, whatever the body said (the CSR strategy's)."""
    spec = {k: v for k, v in (obj.get("spec") or {}).items() if k not in REQUESTER_FIELDS}
    return {**obj, "spec": {**spec, **user_info}}


def drop_requester(obj: Obj) -> None:
    """The creator does not own the requester fields the server wrote."""
    for key in REQUESTER_FIELDS:
        (obj.get("spec") or {}).pop(key, None)


def validate_csr(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = [] if spec.get("request") else [required("spec.request")]
    if not spec.get("signerName"):
        causes.append(required("spec.signerName"))
    if not spec.get("usages"):
        causes.append(required("spec.usages"))
    return causes


# --- events.k8s.io ---------------------------------------------------------------------------------------

_EVENT_RENAMES = (  # events.k8s.io/v1 field, core/v1 field
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)


def events_to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event as the core/v1 Event it is stored as."""
    return _renamed(obj, _EVENT_RENAMES, "v1", ("source", "firstTimestamp", "lastTimestamp"))


def events_from_core(obj: Obj) -> Obj:
    reverse = tuple((core, new) for new, core in _EVENT_RENAMES)
    defaulted = ("deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp")
    return _renamed(obj, reverse, "events.k8s.io/v1", defaulted)


def _renamed(
    obj: Obj, renames: tuple[tuple[str, str], ...], api_version: str, defaulted: tuple[str, ...]
) -> Obj:
    """`obj` in the other version: each (from, to) field renamed, the other fields kept, and the
    `defaulted` ones (a source, then two timestamps) present: an empty source, null timestamps."""
    renamed = {k: v for k, v in obj.items() if k not in {before for before, _ in renames}}
    renamed["apiVersion"] = api_version
    for before, after in renames:
        if before in obj:
            renamed[after] = obj[before]
    source, *stamps = defaulted
    renamed.setdefault(source, {})
    for stamp in stamps:
        renamed.setdefault(stamp, None)
    return renamed

"""Validation per kind: create rules and update rules (immutable fields), as lists of causes.

Validators never raise; they return `Cause`s so that, like the apiserver, every problem of an object
is reported in one 422 (golden `error_invalid_multiple_causes.json`). Messages follow the apiserver's
wording, including Go's `%#v` rendering of the offending value (`map[string]string{"app":"web"}`).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from planner import cron
from planner.slim.status_errors import Cause

Validator = Callable[[dict[str, Any]], list[Cause]]
UpdateValidator = Callable[[dict[str, Any], dict[str, Any]], list[Cause]]

SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NAME_PART_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
ANNOTATIONS_MAX_BYTES = 262144
DATA_MAX_BYTES = 1048576  # core.MaxSecretSize: a ConfigMap's or Secret's data, in bytes

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


# --- cause constructors -------------------------------------------------------------------------------


def go_repr(value: Any) -> str:
    """Go's `%#v` for the value shapes that appear in messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        inner = ", ".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(value.items()))
        return "map[string]string{" + inner + "}"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True)


def label_selector_repr(selector: dict[str, Any] | None) -> str:
    selector = selector or {}
    labels = selector.get("matchLabels")
    labels_repr = go_repr(labels) if labels else "map[string]string(nil)"
    exprs = selector.get("matchExpressions")
    exprs_repr = json.dumps(exprs) if exprs else "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{labels_repr}, MatchExpressions:{exprs_repr}}}"


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def invalid_value(path: str, value: Any, detail: str, *, rendered: str | None = None) -> Cause:
    shown = rendered if rendered is not None else go_repr(value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(json.dumps(s) for s in supported)
    return Cause(
        "FieldValueNotSupported", f"Unsupported value: {go_repr(value)}: supported values: {listed}", path
    )


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_repr(value)}", path)


def not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", f"Not found: {go_repr(value)}", path)


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: must have at most {limit} bytes", path)


def immutable(path: str, value: Any, *, rendered: str | None = None) -> Cause:
    return invalid_value(path, value, "field is immutable", rendered=rendered)


# --- metadata -----------------------------------------------------------------------------------------

NameRule = str  # "subdomain" | "label" | "dns1035" | "path" (RBAC's path segment names)


def validate_name(name: str, rule: NameRule, path: str = "metadata.name") -> list[Cause]:
    if rule == "path":
        return [invalid_value(path, name, message) for message in path_segment_problems(name)]
    if rule == "subdomain":
        pattern, message, limit = SUBDOMAIN_RE, SUBDOMAIN_MSG, 253
    elif rule == "dns1035":
        pattern, message, limit = DNS1035_RE, DNS1035_MSG, 63
    else:
        pattern, message, limit = LABEL_RE, LABEL_MSG, 63
    causes = []
    if len(name) > limit:
        causes.append(invalid_value(path, name, f"must be no more than {limit} characters"))
    if not pattern.match(name):
        causes.append(invalid_value(path, name, message))
    return causes


def path_segment_problems(name: str) -> list[str]:
    """apimachinery's `IsValidPathSegmentName`: any name that is safe as one URL path segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in name]


def validate_qualified_key(key: str, path: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    causes = []
    if prefix and (len(prefix) > 253 or not SUBDOMAIN_RE.match(prefix)):
        causes.append(invalid_value(path, key, "prefix part " + SUBDOMAIN_MSG))
    if not name:
        causes.append(invalid_value(path, key, "name part must be non-empty"))
    elif len(name) > 63:
        causes.append(invalid_value(path, key, "name part must be no more than 63 characters"))
    elif not NAME_PART_RE.match(name):
        causes.append(invalid_value(path, key, NAME_PART_MSG))
    return causes


def validate_labels(labels: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key, value in (labels or {}).items():
        causes += validate_qualified_key(key, path)
        text = "" if value is None else str(value)
        if len(text) > 63:
            causes.append(invalid_value(path, text, "must be no more than 63 characters"))
        if not LABEL_VALUE_RE.match(text):
            causes.append(invalid_value(path, text, LABEL_VALUE_MSG))
    return causes


def validate_annotations(annotations: Any, path: str = "metadata.annotations") -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in (annotations or {}).items():
        causes += validate_qualified_key(key.lower(), path)
        total += len(key) + len(str(value))
    if total > ANNOTATIONS_MAX_BYTES:
        causes.append(too_long(path, ANNOTATIONS_MAX_BYTES))
    return causes


def validate_metadata(obj: dict[str, Any], name_rule: NameRule) -> list[Cause]:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    causes = (
        validate_name(name, name_rule)
        if name
        else [required("metadata.name", "name or generateName is required")]
    )
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_annotations(meta.get("annotations"))
    return causes


# --- pod specs ----------------------------------------------------------------------------------------


def validate_container(container: dict[str, Any], path: str, volumes: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = container.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes += validate_name(str(name), "label", f"{path}.name")
    if not container.get("image"):
        causes.append(required(f"{path}.image"))
    for i, port in enumerate(container.get("ports") or []):
        number = port.get("containerPort")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(
                invalid_value(
                    f"{path}.ports[{i}].containerPort", number, "must be between 1 and 65535, inclusive"
                )
            )
        if port.get("protocol") not in ("TCP", "UDP", "SCTP"):
            causes.append(
                not_supported(f"{path}.ports[{i}].protocol", port.get("protocol"), ("SCTP", "TCP", "UDP"))
            )
    for i, mount in enumerate(container.get("volumeMounts") or []):
        if mount.get("name") not in volumes:
            causes.append(not_found(f"{path}.volumeMounts[{i}].name", mount.get("name")))
        if not mount.get("mountPath"):
            causes.append(required(f"{path}.volumeMounts[{i}].mountPath"))
    policy = container.get("imagePullPolicy")
    if policy not in ("Always", "IfNotPresent", "Never"):
        causes.append(not_supported(f"{path}.imagePullPolicy", policy, ("Always", "IfNotPresent", "Never")))
    return causes


def validate_pod_spec(
    spec: dict[str, Any], path: str, *, restart_policies: tuple[str, ...] | None = None
) -> list[Cause]:
    causes, volumes = _validate_volumes(spec, path)
    if not spec.get("containers"):
        causes.append(required(f"{path}.containers"))
    causes += _validate_containers(spec, path, volumes)
    return causes + _validate_pod_policies(spec, path, restart_policies)


def _validate_volumes(spec: dict[str, Any], path: str) -> tuple[list[Cause], set[str]]:
    causes: list[Cause] = []
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        vname = volume.get("name") or ""
        if vname in volumes:
            causes.append(duplicate(f"{path}.volumes[{i}].name", vname))
        volumes.add(vname)
    return causes, volumes


def _validate_containers(spec: dict[str, Any], path: str, volumes: set[str]) -> list[Cause]:
    """Every container and init container; names are unique across both lists."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            causes += validate_container(container, f"{path}.{key}[{i}]", volumes)
            causes += _validate_restart_policy(container, f"{path}.{key}[{i}]", init=key == "initContainers")
            cname = container.get("name") or ""
            if cname and cname in seen:
                causes.append(duplicate(f"{path}.{key}[{i}].name", cname))
            seen.add(cname)
    return causes


INIT_ONLY_WITH_RESTART = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _validate_restart_policy(container: dict[str, Any], path: str, *, init: bool) -> list[Cause]:
    """A container's own restartPolicy (v1.29, sidecars on): only an init container may set it, only to
    Always (a sidecar), and only a sidecar among init containers may have probes or lifecycle hooks."""
    policy = container.get("restartPolicy")
    if not init:
        return (
            [forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")] if policy else []
        )
    causes = []
    if policy is not None and policy != "Always":
        causes.append(not_supported(f"{path}.restartPolicy", policy, ("Always",)))
    if policy != "Always":
        detail = "may not be set for init containers without restartPolicy=Always"
        causes += [forbidden(f"{path}.{key}", detail) for key in INIT_ONLY_WITH_RESTART if container.get(key)]
    return causes


DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
RESTART_POLICIES = ("Always", "OnFailure", "Never")


def _validate_pod_policies(spec: dict[str, Any], path: str, restart: tuple[str, ...] | None) -> list[Cause]:
    causes: list[Cause] = []
    policy = spec.get("restartPolicy")
    if policy not in RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    elif restart and policy not in restart:
        causes.append(not_supported(f"{path}.restartPolicy", policy, restart))
    if spec.get("dnsPolicy") not in DNS_POLICIES:
        causes.append(not_supported(f"{path}.dnsPolicy", spec.get("dnsPolicy"), DNS_POLICIES))
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        detail = "must be greater than or equal to 0"
        causes.append(invalid_value(f"{path}.terminationGracePeriodSeconds", grace, detail))
    return causes


def validate_pod(obj: dict[str, Any]) -> list[Cause]:
    return validate_pod_spec(obj.get("spec") or {}, "spec")


def _validate_template(
    spec: dict[str, Any], path: str, restart: tuple[str, ...] | None = None
) -> list[Cause]:
    template = spec.get("template") or {}
    meta = template.get("metadata") or {}
    causes = validate_labels(meta.get("labels"), f"{path}.metadata.labels")
    return causes + validate_pod_spec(template.get("spec") or {}, f"{path}.spec", restart_policies=restart)


def _non_negative(spec: dict[str, Any], key: str, path: str) -> list[Cause]:
    value = spec.get(key)
    if isinstance(value, int) and value < 0:
        return [invalid_value(f"{path}.{key}", value, "must be greater than or equal to 0")]
    return []


def _selector_matches_template(spec: dict[str, Any], path: str) -> list[Cause]:
    from planner.slim.selectors import selector_from_label_selector

    selector = spec.get("selector")
    if not selector:
        return [required(f"{path}.selector")]
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [
            invalid_value(
                f"{path}.selector",
                None,
                "empty selector is invalid for deployment",
                rendered="v1.LabelSelector{}",
            )
        ]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector_from_label_selector(selector).matches(labels):
        return [
            invalid_value(
                f"{path}.template.metadata.labels", labels, "`selector` does not match template `labels`"
            )
        ]
    return []


def validate_deployment(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = _non_negative(spec, "replicas", "spec")
    causes += _selector_matches_template(spec, "spec")
    causes += _validate_template(spec, "spec.template")
    strategy = (spec.get("strategy") or {}).get("type")
    if strategy not in ("RollingUpdate", "Recreate"):
        causes.append(not_supported("spec.strategy.type", strategy, ("Recreate", "RollingUpdate")))
    return causes


def validate_replicaset(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    return (
        _non_negative(spec, "replicas", "spec")
        + _selector_matches_template(spec, "spec")
        + _validate_template(spec, "spec.template")
    )


def validate_statefulset(obj: dict[str, Any]) -> list[Cause]:
    """As a ReplicaSet, with each claim template standing for the pod volume of its name: the
    controller adds those volumes, so mounts may name them (kube-apiserver never checks the pair)."""
    spec = obj.get("spec") or {}
    template = dict(spec.get("template") or {})
    pod = dict(template.get("spec") or {})
    claims = [(c.get("metadata") or {}).get("name") for c in spec.get("volumeClaimTemplates") or []]
    declared = {v.get("name") for v in pod.get("volumes") or []}
    added = [
        {"name": n, "persistentVolumeClaim": {"claimName": n}} for n in claims if n and n not in declared
    ]
    pod["volumes"] = [*(pod.get("volumes") or []), *added]
    return validate_replicaset({**obj, "spec": {**spec, "template": {**template, "spec": pod}}})


def validate_daemonset(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _selector_matches_template(spec, "spec") + _validate_template(spec, "spec.template")


def validate_cronjob(obj: dict[str, Any]) -> list[Cause]:
    """The schedule and time zone must parse, as the CronJob controller will read them."""
    spec = obj.get("spec") or {}
    schedule = spec.get("schedule")
    if not schedule:
        return [required("spec.schedule")]
    causes: list[Cause] = []
    if "TZ" in str(schedule):
        causes.append(
            invalid_value(
                "spec.schedule", schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            )
        )
    else:
        try:
            cron.parse(str(schedule))
        except cron.CronError as exc:
            causes.append(invalid_value("spec.schedule", schedule, str(exc)))
    time_zone = spec.get("timeZone")
    if time_zone is not None:
        try:
            cron.zone(str(time_zone))
        except cron.CronError as exc:
            causes.append(invalid_value("spec.timeZone", time_zone, str(exc)))
    return causes


def validate_job(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    for key in (
        "parallelism",
        "completions",
        "backoffLimit",
        "activeDeadlineSeconds",
        "ttlSecondsAfterFinished",
    ):
        causes += _non_negative(spec, key, "spec")
    return causes + _validate_template(spec, "spec.template", ("OnFailure", "Never"))


def validate_service(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    kind = spec.get("type")
    types = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    if kind not in types:
        causes.append(not_supported("spec.type", kind, types))
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        number = port.get("port")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(
                invalid_value(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive")
            )
        pname = port.get("name") or ""
        if len(ports) > 1 and not pname:
            causes.append(required(f"spec.ports[{i}].name"))
        if pname and pname in names:
            causes.append(duplicate(f"spec.ports[{i}].name", pname))
        names.add(pname)
    if kind == "ExternalName" and not spec.get("externalName"):
        causes.append(required("spec.externalName"))
    return causes


def validate_pvc(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    modes = spec.get("accessModes") or []
    if not modes:
        causes.append(required("spec.accessModes", "at least 1 access mode is required"))
    allowed = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
    for i, mode in enumerate(modes):
        if mode not in allowed:
            causes.append(not_supported(f"spec.accessModes[{i}]", mode, allowed))
    if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
        causes.append(required("spec.resources[storage]"))
    if spec.get("volumeMode") not in ("Block", "Filesystem"):
        causes.append(not_supported("spec.volumeMode", spec.get("volumeMode"), ("Block", "Filesystem")))
    return causes


def validate_pv(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    if not (spec.get("capacity") or {}).get("storage"):
        causes.append(required("spec.capacity"))
    if not spec.get("accessModes"):
        causes.append(required("spec.accessModes"))
    return causes


def validate_config_keys(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for field in ("data", "binaryData"):
        for key in obj.get(field) or {}:
            if not CONFIG_KEY_RE.match(key):
                causes.append(invalid_value(f"{field}[{key}]", key, CONFIG_KEY_MSG))
    return causes


def validate_configmap(obj: dict[str, Any]) -> list[Cause]:
    """Keys, and at most 1 MiB of data and binaryData values together (reported on the path `[]`)."""
    total = sum(len(str(value).encode()) for value in (obj.get("data") or {}).values())
    total += sum(len(base64.b64decode(str(value))) for value in (obj.get("binaryData") or {}).values())
    return validate_config_keys(obj) + ([too_long("[]", DATA_MAX_BYTES)] if total > DATA_MAX_BYTES else [])


def validate_secret(obj: dict[str, Any]) -> list[Cause]:
    """Keys, and at most 1 MiB of decoded data (stringData is already folded into data)."""
    total = sum(len(base64.b64decode(str(value))) for value in (obj.get("data") or {}).values())
    return validate_config_keys(obj) + ([too_long("data", DATA_MAX_BYTES)] if total > DATA_MAX_BYTES else [])


def validate_runtimeclass(obj: dict[str, Any]) -> list[Cause]:
    handler = obj.get("handler")
    if not handler:
        return [required("handler")]
    return validate_name(str(handler), "label", "handler")


def validate_storageclass(obj: dict[str, Any]) -> list[Cause]:
    causes = [] if obj.get("provisioner") else [required("provisioner")]
    mode = obj.get("volumeBindingMode")
    if mode not in ("Immediate", "WaitForFirstConsumer"):
        causes.append(not_supported("volumeBindingMode", mode, ("Immediate", "WaitForFirstConsumer")))
    return causes


def validate_lease(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    return _non_negative(spec, "leaseDurationSeconds", "spec") + _non_negative(
        spec, "leaseTransitions", "spec"
    )


def validate_event(obj: dict[str, Any]) -> list[Cause]:
    involved = obj.get("involvedObject") or {}
    namespace = (obj.get("metadata") or {}).get("namespace")
    if involved.get("namespace") and involved.get("namespace") != namespace:
        return [
            invalid_value(
                "involvedObject.namespace", involved.get("namespace"), "does not match event.namespace"
            )
        ]
    return []


# --- RBAC ---------------------------------------------------------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _validate_rule(rule: dict[str, Any], namespaced: bool, path: str) -> list[Cause]:
    causes = [] if rule.get("verbs") else [required(f"{path}.verbs", "verbs must contain at least one value")]
    urls = rule.get("nonResourceURLs")
    if urls:
        if namespaced:
            detail = "namespaced rules cannot apply to non-resource URLs"
            causes.append(invalid_value(f"{path}.nonResourceURLs", urls, detail))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            detail = "rules cannot apply to both regular resources and non-resource URLs"
            causes.append(invalid_value(f"{path}.nonResourceURLs", urls, detail))
        return causes
    if not rule.get("apiGroups"):
        causes.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        causes.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return causes


def _validate_rules(obj: dict[str, Any], namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(obj.get("rules") or []):
        causes += _validate_rule(rule if isinstance(rule, dict) else {}, namespaced, f"rules[{i}]")
    return causes


def validate_role(obj: dict[str, Any]) -> list[Cause]:
    return _validate_rules(obj, namespaced=True)


def validate_cluster_role(obj: dict[str, Any]) -> list[Cause]:
    causes = _validate_rules(obj, namespaced=False)
    aggregation = obj.get("aggregationRule")
    if aggregation is not None and not (aggregation or {}).get("clusterRoleSelectors"):
        detail = "at least one clusterRoleSelector required if aggregationRule is non-nil"
        causes.append(required("aggregationRule.clusterRoleSelectors", detail))
    return causes


def _validate_role_ref(ref: dict[str, Any], kinds: tuple[str, ...]) -> list[Cause]:
    causes: list[Cause] = []
    if ref.get("apiGroup") != RBAC_GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (RBAC_GROUP,)))
    if ref.get("kind") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind", ""), kinds))
    name = str(ref.get("name") or "")
    if not name:
        return [*causes, required("roleRef.name")]
    return causes + validate_name(name, "path", "roleRef.name")


def _validate_subject(subject: dict[str, Any], namespaced: bool, path: str) -> list[Cause]:
    name, kind, group = str(subject.get("name") or ""), subject.get("kind"), subject.get("apiGroup", "")
    causes = [] if name else [required(f"{path}.name")]
    if kind == "ServiceAccount":
        if name:
            causes += validate_name(name, "subdomain", f"{path}.name")
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, ("",)))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if not name:
            causes.append(invalid_value(f"{path}.name", name, f"{str(kind).lower()} name cannot be empty"))
        if group != RBAC_GROUP:
            causes.append(not_supported(f"{path}.apiGroup", group, (RBAC_GROUP,)))
    else:
        causes.append(not_supported(f"{path}.kind", kind or "", SUBJECT_KINDS))
    return causes


def _validate_binding(obj: dict[str, Any], namespaced: bool, kinds: tuple[str, ...]) -> list[Cause]:
    causes = _validate_role_ref(obj.get("roleRef") or {}, kinds)
    for i, subject in enumerate(obj.get("subjects") or []):
        causes += _validate_subject(
            subject if isinstance(subject, dict) else {}, namespaced, f"subjects[{i}]"
        )
    return causes


def validate_role_binding(obj: dict[str, Any]) -> list[Cause]:
    return _validate_binding(obj, True, ("Role", "ClusterRole"))


def validate_cluster_role_binding(obj: dict[str, Any]) -> list[Cause]:
    return _validate_binding(obj, False, ("ClusterRole",))


def update_role_binding(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    ref = new.get("roleRef") or {}
    if ref == (old.get("roleRef") or {}):
        return []
    fields = ", ".join(f"{key}:{json.dumps(str(ref.get(k, '')))}" for key, k in _ROLE_REF_FIELDS)
    return [invalid_value("roleRef", ref, "cannot change roleRef", rendered=f"rbac.RoleRef{{{fields}}}")]


_ROLE_REF_FIELDS = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))


# --- autoscaling ---------------------------------------------------------------------------------------


def _validate_target_ref(ref: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("kind", "name"):
        value = str(ref.get(key) or "")
        if not value:
            causes.append(required(f"{path}.{key}"))
        else:
            causes += [invalid_value(f"{path}.{key}", value, m) for m in path_segment_problems(value)]
    return causes


def validate_hpa(obj: dict[str, Any]) -> list[Cause]:
    """autoscaling/v2 HorizontalPodAutoscaler (the stored form of both served versions)."""
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(low, int) and low < 1:
        causes.append(invalid_value("spec.minReplicas", low, "must be greater than or equal to 1"))
    if not isinstance(high, int) or high < 1:
        causes.append(invalid_value("spec.maxReplicas", high or 0, "must be greater than 0"))
    if isinstance(low, int) and isinstance(high, int) and high < low:
        causes.append(
            invalid_value("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`")
        )
    causes += _validate_target_ref(spec.get("scaleTargetRef") or {}, "spec.scaleTargetRef")
    for i, metric in enumerate(spec.get("metrics") or []):
        if not (metric or {}).get("type"):
            causes.append(required(f"spec.metrics[{i}].type", "must specify a metric source type"))
    return causes


# --- updates ------------------------------------------------------------------------------------------


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def update_deployment(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    if _spec(new).get("selector") != _spec(old).get("selector"):
        selector = _spec(new).get("selector")
        return [immutable("spec.selector", selector, rendered=label_selector_repr(selector))]
    return []


update_replicaset = update_deployment


def update_job(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("selector", "completionMode", "completions"):
        if _spec(new).get(key) != _spec(old).get(key):
            value = _spec(new).get(key)
            rendered = label_selector_repr(value) if key == "selector" else None
            causes.append(immutable(f"spec.{key}", value, rendered=rendered))
    if _spec(new).get("template") != _spec(old).get("template") and not _spec(old).get("suspend"):
        causes.append(immutable("spec.template", None, rendered="core.PodTemplateSpec{…}"))
    return causes


POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def update_pod(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    if _pod_spec_without_mutable(_spec(new)) != _pod_spec_without_mutable(_spec(old)):
        return [forbidden("spec", POD_UPDATE_MESSAGE)]
    old_tolerations = _spec(old).get("tolerations") or []
    new_tolerations = _spec(new).get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        return [
            forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
        ]
    return []


def _pod_spec_without_mutable(spec: dict[str, Any]) -> dict[str, Any]:
    stripped = {
        k: v
        for k, v in spec.items()
        if k not in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "nodeName")
    }
    for key in ("containers", "initContainers"):
        if key in stripped:
            stripped[key] = [{k: v for k, v in c.items() if k != "image"} for c in stripped[key]]
    return stripped


def update_service(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    new_ips, old_ips = _spec(new).get("clusterIPs"), _spec(old).get("clusterIPs")
    if old_ips and new_ips and new_ips[0] != old_ips[0]:
        return [invalid_value("spec.clusterIPs[0]", new_ips, "may not change once set")]
    if _spec(old).get("clusterIP") and _spec(new).get("clusterIP") not in (None, _spec(old).get("clusterIP")):
        return [invalid_value("spec.clusterIP", _spec(new).get("clusterIP"), "field is immutable")]
    return []


PVC_UPDATE_MESSAGE = "spec is immutable after creation except resources.requests for bound claims"


def update_pvc(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    bound = (old.get("status") or {}).get("phase") == "Bound"
    # Binding sets volumeName once, on a claim that has none yet (the persistentvolume controller).
    binding = not _spec(old).get("volumeName")
    new_spec = {
        k: v
        for k, v in _spec(new).items()
        if not (bound and k == "resources") and not (binding and k == "volumeName")
    }
    old_spec = {k: v for k, v in _spec(old).items() if not (bound and k == "resources")}
    if new_spec != old_spec:
        return [forbidden("spec", PVC_UPDATE_MESSAGE)]
    return []


def update_immutable_data(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    if not old.get("immutable"):
        return []
    causes = []
    for field in ("data", "binaryData"):
        if new.get(field) != old.get(field):
            causes.append(forbidden(field, "field is immutable when `immutable` is set"))
    if not new.get("immutable"):
        causes.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    return causes


def update_secret(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes = update_immutable_data(new, old)
    if new.get("type") != old.get("type"):
        causes.append(immutable("type", new.get("type")))
    return causes


def update_storageclass(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes = []
    for field in ("parameters", "provisioner"):
        if new.get(field) != old.get(field):
            causes.append(forbidden(field, f"updates to {field} are forbidden."))
    for field in ("reclaimPolicy", "volumeBindingMode"):
        if new.get(field) != old.get(field):
            causes.append(forbidden(field, f"updates to {field} are forbidden."))
    return causes


def update_runtimeclass(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    if new.get("handler") != old.get("handler"):
        return [immutable("handler", new.get("handler"))]
    return []

"""RBAC: whether a user may make a request, decided from Roles, ClusterRoles and their bindings as the
apiserver's RBAC authorizer decides it.

A rule allows a resource request when its verbs, API groups, resources and resource names all match
(`*` matches any verb, group or resource, subresources included; `*/scale` matches the `scale`
subresource of any resource; no `resourceNames` means every name), and a non-resource request when
its verbs and `nonResourceURLs` match (a trailing `*` matches by prefix). Rules come from the
ClusterRoleBindings whose subjects include the user (their ClusterRole applies everywhere), then from
the RoleBindings of the request's namespace (a Role of that namespace, or a ClusterRole applied to it
only). A ServiceAccount subject without a namespace means the binding's own. Nothing denies: what no
rule allows is forbidden, with the apiserver's message; a binding whose role is missing adds
`RBAC: role.rbac.authorization.k8s.io "x" not found` to it.

Aggregation: a ClusterRole with an `aggregationRule` holds the rules of every other ClusterRole its
selectors match, in selector order, then by name, duplicates dropped, as the aggregation controller
writes them.

Pure: the roles and bindings come from a `Policy` (the store, in the server).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from planner.slim.requestinfo import RequestInfo
from planner.slim.selectors import selector_from_label_selector
from planner.slim.status_errors import StatusError, status_body
from planner.slim.users import User, service_account_name

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
ALL = "*"


@dataclass(frozen=True)
class Attributes:
    """What is asked (the request's verb, resource or path…), by whom: the authorizer's input."""

    user: User
    request: RequestInfo


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Rules:
    """Everything a user may do in a namespace: resource and non-resource rules, and the errors met
    (bindings to missing roles) on the way."""

    resource_rules: list[Obj] = field(default_factory=list)
    non_resource_rules: list[Obj] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Policy(Protocol):
    """Where the authorizer reads roles and bindings (in name order)."""

    def cluster_role_bindings(self) -> list[Obj]: ...

    def role_bindings(self, namespace: str) -> list[Obj]: ...

    def cluster_role(self, name: str) -> Obj | None: ...

    def role(self, namespace: str, name: str) -> Obj | None: ...


# --- rule matching ------------------------------------------------------------------------------------


def _has(values: Any, wanted: str) -> bool:
    return any(value in (ALL, wanted) for value in values or ())


def resource_matches(rule: Obj, resource: str, subresource: str) -> bool:
    """`resource` is the combined `resource/subresource`; `*/<subresource>` matches any resource's."""
    for allowed in rule.get("resources") or ():
        if allowed in (ALL, resource):
            return True
        if subresource and allowed == f"*/{subresource}":
            return True
    return False


def url_matches(rule: Obj, path: str) -> bool:
    for allowed in rule.get("nonResourceURLs") or ():
        if allowed in (ALL, path) or (allowed.endswith("*") and path.startswith(allowed.rstrip("*"))):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    asked = attrs.request
    if not _has(rule.get("verbs"), asked.verb):
        return False
    if not asked.resource_request:
        return url_matches(rule, asked.path)
    names = rule.get("resourceNames") or ()
    return (
        _has(rule.get("apiGroups"), asked.api_group)
        and resource_matches(rule, asked.qualified_resource, asked.subresource)
        and (not names or asked.name in names)
    )


# --- subjects and bindings ----------------------------------------------------------------------------


def subject_applies(subject: Obj, user: User, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == service_account_name(namespace, name)
    return False


def _applicable_subject(binding: Obj, user: User, namespace: str) -> Obj | None:
    return next((s for s in binding.get("subjects") or () if subject_applies(s, user, namespace)), None)


def _describe_subject(subject: Obj, binding_namespace: str) -> str:
    name = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or binding_namespace}"
    return f'{subject.get("kind")} "{name}"'


def _describe(binding: Obj, subject: Obj, namespace: str) -> str:
    ref = binding.get("roleRef") or {}
    meta = binding.get("metadata") or {}
    if namespace:
        what = f'RoleBinding "{meta.get("name")}/{namespace}"'
    else:
        what = f'ClusterRoleBinding "{meta.get("name")}"'
    return f'{what} of {ref.get("kind")} "{ref.get("name")}" to {_describe_subject(subject, namespace)}'


# --- the authorizer -----------------------------------------------------------------------------------

Visit = tuple[str, Obj | None, str | None]  # (where a rule comes from, the rule, or an error)


class Authorizer:
    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def authorize(self, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for source, rule, error in self._visit(attrs.user, attrs.request.namespace):
            if rule is not None and rule_allows(rule, attrs):
                return Decision(True, f"RBAC: allowed by {source}")
            if error:
                errors.append(error)
        return Decision(False, f"RBAC: {_aggregate(errors)}" if errors else "")

    def rules_for(self, user: User, namespace: str) -> Rules:
        rules = Rules()
        for _source, rule, error in self._visit(user, namespace):
            if error:
                rules.errors.append(error)
            if rule is None:
                continue
            if rule.get("resources"):
                rules.resource_rules.append(_resource_rule(rule))
            if rule.get("nonResourceURLs"):
                rules.non_resource_rules.append(
                    {"verbs": list(rule.get("verbs") or ()), "nonResourceURLs": list(rule["nonResourceURLs"])}
                )
        return rules

    def _visit(self, user: User, namespace: str) -> Iterator[Visit]:
        for binding in self.policy.cluster_role_bindings():
            yield from self._binding_rules(binding, user, "")
        if namespace:
            for binding in self.policy.role_bindings(namespace):
                yield from self._binding_rules(binding, user, namespace)

    def _binding_rules(self, binding: Obj, user: User, namespace: str) -> Iterator[Visit]:
        subject = _applicable_subject(binding, user, namespace)
        if subject is None:
            return
        role, error = self._role(binding.get("roleRef") or {}, namespace)
        if error:
            yield "", None, error
            return
        source = _describe(binding, subject, namespace)
        for rule in (role or {}).get("rules") or ():
            yield source, rule, None

    def _role(self, ref: Obj, namespace: str) -> tuple[Obj | None, str | None]:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        if kind == "ClusterRole":
            role = self.policy.cluster_role(name)
        elif kind == "Role" and namespace:
            role = self.policy.role(namespace, name)
        else:
            return None, f'unsupported role reference kind: "{kind}"'
        if role is None:
            return None, f'{str(kind).lower()}.{GROUP} "{name}" not found'
        return role, None


def _resource_rule(rule: Obj) -> Obj:
    out: Obj = {"verbs": list(rule.get("verbs") or ())}
    for key in ("apiGroups", "resources", "resourceNames"):
        if rule.get(key):
            out[key] = list(rule[key])
    return out


def _aggregate(errors: list[str]) -> str:
    """apimachinery's aggregate error: one message alone, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


# --- the 403 ------------------------------------------------------------------------------------------


def forbidden_message(attrs: Attributes) -> str:
    user, asked = attrs.user.name, attrs.request
    if not asked.resource_request:
        return f'User "{user}" cannot {asked.verb} path "{asked.path}"'
    where = f'in the namespace "{asked.namespace}"' if asked.namespace else "at the cluster scope"
    return (
        f'User "{user}" cannot {asked.verb} resource "{asked.qualified_resource}" '
        f'in API group "{asked.api_group}" {where}'
    )


def forbidden(attrs: Attributes, reason: str = "") -> StatusError:
    """The apiserver's 403 for a request no rule allows: the message names the user, verb, resource,
    group and namespace (or the path); details give the group, the resource (as `kind`) and the name."""
    asked = attrs.request
    detail = forbidden_message(attrs) + (f": {reason}" if reason else "")
    details: Obj = {}
    if not asked.resource_request:
        message = f"forbidden: {detail}"
    else:
        qualified = f"{asked.resource}.{asked.api_group}" if asked.api_group else asked.resource
        named = f' "{asked.name}"' if asked.name else ""
        message = f"{qualified}{named} is forbidden: {detail}"
        if asked.name:
            details["name"] = asked.name
        if asked.api_group:
            details["group"] = asked.api_group
        details["kind"] = asked.resource
    body = status_body(403, "Forbidden", message)
    body["details"] = details
    body["code"] = body.pop("code")
    return StatusError(403, body)


# --- aggregation --------------------------------------------------------------------------------------


def aggregated_rules(role: Obj, cluster_roles: list[Obj]) -> list[Obj] | None:
    """The rules an aggregated ClusterRole should hold, given every ClusterRole; None if it aggregates
    nothing (no `aggregationRule`)."""
    aggregation = role.get("aggregationRule")
    if aggregation is None:
        return None
    own_name = (role.get("metadata") or {}).get("name")
    by_name = sorted(cluster_roles, key=lambda r: str((r.get("metadata") or {}).get("name")))
    rules: list[Obj] = []
    for selector_spec in aggregation.get("clusterRoleSelectors") or ():
        selector = selector_from_label_selector(selector_spec)
        for other in by_name:
            meta: Mapping[str, Any] = other.get("metadata") or {}
            if meta.get("name") == own_name or not selector.matches(meta.get("labels") or {}):
                continue
            for rule in other.get("rules") or ():
                if rule not in rules:
                    rules.append(rule)
    return rules

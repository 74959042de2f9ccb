"""Subresources: writes through one part of an object — status, scale, pods/binding, namespaces/finalize.

Each builds the new object from the stored one by its own rules and commits it through the API
core's write steps (`Api.write_update`, `Api.commit_update`), so managedFields (with
`subresource: …`), dry run, resourceVersions and watch events are those of any other write:

- status: the stored object with the sent `status` (quantities canonical) and, for kinds whose
  status strategy takes them (`status_takes_annotations`: Deployment's revision annotation), the
  sent annotations; spec changes are ignored;
- scale (`autoscaling/v1` Scale): GET reads and PUT/PATCH set `spec.replicas` of a kind with `scale`
  among its subresources (Deployment, ReplicaSet);
- pods/binding: sets a Pod's `spec.nodeName`, once, and its PodScheduled condition, as the scheduler
  does; answers a Status with code 201;
- namespaces/finalize: drops a Namespace's `spec.finalizers` (the namespace controller, in process);
- serviceaccounts/token (TokenRequest, `kubectl create token`): a token for the ServiceAccount, signed
  with the API's key, for the audiences asked (the API's by default), valid for
  `spec.expirationSeconds` (an hour by default, ten minutes at least).

Each function takes the `Api` first and `Api` binds them as its methods (`api.bind(...)`,
`api.get_scale(...)`), so the HTTP layer and the controllers see one entry point. A new subresource
is a function here, one line in `Api`, its name in the kind's `subresources` (which routing and
discovery read) and its verb in `http/app.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner import quantities
from planner.slim import patch, status_errors, validators
from planner.slim.meta import json_copy, now_rfc3339, prune_empty, rfc3339
from planner.slim.resources import NAMESPACES, ResourceType, by_kind
from planner.slim.status_errors import Target
from planner.slim.tokens import API_AUDIENCES, DEFAULT_EXPIRATION_SECONDS
from planner.slim.verbhelpers import WriteOptions, check_rv, error_target, omit_empty_in, with_type

if TYPE_CHECKING:
    from planner.slim.api import Api

Obj = dict[str, Any]
SCALE_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


# --- status -------------------------------------------------------------------------------------------


def write_status(
    api: Api, rt: ResourceType, old: Obj, obj: Obj, options: WriteOptions, *, operation: str = "Update"
) -> Obj:
    """Write `obj`'s status over the stored `old`; an `Apply` has recorded its managedFields in `obj`."""
    sent_meta = obj.get("metadata") or {}
    # The stored object's other parts are taken as they are (stored objects are never changed in
    # place): a status write copies and prunes only the metadata and the status.
    meta = dict(old["metadata"])
    if rt.status_takes_annotations:
        meta["annotations"] = sent_meta.get("annotations")
    if operation == "Apply":
        meta["managedFields"] = sent_meta.get("managedFields")
    new = {**old, "metadata": meta, "status": _canonical_status(obj.get("status") or {})}
    new = omit_empty_in(rt, new, ("metadata", "status"))
    new = patch.managed_fields(
        old, new, manager=options.field_manager, operation=operation, subresource="status", resource=rt
    )
    return api.commit_update(rt, old, new, options)


def _canonical_status(status: Obj) -> Obj:
    out = dict(status)
    for key in ("capacity", "allocatable", "allocatedResources"):
        if key in out:
            out[key] = quantities.canonical_map(out[key])
    return out


# --- scale --------------------------------------------------------------------------------------------


def get_scale(api: Api, rt: ResourceType, namespace: str, name: str) -> Obj:
    return _scale_of(api.get(rt, namespace, name))


def update_scale(
    api: Api, rt: ResourceType, namespace: str, name: str, scale: Any, options: WriteOptions
) -> Obj:
    if not isinstance(scale, dict):
        raise status_errors.bad_request("the body is not a Scale object")
    old = api.stored(rt, namespace, name)
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or replicas < 0:
        cause = validators.invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
        raise status_errors.invalid(Target("autoscaling", rt.plural, "Scale", name), [cause])
    check_rv(rt, (scale.get("metadata") or {}).get("resourceVersion"), old, name)
    scaled = with_type(rt, json_copy(old))
    scaled["spec"]["replicas"] = replicas
    updated = api.write_update(rt, old, scaled, options, operation="Update", subresource="scale")
    return _scale_of(updated)


def patch_scale(
    api: Api,
    rt: ResourceType,
    namespace: str,
    name: str,
    body: bytes,
    content_type: str | None,
    options: WriteOptions,
) -> Obj:
    patcher = patch.patcher_for(content_type, rt)
    ctx = patch.PatchContext(
        rt, options.field_manager, options.force, "scale", True, options.field_validation, options.warnings
    )
    scale = patcher(get_scale(api, rt, namespace, name), body, ctx)
    return update_scale(api, rt, namespace, name, scale, options)


def _scale_of(obj: Obj) -> Obj:
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    selector = spec.get("selector") or {}
    # A ReplicationController's selector is a plain map; the others' are label selectors.
    labels = (
        selector.get("matchLabels") or {}
        if "matchLabels" in selector or "matchExpressions" in selector
        else selector
    )
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in SCALE_METADATA if k in meta},
        "spec": {"replicas": spec.get("replicas", 0)},
        "status": {
            "replicas": status.get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }


# --- pods/binding -------------------------------------------------------------------------------------


def bind(api: Api, namespace: str, name: str, binding: Any, options: WriteOptions) -> Obj:
    """Set spec.nodeName once and mark the pod scheduled (what the scheduler does)."""
    rt = by_kind("Pod")
    node = ((binding or {}).get("target") or {}).get("name") if isinstance(binding, dict) else None
    if not node:
        raise status_errors.invalid(
            Target("", "bindings", "Binding", name), [validators.required("target.name")]
        )
    old = api.stored(rt, namespace, name)
    assigned = (old.get("spec") or {}).get("nodeName")
    if assigned:
        raise status_errors.conflict(
            error_target(rt, name), f'pod {name} is already assigned to node "{assigned}"'
        )
    new = json_copy(old)
    new["spec"]["nodeName"] = node
    status = new.setdefault("status", {})
    status["conditions"] = [
        *(c for c in status.get("conditions", []) if c.get("type") != "PodScheduled"),
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        },
    ]
    new = patch.managed_fields(
        old, new, manager=options.field_manager, operation="Update", subresource="binding", resource=rt
    )
    if not options.dry_run:
        api.commit_update(rt, old, new, options)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


# --- namespaces/finalize ------------------------------------------------------------------------------


def finalize_namespace(api: Api, name: str, options: WriteOptions) -> Obj:
    """Drop a namespace's spec.finalizers (the namespace controller, once the namespace is empty)."""
    old = api.stored(NAMESPACES, "", name)
    new = json_copy(old)
    new.setdefault("spec", {}).pop("finalizers", None)
    return api.commit_update(NAMESPACES, old, prune_empty(new, decoded=True), options)


# --- serviceaccounts/token ----------------------------------------------------------------------------

MIN_TOKEN_SECONDS = 600
MAX_TOKEN_SECONDS = 2**32


def request_token(api: Api, namespace: str, name: str, request: Any) -> Obj:
    """A TokenRequest's answer: the request with its defaults and the token in `status`."""
    account = api.stored(by_kind("ServiceAccount"), namespace, name)
    spec = dict((request or {}).get("spec") or {}) if isinstance(request, dict) else {}
    spec["audiences"] = list(spec.get("audiences") or API_AUDIENCES)
    if spec.get("expirationSeconds") is None:
        spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS
    spec.setdefault("boundObjectRef", None)
    seconds = spec["expirationSeconds"]
    if not isinstance(seconds, int) or seconds < MIN_TOKEN_SECONDS:
        detail = "may not specify a duration less than 10 minutes"
        raise status_errors.invalid(
            _TOKEN_REQUEST, [validators.invalid_value("spec.expirationSeconds", seconds, detail)]
        )
    if seconds > MAX_TOKEN_SECONDS:
        detail = "may not specify a duration larger than 2^32 seconds"
        raise status_errors.invalid(
            _TOKEN_REQUEST, [validators.invalid_value("spec.expirationSeconds", seconds, detail)]
        )
    uid = str(account["metadata"].get("uid", ""))
    token, expires = api.tokens.issue(namespace, name, uid, spec["audiences"], seconds)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": rfc3339(expires)},
    }


_TOKEN_REQUEST = Target("authentication.k8s.io", "serviceaccounts", "TokenRequest")

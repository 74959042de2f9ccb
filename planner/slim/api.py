"""The API core: Kubernetes semantics for create/get/list/update/patch/delete/watch, free of HTTP.

HTTP handlers translate requests into these calls and `StatusError`s into responses; part 3's
in-process controllers call the same methods, so every writer gets the same defaulting, admission,
validation, resourceVersion checks and watch events. Every write runs one pipeline:

    decode (400) → metadata/namespace checks → defaulting → admission → validation (422)
    → managedFields hook → store (409 on conflicts) → watch event

Deletion follows §3 of the notes: propagation policy (Job defaults to Orphan) adds the
`foregroundDeletion`/`orphan` finalizer; an object with finalizers gets `deletionTimestamp` and waits
for clients (or part 3's garbage collector) to empty them; a scheduled Pod gets its grace period and
waits for the node agent (part 3); everything else is removed at once. Nothing cascades yet: the
garbage collector is meant to be a controller watching this core.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from planner.slim import admission, errors, patch, validation
from planner.slim.deleting import (
    DeleteOptions,
    check_preconditions,
    deleted_response,
    grace_period,
    pod_waits_for_node,
    timestamp_in,
    with_policy_finalizer,
)
from planner.slim.errors import Cause, StatusError, Target
from planner.slim.listing import ListOptions, decode_continue, encode_continue, sort_key
from planner.slim.meta import generated_name, json_copy, metadata, new_uid, now_rfc3339, prune_empty
from planner.slim.objects import (
    Filter,
    check_rv,
    error_target,
    parse_rv,
    resource_key,
    scope,
    strip_type,
    with_type,
)
from planner.slim.resources import ResourceType, by_kind
from planner.slim.selectors import parse_field_selector, parse_label_selector
from planner.slim.store import Conflict, Store
from planner.slim.watching import WatchOptions, open_watch

__all__ = ["Api", "DeleteOptions", "ListOptions", "WatchOptions", "WriteOptions", "resource_key"]

Obj = dict[str, Any]
SERVER_OWNED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
NAMESPACE_RESOURCE = "namespaces"
NAMESPACE_KIND = "Namespace"
ObjList = list[Obj]


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str | None = None
    force: bool = False


class Api:
    """One cluster's API: the store plus the allocators admission needs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.allocator = admission.IPAllocator(store.list(resource_key(by_kind("Service")), None))

    # --- reads ---------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        stored = self.store.get(resource_key(rt), scope(rt, namespace), name)
        if stored is None:
            raise errors.not_found(error_target(rt, name))
        return with_type(rt, stored)

    def list(self, rt: ResourceType, namespace: str | None, options: ListOptions | None = None) -> Obj:
        options = options or ListOptions()
        flt = self._filter(rt, namespace, options.label_selector, options.field_selector)
        list_rv = self._list_revision(options)
        start = ""
        if options.continue_token:
            list_rv, start = decode_continue(options.continue_token)
        items = self._candidates(rt, flt)
        items = (
            [o for o in items if sort_key(o) > start and flt.matches(o)]
            if start
            else [o for o in items if flt.matches(o)]
        )
        meta: Obj = {"resourceVersion": str(list_rv)}
        if options.limit and len(items) > options.limit:
            remaining = len(items) - options.limit
            items = items[: options.limit]
            meta["continue"] = encode_continue(list_rv, sort_key(items[-1]))
            if flt.labels.empty and not flt.fields.terms:
                meta["remainingItemCount"] = remaining
        return {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": items}

    def _list_revision(self, options: ListOptions) -> int:
        if options.continue_token and options.resource_version not in (None, ""):
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        current = self.store.revision
        if options.resource_version_match == "Exact" and options.resource_version not in (None, "", "0"):
            requested = parse_rv(options.resource_version)
            if requested < current:
                raise errors.expired("The resourceVersion for the provided list is too old.")
        return current

    def _candidates(self, rt: ResourceType, flt: Filter) -> ObjList:
        name = flt.fields.exact_name()
        key = resource_key(rt)
        if name is not None and flt.namespace is not None:
            found = self.store.get(key, flt.namespace, name)
            return [found] if found else []
        return self.store.list(key, flt.namespace)

    def _filter(
        self, rt: ResourceType, namespace: str | None, labels: str | None, fields: str | None
    ) -> Filter:
        getters = rt.field_selectors
        return Filter(
            namespace if rt.namespaced else None,
            parse_label_selector(labels),
            parse_field_selector(fields, getters),
            getters,
        )

    # --- create --------------------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        options: WriteOptions = WriteOptions(),
        *,
        operation: str = "Update",
    ) -> Obj:
        """`operation` is "Apply" when server-side apply creates the object (its managedFields are set)."""
        obj = self._decode(rt, body)
        meta = metadata(obj)
        namespace = self._check_namespace(rt, namespace, meta)
        if meta.get("resourceVersion"):
            raise errors.internal("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generated_name(str(meta["generateName"]))
        for key in SERVER_OWNED_META:
            meta.pop(key, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if rt.tracks_generation:
            meta["generation"] = 1
        if rt.has_status and rt.kind != "Node":
            obj["status"] = {}
        self._default(rt, obj)
        meta.setdefault("finalizers", [])
        meta["finalizers"] = list(dict.fromkeys([*meta["finalizers"], *admission.server_finalizers(rt.kind)]))
        target = error_target(rt, meta.get("name", ""))
        patch.record_create(obj, manager=options.field_manager, operation=operation, resource=rt)
        causes = self._admit(rt, obj, None, target)
        self._validate(rt, obj, None, target, causes)
        obj = prune_empty(obj)
        if options.dry_run:
            if rt.kind == "Service":
                self.allocator.release(obj)
            return with_type(rt, obj)
        return self._store_new(rt, namespace, obj, target)

    def _store_new(self, rt: ResourceType, namespace: str, obj: Obj, target: Target) -> Obj:
        try:
            stored = self.store.create(resource_key(rt), namespace, obj["metadata"]["name"], strip_type(obj))
        except Conflict as exc:
            if rt.kind == "Service":
                self.allocator.release(obj)
            raise errors.already_exists(target) from exc
        if rt.kind == "Namespace":
            self._populate_namespace(obj["metadata"]["name"])
        return with_type(rt, stored)

    def _populate_namespace(self, namespace: str) -> None:
        """What controllers put in every new namespace, done at once so a Pod created right after its
        namespace never races the service-account controller (which still recreates them if deleted)."""
        for kind, body in namespace_contents():
            try:
                self.create(by_kind(kind), namespace, body)
            except StatusError as exc:
                if exc.code != 409:
                    raise

    # --- update --------------------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        options: WriteOptions = WriteOptions(),
        *,
        subresource: str | None = None,
    ) -> Obj:
        obj = self._decode(rt, body)
        meta = metadata(obj)
        namespace = self._check_namespace(rt, namespace, meta)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        old = self.store.get(resource_key(rt), namespace, name)
        if old is None:
            raise errors.not_found(error_target(rt, name))
        check_rv(rt, meta.get("resourceVersion"), old, name)
        if subresource == "status":
            return self._write_status(rt, namespace, old, obj, options)
        return self._write_update(rt, namespace, old, obj, options, operation="Update")

    def _write_update(
        self,
        rt: ResourceType,
        namespace: str,
        old: Obj,
        obj: Obj,
        options: WriteOptions,
        *,
        operation: str,
        subresource: str | None = None,
    ) -> Obj:
        meta = metadata(obj)
        for key in SERVER_OWNED_META:
            meta.pop(key, None)
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
        self._default(rt, obj)
        if rt.has_status:
            obj["status"] = json_copy(old.get("status", {}))
        if rt.tracks_generation and obj.get("spec") != old.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 0)) + 1
        target = error_target(rt, meta["name"])
        causes = self._admit(rt, obj, old, target)
        self._validate(rt, obj, old, target, causes)
        obj = prune_empty(obj)
        obj = patch.managed_fields(
            old, obj, manager=options.field_manager, operation=operation, subresource=subresource, resource=rt
        )
        return self._commit_update(rt, namespace, old, obj, options)

    def _write_status(
        self,
        rt: ResourceType,
        namespace: str,
        old: Obj,
        obj: Obj,
        options: WriteOptions,
        *,
        operation: str = "Update",
    ) -> Obj:
        new = json_copy(old)
        new["status"] = _canonical_status(obj.get("status") or {})
        if rt.kind == "Deployment":  # its status strategy keeps only spec and labels (revision annotation)
            new["metadata"]["annotations"] = (obj.get("metadata") or {}).get("annotations")
        if operation == "Apply":  # the apply recorded its entry in `obj`
            new["metadata"]["managedFields"] = (obj.get("metadata") or {}).get("managedFields")
        new = prune_empty(new)
        new = patch.managed_fields(
            old, new, manager=options.field_manager, operation=operation, subresource="status", resource=rt
        )
        return self._commit_update(rt, namespace, old, new, options)

    def _commit_update(
        self, rt: ResourceType, namespace: str, old: Obj, new: Obj, options: WriteOptions
    ) -> Obj:
        new = strip_type(new)
        new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        if new == old or options.dry_run:
            return with_type(rt, new)
        key = resource_key(rt)
        name = new["metadata"]["name"]
        if (
            new["metadata"].get("deletionTimestamp")
            and not new["metadata"].get("finalizers")
            and not _spec_finalizers(rt, new)
        ):
            if pod_waits_for_node(rt, new):
                return with_type(rt, self.store.update(key, namespace, name, new))
            return with_type(rt, self._remove(rt, namespace, name, new))
        return with_type(rt, self.store.update(key, namespace, name, new))

    # --- patch ---------------------------------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str | None,
        options: WriteOptions = WriteOptions(),
        *,
        subresource: str | None = None,
    ) -> Obj:
        return self.patch_or_create(
            rt, namespace, name, body, content_type, options, subresource=subresource
        )[0]

    def patch_or_create(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str | None,
        options: WriteOptions = WriteOptions(),
        *,
        subresource: str | None = None,
    ) -> tuple[Obj, bool]:
        """PATCH; the flag says whether the object was created (server-side apply on a missing object)."""
        patcher = patch.patcher_for(content_type)
        old = self.store.get(resource_key(rt), scope(rt, namespace), name)
        ctx = patch.PatchContext(rt, options.field_manager, options.force, subresource, old is not None)
        operation = "Apply" if patch.is_apply(content_type) else "Update"
        if old is None and patch.creates_when_missing(content_type) and subresource is None:
            skeleton: Obj = {"apiVersion": rt.group_version, "kind": rt.kind, "metadata": {"name": name}}
            created = self.create(rt, namespace, patcher(skeleton, body, ctx), options, operation=operation)
            return created, True
        if old is None:
            raise errors.not_found(error_target(rt, name))
        current = with_type(rt, json_copy(old))
        patched = patcher(current, body, ctx)
        meta = metadata(patched)
        check_rv(rt, meta.get("resourceVersion"), old, name)
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if subresource == "status":
            written = self._write_status(rt, scope(rt, namespace), old, patched, options, operation=operation)
            return written, False
        decoded = self._decode(rt, patched)
        return self._write_update(rt, scope(rt, namespace), old, decoded, options, operation=operation), False

    # --- pods/binding --------------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, binding: Any, options: WriteOptions = WriteOptions()) -> Obj:
        """pods/binding: set spec.nodeName once and mark the pod scheduled (what the scheduler does)."""
        rt = by_kind("Pod")
        node = ((binding or {}).get("target") or {}).get("name") if isinstance(binding, dict) else None
        if not node:
            raise errors.invalid(
                Target("", "bindings", "Binding", name), [validation.required("target.name")]
            )
        old = self.store.get(resource_key(rt), namespace, name)
        if old is None:
            raise errors.not_found(error_target(rt, name))
        if (old.get("spec") or {}).get("nodeName"):
            raise errors.conflict(
                error_target(rt, name), f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"'
            )
        new = json_copy(old)
        new["spec"]["nodeName"] = node
        conditions = [
            c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"
        ]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
            }
        )
        new["status"]["conditions"] = conditions
        new = patch.managed_fields(
            old, new, manager=options.field_manager, operation="Update", subresource="binding", resource=rt
        )
        if not options.dry_run:
            self._commit_update(rt, namespace, old, new, options)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    # --- namespaces/finalize ------------------------------------------------------------------------

    def finalize_namespace(self, name: str, options: WriteOptions = WriteOptions()) -> Obj:
        """Drop a namespace's spec.finalizers (the namespace controller, once the namespace is empty)."""
        rt = by_kind(NAMESPACE_KIND)
        old = self.store.get(resource_key(rt), "", name)
        if old is None:
            raise errors.not_found(error_target(rt, name))
        new = json_copy(old)
        new.setdefault("spec", {}).pop("finalizers", None)
        return self._commit_update(rt, "", old, prune_empty(new), options)

    # --- scale ---------------------------------------------------------------------------------------

    def get_scale(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return _scale_of(self.get(rt, namespace, name))

    def update_scale(
        self, rt: ResourceType, namespace: str, name: str, scale: Any, options: WriteOptions
    ) -> Obj:
        if not isinstance(scale, dict):
            raise errors.bad_request("the body is not a Scale object")
        current = json_copy(self.get(rt, namespace, name))  # get() shares the stored metadata
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            cause = validation.invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
            raise errors.invalid(Target("autoscaling", rt.plural, "Scale", name), [cause])
        wanted_rv = (scale.get("metadata") or {}).get("resourceVersion")
        check_rv(rt, wanted_rv, current, name)
        current["spec"]["replicas"] = replicas
        updated = self._write_update(
            rt,
            scope(rt, namespace),
            self.store.get(resource_key(rt), scope(rt, namespace), name) or {},
            current,
            options,
            operation="Update",
            subresource="scale",
        )
        return _scale_of(updated)

    def patch_scale(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str | None,
        options: WriteOptions,
    ) -> Obj:
        patcher = patch.patcher_for(content_type)
        ctx = patch.PatchContext(rt, options.field_manager, options.force, "scale")
        scale = patcher(self.get_scale(rt, namespace, name), body, ctx)
        return self.update_scale(rt, namespace, name, scale, options)

    # --- delete --------------------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Obj:
        options = options or DeleteOptions()
        namespace = scope(rt, namespace)
        old = self.store.get(resource_key(rt), namespace, name)
        if old is None:
            raise errors.not_found(error_target(rt, name))
        check_preconditions(rt, old, options)
        new = json_copy(old)
        meta = new["metadata"]
        finalizers = with_policy_finalizer(
            list(meta.get("finalizers") or []), options.propagation_policy or rt.default_propagation
        )
        grace = grace_period(rt, new, options)
        if finalizers or grace > 0 or _spec_finalizers(rt, new):
            if rt.kind == NAMESPACE_KIND:
                new.setdefault("status", {})["phase"] = "Terminating"
            shortened = grace < int(meta.get("deletionGracePeriodSeconds") or 0)
            if not meta.get("deletionTimestamp") or shortened:
                meta["deletionTimestamp"] = timestamp_in(grace)
                meta["deletionGracePeriodSeconds"] = grace
                if rt.tracks_generation and not shortened:
                    meta["generation"] = int(meta.get("generation", 0)) + 1
            meta["finalizers"] = finalizers
            if options.dry_run or new == old:
                return with_type(rt, new)
            return with_type(rt, self.store.update(resource_key(rt), namespace, name, prune_empty(new)))
        meta.setdefault("deletionTimestamp", now_rfc3339())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if options.dry_run:
            return deleted_response(rt, new)
        return deleted_response(rt, self._remove(rt, namespace, name, new))

    def _remove(self, rt: ResourceType, namespace: str, name: str, final: Obj) -> Obj:
        if rt.kind == "Namespace":
            self._empty_namespace(name)
        removed = self.store.delete(resource_key(rt), namespace, name, final)
        if rt.kind == "Service":
            self.allocator.release(removed)
        return removed

    def _empty_namespace(self, namespace: str) -> None:
        """Instant namespace teardown while no namespace controller exists (part 3 replaces this)."""
        from planner.slim.resources import RESOURCES

        for rt in RESOURCES:
            if not rt.namespaced:
                continue
            for obj in list(self.store.list(resource_key(rt), namespace)):
                removed = self.store.delete(resource_key(rt), namespace, obj["metadata"]["name"])
                if rt.kind == "Service":
                    self.allocator.release(removed)

    def delete_collection(
        self, rt: ResourceType, namespace: str | None, list_options: ListOptions, options: DeleteOptions
    ) -> Obj:
        listed = self.list(
            rt, namespace, ListOptions(list_options.label_selector, list_options.field_selector)
        )
        deleted = []
        for item in listed["items"]:
            meta = item["metadata"]
            try:
                result = self.delete(rt, meta.get("namespace", ""), meta["name"], options)
            except StatusError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(strip_type(result) if result.get("kind") == rt.kind else item)
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.group_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": deleted,
        }

    # --- watch ---------------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, options: WatchOptions) -> AsyncIterator[Obj]:
        """A watch stream; a bad selector raises here, before any stream opens."""
        flt = self._filter(rt, namespace, options.label_selector, options.field_selector)
        return open_watch(self.store, rt, flt, options)

    # --- pipeline steps ------------------------------------------------------------------------------

    def _decode(self, rt: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind})")
        obj = prune_empty(body)  # a new tree: the caller's body is never changed
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if (kind and kind != rt.kind) or (api_version and api_version != rt.group_version):
            raise errors.bad_request(
                _kind_mismatch(rt, str(kind or rt.kind), str(api_version or rt.group_version))
            )
        obj["kind"], obj["apiVersion"] = rt.kind, rt.group_version
        if rt.decoder:
            rt.decoder(obj)
        return dict(obj)

    def _check_namespace(self, rt: ResourceType, namespace: str, meta: Obj) -> str:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return ""
        given = meta.get("namespace")
        if given and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
        if self.store.get(resource_key(by_kind("Namespace")), "", namespace) is None:
            raise errors.not_found(Target("", "namespaces", "Namespace", namespace))
        return namespace

    def _default(self, rt: ResourceType, obj: Obj) -> None:
        if rt.defaulter:
            rt.defaulter(obj)
        if rt.kind == "Namespace":
            obj.setdefault("spec", {})["finalizers"] = admission.namespace_spec_finalizers()

    def _admit(self, rt: ResourceType, obj: Obj, old: Obj | None, target: Target) -> builtins.list[Cause]:
        if rt.kind == "Pod" and old is None:
            self._admit_pod(obj, target)
        if rt.kind == "PersistentVolumeClaim" and old is None:
            classes = self.store.list(resource_key(by_kind("StorageClass")), None)
            admission.default_storage_class(obj, classes)
        if rt.kind == "Service":
            return self.allocator.allocate(obj, old, target)
        return []

    def _admit_pod(self, pod: Obj, target: Target) -> None:
        spec = pod.get("spec") or {}
        namespace = pod["metadata"]["namespace"]
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        exists = self.store.get(resource_key(by_kind("ServiceAccount")), namespace, account) is not None
        runtime_class = None
        if spec.get("runtimeClassName"):
            runtime_class = self.store.get(
                resource_key(by_kind("RuntimeClass")), "", spec["runtimeClassName"]
            )
        admission.admit_pod(pod, service_account_exists=exists, runtime_class=runtime_class, target=target)

    def _validate(
        self, rt: ResourceType, obj: Obj, old: Obj | None, target: Target, causes: builtins.list[Cause]
    ) -> None:
        all_causes = (
            validation.validate_metadata(obj, rt.name_rule) if old is None else _validate_meta_update(obj)
        )
        if rt.validator:
            all_causes += rt.validator(obj)
        if old is not None and rt.update_validator:
            all_causes += rt.update_validator(obj, old)
        all_causes += causes
        if all_causes:
            if rt.kind == "Service" and old is None:
                self.allocator.release(obj)
            raise errors.invalid(target, all_causes)


# --- helpers ------------------------------------------------------------------------------------------

ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)
ROOT_CA_PLACEHOLDER = (
    "-----BEGIN CERTIFICATE-----\nplanner-embedded-cluster-has-no-tls\n-----END CERTIFICATE-----\n"
)


def namespace_contents() -> list[tuple[str, Obj]]:
    """(kind, body) of what every namespace holds: the `default` ServiceAccount and the root CA
    ConfigMap (a placeholder: there is no TLS)."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    root_ca = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "kube-root-ca.crt",
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {"ca.crt": ROOT_CA_PLACEHOLDER},
    }
    return [("ServiceAccount", account), ("ConfigMap", root_ca)]


def _spec_finalizers(rt: ResourceType, obj: Obj) -> bool:
    """A Namespace also waits for its spec.finalizers (`kubernetes`, removed by the namespace controller)."""
    return rt.kind == NAMESPACE_KIND and bool((obj.get("spec") or {}).get("finalizers"))


def _kind_mismatch(rt: ResourceType, kind: str, api_version: str) -> str:
    version = api_version.rsplit("/", 1)[-1]
    internal_group = rt.group.split(".")[0] if rt.group else "core"
    return (
        f'{kind} in version "{version}" cannot be handled as a {rt.kind}: converting ({version}.{kind}) to '
        f"({internal_group}.{rt.kind}): unknown conversion"
    )


def _validate_meta_update(obj: Obj) -> builtins.list[Cause]:
    meta = obj.get("metadata") or {}
    return validation.validate_labels(
        meta.get("labels"), "metadata.labels"
    ) + validation.validate_annotations(meta.get("annotations"))


def _canonical_status(status: Obj) -> Obj:
    from planner.slim import quantity

    out = dict(status)
    for key in ("capacity", "allocatable", "allocatedResources"):
        if key in out:
            out[key] = quantity.canonical_map(out[key])
    return out


def _scale_of(obj: Obj) -> Obj:
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    labels = selector.get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 0)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        },
    }

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

import asyncio
import base64
import builtins
import copy
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from planner.slim import admission, errors, patch, validation
from planner.slim.errors import Cause, StatusError, Target
from planner.slim.meta import generated_name, metadata, new_uid, now_rfc3339, prune_empty
from planner.slim.resources import ResourceType, by_kind, lookup
from planner.slim.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from planner.slim.store import Conflict, Store, Subscription, TooOld, WatchEvent

Obj = dict[str, Any]
SERVER_OWNED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
BOOKMARK_INTERVAL = 60.0
NAMESPACE_RESOURCE = "namespaces"
ObjList = list[Obj]


def resource_key(rt: ResourceType) -> str:
    return f"{rt.group}/{rt.plural}"


@dataclass(frozen=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str | None = None
    force: bool = False


@dataclass(frozen=True)
class DeleteOptions:
    propagation_policy: str | None = None
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False

    @classmethod
    def from_body(cls, body: Obj | None, query: dict[str, str]) -> DeleteOptions:
        body = body or {}
        preconditions = body.get("preconditions") or {}
        policy = body.get("propagationPolicy") or query.get("propagationPolicy")
        if policy is None and (body.get("orphanDependents") is not None or "orphanDependents" in query):
            orphan = body.get("orphanDependents", query.get("orphanDependents") in ("true", "1"))
            policy = "Orphan" if orphan else "Background"
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        dry_run = body.get("dryRun") or ([query["dryRun"]] if "dryRun" in query else [])
        return cls(
            propagation_policy=policy,
            grace_period_seconds=int(grace) if grace is not None else None,
            precondition_uid=preconditions.get("uid"),
            precondition_rv=preconditions.get("resourceVersion"),
            dry_run="All" in dry_run,
        )


@dataclass(frozen=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    limit: int = 0
    continue_token: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None


@dataclass(frozen=True)
class WatchOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: str | None = None
    timeout_seconds: float | None = None
    allow_bookmarks: bool = False


@dataclass
class _Filter:
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    getters: dict[str, Any] = field(default_factory=dict)

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj, self.getters)


class Api:
    """One cluster's API: the store plus the allocators admission needs."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.allocator = admission.IPAllocator(store.list(resource_key(by_kind("Service")), None))

    # --- reads ---------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        stored = self.store.get(resource_key(rt), _scope(rt, namespace), name)
        if stored is None:
            raise errors.not_found(_target(rt, name))
        return _with_type(rt, stored)

    def list(self, rt: ResourceType, namespace: str | None, options: ListOptions = ListOptions()) -> Obj:
        flt = self._filter(rt, namespace, options.label_selector, options.field_selector)
        list_rv = self._list_revision(options)
        start = ""
        if options.continue_token:
            list_rv, start = _decode_continue(options.continue_token)
        items = self._candidates(rt, flt)
        items = (
            [o for o in items if _sort_key(o) > start and flt.matches(o)]
            if start
            else [o for o in items if flt.matches(o)]
        )
        meta: Obj = {"resourceVersion": str(list_rv)}
        if options.limit and len(items) > options.limit:
            remaining = len(items) - options.limit
            items = items[: options.limit]
            meta["continue"] = _encode_continue(list_rv, _sort_key(items[-1]))
            if flt.labels.empty and not flt.fields.terms:
                meta["remainingItemCount"] = remaining
        return {"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": items}

    def _list_revision(self, options: ListOptions) -> int:
        if options.continue_token and options.resource_version not in (None, ""):
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        current = self.store.revision
        if options.resource_version_match == "Exact" and options.resource_version not in (None, "", "0"):
            requested = _parse_rv(options.resource_version)
            if requested < current:
                raise errors.expired("The resourceVersion for the provided list is too old.")
        return current

    def _candidates(self, rt: ResourceType, flt: _Filter) -> ObjList:
        name = flt.fields.exact_name()
        key = resource_key(rt)
        if name is not None and flt.namespace is not None:
            found = self.store.get(key, flt.namespace, name)
            return [found] if found else []
        return self.store.list(key, flt.namespace)

    def _filter(
        self, rt: ResourceType, namespace: str | None, labels: str | None, fields: str | None
    ) -> _Filter:
        getters = rt.field_selectors
        return _Filter(
            namespace if rt.namespaced else None,
            parse_label_selector(labels),
            parse_field_selector(fields, getters),
            getters,
        )

    # --- create --------------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, body: Any, options: WriteOptions = WriteOptions()
    ) -> Obj:
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
        target = _target(rt, meta.get("name", ""))
        causes = self._admit(rt, obj, None, target)
        self._validate(rt, obj, None, target, causes)
        obj = prune_empty(obj)
        obj = patch.managed_fields(
            None, obj, manager=options.field_manager, operation="Update", subresource=None
        )
        if options.dry_run:
            return _with_type(rt, obj)
        return self._store_new(rt, namespace, obj, target)

    def _store_new(self, rt: ResourceType, namespace: str, obj: Obj, target: Target) -> Obj:
        try:
            stored = self.store.create(resource_key(rt), namespace, obj["metadata"]["name"], _strip_type(obj))
        except Conflict as exc:
            if rt.kind == "Service":
                self.allocator.release(obj)
            raise errors.already_exists(target) from exc
        if rt.kind == "Namespace":
            self._populate_namespace(obj["metadata"]["name"])
        return _with_type(rt, stored)

    def _populate_namespace(self, namespace: str) -> None:
        """What controllers put in every new namespace; done here until part 3's controllers exist."""
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
        for kind, body in (("ServiceAccount", account), ("ConfigMap", root_ca)):
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
            raise errors.not_found(_target(rt, name))
        _check_rv(rt, meta.get("resourceVersion"), old, name)
        if subresource == "status":
            return self._write_status(rt, namespace, old, obj, options)
        return self._write_update(rt, namespace, old, obj, options, operation="Update")

    def _write_update(
        self, rt: ResourceType, namespace: str, old: Obj, obj: Obj, options: WriteOptions, *, operation: str
    ) -> Obj:
        meta = metadata(obj)
        for key in SERVER_OWNED_META:
            meta.pop(key, None)
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
        self._default(rt, obj)
        if rt.has_status:
            obj["status"] = copy.deepcopy(old.get("status", {}))
        if rt.tracks_generation and obj.get("spec") != old.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 0)) + 1
        target = _target(rt, meta["name"])
        causes = self._admit(rt, obj, old, target)
        self._validate(rt, obj, old, target, causes)
        obj = prune_empty(obj)
        obj = patch.managed_fields(
            old, obj, manager=options.field_manager, operation=operation, subresource=None
        )
        return self._commit_update(rt, namespace, old, obj, options)

    def _write_status(
        self, rt: ResourceType, namespace: str, old: Obj, obj: Obj, options: WriteOptions
    ) -> Obj:
        new = copy.deepcopy(old)
        new["status"] = _canonical_status(obj.get("status") or {})
        new = prune_empty(new)
        new = patch.managed_fields(
            old, new, manager=options.field_manager, operation="Update", subresource="status"
        )
        return self._commit_update(rt, namespace, old, new, options)

    def _commit_update(
        self, rt: ResourceType, namespace: str, old: Obj, new: Obj, options: WriteOptions
    ) -> Obj:
        new = _strip_type(new)
        new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        if new == old or options.dry_run:
            return _with_type(rt, new)
        key = resource_key(rt)
        name = new["metadata"]["name"]
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            if _pod_waits_for_node(rt, new):
                return _with_type(rt, self.store.update(key, namespace, name, new))
            return _with_type(rt, self._remove(rt, namespace, name, new))
        return _with_type(rt, self.store.update(key, namespace, name, new))

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
        ctx = patch.PatchContext(rt, options.field_manager, options.force, subresource)
        old = self.store.get(resource_key(rt), _scope(rt, namespace), name)
        if old is None and patch.creates_when_missing(content_type) and subresource is None:
            skeleton: Obj = {"apiVersion": rt.group_version, "kind": rt.kind, "metadata": {"name": name}}
            created = self.create(rt, namespace, patcher(skeleton, body, ctx), options)
            return created, True
        if old is None:
            raise errors.not_found(_target(rt, name))
        current = _with_type(rt, copy.deepcopy(old))
        patched = patcher(current, body, ctx)
        meta = metadata(patched)
        _check_rv(rt, meta.get("resourceVersion"), old, name)
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL ({name})"
            )
        if subresource == "status":
            return self._write_status(rt, _scope(rt, namespace), old, patched, options), False
        operation = "Apply" if patch.is_apply(content_type) else "Update"
        decoded = self._decode(rt, patched)
        return self._write_update(
            rt, _scope(rt, namespace), old, decoded, options, operation=operation
        ), False

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
            raise errors.not_found(_target(rt, name))
        if (old.get("spec") or {}).get("nodeName"):
            raise errors.conflict(
                _target(rt, name), f'pod {name} is already assigned to node "{old["spec"]["nodeName"]}"'
            )
        new = copy.deepcopy(old)
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
            old, new, manager=options.field_manager, operation="Update", subresource="binding"
        )
        if not options.dry_run:
            self._commit_update(rt, namespace, old, new, options)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    # --- scale ---------------------------------------------------------------------------------------

    def get_scale(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return _scale_of(self.get(rt, namespace, name))

    def update_scale(
        self, rt: ResourceType, namespace: str, name: str, scale: Any, options: WriteOptions
    ) -> Obj:
        if not isinstance(scale, dict):
            raise errors.bad_request("the body is not a Scale object")
        current = self.get(rt, namespace, name)
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            cause = validation.invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
            raise errors.invalid(Target("autoscaling", rt.plural, "Scale", name), [cause])
        wanted_rv = (scale.get("metadata") or {}).get("resourceVersion")
        _check_rv(rt, wanted_rv, current, name)
        current["spec"]["replicas"] = replicas
        updated = self._write_update(
            rt,
            _scope(rt, namespace),
            self.store.get(resource_key(rt), _scope(rt, namespace), name) or {},
            current,
            options,
            operation="Update",
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
        self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions = DeleteOptions()
    ) -> Obj:
        namespace = _scope(rt, namespace)
        old = self.store.get(resource_key(rt), namespace, name)
        if old is None:
            raise errors.not_found(_target(rt, name))
        _check_preconditions(rt, old, options)
        new = copy.deepcopy(old)
        meta = new["metadata"]
        finalizers = _with_policy_finalizer(
            list(meta.get("finalizers") or []), options.propagation_policy or rt.default_propagation
        )
        grace = _grace_period(rt, new, options)
        if finalizers or grace > 0:
            shortened = grace < int(meta.get("deletionGracePeriodSeconds") or 0)
            if not meta.get("deletionTimestamp") or shortened:
                meta["deletionTimestamp"] = _timestamp_in(grace)
                meta["deletionGracePeriodSeconds"] = grace
                if rt.tracks_generation and not shortened:
                    meta["generation"] = int(meta.get("generation", 0)) + 1
            meta["finalizers"] = finalizers
            if options.dry_run or new == old:
                return _with_type(rt, new)
            return _with_type(rt, self.store.update(resource_key(rt), namespace, name, prune_empty(new)))
        meta.setdefault("deletionTimestamp", now_rfc3339())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if options.dry_run:
            return _deleted_response(rt, new)
        return _deleted_response(rt, self._remove(rt, namespace, name, new))

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
            deleted.append(_strip_type(result) if result.get("kind") == rt.kind else item)
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.group_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": deleted,
        }

    # --- watch ---------------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, options: WatchOptions) -> AsyncIterator[Obj]:
        """Validate, subscribe and snapshot now (a bad selector raises here, before any stream opens),
        then return the event stream: initial events, live events, bookmarks, ending at the timeout."""
        flt = self._filter(rt, namespace, options.label_selector, options.field_selector)
        key = resource_key(rt)
        subscription = self.store.subscribe(key)
        try:
            last_rv, initial = self._watch_start(rt, key, flt, options.resource_version)
        except BaseException:
            self.store.unsubscribe(subscription)
            raise
        return self._stream(rt, subscription, flt, last_rv, initial, options)

    async def _stream(
        self,
        rt: ResourceType,
        subscription: Subscription,
        flt: _Filter,
        last_rv: int,
        initial: builtins.list[Obj],
        options: WatchOptions,
    ) -> AsyncIterator[Obj]:
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + options.timeout_seconds if options.timeout_seconds else None
            for initial_event in initial:
                yield initial_event
            if last_rv < 0:
                return
            async for event in self._live(rt, subscription, flt, last_rv, deadline, options.allow_bookmarks):
                yield event
        finally:
            self.store.unsubscribe(subscription)

    def _watch_start(
        self, rt: ResourceType, key: str, flt: _Filter, rv_text: str | None
    ) -> tuple[int, builtins.list[Obj]]:
        if rv_text in (None, "", "0"):
            objects = [o for o in self.store.list(key, flt.namespace) if flt.matches(o)]
            return self.store.revision, [{"type": "ADDED", "object": _with_type(rt, o)} for o in objects]
        requested = _parse_rv(rv_text)
        try:
            buffered = self.store.events_since(key, requested)
        except TooOld as exc:
            status = errors.expired(str(exc)).body
            status.pop("details", None)
            return -1, [{"type": "ERROR", "object": status}]
        events = [e for e in (_event_for(rt, ev, flt) for ev in buffered) if e is not None]
        return max([requested, *(ev.rv for ev in buffered)]), events

    async def _live(
        self,
        rt: ResourceType,
        subscription: Any,
        flt: _Filter,
        last_rv: int,
        deadline: float | None,
        bookmarks: bool,
    ) -> AsyncIterator[Obj]:
        loop = asyncio.get_running_loop()
        while True:
            wait = BOOKMARK_INTERVAL if deadline is None else min(BOOKMARK_INTERVAL, deadline - loop.time())
            if wait <= 0:
                if bookmarks:
                    yield _bookmark(rt, self.store.revision)
                return
            try:
                event: WatchEvent = await asyncio.wait_for(subscription.queue.get(), timeout=wait)
            except TimeoutError:
                if bookmarks and (deadline is None or loop.time() < deadline):
                    yield _bookmark(rt, self.store.revision)
                continue
            if event.rv <= last_rv:
                continue
            last_rv = event.rv
            out = _event_for(rt, event, flt)
            if out is not None:
                yield out

    # --- pipeline steps ------------------------------------------------------------------------------

    def _decode(self, rt: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind})")
        obj = prune_empty(copy.deepcopy(body))
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


def _scope(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def _target(rt: ResourceType, name: str) -> Target:
    return Target(rt.group, rt.plural, rt.kind, name)


def _with_type(rt: ResourceType, obj: Obj) -> Obj:
    return {
        "kind": rt.kind,
        "apiVersion": rt.group_version,
        **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
    }


def _strip_type(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _sort_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def _encode_continue(rv: int, last_key: str) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError as exc:
        raise errors.bad_request(f"invalid continue token: {exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
        return int(data["rv"]), str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        first = raw[:1]
        shown = first.decode() if first and 32 <= first[0] < 127 else f"\\x{first[0]:02x}" if first else ""
        raise errors.bad_request(
            "invalid continue token: continue key is not valid: "
            f"invalid character '{shown}' looking for beginning of value"
        ) from exc


def _parse_rv(text: str | None) -> int:
    try:
        return int(text or "0")
    except ValueError as exc:
        raise errors.bad_request(f'invalid resource version "{text}"') from exc


def _check_rv(rt: ResourceType, wanted: Any, old: Obj, name: str) -> None:
    if wanted not in (None, "") and str(wanted) != old["metadata"].get("resourceVersion"):
        raise errors.stale(_target(rt, name))


def _check_preconditions(rt: ResourceType, old: Obj, options: DeleteOptions) -> None:
    meta = old["metadata"]
    target = _target(rt, meta["name"])
    if options.precondition_uid and options.precondition_uid != meta.get("uid"):
        raise errors.conflict(
            target,
            f"the UID in the precondition ({options.precondition_uid}) does not match the UID in record "
            f"({meta.get('uid')}). The object might have been deleted and then recreated",
            by_kind=True,
        )
    if options.precondition_rv and options.precondition_rv != meta.get("resourceVersion"):
        raise errors.conflict(
            target,
            f"the ResourceVersion in the precondition ({options.precondition_rv}) does not match the "
            f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might have been modified",
            by_kind=True,
        )


def _with_policy_finalizer(finalizers: builtins.list[str], policy: str) -> builtins.list[str]:
    if policy not in ("Background", "Foreground", "Orphan"):
        raise errors.bad_request(f"invalid propagationPolicy: {policy}")
    wanted = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(policy)
    others = [f for f in finalizers if f not in ("foregroundDeletion", "orphan") or f == wanted]
    if wanted and wanted not in others:
        others.append(wanted)
    return others


def _grace_period(rt: ResourceType, obj: Obj, options: DeleteOptions) -> int:
    if rt.kind != "Pod":
        return 0
    spec = obj.get("spec") or {}
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if options.grace_period_seconds is not None:
        return max(options.grace_period_seconds, 0)
    return int(spec.get("terminationGracePeriodSeconds", 30))


def _pod_waits_for_node(rt: ResourceType, obj: Obj) -> bool:
    return rt.kind == "Pod" and bool(obj["metadata"].get("deletionGracePeriodSeconds"))


def _timestamp_in(seconds: int) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _deleted_response(rt: ResourceType, obj: Obj) -> Obj:
    if rt.returns_deleted_object:
        return _with_type(rt, obj)
    details: Obj = {"name": obj["metadata"]["name"]}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["uid"] = obj["metadata"].get("uid")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


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


def _event_for(rt: ResourceType, event: WatchEvent, flt: _Filter) -> Obj | None:
    """The event a filtered watcher sees: selector leave → DELETED, enter → ADDED."""
    now_matches = event.type != "DELETED" and flt.matches(event.obj)
    was_matching = flt.matches(event.old) if event.old is not None else False
    obj = _with_type(rt, event.obj)
    if event.type == "DELETED":
        return {"type": "DELETED", "object": obj} if was_matching or flt.matches(event.obj) else None
    if now_matches and (was_matching or event.type == "ADDED"):
        return {"type": event.type, "object": obj}
    if now_matches:
        return {"type": "ADDED", "object": obj}
    if was_matching:
        return {"type": "DELETED", "object": obj}
    return None


def _bookmark(rt: ResourceType, rv: int) -> Obj:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": rt.kind,
            "apiVersion": rt.group_version,
            "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
        },
    }


def find_resource(group: str, version: str, plural: str) -> ResourceType | None:
    return lookup(group, version, plural)

"""The API core: Kubernetes semantics for create/get/list/update/patch/delete/watch, free of HTTP.

HTTP handlers translate requests into these calls and `StatusError`s into responses; the in-process
controllers and node agent call the same methods, so every writer gets the same defaulting,
admission, validation, resourceVersion checks and watch events. Every write runs one pipeline:

    decode (400) → metadata/namespace checks → defaulting → admission → validation (422)
    → managedFields → store (409 on conflicts) → watch event

(a create records its managedFields before admission, as the apiserver does, so the creator does
not own what admission adds).

The paths here are the same for every kind; where a kind differs, they call the hooks of its
`ResourceType` (see `resources.py`). Subresources (status, scale, pods/binding, namespaces/finalize)
are in `subresources.py`, which builds on `write_update` and `commit_update`.

Deletion: the propagation policy (the kind's default when none is given) adds the
`foregroundDeletion`/`orphan` finalizer; an object with finalizers, a grace period or pending
`spec_finalizers` gets `deletionTimestamp` and waits — for the garbage collector and other
controllers to empty its finalizers, for the node agent to end a Pod's grace period, for the
namespace controller to finalize a Namespace — and is removed by the write that clears the last of
them; everything else is removed at once. Removing a namespace removes everything in it (with the
simulation, its controller has deleted them first, honouring their finalizers).

`server_finalizers` (on only with the simulation) makes the server add the finalizers that only the
simulation's controllers remove: a bare API server would otherwise never finish those deletes.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable
from typing import Any

from planner.slim import accounting, admission, patch, status_errors, subresources, validators
from planner.slim.customresources import Kinds
from planner.slim.deleting import (
    DeleteOptions,
    check_preconditions,
    deleted_response,
    timestamp_in,
    waits_for_grace_period,
    with_policy_finalizer,
)
from planner.slim.listing import ListOptions, list_objects, list_of
from planner.slim.meta import generated_name, json_copy, metadata, new_uid, now_rfc3339
from planner.slim.resources import NAMESPACES, ResourceType, by_kind
from planner.slim.status_errors import Cause, StatusError, Target
from planner.slim.store import Conflict, Store
from planner.slim.tokens import Tokens, load_key
from planner.slim.verbhelpers import (
    DEFAULT_WRITE_OPTIONS,
    WriteOptions,
    check_rv,
    decode,
    error_target,
    filter_for,
    omit_empty,
    resource_key,
    scope,
    strip_type,
    with_type,
)
from planner.slim.watchstreams import WatchOptions, open_watch

__all__ = ["Api", "DeleteOptions", "ListOptions", "WatchOptions", "WriteOptions", "resource_key"]

Obj = dict[str, Any]
ObjList = list[Obj]
SERVER_OWNED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


class Api:
    """One cluster's API: the store, what admission reserves, whether the server adds the finalizers
    only the simulation's controllers remove, and the key ServiceAccount tokens are signed with."""

    def __init__(
        self, store: Store, *, server_finalizers: bool = False, tokens: Tokens | None = None
    ) -> None:
        self.store = store
        self.kinds = Kinds(store)
        self.server_finalizers = server_finalizers
        self.tokens = tokens or Tokens(load_key(None))
        self.admission = admission.Admission(self._find, self._find_all, self.store.list)

    def _find(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.store.get(resource_key(by_kind(kind)), namespace, name)

    def _find_all(self, kind: str) -> ObjList:
        return self.store.list(resource_key(by_kind(kind)), None)

    # --- reads ---------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        return with_type(rt, self.stored(rt, namespace, name))

    def stored(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        """The stored object (shared: copy before changing it); 404 when there is none."""
        found = self.store.get(resource_key(rt), scope(rt, namespace), name)
        if found is None:
            raise status_errors.not_found(error_target(rt, name))
        return found

    def list(self, rt: ResourceType, namespace: str | None, options: ListOptions | None = None) -> Obj:
        options = options or ListOptions()
        flt = filter_for(rt, namespace, options.label_selector, options.field_selector)
        return list_objects(self.store, rt, flt, options)

    # --- create --------------------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        options: WriteOptions = DEFAULT_WRITE_OPTIONS,
        *,
        operation: str = "Update",
    ) -> Obj:
        """`operation` is "Apply" when server-side apply creates the object (its managedFields are set):
        the apiserver creates through its update path then, whose storage ignores a resourceVersion the
        configuration carries, where a POST's refuses it."""
        obj = decode(rt, body)
        meta = metadata(obj)
        namespace = self._check_namespace(rt, namespace, meta)
        self._check_not_terminating(rt, namespace, meta)
        if meta.get("resourceVersion") and operation != "Apply":
            raise status_errors.internal("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generated_name(str(meta["generateName"]))
        for key in SERVER_OWNED_META:
            meta.pop(key, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = now_rfc3339()
        if rt.tracks_generation:
            meta["generation"] = 1
        if rt.has_status and not rt.keeps_status_on_create:
            _reset_status(rt, obj, None)
        self._default(rt, obj)
        added = rt.server_finalizers if self.server_finalizers else ()
        meta.setdefault("finalizers", [])
        meta["finalizers"] = list(dict.fromkeys([*meta["finalizers"], *added]))
        target = error_target(rt, meta.get("name", ""))
        patch.record_create(
            obj, manager=options.field_manager, operation=operation, resource=rt, server_finalizers=added
        )
        causes = self._admit(rt, obj, None, target)
        self._validate(rt, obj, None, target, causes)
        try:
            charged = accounting.charge_quota(self, rt, obj, target)
        except StatusError:
            self._release(rt, obj)
            raise
        obj = omit_empty(rt, obj)
        if options.dry_run:
            self._release(rt, obj)
            return with_type(rt, obj)
        created = self._store_new(rt, namespace, obj, target)
        accounting.record_quotas(self, charged)
        accounting.refresh_budgets(self, rt, namespace)
        return created

    def _store_new(self, rt: ResourceType, namespace: str, obj: Obj, target: Target) -> Obj:
        try:
            stored = self.store.create(resource_key(rt), namespace, obj["metadata"]["name"], strip_type(obj))
        except Conflict as exc:
            self._release(rt, obj)
            raise status_errors.already_exists(target) from exc
        if rt.created_with:
            self._create_companions(rt.created_with(obj))
        return with_type(rt, stored)

    def write_status_of(self, rt: ResourceType, old: Obj, new: Obj, options: WriteOptions) -> Obj:
        """Write `new`'s status over the stored `old`, as a `/status` write (in-process writers)."""
        return subresources.write_status(self, rt, old, new, options)

    def _create_companions(self, companions: builtins.list[tuple[str, str, Obj]]) -> None:
        """Objects created along with a new one (a Namespace's contents); ones already there are kept."""
        for kind, namespace, body in companions:
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
        options: WriteOptions = DEFAULT_WRITE_OPTIONS,
        *,
        subresource: str | None = None,
    ) -> Obj:
        obj = decode(rt, body)
        meta = metadata(obj)
        namespace = self._check_namespace(rt, namespace, meta)
        _check_name(meta.get("name") or name, name)
        meta["name"] = name
        old = self.stored(rt, namespace, name)
        check_rv(rt, meta.get("resourceVersion"), old, name)
        if subresource == "status":
            return subresources.write_status(self, rt, old, obj, options)
        return self.write_update(rt, old, obj, options, operation="Update")

    def write_update(
        self,
        rt: ResourceType,
        old: Obj,
        obj: Obj,
        options: WriteOptions,
        *,
        operation: str,
        subresource: str | None = None,
    ) -> Obj:
        """Write `obj` over the stored `old` through the main endpoint's rules: server-owned metadata
        and status kept, defaulting, generation, admission, validation, managedFields."""
        meta = metadata(obj)
        for key in SERVER_OWNED_META:
            meta.pop(key, None)
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
        self._default(rt, obj)
        if rt.has_status:
            _reset_status(rt, obj, old)
        if rt.tracks_generation and rt.generation_source(obj) != rt.generation_source(old):
            meta["generation"] = int(old["metadata"].get("generation", 0)) + 1
        target = error_target(rt, meta["name"])
        causes = self._admit(rt, obj, old, target)
        self._validate(rt, obj, old, target, causes)
        obj = omit_empty(rt, obj)
        obj = patch.managed_fields(
            old, obj, manager=options.field_manager, operation=operation, subresource=subresource, resource=rt
        )
        return self.commit_update(rt, old, obj, options)

    def commit_update(self, rt: ResourceType, old: Obj, new: Obj, options: WriteOptions) -> Obj:
        """Store `new` over `old` unless nothing changed or it is a dry run; a deleted object whose
        last finalizer this write clears is removed (or, for a grace period, left to its ender)."""
        new = strip_type(new)
        new["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        if new == old or options.dry_run:
            return with_type(rt, new)
        key, namespace, name = resource_key(rt), scope(rt, old["metadata"].get("namespace")), _name(new)
        if _deleted(new) and not _finalizers_pending(rt, new) and not waits_for_grace_period(rt, new):
            return with_type(rt, self._remove(rt, namespace, name, new))
        stored = self.store.update(key, namespace, name, new)
        accounting.refresh_budgets(self, rt, namespace)
        return with_type(rt, stored)

    # --- patch ---------------------------------------------------------------------------------------

    def patch_or_create(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str | None,
        options: WriteOptions = DEFAULT_WRITE_OPTIONS,
        *,
        subresource: str | None = None,
        may_create: Callable[[], None] = lambda: None,
    ) -> tuple[Obj, bool]:
        """PATCH; the flag says whether the object was created (server-side apply on a missing object).
        `may_create` raises when the caller may not create it: a real apiserver authorizes an apply that
        creates as a `create` too (its patch handler's createValidation)."""
        patcher = patch.patcher_for(content_type, rt)
        old = self.store.get(resource_key(rt), scope(rt, namespace), name)
        ctx = patch.PatchContext(
            rt,
            options.field_manager,
            options.force,
            subresource,
            old is not None,
            options.field_validation,
            options.warnings,
        )
        operation = "Apply" if patch.is_apply(content_type) else "Update"
        if old is None and patch.creates_when_missing(content_type) and subresource is None:
            may_create()
            skeleton: Obj = {"apiVersion": rt.group_version, "kind": rt.kind, "metadata": {"name": name}}
            applied = patcher(skeleton, body, ctx)
            uid = metadata(applied).get("uid")
            if uid:
                detail = (
                    f"uid mismatch: the provided object specified uid {uid}, and no existing object was found"
                )
                raise status_errors.conflict(error_target(rt, name), detail)
            return self.create(rt, namespace, applied, options, operation=operation), True
        if old is None:
            raise status_errors.not_found(error_target(rt, name))
        patched = patcher(with_type(rt, old), body, ctx)  # a patcher copies what it changes
        meta = metadata(patched)
        check_rv(rt, meta.get("resourceVersion"), old, name)
        _check_name(meta.get("name", name), name)
        patched = decode(rt, patched)
        if subresource == "status":
            return subresources.write_status(self, rt, old, patched, options, operation=operation), False
        return self.write_update(rt, old, patched, options, operation=operation), False

    # --- subresources: functions of subresources.py taking the Api first, so they bind as methods ---

    bind = subresources.bind
    finalize_namespace = subresources.finalize_namespace
    evict = accounting.evict
    get_scale = subresources.get_scale
    request_token = subresources.request_token
    update_scale = subresources.update_scale
    patch_scale = subresources.patch_scale

    # --- delete --------------------------------------------------------------------------------------

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Obj:
        options = options or DeleteOptions()
        namespace = scope(rt, namespace)
        old = self.stored(rt, namespace, name)
        check_preconditions(rt, old, options)
        new = json_copy(old)
        meta = new["metadata"]
        finalizers = with_policy_finalizer(
            list(meta.get("finalizers") or []), options.propagation_policy or rt.default_propagation
        )
        grace = rt.deletion_grace(new, options.grace_period_seconds) if rt.deletion_grace else 0
        if finalizers or grace > 0 or _spec_finalizers_pending(rt, new):
            return self._delete_later(rt, old, new, finalizers, grace, options)
        meta.setdefault("deletionTimestamp", now_rfc3339())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if options.dry_run:
            return deleted_response(rt, new)
        return deleted_response(rt, self._remove(rt, namespace, name, new))

    def _delete_later(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        finalizers: builtins.list[str],
        grace: int,
        options: DeleteOptions,
    ) -> Obj:
        """Mark a delete that waits for finalizers or a grace period: `deletionTimestamp` is set once
        (moved earlier only by a shorter grace period) and the finalizers are the policy's."""
        meta = new["metadata"]
        if rt.on_delete:
            rt.on_delete(new)
        shortened = grace < int(meta.get("deletionGracePeriodSeconds") or 0)
        if not meta.get("deletionTimestamp") or shortened:
            meta["deletionTimestamp"] = timestamp_in(grace)
            meta["deletionGracePeriodSeconds"] = grace
            if rt.tracks_generation and not shortened:
                meta["generation"] = int(meta.get("generation", 0)) + 1
        meta["finalizers"] = finalizers
        if options.dry_run or new == old:
            return with_type(rt, new)
        namespace = scope(rt, meta.get("namespace"))
        stored = self.store.update(resource_key(rt), namespace, _name(new), omit_empty(rt, new))
        accounting.refresh_budgets(self, rt, namespace)
        return with_type(rt, stored)

    def _remove(self, rt: ResourceType, namespace: str, name: str, final: Obj) -> Obj:
        if rt.is_namespace:
            self._empty_namespace(name)
        removed = self.store.delete(resource_key(rt), namespace, name, final)
        self._release(rt, removed)
        accounting.recount_quotas(self, rt, namespace)
        accounting.refresh_budgets(self, rt, namespace)
        for key in rt.removes_with(removed) if rt.removes_with else ():
            for obj in list(self.store.list(key, None)):
                self.store.delete(key, obj["metadata"].get("namespace", ""), _name(obj))
        return removed

    def _empty_namespace(self, namespace: str) -> None:
        """Remove everything still in a namespace being removed, at once: without the namespace
        controller (a bare API server) nothing else would."""
        for rt in self.kinds.stored():
            if not rt.namespaced:
                continue
            for obj in list(self.store.list(resource_key(rt), namespace)):
                self._release(rt, self.store.delete(resource_key(rt), namespace, _name(obj)))

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
        return list_of(rt, {"resourceVersion": str(self.store.revision)}, deleted)

    # --- watch ---------------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, options: WatchOptions) -> AsyncIterator[Obj]:
        """A watch stream; a bad selector raises here, before any stream opens."""
        flt = filter_for(rt, namespace, options.label_selector, options.field_selector)
        return open_watch(self.store, rt, flt, options)

    # --- pipeline steps ------------------------------------------------------------------------------

    def _check_namespace(self, rt: ResourceType, namespace: str, meta: Obj) -> str:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return ""
        given = meta.get("namespace")
        if given and given != namespace:
            raise status_errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
        if self.store.get(resource_key(NAMESPACES), "", namespace) is None:
            raise status_errors.not_found(error_target(NAMESPACES, namespace))
        return namespace

    def _check_not_terminating(self, rt: ResourceType, namespace: str, meta: Obj) -> None:
        """NamespaceLifecycle: nothing new in a namespace being deleted (updates and deletes go on)."""
        if not namespace:
            return
        stored = self.store.get(resource_key(NAMESPACES), "", namespace)
        if stored is not None and metadata(stored).get("deletionTimestamp"):
            name = str(meta.get("name") or meta.get("generateName") or "")
            raise status_errors.namespace_terminating(error_target(rt, name), namespace)

    def _default(self, rt: ResourceType, obj: Obj) -> None:
        if rt.defaulter:
            rt.defaulter(obj)
        if rt.spec_finalizers:
            kept = list(rt.spec_finalizers) if self.server_finalizers else []
            obj.setdefault("spec", {})["finalizers"] = kept

    def _admit(self, rt: ResourceType, obj: Obj, old: Obj | None, target: Target) -> builtins.list[Cause]:
        return rt.admitter(self.admission, obj, old, target) if rt.admitter else []

    def _release(self, rt: ResourceType, obj: Obj) -> None:
        if rt.releaser:
            rt.releaser(self.admission, obj)

    def _validate(
        self, rt: ResourceType, obj: Obj, old: Obj | None, target: Target, causes: builtins.list[Cause]
    ) -> None:
        all_causes = (
            validators.validate_metadata(obj, rt.name_rule) if old is None else _validate_meta_update(obj)
        )
        if rt.validator:
            all_causes += rt.validator(obj)
        if old is not None and rt.update_validator:
            all_causes += rt.update_validator(obj, old)
        all_causes += causes
        if all_causes:
            if old is None:
                self._release(rt, obj)
            raise status_errors.invalid(target, all_causes)


# --- helpers ------------------------------------------------------------------------------------------


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _check_name(given: Any, name: str) -> None:
    if given != name:
        raise status_errors.bad_request(
            f"the name of the object ({given}) does not match the name on the URL ({name})"
        )


def _reset_status(rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    """A main-endpoint write keeps the stored status (none on create): a Go struct's is `{}` then,
    a custom resource has none."""
    if old is not None and "status" in old:
        obj["status"] = json_copy(old["status"])
    elif rt.structured:
        obj["status"] = {}
    else:
        obj.pop("status", None)


def _deleted(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def _finalizers_pending(rt: ResourceType, obj: Obj) -> bool:
    """Whether removal still waits: for metadata.finalizers, or for the spec.finalizers some kinds keep."""
    return bool(obj["metadata"].get("finalizers")) or _spec_finalizers_pending(rt, obj)


def _spec_finalizers_pending(rt: ResourceType, obj: Obj) -> bool:
    return bool(rt.spec_finalizers) and bool((obj.get("spec") or {}).get("finalizers"))


def _validate_meta_update(obj: Obj) -> builtins.list[Cause]:
    meta = obj.get("metadata") or {}
    return validators.validate_labels(
        meta.get("labels"), "metadata.labels"
    ) + validators.validate_annotations(meta.get("annotations"))

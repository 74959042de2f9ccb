"""Kubernetes objects as every stage handles them: plain dicts (`Manifest`), their identity (`ObjectRef`),
and the readers of the metadata planner looks at.

Rendered manifests and live objects stay the dicts the API server speaks, from the renderer and the
reader to the printers; this module is the one place that knows where an object's identity and
planner's marks sit inside one, so no stage reaches into `metadata` by hand. It also names planner's
own labels and annotations (docs/design.md §3; the ApplySet's are in `planner.state.applyset`) and the one canonical
JSON spelling that hashes, records and digests use.

A leaf of the layering: it imports only the table of kinds, so the cluster client, the renderer and
every stage above them can use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from planner.kinds import NAMESPACE, STATEFUL_SET, KindInfo, by_kind

Manifest = dict[str, Any]

# The field manager of planner's server-side applies and creates (lifecycle commands use their own).
FIELD_MANAGER = "planner"
LOCK_PREFIX = "planner-lock-"  # a plan's run lock is the Lease `planner-lock-<plan>` (state/runlock.py)

# The labels that select a workload's pods (also its selectors, so never user labels).
LABEL_APP = "app"
LABEL_WORKLOAD = "gobrave-workload"

ANNOTATION_PLAN = "planner.dev/plan"
ANNOTATION_RUNTIME_ID = "planner.dev/runtime-id"
ANNOTATION_RUN_KEY = "planner.dev/run-key"
ANNOTATION_HASH = "planner.dev/hash"
ANNOTATION_SANDBOX_STATE = "planner.dev/sandbox-state"
ANNOTATION_POD_SPEC = "planner.dev/pod-spec"
ANNOTATION_DEPENDS_ON = "config.kubernetes.io/depends-on"
# Fields of this one object that are sent on create only, comma-separated dotted paths: an autoscaled
# workload's `spec.replicas`, which its HorizontalPodAutoscaler owns once the workload exists.
ANNOTATION_CREATE_ONLY = "planner.dev/create-only"
# Helm's delete policy of a chart's hook (plan/charted.py): a hook Job with `hook-succeeded` or
# `hook-failed` gets a `delete-hook` task after its wait, another hook object with `hook-succeeded` one
# after its phase's hook Jobs ran (graph.py).
HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"
# Helm's hook annotation, and the hooks planner runs: before the chart's other objects, or after them.
HOOK = "helm.sh/hook"
HOOKS_BEFORE = frozenset({"pre-install", "pre-upgrade"})
HOOKS_AFTER = frozenset({"post-install", "post-upgrade"})

# Sandboxes beside a plan: warm-pool members (not ApplySet members, so prune never sees them) and the
# activity the idle reaper reads, all kept on the workspace PVC (the pool labels on every object).
LABEL_POOL = "planner.dev/pool"
LABEL_CLAIMED = "planner.dev/claimed"
LABEL_OWNER = "planner.dev/owner"
ANNOTATION_LAST_ACTIVITY = "planner.dev/last-activity"
ANNOTATION_IDLE_TIMEOUT = "planner.dev/idle-timeout"
ANNOTATION_PAUSE_REASON = "planner.dev/paused-reason"
PAUSE_REASON_IDLE = "idle"


@dataclass(frozen=True, kw_only=True, order=True)
class ObjectRef:
    """One object's identity; printed as docs/design.md §5's `<kind>/<namespace>/<name>` (lower-case kind)."""

    group: str
    kind: str
    namespace: str | None
    name: str

    @classmethod
    def of(cls, kind: KindInfo, name: str, namespace: str | None = None) -> ObjectRef:
        """The ref of an object of a known kind (`ObjectRef.of(NAMESPACE, "shop")`)."""
        return cls(group=kind.group, kind=kind.kind, namespace=namespace, name=name)

    def __str__(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.lower()}/{scope}{self.name}"

    @property
    def described(self) -> str:
        """How messages name the object: `deployment shop/api`, `namespace shop`."""
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.lower()} {scope}{self.name}"

    @property
    def group_kind(self) -> str:
        """The ApplySet spelling of its kind (`Deployment.apps`, `Secret`)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


def ref_of(manifest: Mapping[str, Any]) -> ObjectRef:
    """The identity of a manifest or live object: group from `apiVersion`, namespace None when unset."""
    api_version = str(manifest.get("apiVersion", ""))
    metadata = metadata_of(manifest)
    return ObjectRef(
        group=api_version.rpartition("/")[0],
        kind=str(manifest.get("kind", "")),
        namespace=metadata.get("namespace") or None,
        name=str(metadata.get("name", "")),
    )


def metadata_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def labels_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return metadata_of(obj).get("labels") or {}


def annotations_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return metadata_of(obj).get("annotations") or {}


def _runtime_parts(obj: Mapping[str, Any] | None) -> list[str]:
    return str(annotations_of(obj).get(ANNOTATION_RUNTIME_ID, "")).split("|")


def owner_of(obj: Mapping[str, Any] | None) -> str | None:
    """The workload or sandbox name from the runtime-ID annotation (`k8s-shop|deployment|api` → api)."""
    parts = _runtime_parts(obj)
    return parts[2] if len(parts) == 3 and parts[2] else None


SANDBOX_KIND = "sandbox"  # a sandbox's runtime ID kind (`planner.workloads.SANDBOX`)


def sandbox_of(obj: Mapping[str, Any] | None) -> str | None:
    """The sandbox an object belongs to (runtime ID `…|sandbox|<name>`), None for anything else."""
    parts = _runtime_parts(obj)
    return parts[2] if len(parts) == 3 and parts[1] == SANDBOX_KIND else None


def _age_order(obj: Manifest) -> tuple[str, str]:
    return str(metadata_of(obj).get("creationTimestamp", "")), str(metadata_of(obj).get("name"))


def controlling(obj: Manifest, kind: KindInfo) -> str | None:
    """The name of the object of `kind` that controls `obj` (its ownerReference of that kind and API
    group), None when none does."""
    for owner in metadata_of(obj).get("ownerReferences") or []:
        group = str(owner.get("apiVersion", "")).rpartition("/")[0]
        if owner.get("kind") == kind.kind and group == kind.group:
            return str(owner.get("name"))
    return None


def owned_by(kind: KindInfo, name: str, namespace: str, objects: Iterable[Manifest]) -> list[Manifest]:
    """The objects the `kind` `namespace`/`name` controls (a CronJob's Jobs, a DaemonSet's Pods), oldest
    first."""
    mine = [
        obj
        for obj in objects
        if metadata_of(obj).get("namespace") == namespace and controlling(obj, kind) == name
    ]
    return sorted(mine, key=_age_order)


def newest(objects: Iterable[Manifest]) -> Manifest | None:
    """The newest object by creation time, then name (a workload's latest pod); None when there is none."""
    return max(
        objects,
        key=_age_order,
        default=None,
    )


def claim_templates(stateful_set: Mapping[str, Any] | None) -> list[str]:
    """The names of a StatefulSet's claim templates; none for any other object."""
    if not stateful_set or stateful_set.get("kind") != STATEFUL_SET.kind:
        return []
    templates = (stateful_set.get("spec") or {}).get("volumeClaimTemplates") or []
    return [str(metadata_of(template).get("name")) for template in templates]


def claims_selector(stateful_set: Mapping[str, Any]) -> str:
    """The label selector of the PVCs a StatefulSet's templates made: the controller labels each with its
    selector's matchLabels."""
    labels = ((stateful_set.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def stateful_claims(stateful_set: Mapping[str, Any] | None, claims: Iterable[Manifest]) -> list[Manifest]:
    """The PVCs among `claims` that a StatefulSet's claim templates made, by the name Kubernetes gives
    them (`<template>-<statefulset>-<ordinal>`) in its namespace, sorted by name: the one rule by which
    prune, `planner delete` and the web view find them."""
    templates = claim_templates(stateful_set)
    if not templates:
        return []
    name, namespace = metadata_of(stateful_set).get("name"), metadata_of(stateful_set).get("namespace")
    named = re.compile(
        "(?:" + "|".join(re.escape(f"{template}-{name}-") for template in templates) + r")(?:0|[1-9][0-9]*)"
    )
    found = [
        claim
        for claim in claims
        if metadata_of(claim).get("namespace") == namespace
        and named.fullmatch(str(metadata_of(claim).get("name")))
    ]
    return sorted(found, key=lambda claim: str(metadata_of(claim).get("name")))


def namespace_manifest(name: str) -> Manifest:
    return {"apiVersion": NAMESPACE.api_version, "kind": NAMESPACE.kind, "metadata": {"name": name}}


def json_copy(value: Any) -> Any:
    """A copy of a JSON value sharing no dict or list with it (a quarter of `copy.deepcopy`'s cost,
    which a 1,000-workload render paid for 3,000 manifests)."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    return value


def canonical_json(value: Any) -> str:
    """The one JSON spelling hashes, records and digests use: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def without_create_only(manifest: Manifest) -> Manifest:
    """`manifest` without its kind's create-only fields (`kinds.py`: a PVC's `spec.dataSource`), which
    are sent once, on create, and are no part of what planner compares or writes afterwards."""
    result = manifest
    for dotted in create_only_fields(manifest):
        result = without_field(result, dotted.split("."))
    return result


def with_create_only_of(manifest: Manifest, live: Mapping[str, Any]) -> Manifest:
    """`manifest` with its kind's create-only fields as `live` has them (absent where live has none):
    what an update writes, so it never asks the server to change a field only a create may set."""
    result = without_create_only(manifest)
    for dotted in create_only_fields(manifest):
        value = _at(live, dotted.split("."))
        if value is not None:
            result = _placed(result, dotted.split("."), value)
    return result


def create_only_fields(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The create-only fields of `manifest`: its kind's, then those its own annotation names."""
    own = annotations_of(manifest).get(ANNOTATION_CREATE_ONLY, "")
    try:
        fields = by_kind(str(manifest.get("kind", ""))).create_only_fields
    except KeyError:
        fields = ()
    return (*fields, *(path for path in own.split(",") if path))


def without_field(value: Manifest, path: Sequence[str]) -> Manifest:
    """`value` without the field at `path` (keys from the top); a new dict, the input unchanged."""
    head, *rest = path
    if not rest:
        return {k: v for k, v in value.items() if k != head}
    child = value.get(head)
    if not isinstance(child, dict):
        return value
    return {**value, head: without_field(child, rest)}


def _at(value: Any, path: list[str]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _placed(value: Manifest, path: list[str], leaf: Any) -> Manifest:
    head, *rest = path
    child = value.get(head)
    return {**value, head: _placed(child if isinstance(child, dict) else {}, rest, leaf) if rest else leaf}


def present(**fields: Any) -> dict[str, Any]:
    """The keyword arguments that carry a value: None and empty strings, lists and maps are dropped
    (0 and False are values and stay)."""
    return {key: value for key, value in fields.items() if value is not None and value not in ("", [], {})}


def hooks_of(obj: Mapping[str, Any] | None) -> frozenset[str]:
    """A chart's object's Helm hooks (`helm.sh/hook`, comma-separated); none for an ordinary object."""
    return _listed_annotation(obj, HOOK)


def hook_phase(obj: Mapping[str, Any] | None) -> Literal["pre", "post"] | None:
    """Whether a chart's object is a hook run before the chart's other objects (`pre`), after them
    (`post`), or no such hook (None)."""
    hooks = hooks_of(obj)
    return "pre" if hooks & HOOKS_BEFORE else "post" if hooks & HOOKS_AFTER else None


def hook_delete_policies(obj: Mapping[str, Any] | None) -> frozenset[str]:
    """A chart's hook object's Helm delete policies (`helm.sh/hook-delete-policy`, comma-separated)."""
    return _listed_annotation(obj, HOOK_DELETE_POLICY)


def _listed_annotation(obj: Mapping[str, Any] | None, name: str) -> frozenset[str]:
    """The comma-separated words of annotation `name`. Read from what a chart rendered, before anything
    checked it: metadata or annotations that are no mapping hold none."""
    metadata = (obj or {}).get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    value = annotations.get(name) if isinstance(annotations, Mapping) else None
    return frozenset(part.strip() for part in str(value).split(",") if part.strip()) if value else frozenset()

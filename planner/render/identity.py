"""Identity on rendered objects (docs/design.md §3): the values that let planner find, order and compare what
it rendered, and the runtime IDs users type.

The renderer computes them here: content hashes, Job run-keys, the workload labels that are also
selectors, each object's namespace, depends-on references, runtime IDs, and the stamp of ApplySet
membership and plan name every top-level object carries. The keys they are stored under are named in
`planner.objects` (and the ApplySet's in `planner.state.applyset`), so the renderer, the diff and the
lifecycle commands agree on one spelling. Hashes are over canonical JSON (sorted keys, compact
separators) so they are the same on every machine and blind to the order keys were written in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, cast, get_args

from planner import workloads
from planner.errors import RuntimeIDError
from planner.kinds import (
    PERSISTENT_VOLUME_CLAIM,
    POD,
    KindInfo,
    group_of,
    known,
)
from planner.objects import (
    ANNOTATION_DEPENDS_ON,
    ANNOTATION_HASH,
    ANNOTATION_PLAN,
    LABEL_APP,
    LABEL_WORKLOAD,
    Manifest,
    annotations_of,
    canonical_json,
    metadata_of,
)
from planner.plan.model import Plan, RawManifest, Runtime, Sandbox, Workload
from planner.plan.names import workspace_pvc_name
from planner.state.applyset import LABEL_PART_OF, applyset_id

RUNTIMES: tuple[str, ...] = get_args(Runtime)


def workload_kind(workload: Workload) -> KindInfo:
    """The Kubernetes kind a workload renders as: its Deployment, Job, CronJob or StatefulSet."""
    return workloads.named(workload.kind).api


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(manifest: Mapping[str, Any]) -> str:
    """sha256 hex of the manifest's canonical JSON, its own `planner.dev/hash` annotation left out."""
    metadata = dict(metadata_of(manifest))
    annotations = {k: v for k, v in annotations_of(manifest).items() if k != ANNOTATION_HASH}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return _sha256_hex(canonical_json({**manifest, "metadata": metadata}))


def with_hash(manifest: Manifest) -> Manifest:
    """The manifest with its `planner.dev/hash` annotation set (a new dict; the input is not changed)."""
    metadata = dict(manifest["metadata"])
    metadata["annotations"] = {**annotations_of(manifest), ANNOTATION_HASH: content_hash(manifest)}
    return {**manifest, "metadata": metadata}


def run_key(job: Mapping[str, Any]) -> str:
    """A Job's run-key: what decides whether it has already run (its pod template, completions and
    parallelism). Labels and annotations of the Job object itself do not count."""
    spec = job["spec"]
    keyed = {
        "template": spec["template"],
        "completions": spec.get("completions"),
        "parallelism": spec.get("parallelism"),
    }
    return _sha256_hex(canonical_json(keyed))


def workload_labels(name: str) -> dict[str, str]:
    """`app` and `gobrave-workload`, also the selectors (docs/design.md §3): never user labels, selectors are
    immutable."""
    return {LABEL_APP: name, LABEL_WORKLOAD: name}


def plan_namespace(plan: Plan, default_namespace: str) -> str:
    """The plan's namespace: `metadata.namespace`, else the runtime's default (docs/design.md §3)."""
    return plan.namespace or default_namespace


def workload_namespace(plan: Plan, workload: Workload, default_namespace: str) -> str:
    """The workload's runtimeNamespace, else the plan's namespace, else the default (docs/design.md §3)."""
    return workload.runtime_namespace or plan_namespace(plan, default_namespace)


def workload_runtime_id(plan: Plan, workload: Workload, default_namespace: str) -> RuntimeID:
    namespace = workload_namespace(plan, workload, default_namespace)
    return RuntimeID(runtime=plan.runtime, namespace=namespace, kind=workload.kind, name=workload.name)


def sandbox_runtime_id(plan: Plan, sandbox: Sandbox, default_namespace: str) -> RuntimeID:
    namespace = plan_namespace(plan, default_namespace)
    return RuntimeID(runtime=plan.runtime, namespace=namespace, kind=workloads.SANDBOX, name=sandbox.name)


def raw_kind(plan: Plan, raw: RawManifest) -> KindInfo:
    """What render knows of a raw manifest's kind: planner's table, else what a CRD of the plan declares,
    else what the cluster serves (`plan.served_kinds`, when the plan is made against one), else — as
    `planner render` and `validate` read a plan, without a cluster — a namespaced kind. Its plural is ""
    when unknown."""
    group = group_of(raw.api_version)
    key = (group, raw.kind)
    found = known(group, raw.kind) or plan.declared_kinds.get(key) or plan.served_kinds.get(key)
    version = raw.api_version.rpartition("/")[2]
    return found or KindInfo(kind=raw.kind, group=group, version=version, plural="", namespaced=True)


def raw_namespace(plan: Plan, raw: RawManifest, default_namespace: str) -> str | None:
    """A raw manifest's namespace: as written, else the plan's; None for a cluster-scoped kind."""
    if not raw_kind(plan, raw).namespaced:
        return None
    return raw.namespace or plan_namespace(plan, default_namespace)


def primary_ref(plan: Plan, name: str, default_namespace: str) -> str:
    """The depends-on reference of a plan entry's primary object, the one that carries and answers
    dependencies: a workload's Deployment, Job, CronJob or StatefulSet; a sandbox's Pod, or its workspace
    PVC while paused (the Pod does not exist then); a raw manifest (`Kind/name`) itself. KeyError when
    nothing has that name."""
    raw = plan.manifests_by_handle.get(name)
    if raw is not None:
        namespace = raw_namespace(plan, raw, default_namespace)
        return depends_on_ref(raw_kind(plan, raw), namespace or "", raw.name)
    entry = plan.runnables.get(name)
    if isinstance(entry, Workload):
        return depends_on_ref(workload_kind(entry), workload_namespace(plan, entry, default_namespace), name)
    if entry is not None:
        namespace = plan_namespace(plan, default_namespace)
        if entry.state == "running":
            return depends_on_ref(POD, namespace, name)
        return depends_on_ref(PERSISTENT_VOLUME_CLAIM, namespace, workspace_pvc_name(name))
    raise KeyError(f"plan {plan.name} has no workload or sandbox named {name!r}")


def dependency_refs(plan: Plan, name: str, default_namespace: str) -> list[str]:
    """The depends-on references a dependency names: a chart (`chart/<name>`) means each object it
    renders; anything else its primary object (`primary_ref`)."""
    members = plan.chart_members.get(name)
    if members is None:
        return [primary_ref(plan, name, default_namespace)]
    return [
        depends_on_ref(raw_kind(plan, raw), raw_namespace(plan, raw, default_namespace) or "", raw.name)
        for raw in members
    ]


def depends_on_annotation(plan: Plan, depends_on: Iterable[str], default_namespace: str) -> dict[str, str]:
    """`config.kubernetes.io/depends-on` for a dependent's primary object; nothing when it has no
    dependencies."""
    refs = [ref for target in depends_on for ref in dependency_refs(plan, target, default_namespace)]
    return {ANNOTATION_DEPENDS_ON: depends_on_value(refs)} if refs else {}


@dataclass(frozen=True, kw_only=True)
class Stamp:
    """The identity every top-level object of one plan carries: ApplySet membership and the plan name."""

    plan: str
    applyset: str

    @classmethod
    def of(cls, plan: Plan, default_namespace: str) -> Stamp:
        return cls(plan=plan.name, applyset=applyset_id(plan.name, plan_namespace(plan, default_namespace)))

    def metadata(
        self,
        *,
        name: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Manifest:
        """Top-level metadata; planner's own keys win over user labels and annotations of the same name."""
        return {
            "name": name,
            "namespace": namespace,
            "labels": {**(labels or {}), LABEL_PART_OF: self.applyset},
            "annotations": {**(annotations or {}), ANNOTATION_PLAN: self.plan},
        }


def depends_on_ref(kind: KindInfo, namespace: str, name: str) -> str:
    """One cli-utils object reference: `<group>/namespaces/<ns>/<Kind>/<name>` (core group empty)."""
    if kind.namespaced:
        return f"{kind.group}/namespaces/{namespace}/{kind.kind}/{name}"
    return f"{kind.group}/{kind.kind}/{name}"


def depends_on_value(refs: Iterable[str]) -> str:
    return ",".join(sorted(set(refs)))


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_LABEL_MAX = 63
RUNTIME_ID_FORM = "<runtime>-<namespace>|<kind>|<name>"


def is_dns_label(text: str) -> bool:
    return len(text) <= _DNS_LABEL_MAX and _DNS_LABEL.match(text) is not None


@dataclass(frozen=True, kw_only=True)
class RuntimeID:
    """A workload's or sandbox's runtime ID, `<runtime>-<namespace>|<kind>|<name>`, as gobrave spells it."""

    runtime: Runtime
    namespace: str
    kind: str  # a workload kind or `sandbox` (`planner.workloads.RUNTIME_KINDS`)
    name: str

    def __str__(self) -> str:
        return f"{self.runtime}-{self.namespace}|{self.kind}|{self.name}"

    @classmethod
    def parse(cls, text: str) -> RuntimeID:
        """Parse a runtime ID; RuntimeIDError naming the expected form and what was wrong otherwise."""
        parts = text.split("|")
        if len(parts) != 3:
            _reject(text, f"expected 3 parts separated by '|', found {len(parts)}")
        prefix, kind, name = parts
        runtime, dash, namespace = prefix.partition("-")
        if runtime not in RUNTIMES:
            _reject(text, f"unknown runtime prefix {runtime!r} (expected one of {', '.join(RUNTIMES)})")
        if not dash:
            _reject(text, f"runtime {runtime!r} is not followed by '-<namespace>'")
        if not is_dns_label(namespace):
            _reject(text, f"namespace {namespace!r} is not a DNS label")
        if kind not in workloads.RUNTIME_KINDS:
            _reject(text, f"unknown kind {kind!r} (expected one of {', '.join(workloads.RUNTIME_KINDS)})")
        if not is_dns_label(name):
            _reject(text, f"name {name!r} is not a DNS-1123 name of at most {_DNS_LABEL_MAX} characters")
        return cls(runtime=cast(Runtime, runtime), namespace=namespace, kind=kind, name=name)


def _reject(text: str, problem: str) -> NoReturn:
    raise RuntimeIDError(f"malformed runtime ID {text!r}: {problem}; expected {RUNTIME_ID_FORM}")

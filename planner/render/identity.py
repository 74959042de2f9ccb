"""Identity on cluster objects (DESIGN §3): the labels, annotations and hashes that let planner find,
order and compare what it rendered, and the runtime IDs users type.

Everything that names or fingerprints an object lives here, so that the renderer, the diff and the
lifecycle commands agree on one spelling. Hashes are over canonical JSON (sorted keys, compact
separators) so they are the same on every machine and blind to the order keys were written in.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, cast, get_args

from planner import __version__
from planner.errors import RuntimeIDError
from planner.kinds import DEPLOYMENT, JOB, PERSISTENT_VOLUME_CLAIM, POD, SECRET, KindInfo, for_manifest
from planner.plan.model import Plan, Runtime, Sandbox, Workload
from planner.plan.names import workspace_pvc_name

Manifest = dict[str, Any]

LABEL_APP = "app"
LABEL_WORKLOAD = "gobrave-workload"
LABEL_PART_OF = "applyset.kubernetes.io/part-of"
LABEL_APPLYSET_ID = "applyset.kubernetes.io/id"

ANNOTATION_PLAN = "planner.dev/plan"
ANNOTATION_RUNTIME_ID = "planner.dev/runtime-id"
ANNOTATION_RUN_KEY = "planner.dev/run-key"
ANNOTATION_HASH = "planner.dev/hash"
ANNOTATION_SANDBOX_STATE = "planner.dev/sandbox-state"
ANNOTATION_POD_SPEC = "planner.dev/pod-spec"
ANNOTATION_DEPENDS_ON = "config.kubernetes.io/depends-on"
ANNOTATION_TOOLING = "applyset.kubernetes.io/tooling"
ANNOTATION_CONTAINS_GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
ANNOTATION_ADDITIONAL_NAMESPACES = "applyset.kubernetes.io/additional-namespaces"

APPLYSET_PARENT_TYPE = "planner.dev/applyset"

RuntimeKind = Literal["deployment", "job", "sandbox"]
RUNTIMES: tuple[str, ...] = get_args(Runtime)
RUNTIME_KINDS: tuple[str, ...] = get_args(RuntimeKind)


def canonical_json(value: Any) -> str:
    """The one JSON spelling hashes and the pod-spec annotation use: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(manifest: Mapping[str, Any]) -> str:
    """sha256 hex of the manifest's canonical JSON, its own `planner.dev/hash` annotation left out."""
    metadata = dict(manifest.get("metadata", {}))
    annotations = {k: v for k, v in metadata.get("annotations", {}).items() if k != ANNOTATION_HASH}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return _sha256_hex(canonical_json({**manifest, "metadata": metadata}))


def with_hash(manifest: Manifest) -> Manifest:
    """The manifest with its `planner.dev/hash` annotation set (a new dict; the input is not changed)."""
    metadata = dict(manifest["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), ANNOTATION_HASH: content_hash(manifest)}
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


def seed_labels(name: str) -> dict[str, str]:
    """The seed-000 labels, also the selectors (DESIGN §3): never user labels, selectors are immutable."""
    return {LABEL_APP: name, LABEL_WORKLOAD: name}


def plan_namespace(plan: Plan, default_namespace: str) -> str:
    """The plan's namespace: `metadata.namespace`, else the runtime's default (DESIGN §3)."""
    return plan.namespace or default_namespace


def workload_namespace(plan: Plan, workload: Workload, default_namespace: str) -> str:
    """Seed 000's priority: the workload's runtimeNamespace, else the plan's namespace, else the default."""
    return workload.runtime_namespace or plan_namespace(plan, default_namespace)


def workload_runtime_id(plan: Plan, workload: Workload, default_namespace: str) -> RuntimeID:
    namespace = workload_namespace(plan, workload, default_namespace)
    return RuntimeID(runtime=plan.runtime, namespace=namespace, kind=workload.kind, name=workload.name)


def sandbox_runtime_id(plan: Plan, sandbox: Sandbox, default_namespace: str) -> RuntimeID:
    namespace = plan_namespace(plan, default_namespace)
    return RuntimeID(runtime=plan.runtime, namespace=namespace, kind="sandbox", name=sandbox.name)


def primary_ref(plan: Plan, name: str, default_namespace: str) -> str:
    """The depends-on reference of a plan entry's primary object, the one that carries and answers
    dependencies: a workload's Deployment or Job; a sandbox's Pod, or its workspace PVC while paused
    (the Pod does not exist then). KeyError when no workload or sandbox has that name."""
    entry = plan.runnables.get(name)
    if isinstance(entry, Workload):
        kind = JOB if entry.kind == "job" else DEPLOYMENT
        return depends_on_ref(kind, workload_namespace(plan, entry, default_namespace), name)
    if entry is not None:
        namespace = plan_namespace(plan, default_namespace)
        if entry.state == "running":
            return depends_on_ref(POD, namespace, name)
        return depends_on_ref(PERSISTENT_VOLUME_CLAIM, namespace, workspace_pvc_name(name))
    raise KeyError(f"plan {plan.name} has no workload or sandbox named {name!r}")


def depends_on_annotation(plan: Plan, depends_on: Iterable[str], default_namespace: str) -> dict[str, str]:
    """`config.kubernetes.io/depends-on` for a dependent's primary object; nothing when it has no
    dependencies."""
    refs = [primary_ref(plan, target, default_namespace) for target in depends_on]
    return {ANNOTATION_DEPENDS_ON: depends_on_value(refs)} if refs else {}


def applyset_id(plan: str, namespace: str) -> str:
    """KEP-3659 id of the plan's parent Secret `<plan>` in `namespace` (the core group is empty)."""
    digest = hashlib.sha256(f"{plan}.{namespace}.{SECRET.kind}.{SECRET.group}".encode()).digest()
    encoded = base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
    return f"applyset-{encoded}-v1"


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


def _is_dns_label(text: str) -> bool:
    return len(text) <= _DNS_LABEL_MAX and _DNS_LABEL.match(text) is not None


@dataclass(frozen=True, kw_only=True)
class RuntimeID:
    """A workload's or sandbox's runtime ID, `<runtime>-<namespace>|<kind>|<name>` (seed 000)."""

    runtime: Runtime
    namespace: str
    kind: RuntimeKind
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
        if not _is_dns_label(namespace):
            _reject(text, f"namespace {namespace!r} is not a DNS label")
        if kind not in RUNTIME_KINDS:
            _reject(text, f"unknown kind {kind!r} (expected one of {', '.join(RUNTIME_KINDS)})")
        if not _is_dns_label(name):
            _reject(text, f"name {name!r} is not a DNS-1123 name of at most {_DNS_LABEL_MAX} characters")
        return cls(
            runtime=cast(Runtime, runtime), namespace=namespace, kind=cast(RuntimeKind, kind), name=name
        )


def _reject(text: str, problem: str) -> NoReturn:
    raise RuntimeIDError(f"malformed runtime ID {text!r}: {problem}; expected {RUNTIME_ID_FORM}")


def parent_secret(plan: Plan, default_namespace: str, manifests: Sequence[Mapping[str, Any]]) -> Manifest:
    """The skeleton of the plan's ApplySet parent Secret `<plan>` (DESIGN §3), listing the group-kinds
    and the other namespaces of `manifests`. Its `data` (the run-key record) is the applier's to fill."""
    namespace = plan_namespace(plan, default_namespace)
    group_kinds = sorted({for_manifest(m).group_kind for m in manifests})
    others = sorted({str(m["metadata"]["namespace"]) for m in manifests} - {namespace})
    annotations = {
        ANNOTATION_TOOLING: f"planner/{__version__}",
        ANNOTATION_CONTAINS_GROUP_KINDS: ",".join(group_kinds),
        ANNOTATION_PLAN: plan.name,
    }
    if others:
        annotations[ANNOTATION_ADDITIONAL_NAMESPACES] = ",".join(others)
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": {
            "name": plan.name,
            "namespace": namespace,
            "labels": {LABEL_APPLYSET_ID: applyset_id(plan.name, namespace)},
            "annotations": annotations,
        },
        "type": APPLYSET_PARENT_TYPE,
    }

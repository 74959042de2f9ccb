"""The plan as planner understands it: frozen dataclasses, built by the loader from a validated file.

Everything here is already checked (schema and semantic rules) and normalised: defaults filled in
(`kind` is never empty, `runtime` is set, sandbox `state` and rootfs `generation` are set), secret values
resolved, durations in seconds. Stages after the loader never see raw YAML. Field names follow the plan
format in Python spelling; `docs/plan-format.md` documents each field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from planner import workloads
from planner.kinds import KindInfo, declared_kinds

Runtime = Literal["k8s", "k3s"]
SandboxState = Literal["running", "paused"]
VolumeSource = Literal["hostPath", "emptyDir", "configMap", "secret", "persistentVolumeClaim", "claim"]
AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
ProbeHandler = Literal["httpGet", "tcpSocket", "exec"]
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]
EnvSource = Literal["secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef"]
Quantity = str  # as written in the plan (numbers kept as their string form: 0.5 -> "0.5"); parse-checked


@dataclass(frozen=True, kw_only=True)
class Claim:
    size: Quantity
    storage_class: str | None = None


@dataclass(frozen=True, kw_only=True)
class PersistentClaim(Claim):
    """A StatefulSet's per-pod claim template (`volumes[].claim`), and the shape of a plan claim."""

    access_modes: tuple[AccessMode, ...] = ("ReadWriteOnce",)
    volume_mode: Literal["Filesystem", "Block"] | None = None


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """Where a new claim's content comes from: a PVC of the namespace or a VolumeSnapshot."""

    kind: Literal["PersistentVolumeClaim", "VolumeSnapshot"]
    name: str


@dataclass(frozen=True, kw_only=True)
class VolumeClaim(PersistentClaim):
    """A top-level `volumeClaims` entry: a PVC workloads mount by name."""

    name: str
    data_source: DataSource | None = None


@dataclass(frozen=True, kw_only=True)
class Volume:
    name: str  # the pod volume name: as written, or derived from the source by the loader
    source: VolumeSource
    ref: str  # hostPath path, configMap/secret/claim name; "" for emptyDir and claim templates
    mount_path: str
    sub_path: str | None = None
    read_only: bool = False
    claim: PersistentClaim | None = None  # a StatefulSet's claim template (source "claim")


@dataclass(frozen=True, kw_only=True)
class EnvRef:
    """An env value read when the pod starts: a key of a Secret or ConfigMap (`name`, `key`), a pod
    field (`fieldRef`: `key` is the field path, `name` is empty), or a container's resource
    (`resourceFieldRef`: `key` is the resource, `name` the container, "" for its own, and `divisor`)."""

    source: EnvSource
    name: str = ""
    key: str
    optional: bool = False
    divisor: str | None = None  # resourceFieldRef only, as written


EnvValue = str | EnvRef


@dataclass(frozen=True, kw_only=True)
class EnvFrom:
    """Every key of a Secret or ConfigMap as env, each name after `prefix`."""

    source: Literal["secret", "configMap"]
    name: str
    prefix: str | None = None
    optional: bool = False


@dataclass(frozen=True, kw_only=True)
class Probe:
    handler: ProbeHandler
    path: str | None = None  # httpGet only
    port: int | str | None = None  # httpGet and tcpSocket
    command: tuple[str, ...] = ()  # exec only
    initial_delay_seconds: int | None = None
    period_seconds: int | None = None
    timeout_seconds: int | None = None
    success_threshold: int | None = None
    failure_threshold: int | None = None


@dataclass(frozen=True, kw_only=True)
class Container:
    """A sidecar or init container; `command`/`args` are the Kubernetes fields of the same name."""

    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: Mapping[str, EnvValue] = field(default_factory=dict)
    env_from: tuple[EnvFrom, ...] = ()
    workdir: str | None = None
    volumes: tuple[Volume, ...] = ()
    cpu: Quantity | None = None
    memory: Quantity | None = None
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None


@dataclass(frozen=True, kw_only=True)
class Scheduling:
    type: Literal["node"]
    key: str
    operator: Operator
    values: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Ingress:
    """An exposed workload's Ingress to its `<name>-svc` Service."""

    host: str | None = None
    path: str = "/"
    path_type: Literal["Prefix", "Exact", "ImplementationSpecific"] = "Prefix"
    class_name: str | None = None
    tls_secret: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Autoscale:
    """An autoscaling/v2 HorizontalPodAutoscaler on a Deployment or StatefulSet (percent targets)."""

    min: int
    max: int
    cpu_utilization: int | None = None
    memory_utilization: int | None = None


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A workload, as gobrave's ContainerSpec: `entrypoint` becomes the container command, `command`
    its args."""

    name: str
    kind: str  # a registered workload kind (`planner.workloads`), validated by the schema
    image: str
    entrypoint: tuple[str, ...] = ()
    command: tuple[str, ...] = ()
    workdir: str | None = None
    env: Mapping[str, EnvValue] = field(default_factory=dict)
    env_from: tuple[EnvFrom, ...] = ()
    cpu: Quantity | None = None
    memory: Quantity | None = None
    volumes: tuple[Volume, ...] = ()
    user: str | None = None
    port: int | None = None
    expose: bool = False
    scheduling: tuple[Scheduling, ...] = ()
    runtime_namespace: str | None = None
    pull_policy: Literal["Always", "IfNotPresent"] | None = None
    replicas: int | None = None
    ingress: Ingress | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float | None = None
    depends_on: tuple[str, ...] = ()
    sidecars: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    readiness_probe: Probe | None = None
    liveness_probe: Probe | None = None
    autoscale: Autoscale | None = None
    # The fields particular to its kind, as that kind's module parses them (`DeploymentSpec`, `JobSpec`…);
    # left out, the kind's defaults.
    spec: object = None

    def __post_init__(self) -> None:
        if self.spec is None:
            object.__setattr__(self, "spec", workloads.named(self.kind).parse({}))


@dataclass(frozen=True, kw_only=True)
class Rootfs(Claim):
    generation: int = 1


@dataclass(frozen=True, kw_only=True)
class SandboxTemplate:
    image: str
    rootfs: Rootfs
    workspace: Claim
    runtime_class_name: str = "kata-qemu"
    secret_env: Mapping[str, str] = field(default_factory=dict)  # resolved values: never print them
    env: Mapping[str, str] = field(default_factory=dict)
    cpu: Quantity | None = None
    memory: Quantity | None = None
    idle_timeout_seconds: float | None = None


@dataclass(frozen=True, kw_only=True)
class Sandbox(SandboxTemplate):
    name: str
    state: SandboxState = "running"
    fork_from: str | None = None
    timeout_seconds: float | None = None
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class WarmPool:
    name: str
    size: int
    template: SandboxTemplate


@dataclass(frozen=True, kw_only=True)
class ConfigMap:
    name: str
    data: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class Secret:
    name: str
    data: Mapping[str, str]  # resolved values: never print them


@dataclass(frozen=True, kw_only=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based
    file: str = ""  # the file that set it, when not the plan file itself (an imported fragment)


@dataclass(frozen=True, kw_only=True)
class RawManifest:
    """An object of `manifests` or `manifestFiles`, as written (plain JSON data, any kind)."""

    object: Mapping[str, Any]
    file: str  # where it is written: the plan file, or a manifest file
    path: str  # its path there: `manifests[0]`, or `[2]` for a manifest file's third document
    position: Position
    depends_on: tuple[str, ...] = ()  # its `planner.dev/depends-on` annotation, split
    origin: str = ""  # `chart/<name>` for an object a chart of the plan renders, else ""

    @property
    def api_version(self) -> str:
        return str(self.object["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.object["kind"])

    @property
    def name(self) -> str:
        return str(self.object["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        return self.object["metadata"].get("namespace") or None

    @property
    def handle(self) -> str:
        """How `dependsOn` names it: `Kind/name`."""
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class ChartRelease:
    """A chart of the plan as it rendered, as generations record it: the release name, the chart as
    the plan names it (a path), and the name and version its Chart.yaml gives."""

    name: str
    chart: str
    chart_name: str
    version: str
    # Its values as given (`valuesFiles`, then `values`), `secretValues` left out; `origins` holds the
    # `file:line:column` that set each of them, by value path (`.controller.replicaCount`).
    values: Mapping[str, Any] = field(default_factory=dict, compare=False)
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Each resolved `secretValues` leaf by value path: what tells a changed secret value (through a keyed
    # digest, `planner.provenance.secret_digests`); never shown, never recorded as it is.
    secrets: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where a plan came from, and the position of every node by its path (`workloads[0].image`)."""

    file: str
    positions: Mapping[str, Position] = field(default_factory=dict)
    shown: str | None = None  # the file's text with literal secret values masked (None: not from a file)
    imported: Mapping[str, str] = field(default_factory=dict)  # each imported file's text, masked alike
    # Every scalar the plan declares by its path, but for secret values (`plain_scalars`): what a
    # changed field of a rendered object is traced back to (`planner.provenance`).
    scalars: Mapping[str, Any] = field(default_factory=dict)

    @property
    def inputs(self) -> dict[str, str]:
        """Every plan file that went into the plan (this one, then those it imported) by name, as its
        text with literal secret values masked; none for a plan that did not come from a file."""
        return {self.file: self.shown, **self.imported} if self.shown is not None else {}

    def position(self, path: str) -> Position:
        """The position of `path`, or of its nearest ancestor that has one."""
        while path:
            if path in self.positions:
                return self.positions[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return self.positions.get("", Position(line=1, column=1))

    def file_of(self, where: Position) -> str:
        """The file `where` is in: an imported fragment's, else the plan file."""
        return where.file or self.file


@dataclass(frozen=True, kw_only=True)
class Plan:
    name: str
    namespace: str | None
    runtime: Runtime
    workloads: tuple[Workload, ...] = ()
    sandboxes: tuple[Sandbox, ...] = ()
    warm_pools: tuple[WarmPool, ...] = ()
    config_maps: tuple[ConfigMap, ...] = ()
    secrets: tuple[Secret, ...] = ()
    volume_claims: tuple[VolumeClaim, ...] = ()
    manifests: tuple[RawManifest, ...] = ()
    charts: tuple[ChartRelease, ...] = ()  # the charts whose objects are among `manifests`
    allow_cluster_scoped: bool = False
    service_account_name: str | None = None  # the controller reconciles a Plan object as this account
    source: Source = field(default_factory=lambda: Source(file="<memory>"), compare=False)
    # The raw manifests' kinds only the cluster knows (custom resources of CRDs the plan does not declare),
    # as its discovery serves them, by (group, kind): filled when the plan is made against a cluster.
    served_kinds: Mapping[tuple[str, str], KindInfo] = field(default_factory=dict, compare=False)

    @cached_property
    def runnables(self) -> Mapping[str, Workload | Sandbox]:
        """Workloads and sandboxes by name (unique across the plan), for lookups that must not scan the
        plan once per reference."""
        return {**{s.name: s for s in self.sandboxes}, **{w.name: w for w in self.workloads}}

    @cached_property
    def declared_kinds(self) -> Mapping[tuple[str, str], KindInfo]:
        """The kinds the plan's own CustomResourceDefinitions declare, by (group, kind)."""
        return {(info.group, info.kind): info for info in declared_kinds(m.object for m in self.manifests)}

    @cached_property
    def chart_members(self) -> Mapping[str, tuple[RawManifest, ...]]:
        """The raw manifests each chart renders, by `chart/<name>` (the spelling `dependsOn` uses)."""
        found: dict[str, list[RawManifest]] = {f"chart/{chart.name}": [] for chart in self.charts}
        for raw in self.manifests:
            if raw.origin:
                found.setdefault(raw.origin, []).append(raw)
        return {origin: tuple(members) for origin, members in found.items()}

    @cached_property
    def manifests_by_handle(self) -> Mapping[str, RawManifest]:
        """Raw manifests by `Kind/name`, the spelling `dependsOn` uses (the first of a name wins)."""
        found: dict[str, RawManifest] = {}
        for raw in self.manifests:
            found.setdefault(raw.handle, raw)
        return found

"""Building the model from a plan document that passed every check.

Only valid documents reach this module, so it reads them directly. It is where defaults are filled in
(`kind` "" or absent → deployment, runtime k8s, sandbox state running, rootfs generation 1, runtime class
kata-qemu), numbers become the string form of quantities, durations become seconds, volumes get their pod
volume names and secret values are replaced by what they resolved to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner import workloads
from planner.plan import names
from planner.plan.durations import parse_duration
from planner.plan.model import (
    Autoscale,
    ChartRelease,
    Claim,
    ConfigMap,
    Container,
    DataSource,
    EnvFrom,
    EnvRef,
    EnvSource,
    EnvValue,
    Ingress,
    PersistentClaim,
    Plan,
    Probe,
    RawManifest,
    Rootfs,
    Sandbox,
    SandboxTemplate,
    Scheduling,
    Secret,
    Source,
    Volume,
    VolumeClaim,
    VolumeSource,
    WarmPool,
    Workload,
)
from planner.plan.raw import REF_FREE_SOURCES, VOLUME_SOURCES
from planner.plan.source import ParsedFile, child_path, plain_scalars
from planner.plan.validate_pods import quantity_text

Data = dict[str, Any]


class _Builder:
    def __init__(
        self,
        parsed: ParsedFile,
        secrets: Mapping[str, str],
        manifests: tuple[RawManifest, ...],
        charts: tuple[ChartRelease, ...],
    ) -> None:
        self.parsed = parsed
        self.secrets = secrets
        self.manifests = manifests
        self.charts = charts

    def plan(self) -> Plan:
        data: Data = self.parsed.data
        metadata = data["metadata"]
        return Plan(
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            runtime=data.get("runtime", "k8s"),
            workloads=tuple(self.workload(item, path) for path, item in _entries(data, "workloads")),
            sandboxes=tuple(self.sandbox(item, path) for path, item in _entries(data, "sandboxes")),
            warm_pools=tuple(self.warm_pool(item, path) for path, item in _entries(data, "warmPools")),
            config_maps=tuple(
                ConfigMap(name=item["name"], data=dict(item["data"]))
                for _, item in _entries(data, "configMaps")
            ),
            secrets=tuple(
                Secret(name=item["name"], data=self.secret_map(item["data"], f"{path}.data"))
                for path, item in _entries(data, "secrets")
            ),
            volume_claims=tuple(
                self.volume_claim(item, path) for path, item in _entries(data, "volumeClaims")
            ),
            manifests=self.manifests,
            charts=self.charts,
            allow_cluster_scoped=data.get("allowClusterScoped", False),
            service_account_name=data.get("serviceAccountName"),
            source=Source(
                file=self.parsed.file,
                positions=dict(self.parsed.keys),
                shown=self.parsed.shown,
                imported=dict(self.parsed.imported),
                scalars=plain_scalars(data),
            ),
        )

    def workload(self, item: Data, path: str) -> Workload:
        user = item.get("user")
        return Workload(
            name=item["name"],
            kind=workloads.named(item.get("kind")).name,
            image=item["image"],
            entrypoint=tuple(item.get("entrypoint", ())),
            command=tuple(item.get("command", ())),
            workdir=item.get("workdir"),
            env=_env(item.get("env", {})),
            env_from=_env_from(item.get("envFrom", [])),
            cpu=self.quantity(item, "cpu", path),
            memory=self.quantity(item, "memory", path),
            volumes=self.volumes(item, path),
            user=None if user is None else str(user),
            port=item.get("port"),
            expose=item.get("expose", False),
            scheduling=tuple(_scheduling(term) for term in item.get("scheduling", [])),
            runtime_namespace=item.get("runtimeNamespace"),
            pull_policy=item.get("pullPolicy"),
            replicas=item.get("replicas"),
            ingress=_ingress(item.get("ingress")),
            labels=dict(item.get("labels", {})),
            annotations=dict(item.get("annotations", {})),
            pod_annotations=dict(item.get("podAnnotations", {})),
            timeout_seconds=_seconds(item.get("timeout")),
            depends_on=tuple(item.get("dependsOn", ())),
            sidecars=self.containers(item, "sidecars", path),
            init_containers=self.containers(item, "initContainers", path),
            readiness_probe=_probe(item.get("readinessProbe")),
            liveness_probe=_probe(item.get("livenessProbe")),
            autoscale=_autoscale(item.get("autoscale")),
            spec=workloads.named(item.get("kind")).parse(item),
        )

    def volume_claim(self, item: Data, path: str) -> VolumeClaim:
        source = item.get("dataSource")
        return VolumeClaim(
            **self.claim_fields(item, path),
            name=item["name"],
            volume_mode=item.get("volumeMode"),
            data_source=DataSource(kind=source["kind"], name=source["name"]) if source else None,
        )

    def claim_fields(self, item: Data, path: str) -> dict[str, Any]:
        return {
            "size": self.required_quantity(item, "size", path),
            "storage_class": item.get("storageClass"),
            "access_modes": tuple(item.get("accessModes", ("ReadWriteOnce",))),
        }

    def volumes(self, item: Data, path: str) -> tuple[Volume, ...]:
        return tuple(
            _volume(volume, self.claim_template(volume, f"{path}.volumes[{index}].claim"))
            for index, volume in enumerate(item.get("volumes", []))
        )

    def claim_template(self, volume: Data, path: str) -> PersistentClaim | None:
        return PersistentClaim(**self.claim_fields(volume["claim"], path)) if "claim" in volume else None

    def containers(self, item: Data, key: str, path: str) -> tuple[Container, ...]:
        return tuple(self.container(entry, f"{path}.{key}[{i}]") for i, entry in enumerate(item.get(key, [])))

    def container(self, item: Data, path: str) -> Container:
        return Container(
            name=item["name"],
            image=item["image"],
            command=tuple(item.get("command", ())),
            args=tuple(item.get("args", ())),
            env=_env(item.get("env", {})),
            env_from=_env_from(item.get("envFrom", [])),
            workdir=item.get("workdir"),
            volumes=self.volumes(item, path),
            cpu=self.quantity(item, "cpu", path),
            memory=self.quantity(item, "memory", path),
            readiness_probe=_probe(item.get("readinessProbe")),
            liveness_probe=_probe(item.get("livenessProbe")),
        )

    def template_fields(self, item: Data, path: str) -> dict[str, Any]:
        rootfs, workspace = item["rootfs"], item["workspace"]
        return {
            "image": item["image"],
            "rootfs": Rootfs(
                size=self.required_quantity(rootfs, "size", f"{path}.rootfs"),
                storage_class=rootfs.get("storageClass"),
                generation=rootfs.get("generation", 1),
            ),
            "workspace": Claim(
                size=self.required_quantity(workspace, "size", f"{path}.workspace"),
                storage_class=workspace.get("storageClass"),
            ),
            "runtime_class_name": item.get("runtimeClassName", "kata-qemu"),
            "secret_env": self.secret_map(item.get("secretEnv", {}), f"{path}.secretEnv"),
            "env": dict(item.get("env", {})),
            "cpu": self.quantity(item, "cpu", path),
            "memory": self.quantity(item, "memory", path),
            "idle_timeout_seconds": _seconds(item.get("idleTimeout")),
        }

    def sandbox(self, item: Data, path: str) -> Sandbox:
        return Sandbox(
            **self.template_fields(item, path),
            name=item["name"],
            state=item.get("state", "running"),
            fork_from=item.get("forkFrom"),
            timeout_seconds=_seconds(item.get("timeout")),
            depends_on=tuple(item.get("dependsOn", ())),
        )

    def warm_pool(self, item: Data, path: str) -> WarmPool:
        template = SandboxTemplate(**self.template_fields(item["template"], f"{path}.template"))
        return WarmPool(name=item["name"], size=item["size"], template=template)

    def secret_map(self, values: Data, path: str) -> dict[str, str]:
        return {key: self.secrets[child_path(path, key)] for key in values}

    def quantity(self, item: Data, key: str, path: str) -> str | None:
        return quantity_text(item.get(key), self.parsed.written(child_path(path, key)))

    def required_quantity(self, item: Data, key: str, path: str) -> str:
        text = self.quantity(item, key, path)
        if text is None:  # pragma: no cover - the schema requires it
            raise ValueError(f"{path}.{key} is missing")
        return text


def build_plan(
    parsed: ParsedFile,
    secrets: Mapping[str, str],
    *,
    manifests: tuple[RawManifest, ...] = (),
    charts: tuple[ChartRelease, ...] = (),
) -> Plan:
    """The model of a plan document that passed every check; `secrets` maps value paths to values,
    `manifests` are its raw objects (`planner.plan.raw_manifests`), `charts` the charts that rendered
    some of them."""
    return _Builder(parsed, secrets, manifests, charts).plan()


def _entries(data: Data, key: str) -> list[tuple[str, Data]]:
    return [(f"{key}[{index}]", item) for index, item in enumerate(data.get(key, []))]


def _volume(item: Data, claim: PersistentClaim | None) -> Volume:
    source: VolumeSource = next(source for source in VOLUME_SOURCES if source in item)
    ref = "" if source in REF_FREE_SOURCES else item[source]
    mount_path = item["mountPath"]
    return Volume(
        name=item.get("name") or names.derived_volume_name(source, ref, mount_path),
        source=source,
        ref=ref,
        mount_path=mount_path,
        sub_path=item.get("subPath"),
        read_only=item.get("readOnly", False),
        claim=claim,
    )


def _env(values: Data) -> dict[str, EnvValue]:
    return {name: value if isinstance(value, str) else _env_ref(value) for name, value in values.items()}


def _env_ref(value: Data) -> EnvRef:
    if "fieldRef" in value:
        return EnvRef(source="fieldRef", key=value["fieldRef"])
    if "resourceFieldRef" in value:
        ref = value["resourceFieldRef"]
        divisor = str(ref["divisor"]) if "divisor" in ref else None
        return EnvRef(
            source="resourceFieldRef", name=ref.get("containerName", ""), key=ref["resource"], divisor=divisor
        )
    source: EnvSource = "secretKeyRef" if "secretKeyRef" in value else "configMapKeyRef"
    spec = value[source]
    return EnvRef(source=source, name=spec["name"], key=spec["key"], optional=spec.get("optional", False))


def _env_from(items: list[Data]) -> tuple[EnvFrom, ...]:
    return tuple(
        EnvFrom(
            source="secret" if "secret" in item else "configMap",
            name=item.get("secret") or item["configMap"],
            prefix=item.get("prefix"),
            optional=item.get("optional", False),
        )
        for item in items
    )


def _scheduling(term: Data) -> Scheduling:
    return Scheduling(
        type=term["type"], key=term["key"], operator=term["operator"], values=tuple(term.get("values", ()))
    )


def _ingress(item: Data | None) -> Ingress | None:
    if item is None:
        return None
    return Ingress(
        host=item.get("host"),
        path=item.get("path", "/"),
        path_type=item.get("pathType", "Prefix"),
        class_name=item.get("className"),
        tls_secret=(item.get("tls") or {}).get("secretName"),
        annotations=dict(item.get("annotations", {})),
    )


def _autoscale(item: Data | None) -> Autoscale | None:
    if item is None:
        return None
    return Autoscale(
        min=item["min"],
        max=item["max"],
        cpu_utilization=item.get("cpuUtilization"),
        memory_utilization=item.get("memoryUtilization"),
    )


def _probe(item: Data | None) -> Probe | None:
    if item is None:
        return None
    handler = next(handler for handler in ("httpGet", "tcpSocket", "exec") if handler in item)
    spec = item[handler]
    return Probe(
        handler=handler,
        path=spec.get("path"),
        port=spec.get("port"),
        command=tuple(spec.get("command", ())),
        initial_delay_seconds=item.get("initialDelaySeconds"),
        period_seconds=item.get("periodSeconds"),
        timeout_seconds=item.get("timeoutSeconds"),
        success_threshold=item.get("successThreshold"),
        failure_threshold=item.get("failureThreshold"),
    )


def _seconds(duration: str | None) -> float | None:
    return None if duration is None else parse_duration(duration)

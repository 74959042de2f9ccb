"""Building the model from a plan document that passed every check.

Only valid documents reach this module, so it reads them directly. It is where defaults are filled in
(`kind` "" or absent → deployment, runtime k8s, sandbox state running, rootfs generation 1, runtime class
kata-qemu), numbers become the string form of quantities, durations become seconds, volumes get their pod
volume names and secret values are replaced by what they resolved to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.plan import names
from planner.plan.durations import parse_duration
from planner.plan.model import (
    Claim,
    ConfigMap,
    Container,
    Plan,
    Probe,
    RawManifest,
    RolloutStrategy,
    Rootfs,
    Sandbox,
    SandboxTemplate,
    Scheduling,
    Secret,
    Source,
    Volume,
    VolumeSource,
    WarmPool,
    Workload,
)
from planner.plan.raw import VOLUME_SOURCES
from planner.plan.source import ParsedFile, child_path
from planner.plan.validate_pods import quantity_text

Data = dict[str, Any]


class _Builder:
    def __init__(
        self, parsed: ParsedFile, secrets: Mapping[str, str], manifests: tuple[RawManifest, ...]
    ) -> None:
        self.parsed = parsed
        self.secrets = secrets
        self.manifests = manifests

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
            manifests=self.manifests,
            allow_cluster_scoped=data.get("allowClusterScoped", False),
            source=Source(file=self.parsed.file, positions=dict(self.parsed.keys), shown=self.parsed.shown),
        )

    def workload(self, item: Data, path: str) -> Workload:
        user = item.get("user")
        return Workload(
            name=item["name"],
            kind=item.get("kind") or "deployment",
            image=item["image"],
            entrypoint=tuple(item.get("entrypoint", ())),
            command=tuple(item.get("command", ())),
            workdir=item.get("workdir"),
            env=dict(item.get("env", {})),
            cpu=self.quantity(item, "cpu", path),
            memory=self.quantity(item, "memory", path),
            volumes=tuple(_volume(volume) for volume in item.get("volumes", [])),
            user=None if user is None else str(user),
            port=item.get("port"),
            expose=item.get("expose", False),
            scheduling=tuple(_scheduling(term) for term in item.get("scheduling", [])),
            runtime_namespace=item.get("runtimeNamespace"),
            pull_policy=item.get("pullPolicy"),
            replicas=item.get("replicas"),
            progress_deadline_seconds=item.get("progressDeadlineSeconds"),
            strategy=_strategy(item.get("strategy")),
            backoff_limit=item.get("backoffLimit"),
            active_deadline_seconds=item.get("activeDeadlineSeconds"),
            ttl_seconds_after_finished=item.get("ttlSecondsAfterFinished"),
            labels=dict(item.get("labels", {})),
            annotations=dict(item.get("annotations", {})),
            pod_annotations=dict(item.get("podAnnotations", {})),
            timeout_seconds=_seconds(item.get("timeout")),
            depends_on=tuple(item.get("dependsOn", ())),
            sidecars=self.containers(item, "sidecars", path),
            init_containers=self.containers(item, "initContainers", path),
            readiness_probe=_probe(item.get("readinessProbe")),
            liveness_probe=_probe(item.get("livenessProbe")),
        )

    def containers(self, item: Data, key: str, path: str) -> tuple[Container, ...]:
        return tuple(self.container(entry, f"{path}.{key}[{i}]") for i, entry in enumerate(item.get(key, [])))

    def container(self, item: Data, path: str) -> Container:
        return Container(
            name=item["name"],
            image=item["image"],
            command=tuple(item.get("command", ())),
            args=tuple(item.get("args", ())),
            env=dict(item.get("env", {})),
            workdir=item.get("workdir"),
            volumes=tuple(_volume(volume) for volume in item.get("volumes", [])),
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
    parsed: ParsedFile, secrets: Mapping[str, str], *, manifests: tuple[RawManifest, ...] = ()
) -> Plan:
    """The model of a plan document that passed every check; `secrets` maps value paths to values,
    `manifests` are its raw objects (`planner.plan.manifests`)."""
    return _Builder(parsed, secrets, manifests).plan()


def _entries(data: Data, key: str) -> list[tuple[str, Data]]:
    return [(f"{key}[{index}]", item) for index, item in enumerate(data.get(key, []))]


def _volume(item: Data) -> Volume:
    source: VolumeSource = next(source for source in VOLUME_SOURCES if source in item)
    ref = "" if source == "emptyDir" else item[source]
    mount_path = item["mountPath"]
    return Volume(
        name=item.get("name") or names.derived_volume_name(source, ref, mount_path),
        source=source,
        ref=ref,
        mount_path=mount_path,
        sub_path=item.get("subPath"),
        read_only=item.get("readOnly", False),
    )


def _scheduling(term: Data) -> Scheduling:
    return Scheduling(
        type=term["type"], key=term["key"], operator=term["operator"], values=tuple(term.get("values", ()))
    )


def _strategy(item: Data | None) -> RolloutStrategy | None:
    if item is None:
        return None
    return RolloutStrategy(
        type=item.get("type", "RollingUpdate"),
        max_surge=item.get("maxSurge"),
        max_unavailable=item.get("maxUnavailable"),
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

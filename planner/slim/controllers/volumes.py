"""PVC binding, as the persistentvolume controller with a dynamic provisioner behind every class.

A pending claim is provisioned a PV `pvc-<claim uid>` (its capacity, access modes, volume mode,
class and reclaim policy) and both are marked bound: the claim gets `spec.volumeName`, the
`pv.kubernetes.io/bind-completed` and `bound-by-controller` annotations and status Bound with
capacity and access modes; the PV gets its `claimRef` and status Bound. A claim waits, with the
Event a real cluster shows, while its class is missing, while its class binds on first consumer and
no scheduled pod uses it yet, or while its `dataSource` claim is missing or not yet Bound. When a
bound claim is deleted its PV is Released and, under reclaim policy Delete, deleted.

Keys are claims and volumes. A claim event dirties the claim, the claims cloning it and the volume
whose claimRef names it; a volume event dirties the volume and its claim; a Pod event dirties the
claims its volumes name (a first consumer may have been scheduled); a StorageClass event dirties
the unbound claims of that class. A claim that waits retries every `RETRY_SECONDS`.
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import (
    CONTROLLER_MANAGER,
    Index,
    Writer,
    deleting,
    event_states,
    key,
    keys_of,
    name_of,
    ns_of,
    typed,
    uid_of,
)
from planner.slim.reconcilers import CONTROLLERS, RETRY_SECONDS, Key
from planner.slim.scheduling import claim_names
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
PROVISIONER = "planner.dev/simulated"
HOST_ROOT = "/var/lib/planner-slim/volumes"


def _claim_key(namespace: str, name: str) -> Key:
    return Key(key("PersistentVolumeClaim"), namespace, name)


def source_claim(claim: Obj) -> str | None:
    """The name of the claim `claim` clones, if it clones one."""
    spec = claim.get("spec") or {}
    source = spec.get("dataSource") or spec.get("dataSourceRef")
    if not source or source.get("kind") != "PersistentVolumeClaim":
        return None
    return str(source.get("name"))


def clone_values(claim: Obj) -> list[str]:
    """For an Index of claims by the claim they clone."""
    source = source_claim(claim)
    return [f"{ns_of(claim)}/{source}"] if source else []


def claim_ref_values(volume: Obj) -> list[str]:
    """For an Index of volumes by the claim their claimRef names."""
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    return [f"{ref.get('namespace')}/{ref.get('name')}"] if ref else []


def volume_event_keys(event: WatchEvent) -> list[Key]:
    """A PersistentVolume event dirties the volume and the claims its claimRef names."""
    found = [Key(key("PersistentVolume"), "", event.name)]
    for volume in event_states(event):
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("name"):
            found.append(_claim_key(str(ref.get("namespace", "")), str(ref["name"])))
    return sorted(set(found))


def pod_claim_keys(event: WatchEvent) -> list[Key]:
    """A Pod event dirties the claims its volumes name, before and after the change."""
    return sorted(
        {_claim_key(event.namespace, claim) for pod in event_states(event) for claim in claim_names(pod)}
    )


class VolumeController:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (
        key("PersistentVolumeClaim"),
        key("PersistentVolume"),
        key("Pod"),
        key("StorageClass"),
    )
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, CONTROLLER_MANAGER)
        self.clones = Index(clone_values)
        self.volumes = Index(claim_ref_values)

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource == key("PersistentVolumeClaim"):
            self.clones.observe(event)
            return self._claim_event_keys(event)
        if event.resource == key("PersistentVolume"):
            self.volumes.observe(event)
            return volume_event_keys(event)
        if event.resource == key("Pod"):
            return pod_claim_keys(event)
        return self._unbound_claims_of_class(event.name)

    def resync(self) -> list[Key]:
        self.clones.rebuild(self.api.store, [key("PersistentVolumeClaim")])
        self.volumes.rebuild(self.api.store, [key("PersistentVolume")])
        return keys_of(self.api.store, key("PersistentVolumeClaim")) + keys_of(
            self.api.store, key("PersistentVolume")
        )

    def sync(self, object_key: Key, now: float) -> float | None:
        found = self.api.store.get(*object_key)
        if found is None:
            return None
        if object_key.resource == key("PersistentVolume"):
            self._release(found)
            return None
        if deleting(found) or (found.get("spec") or {}).get("volumeName"):
            return None
        return None if self._bind(found) else now + RETRY_SECONDS

    def _claim_event_keys(self, event: WatchEvent) -> list[Key]:
        reference = f"{event.namespace}/{event.name}"
        return sorted(
            {
                _claim_key(event.namespace, event.name),
                *self.clones.keys(reference),
                *self.volumes.keys(reference),
            }
        )

    def _unbound_claims_of_class(self, class_name: str) -> list[Key]:
        return [
            _claim_key(ns_of(claim), name_of(claim))
            for claim in self.api.store.list(key("PersistentVolumeClaim"), None)
            if (claim.get("spec") or {}).get("storageClassName") == class_name
            and not (claim.get("spec") or {}).get("volumeName")
        ]

    # --- binding ------------------------------------------------------------------------------------

    def _bind(self, claim: Obj) -> bool:
        """Provision and bind the claim; False while it waits for something."""
        spec = claim.get("spec") or {}
        class_name = spec.get("storageClassName")
        if not class_name:
            self._wait(
                claim,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            )
            return False
        storage_class = self.api.store.get(key("StorageClass"), "", str(class_name))
        if storage_class is None:
            self._wait(
                claim,
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{class_name}" not found',
                warning=True,
            )
            return False
        if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not self._scheduled_consumer(
            claim
        ):
            self._wait(
                claim, "WaitForFirstConsumer", "waiting for first consumer to be created before binding"
            )
            return False
        if not self._source_ready(claim):
            return False
        volume = self._provision(claim, storage_class)
        if volume is None:
            return False
        self._mark_bound(claim, volume)
        return True

    def _wait(self, claim: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.writer.event(
            typed("PersistentVolumeClaim", claim),
            "Warning" if warning else "Normal",
            reason,
            message,
            component="persistentvolume-controller",
        )

    def _scheduled_consumer(self, claim: Obj) -> bool:
        for pod in self.api.store.list(key("Pod"), ns_of(claim)):
            if not (pod.get("spec") or {}).get("nodeName"):
                continue
            for volume in (pod.get("spec") or {}).get("volumes") or []:
                if (volume.get("persistentVolumeClaim") or {}).get("claimName") == name_of(claim):
                    return True
        return False

    def _source_ready(self, claim: Obj) -> bool:
        source = source_claim(claim)
        if source is None:
            return True
        found = self.api.store.get(key("PersistentVolumeClaim"), ns_of(claim), source)
        if found is None:
            message = (
                f"error getting handle for DataSource Type PersistentVolumeClaim by Name {source}: "
                f'persistentvolumeclaims "{source}" not found'
            )
            self._wait(claim, "ProvisioningFailed", message, warning=True)
            return False
        if (found.get("status") or {}).get("phase") != "Bound":
            message = f'source claim "{source}" is not bound yet'
            self._wait(claim, "Provisioning", message)
            return False
        return True

    def _provision(self, claim: Obj, storage_class: Obj) -> Obj | None:
        spec = claim.get("spec") or {}
        name = f"pvc-{uid_of(claim)}"
        existing = self.api.store.get(key("PersistentVolume"), "", name)
        if existing is not None:
            return existing
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER},
                "finalizers": ["kubernetes.io/pv-protection"],
            },
            "spec": {
                "capacity": {
                    "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
                },
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "storageClassName": name_of(storage_class),
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                "hostPath": {"path": f"{HOST_ROOT}/{name}", "type": ""},
                "claimRef": {
                    "kind": "PersistentVolumeClaim",
                    "namespace": ns_of(claim),
                    "name": name_of(claim),
                    "uid": uid_of(claim),
                    "apiVersion": "v1",
                    "resourceVersion": claim["metadata"].get("resourceVersion"),
                },
            },
        }
        created = self.writer.create("PersistentVolume", "", volume)
        if created is None:
            return None
        self.writer.event(
            typed("PersistentVolumeClaim", claim),
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}",
            component=PROVISIONER,
        )
        return self.writer.write_status("PersistentVolume", created, {"phase": "Bound"})

    def _mark_bound(self, claim: Obj, volume: Obj) -> None:
        updated = copy.deepcopy(claim)
        updated["spec"]["volumeName"] = name_of(volume)
        annotations = updated["metadata"].setdefault("annotations", {})
        annotations["pv.kubernetes.io/bind-completed"] = "yes"
        annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
        annotations["volume.beta.kubernetes.io/storage-provisioner"] = PROVISIONER
        annotations["volume.kubernetes.io/storage-provisioner"] = PROVISIONER
        written = self.writer.update("PersistentVolumeClaim", updated)
        if written is None:
            return
        volume_spec = volume.get("spec") or {}
        status = {
            "phase": "Bound",
            "accessModes": volume_spec.get("accessModes"),
            "capacity": volume_spec.get("capacity"),
        }
        self.writer.write_status("PersistentVolumeClaim", written, status)

    # --- release ------------------------------------------------------------------------------------

    def _release(self, volume: Obj) -> None:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if not ref or deleting(volume):
            if deleting(volume):
                self.writer.remove_finalizer("PersistentVolume", volume, "kubernetes.io/pv-protection")
            return
        claim = self.api.store.get(
            key("PersistentVolumeClaim"), str(ref.get("namespace")), str(ref.get("name"))
        )
        if claim is not None and uid_of(claim) == ref.get("uid"):
            return
        if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
            self.writer.delete("PersistentVolume", volume)
        elif (volume.get("status") or {}).get("phase") != "Released":
            self.writer.write_status("PersistentVolume", volume, {"phase": "Released"})

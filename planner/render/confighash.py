"""The `planner.dev/config-hash` pod-template annotation: one digest of the data of every ConfigMap and
Secret of the plan that a workload reads (through env, envFrom or a volume), so that editing one
changes the pod template and the workload rolls — what Helm users do by hand with `checksum/config`.

A ConfigMap enters as the sha256 of its data. A Secret enters as an HMAC-SHA256 of its data under the
plan's digest key (the one saved plans digest Secret values with, kept in the plan's ApplySet parent),
so anyone who can read the Deployment but not the Secret cannot test guesses of its values against the
annotation. Without the key (`planner render` and `validate`, which ask no cluster) a Secret enters by
its key names only: `plan` and `apply` render again with the key. Objects the plan does not declare
are not digested: planner does not own their data.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from planner.objects import canonical_json
from planner.plan.config_refs import ConfigKind, reads_plan_objects, workload_config_refs
from planner.plan.model import Plan, Workload

ANNOTATION_CONFIG_HASH = "planner.dev/config-hash"


class ConfigHashes:
    """The config-hash annotation of each workload of one plan, each object's data digested once."""

    def __init__(self, plan: Plan, key: bytes | None, default_namespace: str) -> None:
        self.plan = plan
        self.key = key
        self.default_namespace = default_namespace
        self.data: dict[tuple[ConfigKind, str], Mapping[str, str]] = {
            **{("configMap", c.name): c.data for c in plan.config_maps},
            **{("secret", s.name): s.data for s in plan.secrets},
        }
        self.digests: dict[tuple[ConfigKind, str], str] = {}

    def annotation(self, workload: Workload) -> dict[str, str]:
        """`{planner.dev/config-hash: <sha256>}`, or nothing when the workload reads no plan object."""
        if not reads_plan_objects(self.plan, workload, self.default_namespace):
            return {}
        used = sorted({(ref.kind, ref.name) for ref in workload_config_refs(workload, "")} & self.data.keys())
        if not used:
            return {}
        parts = {f"{kind}/{name}": self.digest(kind, name) for kind, name in used}
        return {ANNOTATION_CONFIG_HASH: hashlib.sha256(canonical_json(parts).encode()).hexdigest()}

    def digest(self, kind: ConfigKind, name: str) -> str:
        found = self.digests.get((kind, name))
        if found is None:
            found = self.digests[kind, name] = self._digest(kind, self.data[kind, name])
        return found

    def _digest(self, kind: ConfigKind, data: Mapping[str, str]) -> str:
        if kind == "configMap":
            return hashlib.sha256(canonical_json(dict(data)).encode()).hexdigest()
        if self.key is None:
            return "keys:" + hashlib.sha256(canonical_json(sorted(data)).encode()).hexdigest()
        return hmac.new(self.key, canonical_json(dict(data)).encode(), hashlib.sha256).hexdigest()

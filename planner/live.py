"""The live side of a diff: what the cluster holds for one plan (DESIGN §4).

Only the data type lives here for now. Reading a cluster into a `LiveState` (one LIST per kind and
namespace selected by the part-of label, the parent Secret read once, a GET per planned create) is the
cluster-access issue's work and will join this module; the diff needs nothing but the result.

`ObjectRef` is defined here rather than in `diff` because the reader keys its result by it and sits
below the diff in the layering (`diff > live`); `planner.diff` re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]


@dataclass(frozen=True, kw_only=True, order=True)
class ObjectRef:
    """One object's identity; printed as DESIGN §5's `<kind>/<namespace>/<name>` (lower-case kind)."""

    group: str
    kind: str
    namespace: str | None
    name: str

    def __str__(self) -> str:
        scope = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.lower()}/{scope}{self.name}"


def ref_of(manifest: Mapping[str, Any]) -> ObjectRef:
    """The identity of a manifest or live object: group from `apiVersion`, namespace None when unset."""
    api_version = str(manifest.get("apiVersion", ""))
    group = api_version.rpartition("/")[0]
    metadata = manifest.get("metadata") or {}
    return ObjectRef(
        group=group,
        kind=str(manifest.get("kind", "")),
        namespace=metadata.get("namespace") or None,
        name=str(metadata.get("name", "")),
    )


@dataclass(frozen=True, kw_only=True)
class LiveState:
    """The plan's objects as the cluster returned them.

    `members` are the ApplySet members (part-of label); `parent` is the ApplySet parent Secret, None when
    the plan was never applied; `foreign` holds same-named objects without this plan's label, found by a
    GET per planned create; `namespaces` are the namespaces in scope that exist, None when not known.
    """

    members: Mapping[ObjectRef, Manifest] = field(default_factory=dict)
    parent: Manifest | None = None
    foreign: Mapping[ObjectRef, Manifest] = field(default_factory=dict)
    namespaces: frozenset[str] | None = None

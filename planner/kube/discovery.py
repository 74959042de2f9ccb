"""Which resource serves a kind: planner's table of kinds first, then the API server's discovery.

Raw manifests (`manifests:` in a plan) may hold any kind, a custom resource among them, so the path
of an object cannot always come from `planner.kinds`. As kubectl's RESTMapper does, `Kinds` asks the
server which resources a group-version serves (`GET /apis/<group>/<version>`) and caches the answer
on the client; a kind the cached answer lacks is asked for again, since a CustomResourceDefinition
applied earlier in the same run starts serving its kind once it is Established. Kinds a plan's own
CRDs declare are known before they are served (`declared`), so planning a CRD and its custom
resources together needs no cluster round trip for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from planner.errors import NotFoundError, PlannerError
from planner.kinds import KindInfo, group_of, known
from planner.kube.client import Json, KubeClient

CORE_PATH = "/api/v1"


class UnknownKindError(PlannerError):
    """The cluster serves no resource for a manifest's kind at its apiVersion."""


class Kinds:
    """The `KindInfo` of any kind the cluster serves (or the plan's CRDs declare). Thread-safe."""

    def __init__(self, client: KubeClient, *, declared: Iterable[KindInfo] = ()) -> None:
        self.client = client
        self.declared = {(info.group, info.kind): info for info in declared}

    def of(self, api_version: str, kind: str) -> KindInfo:
        """The kind's row; UnknownKindError when the cluster serves no such kind."""
        found = self.find(api_version, kind)
        if found is None:
            raise UnknownKindError(
                f"the cluster serves no kind {kind} in {api_version} (is its CustomResourceDefinition "
                "installed, or declared in the plan?)"
            )
        return found

    def for_manifest(self, manifest: Mapping[str, Any]) -> KindInfo:
        return self.of(str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")))

    def find(self, api_version: str, kind: str) -> KindInfo | None:
        group = group_of(api_version)
        found = known(group, kind)
        if found is not None and api_version == found.api_version:
            return found
        declared = self.declared.get((group, kind))
        if declared is not None and api_version == declared.api_version:
            return declared  # the plan's CRD says where it is served, before it is
        return self._served(api_version, kind) or found or declared

    def of_group_kind(self, group_kind: str) -> KindInfo | None:
        """The row of an ApplySet group-kind (`PodDisruptionBudget.policy`) at its group's preferred
        version; None when the cluster no longer serves it (nothing of it can be left to prune)."""
        kind, _, group = group_kind.partition(".")
        found = known(group, kind)
        if found is not None:
            return found
        version = self._preferred_version(group) if group else "v1"
        return self._served(f"{group}/{version}" if group else version, kind) if version else None

    def _served(self, api_version: str, kind: str) -> KindInfo | None:
        path = CORE_PATH if api_version == "v1" else f"/apis/{api_version}"
        for fresh in (False, True):
            document = self._document(path, fresh=fresh)
            for resource in (document or {}).get("resources") or []:
                if resource.get("kind") == kind and "/" not in str(resource.get("name", "")):
                    group, _, version = api_version.rpartition("/")
                    return KindInfo(
                        kind=kind,
                        group=group,
                        version=version,
                        plural=str(resource["name"]),
                        namespaced=bool(resource.get("namespaced")),
                    )
        return None

    def _preferred_version(self, group: str) -> str | None:
        for fresh in (False, True):
            document = self._document(f"/apis/{group}", fresh=fresh)
            preferred = (document or {}).get("preferredVersion") or {}
            if preferred.get("version"):
                return str(preferred["version"])
        return None

    def _document(self, path: str, *, fresh: bool) -> Json | None:
        cache = self.client.discovered
        with cache.lock:
            if not fresh and path in cache.documents:
                return cache.documents[path]
        try:
            document = self.client.request("GET", path, verb="discover")
        except NotFoundError:
            document = {}
        with cache.lock:
            cache.documents[path] = document
        return document


def served_api_versions(client: KubeClient) -> tuple[str, tuple[str, ...]]:
    """The cluster's version (`v1.28.7`) and every API version it serves, each group-version and each
    `group/version/Kind` of it, as Helm's `.Capabilities` lists them for `helm install` (and
    `helm template --kube-version/--api-versions` take them). One GET per group-version."""
    version = str(client.request("GET", "/version", verb="discover").get("gitVersion", ""))
    kinds = Kinds(client)
    core = kinds._document(CORE_PATH.rpartition("/")[0], fresh=False) or {}
    group_versions = [str(each) for each in core.get("versions") or []]
    groups = kinds._document("/apis", fresh=False) or {}
    for group in groups.get("groups") or []:
        group_versions += [str(each["groupVersion"]) for each in group.get("versions") or []]
    served: list[str] = []
    for group_version in group_versions:
        path = CORE_PATH if group_version == "v1" else f"/apis/{group_version}"
        document = kinds._document(path, fresh=False) or {}
        resources = [each for each in document.get("resources") or [] if "/" not in str(each.get("name", ""))]
        served += [group_version, *sorted({f"{group_version}/{each['kind']}" for each in resources})]
    return version, tuple(served)

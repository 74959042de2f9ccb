"""Raw manifests (`manifests`, `manifestFiles`): the objects as written, made members of the plan.

Each keeps everything its author wrote; render adds what every top-level object of the plan carries
(the ApplySet part-of label, the plan annotation), its namespace when it is namespaced and names none
(the plan's), and its dependencies: `planner.dev/depends-on` (workload and sandbox names, `Kind/name`
of other manifests) becomes cli-utils' `config.kubernetes.io/depends-on`, merged with any the author
wrote in that syntax, and is itself left out so the object's own annotations stay the author's. A
`status` is left out: the API server sets it and ignores it on write.
"""

from __future__ import annotations

from planner.objects import ANNOTATION_DEPENDS_ON, Manifest, json_copy
from planner.plan.model import Plan, RawManifest
from planner.plan.raw_manifests import DEPENDS_ON
from planner.render.identity import Stamp, dependency_refs, depends_on_value, raw_namespace


def render_manifest(raw: RawManifest, *, plan: Plan, stamp: Stamp, default_namespace: str) -> Manifest:
    obj: Manifest = {k: json_copy(v) for k, v in raw.object.items() if k != "status"}  # the server's
    written = obj["metadata"]
    annotations = {k: str(v) for k, v in (written.get("annotations") or {}).items() if k != DEPENDS_ON}
    refs = [ref for target in raw.depends_on for ref in dependency_refs(plan, target, default_namespace)]
    if refs:
        already = [ref for ref in annotations.get(ANNOTATION_DEPENDS_ON, "").split(",") if ref.strip()]
        annotations[ANNOTATION_DEPENDS_ON] = depends_on_value([*already, *refs])
    namespace = raw_namespace(plan, raw, default_namespace)
    metadata = stamp.metadata(
        name=raw.name, namespace=namespace or "", labels=written.get("labels"), annotations=annotations
    )
    if namespace is None:
        del metadata["namespace"]
    obj["metadata"] = {**metadata, **{k: v for k, v in written.items() if k not in metadata}}
    return obj


def render_manifests(plan: Plan, *, stamp: Stamp, default_namespace: str) -> list[Manifest]:
    """The plan's raw manifests, inline ones first, then each file's in order."""
    return [
        render_manifest(raw, plan=plan, stamp=stamp, default_namespace=default_namespace)
        for raw in plan.manifests
    ]

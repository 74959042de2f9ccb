"""ControllerRevisions: the pod-template history StatefulSets and DaemonSets keep, as the controllers'
`history` package keeps it.

A revision is named `<owner>-<hash>`; its `data` is the patch that puts the owner's pod template back
(`{"spec": {"template": {…, "$patch": "replace"}}}`, what `kubectl rollout undo` applies) and its
`revision` a number one above the highest so far. A template that matches an older revision reuses
it with the next number (a rollback), as the real controllers do; revisions no pod uses beyond
`revisionHistoryLimit` are deleted, oldest first. The hash is the Deployment controller's
(`workloads.template_hash`) over the data.
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.controllers.base import (
    Writer,
    name_of,
    ns_of,
    owner_reference,
)
from planner.slim.controllers.deployments import template_hash

Obj = dict[str, Any]
HASH_LABEL = "controller.kubernetes.io/hash"
REVISION_LABEL = "controller-revision-hash"
MAX_PREFIX = 223  # the controllers' cap, so that `<prefix>-<hash>` is a valid name


def revision_data(owner: Obj) -> Obj:
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_number(revision: Obj) -> int:
    return int(revision.get("revision", 0))


def revision_name(owner: Obj, digest: str) -> str:
    return f"{name_of(owner)[:MAX_PREFIX]}-{digest}"


def sync_revisions(
    writer: Writer, owner: Obj, kind: str, revisions: list[Obj], *, hash_label: str | None = None
) -> tuple[Obj | None, list[Obj]]:
    """The revision for the owner's current template (created, or renumbered when it is an older one
    come back) and the revisions as they now stand, sorted by number. A new revision carries the
    owner's annotations and its template's labels, plus the hash under `hash_label` too if given."""
    history = sorted(revisions, key=revision_number)
    data = revision_data(owner)
    highest = revision_number(history[-1]) if history else 0
    equal = [r for r in history if r.get("data") == data]
    if equal:
        found = equal[-1]
        if revision_number(found) == highest:
            return found, history
        renumbered = copy.deepcopy(found)
        renumbered["revision"] = highest + 1
        written = writer.update("ControllerRevision", renumbered)
        if written is None:
            return None, history
        return written, sorted([r for r in history if r is not found] + [written], key=revision_number)
    collisions = int((owner.get("status") or {}).get("collisionCount", 0))
    digest = template_hash(data, collisions)  # only for a new revision: hashing costs more than comparing
    template_labels = ((owner.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
    labels = {**(template_labels or {}), HASH_LABEL: digest}
    if hash_label:
        labels[hash_label] = digest
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(owner, digest),
            "labels": labels,
            "annotations": dict(owner["metadata"].get("annotations") or {}),
            "ownerReferences": [owner_reference(owner, kind, "apps/v1")],
        },
        "data": data,
        "revision": highest + 1,
    }
    created = writer.create("ControllerRevision", ns_of(owner), body)
    if created is None:
        return None, history
    return created, [*history, created]


def revision_hash(revision: Obj) -> str:
    return str((revision["metadata"].get("labels") or {}).get(HASH_LABEL, ""))


def revision_template(revision: Obj) -> Obj:
    """The pod template a revision records."""
    template = copy.deepcopy(revision["data"]["spec"]["template"])
    template.pop("$patch", None)
    return dict(template)


def truncate_history(writer: Writer, owner: Obj, history: list[Obj], live: set[str]) -> None:
    """Delete the oldest revisions no pod (and neither current nor update revision) uses, keeping
    `revisionHistoryLimit` of them."""
    limit = int((owner.get("spec") or {}).get("revisionHistoryLimit", 10))
    unused = [r for r in history if name_of(r) not in live]
    for revision in unused[: max(len(unused) - limit, 0)]:
        writer.delete("ControllerRevision", revision)

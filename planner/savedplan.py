"""Saved plans: what `plan --out FILE` records so that `apply FILE` applies exactly what was reviewed.

A saved plan never holds a Secret value, nor anything from which one can be guessed offline. It
records (docs/design.md §4):

- the plan files, as given (relative paths stay relative, so the file travels), and the **root** they
  were given in (the directory `plan` ran in), where `apply FILE` finds them when they are not where it
  runs;
- a **closure digest**: sha256 of the rendered manifests' canonical JSON, with every Secret value
  replaced by its HMAC-SHA256 under the plan's **digest key**, so an edited plan file (or a changed
  secret) is noticed; and to tell the two apart, a **shape digest** (the same closure with every Secret's
  values and content hash left out: it says nothing about a value) and per Secret an HMAC of its values
  (`secret_digests`), so a secret that alone resolves to another value is named as such;
- the **changes** as reviewed: object, action, transition, reason and the changed field paths;
- for **every object read**, its uid and a **declared-field digest**: the live values at the paths the
  plan declares, plus the object's labels and annotations (less those controllers write), so a
  `kubectl annotate`, an edit of a declared field, a deletion or a re-creation make the plan stale,
  while status writes, HPA scaling of undeclared replicas and `rollout restart` do not; a Secret's
  digest is an HMAC under the digest key, since its fields and its hash annotation are its values;
- the objects the plan expected to be absent, so one that appears in between is noticed too;
- `digest_key_id`, which names the key without revealing it, when Secrets were digested;
- the **cluster** it was made against (`ClusterIdentity`: the `kube-system` Namespace's uid, which a
  cluster keeps for its life, and the server URL for messages), so `apply FILE` refuses another cluster
  before it writes anything;
- per plan, the **lock** holder `plan` saw, if any (an apply was running while the plan was made).

The digest key is 32 random bytes in the plan's ApplySet parent Secret (`planner.state.applyset.DIGEST_KEY`),
never in the saved plan: a sha256 of a 4-digit PIN is reversed by trying all 10,000, but an HMAC can
only be tested by someone who can read that Secret — who can read the plan's Secrets anyway. Without
Secrets to digest no key is needed. docs/gitops.md states the threat model.

The format is versioned (`format: planner.dev/saved-plan/v2`; v1 digested Secret values with plain
sha256 and recorded no cluster) and documented in docs/cli.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs

from planner import __version__
from planner.canonical import declared, project, with_server_forms
from planner.diff import Change, ChangeSet
from planner.errors import PlanFilesMissingError, PlannerError
from planner.kinds import SECRET
from planner.live import LiveState
from planner.objects import (
    ANNOTATION_HASH,
    Manifest,
    annotations_of,
    canonical_json,
    labels_of,
    metadata_of,
    ref_of,
    without_create_only,
)
from planner.plan.schema import saved_plan_schema

FORMAT_PREFIX = "planner.dev/saved-plan/"
FORMAT = f"{FORMAT_PREFIX}v2"
KEY_ID_LABEL = b"planner.dev/digest-key-id"
# Metadata written by controllers and tools as a side effect, never a sign that someone moved the object.
VOLATILE_METADATA_PREFIXES = (
    "deployment.kubernetes.io/",
    "kubectl.kubernetes.io/",
    "pv.kubernetes.io/",
    "volume.kubernetes.io/",
    "volume.beta.kubernetes.io/",
    "batch.kubernetes.io/",
    "control-plane.alpha.kubernetes.io/",
)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _hmac(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """A name for the digest key that reveals nothing about it (an HMAC of a fixed label)."""
    return hmac.new(key, KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def _is_secret(manifest: Mapping[str, Any] | None) -> bool:
    return (manifest or {}).get("kind") == SECRET.kind


def _keyed(key: bytes | None) -> bytes:
    if key is None:  # app.planning gives a key whenever `needs_key` says so
        raise PlannerError("Secret values need the plan's digest key to be digested")
    return key


def needs_key(desired: Sequence[Manifest], live: LiveState) -> bool:
    """Whether a saved plan of these objects digests Secret values: any Secret desired or read."""
    return any(map(_is_secret, [*desired, *live.members.values(), *live.foreign.values()]))


def _without_secret_values(manifest: Mapping[str, Any], key: bytes | None) -> Mapping[str, Any]:
    if not _is_secret(manifest):
        return manifest
    data = manifest.get("data") or {}
    return {**manifest, "data": {name: _hmac(_keyed(key), str(value)) for name, value in data.items()}}


def closure_digest(manifests: Sequence[Manifest], key: bytes | None) -> str:
    """One digest of the whole rendered closure; Secret values enter only as their HMACs under `key`."""
    return _sha256(canonical_json([_without_secret_values(m, key) for m in manifests]))


def _shape(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Secret without what its values decide: their keys stay, the values and the content hash go."""
    if not _is_secret(manifest):
        return manifest
    metadata = metadata_of(manifest)
    annotations = {k: v for k, v in annotations_of(manifest).items() if k != ANNOTATION_HASH}
    data = dict.fromkeys(manifest.get("data") or {}, "")
    return {**manifest, "metadata": {**metadata, "annotations": annotations}, "data": data}


def shape_digest(manifests: Sequence[Manifest]) -> str:
    """The closure's digest with every Secret's values left out: equal when only Secret values differ."""
    return _sha256(canonical_json([_shape(m) for m in manifests]))


def secret_digests(manifests: Sequence[Manifest], key: bytes | None) -> dict[str, str]:
    """Each rendered Secret's values as one HMAC under `key`, by object (`secret/shop/db`)."""
    return {
        str(ref_of(m)): _hmac(_keyed(key), canonical_json(m.get("data") or {}))
        for m in manifests
        if _is_secret(m)
    }


def changed_secrets(saved: Mapping[str, Any], manifests: Sequence[Manifest], key: bytes | None) -> list[str]:
    """The Secrets whose values alone make `manifests` differ from the closure `saved` was made from
    (sorted); empty when anything else differs too (or the saved plan predates these digests)."""
    if saved.get("shape_digest") != shape_digest(manifests):
        return []
    before: Mapping[str, str] = saved.get("secret_digests") or {}
    after = secret_digests(manifests, key)
    return sorted(ref for ref in before.keys() | after.keys() if before.get(ref) != after.get(ref))


def _stable_metadata(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (values or {}).items() if not k.startswith(VOLATILE_METADATA_PREFIXES)}


def declared_digest(desired: Manifest | None, live: Manifest, key: bytes | None) -> str:
    """The live object's declared fields and its labels and annotations, digested: an HMAC under `key`
    for a Secret (its values, and its hash annotation made from them, must not be testable). Create-only
    fields are left out (replicas an autoscaler owns): apply never writes them after the create."""
    watched = canonical_json(
        {
            "declared": project(declared(with_server_forms(without_create_only(desired))), live)
            if desired
            else None,
            "labels": _stable_metadata(labels_of(live)),
            "annotations": _stable_metadata(annotations_of(live)),
        }
    )
    return _hmac(_keyed(key), watched) if _is_secret(live) else _sha256(watched)


def _change_record(change: Change) -> dict[str, Any]:
    record: dict[str, Any] = {"object": str(change.ref), "action": change.action}
    if change.transition:
        record["transition"] = change.transition
    if change.reason:
        record["reason"] = change.reason
    record["fields"] = [f.path for f in change.fields]
    return record


def _observed(
    desired: Sequence[Manifest], live: LiveState, key: bytes | None
) -> tuple[list[dict[str, str]], list[str]]:
    wanted = {ref_of(m): m for m in desired}
    # A pruned StatefulSet's PVCs too: one made or deleted in between changes what apply would delete.
    claims = {ref_of(claim): claim for made in live.claims.values() for claim in made}
    seen = {**live.members, **live.foreign, **claims}
    objects = [
        {
            "object": str(ref),
            "uid": str(metadata_of(obj).get("uid", "")),
            "digest": declared_digest(wanted.get(ref), obj, key),
        }
        for ref, obj in sorted(seen.items())
    ]
    absent = sorted(str(ref) for ref in wanted if ref not in seen)
    return objects, absent


@dataclass(frozen=True, kw_only=True)
class ClusterIdentity:
    """Which cluster: the uid of its `kube-system` Namespace ("" when it could not be read) and, for
    messages only, the server URL it was reached at."""

    uid: str
    server: str

    def recorded(self) -> dict[str, str]:
        return {"uid": self.uid, "server": self.server}

    @classmethod
    def from_recorded(cls, recorded: object) -> ClusterIdentity | None:
        if not isinstance(recorded, dict):
            return None
        return cls(uid=str(recorded.get("uid") or ""), server=str(recorded.get("server") or ""))

    def __str__(self) -> str:
        return f"cluster {self.uid or '(uid unreadable)'} at {self.server}"


def cluster_mismatch(saved: ClusterIdentity | None, here: ClusterIdentity) -> str | None:
    """Why a saved plan must not be applied to `here`, or None when it was made against this cluster.
    The uids decide when both are known; when either could not be read (no permission to get the
    `kube-system` Namespace), the server URLs must agree instead."""
    if saved is None:
        return "the saved plan does not say which cluster it was made against; plan again"
    same = saved.uid == here.uid if saved.uid and here.uid else saved.server == here.server
    return None if same else f"plan was made against {saved}; this is {here}"


def saved_plan(
    *,
    files: Sequence[str],
    root: str,
    changeset: ChangeSet,
    desired: Sequence[Manifest],
    live: LiveState,
    options: Mapping[str, Any],
    key: bytes | None,
    lock: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The saved-plan document for one plan (no Secret value, nor a digest of one anybody without
    `key` can test, anywhere in it). `key` is the plan's digest key, needed when `needs_key`; `root` is
    the absolute directory the `files` were given in; `lock` is the holder of the plan's lock `plan`
    saw (`{"holder", "since"}`), None when nobody held it."""
    objects, absent = _observed(desired, live, key)
    return {
        "format": FORMAT,
        "planner": __version__,
        "plan": changeset.plan,
        "namespace": changeset.namespace,
        "files": list(files),
        "root": root,
        "closure_digest": closure_digest(desired, key),
        "shape_digest": shape_digest(desired),
        "secret_digests": secret_digests(desired, key),
        **({"digest_key_id": key_id(key)} if key is not None else {}),
        "options": dict(options),
        "changes": [_change_record(c) for c in changeset.changes if c.action != "noop" or c.transition],
        "conflicts": list(changeset.conflicts),
        "objects": objects,
        "absent": absent,
        "lock": dict(lock) if lock else None,
    }


def write_saved_plans(path: Path, documents: Sequence[dict[str, Any]], *, cluster: ClusterIdentity) -> None:
    """One file for the whole run: `{"format", "cluster", "plans": [...]}` so several plan files travel
    together, bound to the cluster they were planned against."""
    document = {"format": FORMAT, "cluster": cluster.recorded(), "plans": list(documents)}
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def moved_objects(saved: Mapping[str, Any], fresh: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each object whose observation differs between a saved plan and the same plan made now, with what
    happened to it: deleted, re-created (another uid), changed (declared fields, labels, annotations) or
    appeared (expected absent, or never seen). Empty when the saved plan still holds."""
    before = {o["object"]: o for o in saved.get("objects") or []}
    after = {o["object"]: o for o in fresh.get("objects") or []}
    moved = [(name, "deleted") for name in before if name not in after]
    moved += [(name, "appeared") for name in after if name not in before]
    for name in before.keys() & after.keys():
        if before[name]["uid"] != after[name]["uid"]:
            moved.append((name, "deleted and created again"))
        elif before[name]["digest"] != after[name]["digest"]:
            moved.append((name, "changed"))
    return sorted(moved)


def plan_files(saved: Mapping[str, Any], here: Path) -> list[str]:
    """Where a saved plan's files are now: as recorded when they are all there from `here` (a CI job run
    in its checkout, as the plan was), else under the recorded root when they are all there; raises
    PlanFilesMissingError saying where relative paths are looked for when neither holds them."""
    files = [str(f) for f in saved["files"]]
    root = Path(str(saved.get("root") or here))
    for base in (here, root):
        found = [base / f for f in files]
        if all(path.is_file() for path in found):
            return files if base == here else [str(path) for path in found]
    missing = ", ".join(f for f in files if not (here / f).is_file())
    raise PlanFilesMissingError(
        f"plan {saved.get('plan')}: plan files not found: {missing}: a saved plan's relative paths are "
        f"relative to the directory `plan` ran in ({root}), which does not hold them either; run `apply` "
        "from a checkout with the same layout, at its top (where `plan` ran)"
    )


def is_saved_plan(path: Path) -> bool:
    """Whether `path` holds a saved plan rather than a plan file: JSON whose `format` is a saved plan's,
    of any version (a plan file is YAML with `kind: Plan`; a JSON plan file has no `format` key)."""
    if not path.is_file():
        return False
    try:
        head = path.read_text()
    except (OSError, UnicodeDecodeError):
        return False
    if not head.lstrip().startswith("{"):
        return False
    try:
        document = json.loads(head)
    except ValueError:
        return False
    return isinstance(document, dict) and str(document.get("format", "")).startswith(FORMAT_PREFIX)


def read_saved_plans(path: Path) -> tuple[list[dict[str, Any]], ClusterIdentity | None]:
    """The plans a saved-plan file holds, and the cluster it was made against (None if it says none)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as unreadable:
        raise PlannerError(f"{path}: not a saved plan: {unreadable}") from unreadable
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else None
        raise PlannerError(f"{path}: not a saved plan of format {FORMAT} (it is {found}): plan again")
    broken = _first_error(document)
    if broken is not None:
        raise PlannerError(f"{path}: not a saved plan `plan --out` wrote ({broken}): plan again")
    plans: list[dict[str, Any]] = document["plans"]
    return plans, ClusterIdentity.from_recorded(document.get("cluster"))


def _first_error(document: dict[str, Any]) -> str | None:
    """Where the document first fails schemas/saved-plan.schema.json, and why; None when it matches."""
    for error in jsonschema_rs.Draft7Validator(saved_plan_schema()).iter_errors(document):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path)
        return f"{where.lstrip('.') or 'the document'}: {error.message}"
    return None


__all__ = [
    "FORMAT",
    "ClusterIdentity",
    "changed_secrets",
    "closure_digest",
    "cluster_mismatch",
    "declared_digest",
    "is_saved_plan",
    "key_id",
    "moved_objects",
    "needs_key",
    "plan_files",
    "read_saved_plans",
    "saved_plan",
    "secret_digests",
    "shape_digest",
    "write_saved_plans",
]

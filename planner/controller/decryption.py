"""The age keys a Plan object's `decryption` names: every key ending in `.agekey` of a Secret in the
Plan's namespace (Flux's kustomize-controller reads the same keys), read as the Plan's own
ServiceAccount, so a tenant decrypts only with keys its RBAC lets it read. The Secret is read when a
plan has encrypted values to open, once per reconcile; nothing of it is ever printed, only its name
and what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from planner.app.target import Target
from planner.errors import ApiError, ForbiddenError, NotFoundError
from planner.kinds import SECRET
from planner.kube.client import resource_path
from planner.objects import Manifest
from planner.plan.load import no_object_keys
from planner.sops.agekeys import AgeKeys, KeySource, keys_of, lazily

AGE_KEY_SUFFIX = ".agekey"
HINT = "add the age identity to that Secret under a key ending in .agekey"


def decryption_keys(plan: Manifest, target: Target, namespace: str) -> KeySource:
    """The keys the Plan's `decryption` names, read through `target` (the Plan's ServiceAccount)."""
    decryption = plan.get("decryption")
    reference = decryption.get("secretRef") if isinstance(decryption, Mapping) else None
    name = reference.get("name") if isinstance(reference, Mapping) else None
    if not isinstance(name, str):
        return no_object_keys
    return lazily(lambda: _read(target, namespace, name))


def _read(target: Target, namespace: str, name: str) -> AgeKeys:
    source = f"Secret {name} of namespace {namespace} (decryption.secretRef)"
    try:
        secret = target.client.request("GET", resource_path(SECRET, namespace, name), verb="get")
    except NotFoundError:
        return AgeKeys((), (source,), ("that Secret does not exist",), HINT)
    except ForbiddenError:
        return AgeKeys((), (source,), ("the Plan's ServiceAccount may not read that Secret",), HINT)
    except ApiError as error:
        return AgeKeys((), (source,), (f"reading that Secret failed: {error}",), HINT)
    data = secret.get("data")
    texts = []
    for key, encoded in (data if isinstance(data, Mapping) else {}).items():
        if str(key).endswith(AGE_KEY_SUFFIX) and isinstance(encoded, str):
            text = _decoded(encoded)
            texts.append((str(key), text if text is not None else "not UTF-8"))
    return keys_of(texts, source, HINT)


def _decoded(encoded: str) -> str | None:
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None

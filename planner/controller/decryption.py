"""The keys a Plan object's `decryption` names: every key ending in `.agekey` (an age identity) or
`.asc` (an armored PGP secret key) of a Secret in the Plan's namespace (Flux's kustomize-controller
reads the same keys; PGP keys are used in memory, never imported into a keyring), read as the Plan's own
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
from planner.sops.keys import KeySource, SopsKeys, keys_of, lazily

AGE_KEY_SUFFIX = ".agekey"
PGP_KEY_SUFFIX = ".asc"
HINT = "add the age identity to that Secret under a key ending in .agekey"
PGP_HINT = "add the armored PGP secret key (gpg --export-secret-keys --armor) to that Secret under a key ending in .asc"


def decryption_keys(plan: Manifest, target: Target, namespace: str) -> KeySource:
    """The keys the Plan's `decryption` names, read through `target` (the Plan's ServiceAccount)."""
    decryption = plan.get("decryption")
    reference = decryption.get("secretRef") if isinstance(decryption, Mapping) else None
    name = reference.get("name") if isinstance(reference, Mapping) else None
    if not isinstance(name, str):
        return no_object_keys
    return lazily(lambda: _read(target, namespace, name))


def _read(target: Target, namespace: str, name: str) -> SopsKeys:
    source = f"Secret {name} of namespace {namespace} (decryption.secretRef)"
    try:
        secret = target.client.request("GET", resource_path(SECRET, namespace, name), verb="get")
    except NotFoundError:
        return _unread(source, "that Secret does not exist")
    except ForbiddenError:
        return _unread(source, "the Plan's ServiceAccount may not read that Secret")
    except ApiError as error:
        return _unread(source, f"reading that Secret failed: {error}")
    data = secret.get("data")
    entries = data if isinstance(data, Mapping) else {}
    return keys_of(_texts(entries, AGE_KEY_SUFFIX), _texts(entries, PGP_KEY_SUFFIX), source, HINT, PGP_HINT)


def _unread(source: str, problem: str) -> SopsKeys:
    return SopsKeys((), (source,), (problem,), HINT, pgp_hint=PGP_HINT)


def _texts(entries: Mapping[str, object], suffix: str) -> list[tuple[str, str]]:
    """(name, text) of the entries whose name ends in `suffix`."""
    texts = []
    for key, encoded in entries.items():
        if str(key).endswith(suffix) and isinstance(encoded, str):
            text = _decoded(encoded)
            texts.append((str(key), text if text is not None else "not UTF-8"))
    return texts


def _decoded(encoded: str) -> str | None:
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None

"""The file's data key, unwrapped from its age stanzas with the identities given (age/keysource.go's
`Decrypt`): the first stanza any identity opens wins, as sops tries its master keys in turn."""

from __future__ import annotations

import pyrage

from planner.sops.agekeys import AgeKeys
from planner.sops.metadata import SOPS, Metadata, Problem

DATA_KEY_BYTES = 32


def data_key(metadata: Metadata, keys: AgeKeys) -> bytes | Problem:
    """The 32-byte data key, or a problem naming the recipients and where keys were looked for."""
    if not metadata.age:
        return Problem(SOPS, f"encrypted for {metadata.recipients()}: planner decrypts with age keys only")
    for stanza in metadata.age:
        try:
            key: bytes = pyrage.decrypt(stanza.enc.encode(), list(keys.identities))
        except Exception:  # pyrage.DecryptError: no identity matches, or the stanza is damaged
            continue
        if len(key) == DATA_KEY_BYTES:
            return key
    return Problem(SOPS, _no_key(metadata, keys))


def _no_key(metadata: Metadata, keys: AgeKeys) -> str:
    where = ", ".join(keys.looked_in)
    count = len(keys.identities)
    if count:
        found = f"{'the age key' if count == 1 else f'none of the {count} age keys'} found ({where}) is "
        found += "not one of them" if count == 1 else "one of them"
    else:
        found = f"no age key was found (looked in {where})"
    unread = f"; {'; '.join(keys.problems)}" if keys.problems else ""
    hint = f": {keys.hint}" if keys.hint else ""
    return f"encrypted with SOPS for {metadata.recipients()}, and {found}{unread}{hint}"

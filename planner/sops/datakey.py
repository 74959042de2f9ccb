"""The file's data key, unwrapped from its age stanzas with the identities given (age/keysource.go's
`Decrypt`), else from its PGP stanzas with the PGP keys given (pgp/keysource.go's): the first stanza
that opens wins, as sops tries its master keys in turn. age comes first: it needs no gpg."""

from __future__ import annotations

import pyrage

from planner.sops.keys import SopsKeys
from planner.sops.metadata import SOPS, Metadata, Problem

DATA_KEY_BYTES = 32


def data_key(metadata: Metadata, keys: SopsKeys) -> bytes | Problem:
    """The 32-byte data key, or a problem naming the recipients and where keys were looked for."""
    if not metadata.age and not metadata.pgp:
        return Problem(
            SOPS, f"encrypted for {metadata.recipients()}: planner decrypts with age and PGP keys only"
        )
    for stanza in metadata.age if keys.identities else ():
        try:
            key: bytes = pyrage.decrypt(stanza.enc.encode(), list(keys.identities))
        except Exception:  # pyrage.DecryptError: no identity matches, or the stanza is damaged
            continue
        if len(key) == DATA_KEY_BYTES:
            return key
    reasons: list[str] = []
    if keys.pgp is not None:
        for pgp in metadata.pgp:
            opened = keys.pgp.open(pgp)
            if isinstance(opened, bytes) and len(opened) == DATA_KEY_BYTES:
                return opened
            reason = opened if isinstance(opened, str) else "what it opens is no sops data key"
            if reason not in reasons:
                reasons.append(reason)
    return Problem(SOPS, _no_key(metadata, keys, reasons))


def _no_key(metadata: Metadata, keys: SopsKeys, pgp_reasons: list[str]) -> str:
    found, hints = [], []
    if metadata.age:
        found.append(_no_age_key(keys))
        hints.append(keys.hint)
    if metadata.pgp:
        if keys.pgp is None:
            found.append(f"no PGP key was found (looked in {', '.join(keys.looked_in)})")
        else:
            found.append(f"{keys.pgp.where}: {'; '.join(pgp_reasons)}")
        hints.append(keys.pgp_hint)
    unread = f"; {'; '.join(keys.problems)}" if keys.problems else ""
    given = [hint for hint in hints if hint]
    hint = f": {'; or '.join(given)}" if given else ""
    return f"encrypted with SOPS for {metadata.recipients()}, and {', and '.join(found)}{unread}{hint}"


def _no_age_key(keys: SopsKeys) -> str:
    where = ", ".join(keys.looked_in)
    count = len(keys.identities)
    if not count:
        return f"no age key was found (looked in {where})"
    found = f"{'the age key' if count == 1 else f'none of the {count} age keys'} found ({where}) is "
    return found + ("not one of them" if count == 1 else "one of them")

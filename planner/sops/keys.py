"""The keys a file's data key may be unwrapped with: age identities (`agekeys`) and PGP keys
(`pgpkeys`), from where sops looks for them (the command line) or from a Kubernetes Secret (a Plan
object's `decryption`), with where they were looked for and what could not be read, for messages."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pyrage

from planner.sops.agekeys import KEY_ENV, KEY_FILE_ENV, age_in_environment, age_in_texts
from planner.sops.pgpkeys import PgpKeys, gnupg_keyring, secret_keys

ENVIRONMENT_HINT = f"set {KEY_FILE_ENV} (a file of age identities) or {KEY_ENV}, as for sops"
GNUPG_HINT = "import the PGP secret key into that keyring (gpg --import), as for sops"


@dataclass(frozen=True)
class SopsKeys:
    """The age identities found, where they were looked for and what could not be read; the PGP keys,
    if any; and how to give each (`hint`, `pgp_hint`)."""

    identities: tuple[pyrage.x25519.Identity, ...]
    looked_in: tuple[str, ...]
    problems: tuple[str, ...] = ()
    hint: str = ""
    pgp: PgpKeys | None = None
    pgp_hint: str = ""


# Asked when (and each time) a file needs keys; None: decrypt nothing (a check that reads no secret
# value, as `validate` reads no Secret of the cluster), every encrypted value reads as "".
KeySource = Callable[[], SopsKeys | None]


def unread_keys() -> SopsKeys | None:
    """`KeySource` for a check that reads no secret values."""
    return None


def lazily(read: Callable[[], SopsKeys]) -> KeySource:
    """`read`, called once, when first asked."""
    return functools.cache(read)


def environment_keys(environ: Mapping[str, str], *, platform: str = sys.platform) -> KeySource:
    """The command line's keys: sops's places for age identities, read when first asked, and the
    user's gpg keyring (asked only for a file with PGP recipients that no age identity opens)."""

    def read() -> SopsKeys:
        identities, looked_in, problems = age_in_environment(environ, platform)
        return SopsKeys(
            tuple(identities),
            tuple(looked_in),
            tuple(problems),
            ENVIRONMENT_HINT,
            gnupg_keyring(environ),
            GNUPG_HINT,
        )

    return lazily(read)


def keys_of(
    age: Iterable[tuple[str, str]], pgp: Iterable[tuple[str, str]], source: str, hint: str, pgp_hint: str
) -> SopsKeys:
    """Keys from named texts (a Secret's entries: `("sops.agekey", text)` age identities, `("key.asc",
    text)` armored PGP secret keys), as `source` names them."""
    identities, problems = age_in_texts(age, source)
    pgp_keys, wrong = secret_keys(pgp, source)
    return SopsKeys(
        tuple(identities),
        (source,),
        (*problems, *wrong),
        hint,
        pgp_keys if pgp_keys.keys else None,
        pgp_hint,
    )

"""PGP keys that unwrap a file's data key from its `sops.pgp[].enc` (pgp/keysource.go): an armored
OpenPGP message whose plaintext is the 32-byte data key.

The command line asks the `gpg` command, as sops does, with the user's own keyring (`GNUPGHOME`, else
`~/.gnupg`; `SOPS_GPG_EXEC`, when an absolute path, names another binary), but never interactively:
`--batch` with `--pinentry-mode error`, so a key whose passphrase gpg-agent has not cached fails with a
message saying so instead of a prompt. What gpg reports is read from its `--status-fd` lines.

A Plan object's keys come from its decryption Secret (Flux's convention: entries ending in `.asc`, each
an armored OpenPGP secret key) and are used in memory with Sequoia (`pysequoia`, as commit signatures
are verified): no keyring, no temporary GNUPGHOME, no gpg-agent, nothing shared between Plans
(docs/architecture.md says why). A key protected by a passphrase is refused when read.

Messages name fingerprints, Secret entries and keyrings, never key material or a decrypted key.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import pysequoia

from planner.sops.metadata import PgpStanza

GPG_EXEC_ENV = "SOPS_GPG_EXEC"
HOME_ENV = "GNUPGHOME"
GPG_TIMEOUT_SECONDS = 60  # gpg-agent answers in milliseconds; this only stops a hung agent blocking a run
SECRET_KEY_BLOCK = "-----BEGIN PGP PRIVATE KEY BLOCK-----"
PKDECRYPT_FAILED = re.compile(r"^\[GNUPG:\] ERROR pkdecrypt_failed (\d+)")
GPG_ERROR_CODE_MASK = 0xFFFF  # libgpg-error: the source is in the high bits, the code in the low 16
# GPG_ERR_BAD_PASSPHRASE, GPG_ERR_NO_PIN_ENTRY, GPG_ERR_PIN_ENTRY, GPG_ERR_CANCELED (gpg-error.h)
PASSPHRASE_ERRORS = frozenset({11, 85, 86, 99})


class PgpKeys(Protocol):
    """Something that may open a PGP stanza: the data key, or why not (no key material in it)."""

    @property
    def where(self) -> str: ...

    def open(self, stanza: PgpStanza) -> bytes | str: ...


@dataclass(frozen=True)
class GnupgKeyring:
    """The user's keyring, through the gpg command (`binary`), run with `environ`."""

    binary: str
    environ: Mapping[str, str]
    where: str

    def open(self, stanza: PgpStanza) -> bytes | str:
        command = [self.binary, "--batch", "--no-tty", "--pinentry-mode", "error", "--status-fd", "2"]
        try:
            done = subprocess.run(
                [*command, "--decrypt"],
                input=stanza.enc.encode(),
                capture_output=True,
                env=dict(self.environ),
                timeout=GPG_TIMEOUT_SECONDS,
                check=False,
            )
        except FileNotFoundError:
            return f"{self.binary} was not found: install GnuPG, or set {GPG_EXEC_ENV} to its absolute path"
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"running {self.binary} failed: {type(error).__name__}"
        if done.returncode == 0:
            return done.stdout
        return why_gpg_failed(done.stderr.decode(errors="replace"), stanza)


def why_gpg_failed(stderr: str, stanza: PgpStanza) -> str:
    """gpg's reason, from its status lines (`[GNUPG:] NO_SECKEY …`, `[GNUPG:] ERROR pkdecrypt_failed
    CODE`: gpg-agent's error code, not its translated text) and the `gpg:` line that explains them."""
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        failed = PKDECRYPT_FAILED.match(line)
        if failed is None:
            continue
        if int(failed.group(1)) & GPG_ERROR_CODE_MASK in PASSPHRASE_ERRORS:
            return (
                f"the secret key of PGP key {stanza.fp} needs its passphrase, which planner does not ask "
                "for (gpg runs with --batch): let gpg-agent cache it first (decrypt anything with that "
                "key once), or use a key without a passphrase"
            )
        said = [each for each in lines[:index] if each.startswith("gpg: ")]
        reason = f": {said[-1].removeprefix('gpg: ')}" if said else ""
        return f"gpg could not use the secret key of PGP key {stanza.fp}{reason}"
    if any(line.startswith("[GNUPG:] NO_SECKEY ") for line in lines):
        return "it holds no secret key for them"
    said = [line for line in lines if line.startswith("gpg: ")]
    return said[-1].removeprefix("gpg: ") if said else "gpg could not decrypt it"


def gnupg_keyring(environ: Mapping[str, str]) -> GnupgKeyring:
    """The keyring sops's gpg would use, for the environment `environ`."""
    given = environ.get(GPG_EXEC_ENV, "")
    binary = given if given and os.path.isabs(given) else "gpg"
    home = environ.get(HOME_ENV)
    where = (
        f"the gpg keyring in {HOME_ENV} ({home})"
        if home
        else f"the gpg keyring in ~/.gnupg ({HOME_ENV} unset)"
    )
    return GnupgKeyring(binary, environ, where)


@dataclass(frozen=True)
class SecretKeys:
    """Armored OpenPGP secret keys held in memory: (where each came from, its decryptor)."""

    keys: tuple[tuple[str, pysequoia.PyDecryptor], ...]
    where: str

    def open(self, stanza: PgpStanza) -> bytes | str:
        for _, decryptor in self.keys:
            try:
                opened = pysequoia.decrypt(stanza.enc.encode(), decryptor=decryptor).bytes
            except (RuntimeError, ValueError):  # not encrypted for this key, or damaged
                continue
            if opened is not None:
                return opened
        count = len(self.keys)
        return f"{'its PGP key is not' if count == 1 else f'none of its {count} PGP keys is'} one of them"


def secret_keys(entries: Iterable[tuple[str, str]], where: str) -> tuple[SecretKeys, list[str]]:
    """The secret keys in named armored texts (`("key.asc", text)`), and a problem per one that cannot
    be used (not a key, a public key only, protected by a passphrase), naming its entry."""
    keys: list[tuple[str, pysequoia.PyDecryptor]] = []
    problems: list[str] = []
    for name, text in entries:
        blocks = [SECRET_KEY_BLOCK + block for block in text.split(SECRET_KEY_BLOCK)[1:]] or [text]
        for block in blocks:
            decryptor = _decryptor(block)
            if isinstance(decryptor, str):
                problems.append(f"{where} key {name}: {decryptor}")
            else:
                keys.append((name, decryptor))
    return SecretKeys(tuple(keys), where), problems


def _decryptor(armored: str) -> pysequoia.PyDecryptor | str:
    try:
        key = pysequoia.Tsk.from_bytes(armored.encode())
    except (RuntimeError, ValueError) as error:
        reason = _first_line(error)
        if "keyring" in reason:  # Sequoia's "Additional packets found, is this a keyring?"
            return "several keys in one armored block: give each its own entry (gpg --export-secret-keys --armor FPR)"
        return f"not an armored OpenPGP secret key ({reason})"
    fingerprint = key.extract_certificate().fingerprint.upper()
    if SECRET_KEY_BLOCK not in armored:
        return (
            f"PGP key {fingerprint} is a public key: give its secret key (gpg --export-secret-keys --armor)"
        )
    try:
        return key.decryptor()
    except (RuntimeError, ValueError) as error:
        reason = _first_line(error)
        if "encrypted" in reason:
            return f"the secret key of PGP key {fingerprint} is protected by a passphrase, which planner cannot enter"
        return f"PGP key {fingerprint} cannot decrypt ({reason})"


def _first_line(failure: BaseException) -> str:
    return (str(failure).strip().splitlines() or [type(failure).__name__])[0]

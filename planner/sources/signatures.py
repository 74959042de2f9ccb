"""Who signed a fetched commit, among the keys a Plan trusts (`source.git.verify`, Flux's `spec.verify`
with `mode: HEAD`): the commit is applied only when its signature verifies against one of them.

The keys come from a Secret, one entry per key (any entry name): an armored OpenPGP public key block
(`gpg --export --armor`), or SSH public keys, a line each, in `authorized_keys` form (`ssh-ed25519
AAAA… alice`) or `allowed_signers` form (`alice@example.com ssh-ed25519 AAAA…`; a `namespaces` option
that leaves out `git` rules the key out, `valid-after`/`valid-before` are judged at the commit's
committer time, as git does). The cryptography is a library's, never ours: SSH signatures (SSHSIG, the
`git` namespace) with `sshsig`, OpenPGP with Sequoia (`pysequoia`), each checked against exactly these
keys, with no keyring of the machine's (docs/architecture.md says why not the gpg command).

A commit that is unsigned, whose signature does not verify over its content (tampered), or that was
signed by a key not among them is refused with `InvalidCommitSignature` (Flux's reason) and a message
naming the commit and why; keys that cannot be read are `VerificationError`.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import time
from collections.abc import Mapping
from dataclasses import dataclass

import pysequoia
import sshsig
from dulwich.objects import Commit
from dulwich.signature import SIGNATURE_FORMAT_OPENPGP, SIGNATURE_FORMAT_SSH, detect_signature_format
from sshsig.allowed_signers import AllowedSigner
from sshsig.ssh_public_key import PublicKey

from planner.errors import SourceError
from planner.sources.failures import INVALID_SIGNATURE, VERIFICATION_ERROR

PGP_BLOCK = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
SSH_NAMESPACE = "git"


@dataclass(frozen=True)
class SignedCommit:
    """What a commit's signature covers (the commit without its `gpgsig` header), the signature ("" when
    unsigned) and the committer's time (seconds since the epoch)."""

    commit: str
    payload: bytes
    signature: bytes
    committed_at: int


def signed_commit(commit: Commit) -> SignedCommit:
    return SignedCommit(
        commit.id.decode(), commit.raw_without_sig(), commit.gpgsig or b"", commit.commit_time
    )


@dataclass(frozen=True)
class _SshKey:
    entry: str  # the Secret's entry it came from
    key: PublicKey
    valid_after: int | None = None
    valid_before: int | None = None
    for_git: bool = True  # its `namespaces` option names `git` (or it has none)

    def allows(self, signed: SignedCommit) -> bool:
        """Whether it may sign this commit: for git, and valid at the commit's committer time."""
        return (
            self.for_git
            and (self.valid_after is None or signed.committed_at >= self.valid_after)
            and (self.valid_before is None or signed.committed_at < self.valid_before)
        )


@dataclass(frozen=True)
class TrustedKeys:
    """The keys of a verification Secret, parsed: SSH keys and OpenPGP certificates, by entry."""

    ssh: tuple[_SshKey, ...]
    openpgp: tuple[tuple[str, pysequoia.Cert], ...]


def trusted_keys(data: Mapping[str, str], where: str) -> TrustedKeys:
    """The keys in a Secret's entries (name → text); SourceError (VerificationError) naming the entry
    and line that is not a public key, or when there is none at all."""
    ssh: list[_SshKey] = []
    openpgp: list[tuple[str, pysequoia.Cert]] = []
    for entry, text in sorted(data.items()):
        if PGP_BLOCK in text:
            openpgp += [(entry, cert) for cert in _certificates(entry, text, where)]
        else:
            ssh += _ssh_keys(entry, text, where)
    if not ssh and not openpgp:
        raise SourceError(VERIFICATION_ERROR, f"{where} holds no public key")
    return TrustedKeys(tuple(ssh), tuple(openpgp))


def verified_signer(signed: SignedCommit, keys: TrustedKeys) -> str:
    """Who signed the commit, among `keys` (`ssh key SHA256:… (entry alice.pub)`, `openpgp key
    <fingerprint> (Alice <alice@example.com>, entry alice.asc)`); SourceError (InvalidCommitSignature)
    when the commit is unsigned, its signature does not verify, or no key of `keys` made it."""
    if not signed.signature:
        raise _refused(signed, "it is not signed")
    kind = detect_signature_format(signed.signature)
    if kind == SIGNATURE_FORMAT_SSH:
        return _ssh_signer(signed, keys)
    if kind == SIGNATURE_FORMAT_OPENPGP:
        return _openpgp_signer(signed, keys)
    raise _refused(signed, f"its signature is {kind}, not SSH or OpenPGP")


def _ssh_signer(signed: SignedCommit, keys: TrustedKeys) -> str:
    try:
        made_by = sshsig.check_signature(signed.payload, signed.signature, namespace=SSH_NAMESPACE)
    except (sshsig.InvalidSignature, NotImplementedError, ValueError) as bad:
        raise _refused(signed, f"its SSH signature does not verify ({_first_line(bad)})") from None
    known = [each for each in keys.ssh if each.key == made_by]
    for each in known:
        if each.allows(signed):
            return f"ssh key {made_by.sha256_str()} (entry {each.entry})"
    said = f"it is signed by SSH key {made_by.sha256_str()}, which"
    if known:
        raise _refused(
            signed,
            f"{said} the Secret's entry {known[0].entry} does not allow for it (its namespaces, "
            "valid-after or valid-before option)",
        )
    raise _refused(signed, f"{said} is not in the Secret")


def _openpgp_signer(signed: SignedCommit, keys: TrustedKeys) -> str:
    certificates = [cert for _, cert in keys.openpgp]
    try:
        signature = pysequoia.Sig.from_bytes(signed.signature)
        result = pysequoia.verify(bytes=signed.payload, store=lambda ids: certificates, signature=signature)
    except (RuntimeError, ValueError) as bad:
        issuer = _issuer(signed.signature)
        who = f" (by key {issuer})" if issuer else ""
        raise _refused(
            signed,
            f"its OpenPGP signature{who} does not verify with any key in the Secret ({_first_line(bad)})",
        ) from None
    for valid in result.valid_sigs:
        for entry, cert in keys.openpgp:
            if cert.fingerprint == valid.certificate:
                users = ", ".join(str(user) for user in cert.user_ids)
                return (
                    f"openpgp key {cert.fingerprint.upper()} ({users + ', ' if users else ''}entry {entry})"
                )
    raise _refused(signed, "no OpenPGP signature by a key in the Secret")


def _issuer(signature: bytes) -> str:
    try:
        parsed = pysequoia.Sig.from_bytes(signature)
    except (RuntimeError, ValueError):
        return ""
    return (parsed.issuer_fingerprint or parsed.issuer_key_id or "").upper()


def _refused(signed: SignedCommit, why: str) -> SourceError:
    return SourceError(INVALID_SIGNATURE, f"commit {signed.commit} refused: {why}")


def _first_line(failure: BaseException) -> str:
    return (str(failure).strip().splitlines() or [type(failure).__name__])[0]


def _certificates(entry: str, text: str, where: str) -> list[pysequoia.Cert]:
    try:
        return list(pysequoia.Cert.split_bytes(text.encode()))
    except (RuntimeError, ValueError) as bad:
        raise SourceError(
            VERIFICATION_ERROR, f"{where}, entry {entry}: not an OpenPGP public key ({_first_line(bad)})"
        ) from None


def _ssh_keys(entry: str, text: str, where: str) -> list[_SshKey]:
    keys: list[_SshKey] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            keys.append(_ssh_key(entry, line))
        except (ValueError, NotImplementedError, binascii.Error) as bad:
            raise SourceError(
                VERIFICATION_ERROR,
                f"{where}, entry {entry} line {number}: not an SSH public key in authorized_keys or "
                f"allowed_signers form, nor an armored OpenPGP key ({_first_line(bad)})",
            ) from None
    return keys


def _ssh_key(entry: str, line: str) -> _SshKey:
    """One line's key, with what its allowed_signers options allow."""
    first = line.split(maxsplit=1)[0]
    if _is_key_type(first):  # authorized_keys form: `ssh-ed25519 AAAA… comment`
        return _SshKey(entry, PublicKey.from_openssh_str(line))
    signer = AllowedSigner.parse(line)
    options = signer.options or {}
    if "cert-authority" in options:
        raise ValueError("cert-authority keys are not supported")
    namespaces = options.get("namespaces")
    base64.b64decode(signer.base64_key, validate=True)
    return _SshKey(
        entry,
        PublicKey.from_openssh_str(f"{signer.key_type} {signer.base64_key}"),
        _timestamp(options.get("valid-after")),
        _timestamp(options.get("valid-before")),
        for_git=namespaces is None or SSH_NAMESPACE in namespaces.split(","),
    )


def _is_key_type(word: str) -> bool:
    return word.startswith(("ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-"))


def _timestamp(text: str | None) -> int | None:
    """ssh-keygen's `YYYYMMDD[HHMM[SS]][Z]` (UTC here) as seconds since the epoch; ValueError if not."""
    if text is None:
        return None
    digits = text.removesuffix("Z")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if len(digits) not in formats:
        raise ValueError(f"bad time {text!r} (expected YYYYMMDD[HHMM[SS]][Z])")
    return calendar.timegm(time.strptime(digits, formats[len(digits)]))

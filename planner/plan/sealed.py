"""Plan files encrypted with SOPS: the seam between the loader and `planner.sops`.

A plan file, or a fragment it imports, may carry sops's metadata under a top-level `sops:` key, as
`sops --encrypt --encrypted-regex '^(data|secretEnv)$'` writes it: its secret values are then
`ENC[AES256_GCM,…]` and everything else stays readable (and diffable) in review. Each file is its own
unit, as sops made it: its own data key, its own MAC. So the `sops` map is taken off each file as it is
read (`unseal`) and the file, as read, is kept in `ParsedFile.sealed`; the merge then sees plain plan
data, and `decrypt_sealed` opens every sealed file once, before secrets are resolved.

Only secret values may be encrypted (`secrets[].data`, `sandboxes[].secretEnv`,
`warmPools[].template.secretEnv`, written literally): they are the values planner never shows, so a
decrypted value can only ever become a secret value, masked in every output like any other. A value the
file's rule encrypts anywhere else is refused at its position, as is a value that does not decrypt, a
plain value the rule says should be encrypted, and (for files) a MAC that does not match: a file
changed by anyone but sops. A Plan object's MAC is not checked: the API server stores its fields in its
own order (sorted keys) and adds its own, so the values sops hashed are no longer there in sops's
order; each value is still authenticated by AES-GCM under its own path, and whoever could change the
object could write any value into it anyway.

Decrypted values are kept by where they are written (file, line, column), which the merge keeps, so a
value of an imported fragment is found under whatever path it has in the merged plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from planner.errors import Diagnostic
from planner.plan.model import Position
from planner.plan.redact import SECRET_VALUE_MAPS
from planner.plan.source import ParsedFile
from planner.sops.datakey import data_key
from planner.sops.keys import KeySource, SopsKeys
from planner.sops.metadata import SOPS, Metadata, Problem, read_metadata
from planner.sops.plaintext import Leaf, decrypt_tree, is_encrypted, leaves

Where = tuple[str, int, int]  # file, line, column of a value


def _secret_value_pattern(location: tuple[str, ...]) -> str:
    """`("secrets", "*", "data")` as a pattern of the paths of its maps' values (`secrets[3].data.`
    and the key, which may hold dots: `tls.crt`)."""
    pattern = ""
    for part in location:
        pattern += r"\[\d+\]" if part == "*" else (r"\." if pattern else "") + re.escape(part)
    return f"^{pattern}" + r"\."


SECRET_VALUES = tuple(
    (re.compile(_secret_value_pattern(location)), len([part for part in location if part != "*"]) + 1)
    for location in SECRET_VALUE_MAPS
)


def is_secret_value(leaf: Leaf) -> bool:
    """Whether `leaf` is a secret value written literally (a string under `secrets[i].data`, …)."""
    return any(pattern.match(leaf.path) and len(leaf.keys) == depth for pattern, depth in SECRET_VALUES)


OUTSIDE_SECRETS = (
    "the file's sops rule encrypts this value, but only secret values written literally "
    "(secrets[].data, sandboxes[].secretEnv, warmPools[].template.secretEnv) may be encrypted: planner "
    "shows every other value. Encrypt with --encrypted-regex '^(data|secretEnv)$', and keep ConfigMaps "
    "out of that file (a fragment holding only `secrets:` is the usual shape)"
)
NOT_A_STRING = (
    "this encrypted value is of type {type}, and secret values are strings: quote it before encrypting"
)
NO_METADATA = (
    "this value is SOPS-encrypted, but the file that sets it has no `sops:` metadata to decrypt it with "
    "(was it copied from another file?)"
)


def unseal(parsed: ParsedFile) -> ParsedFile:
    """`parsed` without its top-level `sops` map; the file as read joins `sealed`."""
    if not isinstance(parsed.data, dict) or SOPS not in parsed.data:
        return parsed
    data = {key: value for key, value in parsed.data.items() if key != SOPS}
    return replace(parsed, data=data, sealed=(*parsed.sealed, parsed))


@dataclass(frozen=True)
class Unsealed:
    """The plaintext of every encrypted value of a plan's sealed files, by where it is written."""

    values: Mapping[Where, str] = field(default_factory=dict)
    files: frozenset[str] = frozenset()  # every sealed file, opened or with its problem reported

    def value_at(self, parsed: ParsedFile, path: str) -> str | Diagnostic | None:
        """The plaintext of the encrypted value at `path` of the merged plan `parsed`: None when its
        file's problem was reported already."""
        where = parsed.values.get(path)
        if where is None:
            return parsed.diagnostic(path, NO_METADATA)
        key = (parsed.file_of(where), where.line, where.column)
        if key in self.values:
            return self.values[key]
        return None if key[0] in self.files else parsed.diagnostic(path, NO_METADATA)


def decrypt_sealed(
    parsed: ParsedFile, keys: KeySource, *, check_mac: bool
) -> tuple[Unsealed, list[Diagnostic]]:
    """Every sealed file of `parsed` opened with the keys `keys` gives (asked only when there is one);
    with no keys (`unread_keys`) every encrypted value reads as ""."""
    if not parsed.sealed:
        return Unsealed(), []
    given = keys()
    values: dict[Where, str] = {}
    problems: list[Diagnostic] = []
    for sealed in parsed.sealed:
        if given is None:
            values.update(
                (_where(sealed, leaf.path), "") for leaf in leaves(sealed.data) if is_encrypted(leaf.value)
            )
            continue
        opened = _open(sealed, given, check_mac=check_mac)
        if isinstance(opened, list):
            problems += opened
        else:
            values.update(opened)
    return Unsealed(values, frozenset(sealed.file for sealed in parsed.sealed)), problems


def _open(sealed: ParsedFile, keys: SopsKeys, *, check_mac: bool) -> dict[Where, str] | list[Diagnostic]:
    """The file's plaintexts by where they are written, or why it cannot be opened."""
    metadata = read_metadata(sealed.data.get(SOPS))
    if isinstance(metadata, Problem):
        return [_diagnostic(sealed, metadata)]
    outside = list(_outside_secrets(sealed, metadata))
    if outside:
        return outside
    key = data_key(metadata, keys)
    if isinstance(key, Problem):
        return [_diagnostic(sealed, key)]
    plain = decrypt_tree(sealed.data, key, metadata, check_mac=check_mac)
    if isinstance(plain, Problem):
        return [_diagnostic(sealed, plain)]
    typed = [
        sealed.diagnostic(path, NOT_A_STRING.format(type=v.type))
        for path, v in plain.items()
        if v.type != "str"
    ]
    if typed:
        return typed
    return {_where(sealed, path): value.text for path, value in plain.items()}


def _outside_secrets(sealed: ParsedFile, metadata: Metadata) -> Iterator[Diagnostic]:
    """A problem at each value the file's rule encrypts outside a secret value."""
    for leaf in leaves(sealed.data):
        if metadata.rule.encrypts(leaf.keys) and leaf.value != "" and not is_secret_value(leaf):
            yield sealed.diagnostic(leaf.path, OUTSIDE_SECRETS)


def _diagnostic(sealed: ParsedFile, problem: Problem) -> Diagnostic:
    at_value = problem.path != SOPS
    return sealed.diagnostic(problem.path, problem.message, at_value=at_value)


def _where(sealed: ParsedFile, path: str) -> Where:
    where = sealed.values.get(path, Position(line=0, column=0))
    return sealed.file_of(where), where.line, where.column

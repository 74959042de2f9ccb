"""Every value of a sops-encrypted tree decrypted, and its MAC checked (sops.go's `Tree.Decrypt`,
aes/cipher.go's `Decrypt`).

The walk is sops's: map entries in file order, list items in order without adding to the path, nulls
skipped. An encrypted value is `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]` (base64), opened with the data
key and the value's path `a:b:c:` as additional data; an empty string stays empty. The MAC hashes each
value's bytes as Go's sops writes them (`ToBytes`): strings as they are, integers in decimal, floats in
the shortest form without an exponent, booleans `True`/`False`. A value the file's rule encrypts but
that is not encrypted was written or edited without sops, and is refused like one that does not open.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from planner.sops.metadata import SOPS, Metadata, Problem

ENCRYPTED = re.compile(r"^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]")
TYPES = frozenset({"str", "int", "float", "bool", "bytes", "time", "comment"})
# sops.go's MACOnlyEncryptedInitialization: a MAC over the encrypted values only starts with these.
MAC_ONLY_ENCRYPTED_START = bytes.fromhex("8a3fd2ad54ce66527b1034f3d147be0b0b975b3bf44f72c6fdadec8176f27d69")
TRUE_WORDS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE_WORDS = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True)
class Plain:
    """One decrypted value: its text and the type sops recorded (`str`, `int`, …)."""

    text: str
    type: str


@dataclass(frozen=True)
class Leaf:
    keys: tuple[str, ...]  # the map keys from the root: sops's path
    path: str  # planner's path, with list positions: `secrets[0].data.password`
    value: object


def is_encrypted(value: object) -> bool:
    """Whether `value` is a sops-encrypted value."""
    return isinstance(value, str) and ENCRYPTED.match(value) is not None


def leaves(tree: Mapping[str, Any]) -> Iterator[Leaf]:
    """Every scalar of the tree but the `sops` map, in sops's walk order."""
    for key, value in tree.items():
        if key != SOPS:
            yield from _leaves(value, (str(key),), str(key))


def _leaves(node: object, keys: tuple[str, ...], path: str) -> Iterator[Leaf]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _leaves(value, (*keys, str(key)), f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _leaves(item, keys, f"{path}[{index}]")
    elif node is not None:
        yield Leaf(keys, path, node)


def decrypt_tree(
    tree: Mapping[str, Any], key: bytes, metadata: Metadata, *, check_mac: bool = True
) -> dict[str, Plain] | Problem:
    """Each encrypted value by planner's path, every one opened and (`check_mac`) the MAC matched;
    else the first problem."""
    digest = hashlib.sha512(MAC_ONLY_ENCRYPTED_START if metadata.mac_only_encrypted else b"")
    found: dict[str, Plain] = {}
    for leaf in leaves(tree):
        encrypted = metadata.rule.encrypts(leaf.keys)
        if encrypted:
            plain = _open_leaf(leaf, key)
            if isinstance(plain, Problem):
                return plain
            found[leaf.path] = plain
            digest.update(_mac_bytes(plain))
        elif not metadata.mac_only_encrypted:
            digest.update(go_bytes(leaf.value))
    if check_mac:
        problem = _mac_problem(digest.hexdigest().upper(), key, metadata)
        if problem is not None:
            return problem
    return found


def _open_leaf(leaf: Leaf, key: bytes) -> Plain | Problem:
    if leaf.value == "":
        return Plain("", "str")
    if not is_encrypted(leaf.value):
        return Problem(
            leaf.path,
            "the file's sops rule encrypts this value, but it is written in plain text: it was added or "
            "edited without sops (edit the file with `sops`)",
        )
    plain = open_value(str(leaf.value), key, ":".join(leaf.keys) + ":")
    if plain is None:
        return Problem(
            leaf.path,
            "this SOPS-encrypted value does not decrypt with the file's data key: it was changed, or "
            "moved here from another key or file, since sops encrypted it",
        )
    return plain


def open_value(value: str, key: bytes, additional: str) -> Plain | None:
    """`value` (`ENC[AES256_GCM,…]`) decrypted, or None when it is malformed or does not authenticate."""
    match = ENCRYPTED.match(value)
    if match is None or match.group(4) not in TYPES:
        return None
    try:
        data, iv, tag = (base64.b64decode(match.group(i), validate=True) for i in (1, 2, 3))
        opened = AESGCM(key).decrypt(iv, data + tag, additional.encode())
        return Plain(opened.decode("utf-8"), match.group(4))
    except (binascii.Error, ValueError, InvalidTag, UnicodeDecodeError):
        return None


def _mac_problem(computed: str, key: bytes, metadata: Metadata) -> Problem | None:
    stored = open_value(metadata.mac, key, metadata.lastmodified)
    if stored is None:
        return Problem(
            f"{SOPS}.mac",
            "the file's MAC does not decrypt: `mac` or `lastmodified` was changed since sops wrote them",
        )
    if stored.text != computed:
        return Problem(
            f"{SOPS}.mac",
            "the file's values do not match its MAC: a value was changed, added, removed or reordered "
            "since sops encrypted the file (edit it with `sops`)",
        )
    return None


def _mac_bytes(plain: Plain) -> bytes:
    """A decrypted value as sops hashes it once read back into its type."""
    if plain.type == "int":
        try:
            return str(int(plain.text)).encode()
        except ValueError:
            return plain.text.encode()
    if plain.type == "float":
        try:
            return go_float(float(plain.text)).encode()
        except ValueError:
            return plain.text.encode()
    if plain.type == "bool":
        return b"True" if plain.text in TRUE_WORDS else b"False" if plain.text in FALSE_WORDS else b""
    return plain.text.encode()


def go_bytes(value: object) -> bytes:
    """sops's `ToBytes` of an unencrypted scalar as Go's YAML reads it."""
    if isinstance(value, bool):
        return b"True" if value else b"False"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return go_float(value).encode()
    return str(value).encode()


def go_float(value: float) -> str:
    """Go's `strconv.FormatFloat(value, 'f', -1, 64)`: the shortest digits that read back, no exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text

"""The `sops` map of an encrypted file, read into what decryption needs (stores/stores.go's
`metadata`). Key services other than age and PGP (cloud KMS, Vault) are named in messages but not
used; Shamir key groups (more than one group) are refused."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SOPS = "sops"
DEFAULT_UNENCRYPTED_SUFFIX = "_unencrypted"
RULES = ("unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex")
COMMENT_RULES = ("unencrypted_comment_regex", "encrypted_comment_regex")
MAX_RULE_LENGTH = 1000
OTHER_KEY_KINDS = {
    "kms": ("arn", "AWS KMS key"),
    "gcp_kms": ("resource_id", "GCP KMS key"),
    "azure_kv": ("name", "Azure Key Vault key"),
    "hc_vault": ("key_name", "Vault transit key"),
    "hckms": ("key_id", "HuaweiCloud KMS key"),
}


@dataclass(frozen=True)
class Problem:
    """Why a file cannot be decrypted, at `path` (planner's notation, `sops.age[0].enc`)."""

    path: str
    message: str


@dataclass(frozen=True)
class AgeStanza:
    recipient: str
    enc: str  # the data key, encrypted for `recipient` as an armored age file


@dataclass(frozen=True)
class PgpStanza:
    fp: str  # the PGP key's fingerprint, as sops wrote it
    enc: str  # the data key, encrypted for that key as an armored OpenPGP message


@dataclass(frozen=True)
class Rule:
    """Which values the file encrypts: `kind` is one of RULES."""

    kind: str
    value: str

    def encrypts(self, keys: tuple[str, ...]) -> bool:
        """Whether sops encrypts the value under these map keys (shouldBeEncrypted in sops.go)."""
        if self.kind == "unencrypted_suffix":
            return not any(key.endswith(self.value) for key in keys)
        if self.kind == "encrypted_suffix":
            return any(key.endswith(self.value) for key in keys)
        matches = any(re.search(self.value, key) for key in keys)
        return not matches if self.kind == "unencrypted_regex" else matches


@dataclass(frozen=True)
class Metadata:
    age: tuple[AgeStanza, ...]
    pgp: tuple[PgpStanza, ...]
    others: tuple[str, ...]  # "AWS KMS key arn:…": recipients planner cannot decrypt for, for messages
    lastmodified: str  # as sops formats it for the MAC's additional data (RFC 3339, whole seconds)
    mac: str
    rule: Rule
    mac_only_encrypted: bool

    def recipients(self) -> str:
        """Every recipient, for a message: `age1…, PGP key FBC7… (and AWS KMS key arn:…, which planner
        does not read)`."""
        readable = [stanza.recipient for stanza in self.age] + [f"PGP key {stanza.fp}" for stanza in self.pgp]
        named = ", ".join(readable) or "no age or PGP recipient"
        if not self.others:
            return named
        return f"{named} (and {', '.join(self.others)}, which planner does not read)"


def read_metadata(sops: object) -> Metadata | Problem:
    """The `sops` map's content, or the first thing wrong with it."""
    if not isinstance(sops, Mapping):
        return Problem(SOPS, "the sops metadata must be a map, as sops writes it")
    groups = _key_groups(sops)
    if isinstance(groups, Problem):
        return groups
    stanzas = _stanzas(groups, "age", "recipient")
    if isinstance(stanzas, Problem):
        return stanzas
    pgp = _stanzas(groups, "pgp", "fp")
    if isinstance(pgp, Problem):
        return pgp
    rule = _rule(sops)
    if isinstance(rule, Problem):
        return rule
    lastmodified = _lastmodified(sops.get("lastmodified"))
    mac = sops.get("mac")
    if lastmodified is None:
        return Problem(f"{SOPS}.lastmodified", "expected the RFC 3339 time sops wrote")
    if not isinstance(mac, str) or not mac:
        return Problem(f"{SOPS}.mac", "the file has no MAC: sops writes one on every encryption")
    others = tuple(_others(groups))
    only = sops.get("mac_only_encrypted") is True
    ages = tuple(AgeStanza(recipient, enc) for recipient, enc in stanzas)
    pgps = tuple(PgpStanza(fp, enc) for fp, enc in pgp)
    return Metadata(ages, pgps, others, lastmodified, mac, rule, only)


def _key_groups(sops: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]] | Problem:
    """(path, group) for the file's one key group: the `sops` map itself or its single `key_groups`."""
    groups = sops.get("key_groups")
    if not groups:
        return [(SOPS, sops)]
    if not isinstance(groups, list) or not all(isinstance(group, Mapping) for group in groups):
        return Problem(f"{SOPS}.key_groups", "expected a list of key groups, as sops writes it")
    if len(groups) > 1:
        return Problem(
            f"{SOPS}.key_groups",
            "the data key is split among several key groups (Shamir secret sharing), which planner "
            "does not read: encrypt for one group of recipients",
        )
    return [(f"{SOPS}.key_groups[0]", groups[0])]


def _stanzas(
    groups: list[tuple[str, Mapping[str, Any]]], kind: str, field: str
) -> list[tuple[str, str]] | Problem:
    """(recipient, enc) of each `kind` entry (`age`, `pgp`), its recipient in `field`."""
    found = []
    for path, group in groups:
        entries = group.get(kind) or []
        if not isinstance(entries, list):
            return Problem(f"{path}.{kind}", f"expected a list of {kind} recipients")
        for index, entry in enumerate(entries):
            recipient = entry.get(field) if isinstance(entry, Mapping) else None
            enc = entry.get("enc") if isinstance(entry, Mapping) else None
            if not isinstance(recipient, str) or not isinstance(enc, str):
                return Problem(
                    f"{path}.{kind}[{index}]", f"expected `{field}` and `enc`, as sops writes them"
                )
            found.append((recipient, enc))
    return found


def _others(groups: list[tuple[str, Mapping[str, Any]]]) -> Iterator[str]:
    for _, group in groups:
        for kind, (field, name) in OTHER_KEY_KINDS.items():
            for entry in group.get(kind) or []:
                if isinstance(entry, Mapping):
                    yield f"{name} {entry.get(field, '?')}"


def _rule(sops: Mapping[str, Any]) -> Rule | Problem:
    for kind in COMMENT_RULES:
        if sops.get(kind):
            return Problem(f"{SOPS}.{kind}", f"{kind} is not supported: encrypt with encrypted_regex")
    given = [kind for kind in RULES if sops.get(kind)]
    if len(given) > 1:
        return Problem(f"{SOPS}.{given[1]}", f"{' and '.join(given)}: sops allows only one of them")
    if not given:
        return Rule("unencrypted_suffix", DEFAULT_UNENCRYPTED_SUFFIX)
    value = sops[given[0]]
    if not isinstance(value, str):
        return Problem(f"{SOPS}.{given[0]}", "expected a string")
    if given[0].endswith("regex"):
        try:
            re.compile(value)
        except re.error as error:
            return Problem(f"{SOPS}.{given[0]}", f"not a regular expression planner can read: {error}")
        if len(value) > MAX_RULE_LENGTH or _repeats_a_repetition(value):
            return Problem(
                f"{SOPS}.{given[0]}",
                "a repeated group that itself repeats or branches (`(a+)+`, `(a|b)*`), or a pattern over "
                f"{MAX_RULE_LENGTH} characters: Python's regular expressions, unlike Go's, can take "
                "exponential time on such a pattern, so planner refuses it",
            )
    return Rule(given[0], value)


def _repeats_a_repetition(pattern: str) -> bool:
    """Whether a group holding a quantifier or an alternation is itself quantified: the shape that
    makes a backtracking matcher take exponential time. Escapes and character classes are skipped."""
    groups: list[bool] = []  # per open group: whether it repeats or branches inside
    index, inner = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(pattern, index)
        elif char == "(":
            groups.append(inner)
            inner = False
        elif char == ")" and groups:
            repeated = pattern[index + 1 : index + 2] in ("*", "+", "{")
            if repeated and inner:
                return True
            inner = groups.pop() or inner or repeated
        elif char in "*+{|" or (char == "?" and pattern[index - 1 : index] not in ("(", "")):
            inner = inner or char != "?"
        index += 1
    return False


def _class_end(pattern: str, start: int) -> int:
    """The index of the `]` closing the character class opened at `start`."""
    index = start + 1 + (pattern[start + 1 : start + 2] == "^")
    index += pattern[index : index + 1] == "]"  # a leading `]` is a member
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index


def _lastmodified(value: object) -> str | None:
    """The time as Go's `time.Format(time.RFC3339)` prints it after parsing: whole seconds, `Z` for
    UTC, else the offset."""
    text = value.isoformat() if isinstance(value, datetime) else value
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    moment = moment.replace(microsecond=0)
    if moment.utcoffset() == UTC.utcoffset(None):
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.isoformat()

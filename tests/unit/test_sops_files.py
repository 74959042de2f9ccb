"""Files sops itself encrypted (Flux's and sops's published test data, and plan files sops 3.11.0
encrypted for these tests; tests/data/sops/README.md says where each comes from) decrypt to the
plaintext their authors' tests expect, through `planner.sops` alone; a changed value, MAC or
`lastmodified` is refused, saying where and never what."""

from __future__ import annotations

import re

import pyrage
import pytest

from planner.plan.source import ParsedFile, parse_plan_text, read_plan_file
from planner.sops.agekeys import identities_in
from planner.sops.datakey import data_key
from planner.sops.keys import SopsKeys
from planner.sops.metadata import Metadata, Problem, read_metadata
from planner.sops.plaintext import Plain, decrypt_tree
from tests.paths import REPO

DATA = REPO / "tests" / "data" / "sops"


def keys(*files: str) -> SopsKeys:
    found = []
    for name in files:
        found += identities_in((DATA / name).read_text(), name, several_per_line=False)[0]
    return SopsKeys(tuple(found), files)


def parsed(name: str, text: str | None = None) -> ParsedFile:
    """The file as read, or `text` read as if it were that file (a tampered copy)."""
    read = read_plan_file(DATA / name) if text is None else parse_plan_text(str(DATA / name), text)
    assert isinstance(read, ParsedFile)
    return read


def decrypted(file: ParsedFile, age: SopsKeys) -> dict[str, Plain] | Problem:
    metadata = read_metadata(file.data["sops"])
    assert isinstance(metadata, Metadata)
    key = data_key(metadata, age)
    if isinstance(key, Problem):
        return key
    return decrypt_tree(file.data, key, metadata)


@pytest.mark.parametrize(
    ("name", "key", "expected"),
    [
        ("flux/age.yaml", "flux/age.agekey", {"stringData.key": "value"}),
        ("flux/global-secret.yaml", "flux/age-global.agekey", {"stringData.key": "global-value"}),
        ("flux/merge1.yaml", "flux/age.agekey", {"stringData.key": "merge1"}),
        ("flux/merge2.yaml", "flux/age.agekey", {"stringData.merge2": "merge2"}),
        (
            "planner/shop.sops.yaml",
            "planner/planner-test.agekey",
            {
                "secrets[0].data.password": "correct-horse-battery-staple",
                "secrets[0].data.tls.crt": "0123456789",
                "secrets[0].data.empty": "",
            },
        ),
        (
            "planner/mac-only.sops.yaml",
            "planner/planner-test.agekey",
            {
                "secrets[0].data.password": "correct-horse-battery-staple",
                "secrets[0].data.tls.crt": "0123456789",
                "secrets[0].data.empty": "",
            },
        ),
        (
            "planner/secrets.sops.yaml",
            "planner/planner-test.agekey",
            {
                "secrets[0].data.key": "s3cr3t-api-key-value",
                "secrets[0].data.note": "a multi-line\nsecret value\n",
            },
        ),
        ("planner/two-recipients.sops.yaml", "planner/planner-test.agekey", None),
        ("planner/two-recipients.sops.yaml", "planner/planner-other.agekey", None),
    ],
    ids=[
        "Flux's age-encrypted Secret (sops 3.9.0)",
        "Flux's global-key Secret (sops 3.10.2)",
        "Flux's first patch Secret",
        "Flux's second patch Secret",
        "a plan whose MAC covers integers, a float and a boolean (sops 3.11.0)",
        "a plan whose MAC covers only its encrypted values",
        "a secrets fragment with a multi-line value",
        "a file for two recipients, opened by the second",
        "a file for two recipients, opened by the first",
    ],
)
def test_a_file_sops_encrypted_decrypts_to_the_plaintext_its_authors_expect(
    name: str, key: str, expected: dict[str, str] | None
) -> None:
    opened = decrypted(parsed(name), keys(key))
    assert isinstance(opened, dict), opened
    texts = {path: plain.text for path, plain in opened.items()}
    if expected is None:  # the same secrets as secrets.sops.yaml
        expected = {
            "secrets[0].data.key": "s3cr3t-api-key-value",
            "secrets[0].data.note": "a multi-line\nsecret value\n",
        }
    assert texts == expected


def test_sops_own_age_test_vector_unwraps_with_its_published_identity() -> None:
    """sops's age/keysource_test.go: mockEncryptedKey opens to "data" with mockIdentity."""
    (identity,), problems = identities_in(
        (DATA / "getsops/mock-identity.agekey").read_text(), "mock", several_per_line=False
    )
    assert problems == []
    assert pyrage.decrypt((DATA / "getsops/mock-encrypted-key.age").read_bytes(), [identity]) == b"data"


def tampered(name: str, old: str, new: str) -> ParsedFile:
    text = (DATA / name).read_text()
    assert text.count(old) == 1, old
    return parsed(name, text.replace(old, new))


def encrypted_value(name: str, key: str) -> str:
    match = re.search(rf"^\s*{re.escape(key)}: (ENC\[[^\]]*\])$", (DATA / name).read_text(), re.MULTILINE)
    assert match is not None
    return match.group(1)


def flip_data(value: str) -> str:
    """The same ENC[...] with the first character of its ciphertext changed."""
    data = value.split("data:", 1)[1]
    return value.replace(f"data:{data[0]}", f"data:{'A' if data[0] != 'A' else 'B'}", 1)


@pytest.mark.parametrize(
    ("name", "key", "old", "new", "path", "words"),
    [
        (
            "flux/age.yaml",
            "flux/age.agekey",
            "ENC[AES256_GCM,data:mHeXsmQ=",
            "ENC[AES256_GCM,data:mHeXsmA=",
            "stringData.key",
            "does not decrypt",
        ),
        (
            "flux/age.yaml",
            "flux/age.agekey",
            "name: age\n",
            "name: agf\n",
            "sops.mac",
            "do not match its MAC",
        ),
        (
            "flux/age.yaml",
            "flux/age.agekey",
            'lastmodified: "2024-11-12T13:33:42Z"',
            'lastmodified: "2024-11-12T13:33:43Z"',
            "sops.mac",
            "MAC does not decrypt",
        ),
        (
            "planner/shop.sops.yaml",
            "planner/planner-test.agekey",
            "port: 8080",
            "port: 8081",
            "sops.mac",
            "do not match its MAC",
        ),
        (
            "planner/shop.sops.yaml",
            "planner/planner-test.agekey",
            'empty: ""',
            "empty: now-written-in-plain-text",
            "secrets[0].data.empty",
            "written in plain text",
        ),
    ],
    ids=[
        "a changed ciphertext",
        "a changed unencrypted value",
        "a changed lastmodified",
        "a changed integer",
        "a plain value where the rule wants an encrypted one",
    ],
)
def test_a_file_changed_since_sops_wrote_it_is_refused_at_the_change(
    name: str, key: str, old: str, new: str, path: str, words: str
) -> None:
    problem = decrypted(tampered(name, old, new), keys(key))
    assert isinstance(problem, Problem)
    assert (problem.path, words in problem.message) == (path, True)


def test_a_value_moved_to_another_key_does_not_decrypt() -> None:
    """The value's path is its additional data: swapping two encrypted values is caught by each."""
    name = "planner/shop.sops.yaml"
    password = encrypted_value(name, "password")
    certificate = encrypted_value(name, "tls.crt")
    text = (
        (DATA / name)
        .read_text()
        .replace(password, "@@")
        .replace(certificate, password)
        .replace("@@", certificate)
    )
    problem = decrypted(parsed(name, text), keys("planner/planner-test.agekey"))
    assert isinstance(problem, Problem)
    assert problem.path == "secrets[0].data.password"


def test_a_missing_key_names_the_recipients_and_where_keys_were_looked_for() -> None:
    problem = decrypted(parsed("flux/age.yaml"), keys("planner/planner-test.agekey"))
    assert isinstance(problem, Problem)
    assert problem.path == "sops"
    assert "age1l44xcng8dqj32nlv6d930qvvrny05hglzcv9qpc7kxjc6902ma4qufys29" in problem.message
    assert "planner/planner-test.agekey" in problem.message
    assert "value" not in problem.message.replace("values", "")


def test_no_message_holds_a_plaintext_or_a_key() -> None:
    secret_words = ["correct-horse", "0123456789", "AGE-SECRET-KEY"]
    problems = [
        decrypted(
            tampered("planner/shop.sops.yaml", "port: 8080", "port: 8081"),
            keys("planner/planner-test.agekey"),
        ),
        decrypted(parsed("planner/shop.sops.yaml"), keys("planner/planner-other.agekey")),
        decrypted(
            parsed("planner/shop.sops.yaml"),
            SopsKeys((), ("SOPS_AGE_KEY",), ("line 1 of SOPS_AGE_KEY is not",)),
        ),
    ]
    for problem in problems:
        assert isinstance(problem, Problem)
        assert not [word for word in secret_words if word in problem.message], problem.message

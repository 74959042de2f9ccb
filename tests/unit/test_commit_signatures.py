"""Commit verification (`source.git.verify`) on commits the git command signed here with real tools:
`ssh-keygen -Y sign` (git's `gpg.format=ssh`) and gpg (`git commit -S`, a keyring of the test's own).
Who signed is checked against what ssh-keygen and gpg themselves say of the keys (the fingerprints),
and every refusal names the commit and why."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import jsonschema
import pytest
from dulwich.objects import Commit
from dulwich.repo import Repo

from planner.errors import SourceError
from planner.plan.git_source import git_source
from planner.plan.schema import plan_schema
from planner.sources.failures import INVALID_SIGNATURE, VERIFICATION_ERROR
from planner.sources.signatures import SignedCommit, signed_commit, trusted_keys, verified_signer
from tests.gitservers import gpg_signer, new_repository, ssh_key, ssh_signer

WHERE = "Secret 'signers'"


@dataclass(frozen=True)
class Signed:
    """The test repository's commits, and the keys that signed them."""

    commits: dict[str, SignedCommit]  # by how each was signed
    alice_pub: str  # authorized_keys form
    alice_ssh: str  # SHA256:… as ssh-keygen -l prints it
    mallory_ssh: str
    alice_asc: str
    alice_pgp: str  # the fingerprint, as gpg prints it
    bob_pgp: str


def fingerprint(public: Path) -> str:
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(public)], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()[1]


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Signed]:
    base = tmp_path_factory.mktemp("signatures")
    alice, mallory = ssh_key(base, "alice"), ssh_key(base, "mallory")
    work = new_repository(base, "signed", base / "work")
    with (
        gpg_signer("Alice <alice@example.com>") as (alice_gpg, alice_fpr, alice_asc),
        gpg_signer("Bob <bob@example.com>") as (bob_gpg, bob_fpr, _),
    ):
        made = {
            "unsigned": work.commit({"a": "1"}, "unsigned"),
            "alice ssh": work.commit({"a": "2"}, "by alice", signer=ssh_signer(alice)),
            "mallory ssh": work.commit({"a": "3"}, "by mallory", signer=ssh_signer(mallory)),
            "alice pgp": work.commit({"a": "4"}, "by alice", signer=alice_gpg),
            "bob pgp": work.commit({"a": "5"}, "by bob", signer=bob_gpg),
        }
    repo = Repo(str(work.bare))
    commits = {}
    for how, sha in made.items():
        found = repo[sha.encode()]
        assert isinstance(found, Commit)
        commits[how] = signed_commit(found)
    repo.close()
    yield Signed(
        commits,
        alice_pub=Path(f"{alice}.pub").read_text(),
        alice_ssh=fingerprint(Path(f"{alice}.pub")),
        mallory_ssh=fingerprint(Path(f"{mallory}.pub")),
        alice_asc=alice_asc,
        alice_pgp=alice_fpr,
        bob_pgp=bob_fpr,
    )


def refusal(commit: SignedCommit, data: dict[str, str]) -> SourceError:
    with pytest.raises(SourceError) as refused:
        verified_signer(commit, trusted_keys(data, WHERE))
    return refused.value


def tampered(commit: SignedCommit) -> SignedCommit:
    """The same signature over a commit whose message was changed after signing."""
    return replace(commit, payload=commit.payload.replace(b"by alice", b"by eve"))


def test_a_good_ssh_signature_is_accepted_and_names_the_key(signed: Signed) -> None:
    keys = trusted_keys({"alice.pub": signed.alice_pub}, WHERE)
    assert (
        verified_signer(signed.commits["alice ssh"], keys) == f"ssh key {signed.alice_ssh} (entry alice.pub)"
    )


def test_an_allowed_signers_line_is_a_key_too(signed: Signed) -> None:
    line = f'alice@example.com namespaces="git" {signed.alice_pub}'
    keys = trusted_keys({"allowed_signers": f"# the team\n{line}"}, WHERE)
    assert (
        verified_signer(signed.commits["alice ssh"], keys)
        == f"ssh key {signed.alice_ssh} (entry allowed_signers)"
    )


def test_a_good_openpgp_signature_is_accepted_and_names_the_key(signed: Signed) -> None:
    keys = trusted_keys({"alice.asc": signed.alice_asc, "alice.pub": signed.alice_pub}, WHERE)
    assert (
        verified_signer(signed.commits["alice pgp"], keys)
        == f"openpgp key {signed.alice_pgp} (Alice <alice@example.com>, entry alice.asc)"
    )


def test_an_unsigned_commit_is_refused(signed: Signed) -> None:
    commit = signed.commits["unsigned"]
    refused = refusal(commit, {"alice.pub": signed.alice_pub, "alice.asc": signed.alice_asc})
    assert refused.reason == INVALID_SIGNATURE == "InvalidCommitSignature"
    assert str(refused) == f"commit {commit.commit} refused: it is not signed"


def test_an_ssh_signature_by_a_key_not_in_the_secret_is_refused_and_names_that_key(signed: Signed) -> None:
    commit = signed.commits["mallory ssh"]
    refused = refusal(commit, {"alice.pub": signed.alice_pub})
    assert refused.reason == INVALID_SIGNATURE
    assert str(refused) == (
        f"commit {commit.commit} refused: it is signed by SSH key {signed.mallory_ssh}, which is not in the Secret"
    )


def test_an_openpgp_signature_by_a_key_not_in_the_secret_is_refused(signed: Signed) -> None:
    commit = signed.commits["bob pgp"]
    refused = refusal(commit, {"alice.asc": signed.alice_asc})
    assert refused.reason == INVALID_SIGNATURE
    assert str(refused).startswith(
        f"commit {commit.commit} refused: its OpenPGP signature (by key {signed.bob_pgp}) does not verify "
        "with any key in the Secret ("
    )


@pytest.mark.parametrize("how", ["alice ssh", "alice pgp"], ids=["ssh", "openpgp"])
def test_a_commit_changed_after_it_was_signed_is_refused(signed: Signed, how: str) -> None:
    commit = tampered(signed.commits[how])
    assert commit.payload != signed.commits[how].payload
    refused = refusal(commit, {"alice.pub": signed.alice_pub, "alice.asc": signed.alice_asc})
    assert refused.reason == INVALID_SIGNATURE
    assert str(refused).startswith(f"commit {commit.commit} refused: its ")
    assert "does not verify" in str(refused)


@pytest.mark.parametrize(
    "options",
    ['namespaces="file"', 'valid-before="20000101"', 'valid-after="29990101"'],
    ids=["for another namespace", "expired before the commit", "valid only after the commit"],
)
def test_an_allowed_signers_key_its_options_rule_out_does_not_verify(signed: Signed, options: str) -> None:
    commit = signed.commits["alice ssh"]
    refused = refusal(commit, {"allowed_signers": f"alice@example.com {options} {signed.alice_pub}"})
    assert str(refused) == (
        f"commit {commit.commit} refused: it is signed by SSH key {signed.alice_ssh}, which the Secret's "
        "entry allowed_signers does not allow for it (its namespaces, valid-after or valid-before option)"
    )


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({}, f"{WHERE} holds no public key"),
        ({"notes": "# nothing but a comment\n"}, f"{WHERE} holds no public key"),
        (
            {"alice.pub": "ssh-ed25519 !!!not-base64"},
            f"{WHERE}, entry alice.pub line 1: not an SSH public key",
        ),
        ({"team": "alice@example.com\n"}, f"{WHERE}, entry team line 1: not an SSH public key"),
    ],
    ids=[
        "no entries",
        "no key in an entry",
        "a key that is not base64",
        "an allowed_signers line without a key",
    ],
)
def test_a_secret_without_usable_keys_is_a_verification_error(data: dict[str, str], said: str) -> None:
    with pytest.raises(SourceError) as failed:
        trusted_keys(data, WHERE)
    assert failed.value.reason == VERIFICATION_ERROR == "VerificationError"
    assert str(failed.value).startswith(said)


def test_a_plan_objects_verify_section_is_read_and_checked_by_the_schema() -> None:
    plan = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "shop", "namespace": "shop"},
        "source": {
            "git": {
                "url": "https://github.com/acme/deploy.git",
                "path": "plans/shop.yaml",
                "verify": {"mode": "HEAD", "secretRef": {"name": "deploy-signers"}},
            }
        },
    }
    jsonschema.validate(plan, plan_schema())
    source = git_source(plan)
    assert source is not None and source.verify_secret == "deploy-signers"
    plan["source"]["git"]["verify"]["mode"] = "Tag"  # type: ignore[index]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(plan, plan_schema())
    del plan["source"]["git"]["verify"]  # type: ignore[attr-defined]
    source = git_source(plan)
    assert source is not None and source.verify_secret is None

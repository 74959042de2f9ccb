"""Files sops 3.11.0 encrypted for PGP keys (tests/data/sops/README.md: the test keys and commands) open
with those keys, through the gpg command and a keyring of its own (the command line's way) and in
memory from armored secret keys (a Plan's decryption Secret), to the plaintext written by hand; a
wrong, missing or passphrase-protected key is refused with a message naming the fingerprint and where
keys were looked for, never a key or a value; the MAC is still checked."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from planner.plan.source import ParsedFile, parse_plan_text, read_plan_file
from planner.sops.agekeys import identities_in
from planner.sops.datakey import data_key
from planner.sops.keys import SopsKeys, environment_keys, keys_of
from planner.sops.metadata import Metadata, PgpStanza, Problem, read_metadata
from planner.sops.pgpkeys import PgpKeys, gnupg_keyring, secret_keys, why_gpg_failed
from planner.sops.plaintext import decrypt_tree
from tests.keyrings import gpg, temporary_keyring
from tests.paths import REPO

DATA = REPO / "tests" / "data" / "sops" / "planner"
TEST_FPR = "F541520FED032A89D0464BEDAB099C14044BAF8E"  # planner-test.pgp.asc, RSA 3072
OTHER_FPR = "DE202A7CCD4CD03CBA62A4D5B3D0C13C158A6BE5"  # planner-other.pgp.asc, Curve25519
PASSPHRASE_FPR = "8906DB7280B9C19C6A15AF54C38F1A58CFB07913"  # planner-passphrase.pgp.asc
TEST_AGE = "age17teuteze9dl69d28vvskxy0r2dzgdr4u0er8ma366jzu2etdad5ssakk5p"
PGP_PLAIN = {
    "secrets[0].data.key": "opened-with-the-pgp-test-key",
    "secrets[0].data.note": "two lines\nunder PGP\n",
}
BOTH_PLAIN = {"secrets[0].data.token": "age-or-pgp-token-7c41"}
SECRET_WORDS = [
    "opened-with",
    "two lines",
    "age-or-pgp",
    "behind-a-passphrase",
    "PRIVATE KEY",
    "AGE-SECRET-KEY",
]


def parsed(name: str, text: str | None = None) -> ParsedFile:
    read = read_plan_file(DATA / name) if text is None else parse_plan_text(str(DATA / name), text)
    assert isinstance(read, ParsedFile)
    return read


def metadata_of(file: ParsedFile) -> Metadata:
    metadata = read_metadata(file.data["sops"])
    assert isinstance(metadata, Metadata)
    return metadata


def opened(file: ParsedFile, keys: SopsKeys) -> dict[str, str] | Problem:
    """The file's values by path, or why not (with its MAC checked)."""
    metadata = metadata_of(file)
    key = data_key(metadata, keys)
    if isinstance(key, Problem):
        return key
    plain = decrypt_tree(file.data, key, metadata)
    return plain if isinstance(plain, Problem) else {path: value.text for path, value in plain.items()}


def in_secret(*names: str, age: tuple[str, ...] = ()) -> SopsKeys:
    """The keys a decryption Secret holding these files would give (`.asc` and `.agekey` entries)."""
    return keys_of(
        [(name, (DATA / name).read_text()) for name in age],
        [(name, (DATA / name).read_text()) for name in names],
        "Secret sops-gpg",
        "age hint",
        "pgp hint",
    )


def refusal(result: dict[str, str] | Problem) -> str:
    assert isinstance(result, Problem), result
    assert result.path == "sops"
    assert not [word for word in SECRET_WORDS if word in result.message], result.message
    return result.message


@pytest.fixture(scope="module")
def test_keyring() -> Iterator[dict[str, str]]:
    with temporary_keyring(DATA / "planner-test.pgp.asc") as env:
        yield env


def keyring_keys(env: dict[str, str]) -> SopsKeys:
    keys = environment_keys({**env, "HOME": env["GNUPGHOME"]})()
    assert keys is not None
    return keys


def test_the_metadata_holds_each_pgp_stanza() -> None:
    metadata = metadata_of(parsed("age-and-pgp.sops.yaml"))
    assert [stanza.fp for stanza in metadata.pgp] == [OTHER_FPR]
    assert metadata.pgp[0].enc.startswith("-----BEGIN PGP MESSAGE-----\n")
    assert metadata.recipients() == f"{TEST_AGE}, PGP key {OTHER_FPR}"


def test_the_gpg_command_opens_a_file_with_the_key_in_its_keyring(test_keyring: dict[str, str]) -> None:
    assert opened(parsed("pgp.sops.yaml"), keyring_keys(test_keyring)) == PGP_PLAIN


def test_a_secrets_armored_key_opens_a_file_in_memory() -> None:
    assert opened(parsed("pgp.sops.yaml"), in_secret("planner-test.pgp.asc")) == PGP_PLAIN


def test_both_ways_unwrap_the_same_data_key(test_keyring: dict[str, str]) -> None:
    metadata = metadata_of(parsed("pgp.sops.yaml"))
    through_gpg = data_key(metadata, keyring_keys(test_keyring))
    assert isinstance(through_gpg, bytes) and len(through_gpg) == 32
    assert data_key(metadata, in_secret("planner-test.pgp.asc")) == through_gpg


def test_a_curve25519_key_opens_its_file() -> None:
    assert opened(parsed("age-and-pgp.sops.yaml"), in_secret("planner-other.pgp.asc")) == BOTH_PLAIN


@dataclass
class Recording:
    """PGP keys that open nothing and remember what they were asked."""

    where: str = "recording"
    asked: list[str] = field(default_factory=list)

    def open(self, stanza: PgpStanza) -> bytes | str:
        self.asked.append(stanza.fp)
        return "not this one"


def test_age_is_tried_first_and_pgp_is_not_asked_when_age_opens() -> None:
    recording = Recording()
    pgp: PgpKeys = recording
    identities, _ = identities_in((DATA / "planner-test.agekey").read_text(), "age", several_per_line=False)
    keys = SopsKeys(tuple(identities), ("age",), pgp=pgp)
    assert opened(parsed("age-and-pgp.sops.yaml"), keys) == BOTH_PLAIN
    assert recording.asked == []


def test_pgp_opens_what_the_age_key_found_does_not() -> None:
    keys = in_secret("planner-other.pgp.asc", age=("planner-other.agekey",))
    assert opened(parsed("age-and-pgp.sops.yaml"), keys) == BOTH_PLAIN


def test_a_wrong_armored_key_is_refused_naming_the_fingerprint() -> None:
    message = refusal(opened(parsed("pgp.sops.yaml"), in_secret("planner-other.pgp.asc")))
    assert message == (
        f"encrypted with SOPS for PGP key {TEST_FPR}, and Secret sops-gpg: its PGP key is not one of them: "
        "pgp hint"
    )


def test_a_keyring_without_the_key_is_refused_naming_the_fingerprint_and_the_keyring() -> None:
    with temporary_keyring(DATA / "planner-other.pgp.asc") as env:
        message = refusal(opened(parsed("pgp.sops.yaml"), keyring_keys(env)))
    assert message == (
        f"encrypted with SOPS for PGP key {TEST_FPR}, and the gpg keyring in GNUPGHOME ({env['GNUPGHOME']}): "
        "it holds no secret key for them: import the PGP secret key into that keyring (gpg --import), as "
        "for sops"
    )


def test_a_file_for_age_and_pgp_names_both_and_where_each_was_looked_for() -> None:
    with temporary_keyring() as env:
        message = refusal(opened(parsed("age-and-pgp.sops.yaml"), keyring_keys(env)))
    assert message.startswith(
        f"encrypted with SOPS for {TEST_AGE}, PGP key {OTHER_FPR}, and no age key was found (looked in "
        "SOPS_AGE_KEY (unset), SOPS_AGE_KEY_FILE (unset), "
    ), message
    assert f", and the gpg keyring in GNUPGHOME ({env['GNUPGHOME']}): it holds no secret key" in message
    assert message.endswith(
        ": set SOPS_AGE_KEY_FILE (a file of age identities) or SOPS_AGE_KEY, as for sops; or import the PGP "
        "secret key into that keyring (gpg --import), as for sops"
    ), message


def test_a_key_needing_a_passphrase_is_refused_saying_so_without_a_prompt() -> None:
    with temporary_keyring(DATA / "planner-passphrase.pgp.asc") as env:
        through_gpg = refusal(opened(parsed("passphrase.pgp.sops.yaml"), keyring_keys(env)))
    assert f"the secret key of PGP key {PASSPHRASE_FPR} needs its passphrase" in through_gpg
    assert "planner-test-passphrase" not in through_gpg
    in_memory = refusal(opened(parsed("passphrase.pgp.sops.yaml"), in_secret("planner-passphrase.pgp.asc")))
    assert (
        f"Secret sops-gpg key planner-passphrase.pgp.asc: the secret key of PGP key {PASSPHRASE_FPR} is "
        "protected by a passphrase, which planner cannot enter"
    ) in in_memory


def test_a_missing_gpg_command_is_named() -> None:
    keys = environment_keys({"SOPS_GPG_EXEC": "/nonexistent/gpg", "HOME": "/nonexistent"})()
    assert keys is not None
    message = refusal(opened(parsed("pgp.sops.yaml"), keys))
    assert "/nonexistent/gpg was not found: install GnuPG, or set SOPS_GPG_EXEC" in message


def test_a_relative_gpg_exec_is_ignored_as_sops_ignores_it() -> None:
    assert gnupg_keyring({"SOPS_GPG_EXEC": "bin/gpg"}).binary == "gpg"
    assert gnupg_keyring({}).where == "the gpg keyring in ~/.gnupg (GNUPGHOME unset)"


def test_secret_entries_that_are_no_usable_key_are_named_never_quoted() -> None:
    with temporary_keyring(DATA / "planner-test.pgp.asc") as env:
        public = gpg(env, "--armor", "--export", TEST_FPR)
    keys, problems = secret_keys(
        [("public.asc", public), ("garbage.asc", "not-a-key-but-secret-looking-text")], "Secret s"
    )
    assert keys.keys == ()
    assert problems[0] == (
        f"Secret s key public.asc: PGP key {TEST_FPR} is a public key: give its secret key "
        "(gpg --export-secret-keys --armor)"
    )
    assert problems[1].startswith("Secret s key garbage.asc: not an armored OpenPGP secret key (")
    assert "secret-looking" not in problems[1]


def test_two_keys_in_one_entry_are_both_read() -> None:
    both = (DATA / "planner-other.pgp.asc").read_text() + (DATA / "planner-test.pgp.asc").read_text()
    keys, problems = secret_keys([("both.asc", both)], "Secret s")
    assert (len(keys.keys), problems) == (2, [])


def test_the_mac_is_still_checked() -> None:
    text = (DATA / "pgp.sops.yaml").read_text()
    assert text.count("name: api") == 1
    problem = opened(
        parsed("pgp.sops.yaml", text.replace("name: api", "name: apj")), in_secret("planner-test.pgp.asc")
    )
    assert isinstance(problem, Problem)
    assert (problem.path, "do not match its MAC" in problem.message) == ("sops.mac", True)


def test_several_keys_in_one_armored_block_are_refused_saying_how_to_give_them() -> None:
    with temporary_keyring(DATA / "planner-test.pgp.asc", DATA / "planner-other.pgp.asc") as env:
        both = gpg(env, "--armor", "--export-secret-keys", TEST_FPR, OTHER_FPR)
    keys, problems = secret_keys([("both.asc", both)], "Secret s")
    assert keys.keys == ()
    assert problems == [
        "Secret s key both.asc: several keys in one armored block: give each its own entry "
        "(gpg --export-secret-keys --armor FPR)"
    ]


STANZA = PgpStanza(TEST_FPR, "-----BEGIN PGP MESSAGE-----")


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [
        (
            "[GNUPG:] ENC_TO CA62A207AEC64DA7 1 0\ngpg: public key decryption failed: Kein Pinentry\n"
            "[GNUPG:] ERROR pkdecrypt_failed 67108949\n[GNUPG:] DECRYPTION_FAILED\n",
            f"the secret key of PGP key {TEST_FPR} needs its passphrase, which planner does not ask for (gpg "
            "runs with --batch): let gpg-agent cache it first (decrypt anything with that key once), or use a "
            "key without a passphrase",
        ),
        (
            "gpg: can't connect to the agent: IPC connect call failed\n"
            "gpg: public key decryption failed: No agent running\n"
            "[GNUPG:] ERROR pkdecrypt_failed 33554537\n"
            "gpg: decryption failed: No secret key\n",
            f"gpg could not use the secret key of PGP key {TEST_FPR}: public key decryption failed: No agent "
            "running",
        ),
        (
            "[GNUPG:] ENC_TO CA62A207AEC64DA7 1 0\n[GNUPG:] NO_SECKEY CA62A207AEC64DA7\n"
            "gpg: decryption failed: No secret key\n",
            "it holds no secret key for them",
        ),
        ("gpg: no valid OpenPGP data found.\n", "no valid OpenPGP data found."),
        ("", "gpg could not decrypt it"),
    ],
    ids=[
        "a passphrase, by gpg-agent's code whatever the language",
        "no agent",
        "no secret key",
        "other",
        "silent",
    ],
)
def test_gpgs_reason_is_read_from_its_status_lines(stderr: str, reason: str) -> None:
    assert why_gpg_failed(stderr, STANZA) == reason

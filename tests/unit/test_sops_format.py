"""The parts of sops's format planner reads by hand, against values worked out from sops's Go source
(stores/stores.go, sops.go, aes/cipher.go): which values a rule encrypts, how a value is hashed for the
MAC, how `lastmodified` is written back, and the metadata sops never writes."""

from __future__ import annotations

import pytest

from planner.sops.agekeys import identities_in, user_config_dir
from planner.sops.metadata import Problem, Rule, read_metadata
from planner.sops.plaintext import go_bytes, go_float

MAC = "ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]"
AGE = [{"recipient": "age1xyz", "enc": "-----BEGIN AGE ENCRYPTED FILE-----\n"}]


@pytest.mark.parametrize(
    ("rule", "keys", "encrypts"),
    [
        (Rule("unencrypted_suffix", "_unencrypted"), ("secrets", "data", "password"), True),
        (Rule("unencrypted_suffix", "_unencrypted"), ("note_unencrypted", "text"), False),
        (Rule("encrypted_regex", "^(data|secretEnv)$"), ("secrets", "data", "password"), True),
        (Rule("encrypted_regex", "^(data|secretEnv)$"), ("secrets", "name"), False),
        (Rule("encrypted_regex", "^data$"), ("configMaps", "data", "mode"), True),
        (Rule("unencrypted_regex", "^name$"), ("secrets", "name"), False),
        (Rule("encrypted_suffix", "_secret"), ("db_secret",), True),
    ],
    ids=[
        "sops's default: everything",
        "sops's default: not under a key ending _unencrypted",
        "encrypted_regex: under a matching key",
        "encrypted_regex: elsewhere not",
        "encrypted_regex: any matching key on the path, a ConfigMap's too",
        "unencrypted_regex: a matching key is left plain",
        "encrypted_suffix: a key ending so",
    ],
)
def test_a_rule_encrypts_what_sops_would(rule: Rule, keys: tuple[str, ...], encrypts: bool) -> None:
    assert rule.encrypts(keys) is encrypts


@pytest.mark.parametrize(
    ("value", "hashed"),
    [
        (True, b"True"),
        (False, b"False"),
        (8080, b"8080"),
        (0.5, b"0.5"),
        (1000.0, b"1000"),
        (1e22, b"10000000000000000000000"),
        (-0.0, b"-0"),
        (float("inf"), b"+Inf"),
        ("0.50", b"0.50"),
    ],
)
def test_an_unencrypted_value_is_hashed_as_gos_sops_writes_it(value: object, hashed: bytes) -> None:
    assert go_bytes(value) == hashed


def test_floats_read_back_as_go_prints_them_with_the_shortest_digits() -> None:
    assert [go_float(v) for v in (0.1, 123.456, 5e-324)] == ["0.1", "123.456", "0." + "0" * 323 + "5"]


@pytest.mark.parametrize(
    ("written", "formatted"),
    [
        ("2024-11-12T13:33:42Z", "2024-11-12T13:33:42Z"),
        ("2024-11-12T13:33:42.123456Z", "2024-11-12T13:33:42Z"),
        ("2024-11-12T15:33:42+02:00", "2024-11-12T15:33:42+02:00"),
    ],
    ids=["UTC as sops writes it", "fractional seconds dropped, as Go's RFC3339", "an offset kept"],
)
def test_lastmodified_is_written_back_as_gos_rfc3339(written: str, formatted: str) -> None:
    metadata = read_metadata({"age": AGE, "lastmodified": written, "mac": MAC})
    assert not isinstance(metadata, Problem)
    assert metadata.lastmodified == formatted


@pytest.mark.parametrize(
    ("extra", "path", "words"),
    [
        ({"key_groups": [{"age": AGE}, {"age": AGE}]}, "sops.key_groups", "Shamir"),
        ({"encrypted_comment_regex": "sops:enc"}, "sops.encrypted_comment_regex", "not supported"),
        ({"encrypted_regex": "^a$", "unencrypted_suffix": "_u"}, "sops.encrypted_regex", "only one"),
        ({"encrypted_regex": "("}, "sops.encrypted_regex", "not a regular expression"),
        ({"encrypted_regex": "^(a+)+$"}, "sops.encrypted_regex", "exponential time"),
        ({"unencrypted_regex": "^(x|xx)*$"}, "sops.unencrypted_regex", "exponential time"),
        ({"lastmodified": "yesterday"}, "sops.lastmodified", "RFC 3339"),
        ({"mac": ""}, "sops.mac", "no MAC"),
    ],
    ids=[
        "Shamir key groups",
        "comment rules",
        "two rules",
        "a broken regex",
        "a repeated repetition",
        "a repeated alternation",
        "a bad time",
        "no MAC",
    ],
)
def test_metadata_sops_would_not_write_is_refused_at_its_key(
    extra: dict[str, object], path: str, words: str
) -> None:
    problem = read_metadata({"age": AGE, "lastmodified": "2024-11-12T13:33:42Z", "mac": MAC, **extra})
    assert isinstance(problem, Problem)
    assert (problem.path, words in problem.message) == (path, True)


def test_other_key_services_are_named_for_the_message() -> None:
    metadata = read_metadata(
        {
            "age": AGE,
            "pgp": [{"fp": "FBC7B9E2", "enc": "-----BEGIN PGP MESSAGE-----"}],
            "kms": [{"arn": "arn:aws:kms:eu-west-1:1:key/k"}],
            "lastmodified": "2024-11-12T13:33:42Z",
            "mac": MAC,
        }
    )
    assert not isinstance(metadata, Problem)
    assert metadata.recipients() == (
        "age1xyz, PGP key FBC7B9E2 (and AWS KMS key arn:aws:kms:eu-west-1:1:key/k, which planner does not read)"
    )


def test_a_pgp_entry_without_its_encrypted_key_is_refused_at_it() -> None:
    problem = read_metadata({"pgp": [{"fp": "FBC7B9E2"}], "lastmodified": "2024-11-12T13:33:42Z", "mac": MAC})
    assert problem == Problem("sops.pgp[0]", "expected `fp` and `enc`, as sops writes them")


def test_a_line_that_is_no_identity_is_reported_by_number_never_quoted() -> None:
    found, problems = identities_in(
        "# comment\n\nAGE-SECRET-KEY-1NOTAKEY\n", "keys.txt", several_per_line=False
    )
    assert (found, len(problems)) == ([], 1)
    assert (
        problems[0].startswith("line 3 of keys.txt is not an age identity") and "NOTAKEY" not in problems[0]
    )


@pytest.mark.parametrize(
    ("environ", "platform", "directory"),
    [
        ({"HOME": "/home/me"}, "linux", "/home/me/.config"),
        ({"HOME": "/home/me", "XDG_CONFIG_HOME": "/xdg"}, "linux", "/xdg"),
        ({"HOME": "/Users/me"}, "darwin", "/Users/me/Library/Application Support"),
        ({"HOME": "/Users/me", "XDG_CONFIG_HOME": "/xdg"}, "darwin", "/xdg"),
        ({"AppData": "C:/Users/me/AppData/Roaming"}, "win32", "C:/Users/me/AppData/Roaming"),
    ],
    ids=["Linux", "Linux with XDG_CONFIG_HOME", "macOS", "macOS with XDG_CONFIG_HOME", "Windows"],
)
def test_the_default_key_file_is_under_the_directory_sops_uses(
    environ: dict[str, str], platform: str, directory: str
) -> None:
    assert str(user_config_dir(environ, platform)) == directory


@pytest.mark.parametrize(
    "pattern", ["^(data|stringData)$", "^(data|secretEnv)$", ".*", "(ab)+", "[(+]+", r"\(a+\)+", "_secret$"]
)
def test_the_rules_sops_users_write_are_read(pattern: str) -> None:
    metadata = read_metadata(
        {"age": AGE, "lastmodified": "2024-11-12T13:33:42Z", "mac": MAC, "encrypted_regex": pattern}
    )
    assert not isinstance(metadata, Problem), metadata

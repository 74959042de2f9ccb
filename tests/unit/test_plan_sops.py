"""Plans with SOPS-encrypted secret values, as the loader reads them: a sealed plan file, a sealed
fragment it imports, a Plan object carrying its `sops` map; the keys from where sops looks for them;
every refusal a diagnostic at the file, line and column of what is wrong, none holding a plaintext."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.as_object import plan_object_of
from planner.plan.load import load_checkout_plan, load_plan_object
from planner.plan.redact import literal_secret_paths
from planner.plan.secrets import unread_secrets
from planner.plan.source import read_plan_file
from planner.sops.keys import environment_keys, keys_of, unread_keys
from tests.keyrings import temporary_keyring
from tests.paths import REPO

DATA = REPO / "tests" / "data" / "sops" / "planner"
KEY = DATA / "planner-test.agekey"
SHOP = {"password": "correct-horse-battery-staple", "tls.crt": "0123456789", "empty": ""}
PLAINTEXTS = ("correct-horse-battery-staple", "0123456789", "s3cr3t-api-key-value", "sentinel-plaintext")


def secrets_of(path: Path, environ: dict[str, str]) -> dict[str, dict[str, str]]:
    (plan,) = load_plans([path], environ=environ).plans
    return {secret.name: dict(secret.data) for secret in plan.secrets}


def refusal(path: Path, environ: dict[str, str]) -> list[str]:
    with pytest.raises(PlanError) as refused:
        load_plans([path], environ=environ)
    lines = [str(diagnostic) for diagnostic in refused.value.diagnostics]
    assert not [line for line in lines if any(text in line for text in PLAINTEXTS)], lines
    return lines


@pytest.mark.parametrize(
    "environ",
    [
        {"SOPS_AGE_KEY_FILE": str(KEY)},
        {"SOPS_AGE_KEY": "  ".join(KEY.read_text().split("\n")[1:])},
        {"XDG_CONFIG_HOME": "CONFIG"},
        {"HOME": "HOME"},
    ],
    ids=[
        "SOPS_AGE_KEY_FILE",
        "SOPS_AGE_KEY, several keys on a line",
        "sops/age/keys.txt under XDG_CONFIG_HOME",
        "sops/age/keys.txt under ~/.config",
    ],
)
def test_a_sealed_plan_file_loads_with_its_values_decrypted_from_the_keys_sops_would_read(
    environ: dict[str, str], tmp_path: Path
) -> None:
    for name in ("XDG_CONFIG_HOME", "HOME"):
        if name in environ:
            config = tmp_path / environ[name] / (".config" if name == "HOME" else "")
            (config / "sops" / "age").mkdir(parents=True)
            shutil.copy(KEY, config / "sops" / "age" / "keys.txt")
            environ = {name: str(tmp_path / environ[name])}
    assert secrets_of(DATA / "shop.sops.yaml", environ) == {"db": SHOP}


def test_a_sealed_fragment_imported_by_a_plain_plan_is_decrypted_where_it_lands() -> None:
    secrets = secrets_of(DATA / "app.yaml", {"SOPS_AGE_KEY_FILE": str(KEY)})
    assert secrets == {"api": {"key": "s3cr3t-api-key-value", "note": "a multi-line\nsecret value\n"}}


def test_a_missing_key_is_refused_at_the_sops_map_naming_the_recipients(tmp_path: Path) -> None:
    (line,) = refusal(DATA / "shop.sops.yaml", {"HOME": str(tmp_path)})
    assert line.startswith(f"{DATA / 'shop.sops.yaml'}:24:1: sops: encrypted with SOPS for age17teuteze9dl")
    assert "SOPS_AGE_KEY_FILE (unset)" in line and "sops/age/keys.txt (no such file)" in line


def test_the_wrong_key_for_an_imported_fragment_is_refused_in_that_fragment() -> None:
    (line,) = refusal(DATA / "app.yaml", {"SOPS_AGE_KEY_FILE": str(DATA / "planner-other.agekey")})
    assert line.startswith(f"{DATA / 'secrets.sops.yaml'}:7:1: sops: ")
    assert "the age key found" in line and "is not one of them" in line


def test_a_value_encrypted_outside_the_secrets_is_refused_where_it_is() -> None:
    lines = refusal(DATA / "configmap.sops.yaml", {"SOPS_AGE_KEY_FILE": str(KEY)})
    assert [line.split(": ")[0:2] for line in lines] == [
        [f"{DATA / 'configmap.sops.yaml'}:9:15", "configMaps[0].data.mode"]
    ]


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("port: 8080", "port: 8081", "36:10: sops.mac: the file's values do not match its MAC"),
        (
            "tls.crt: ENC[AES256_GCM,data:",
            "tls.crt: ENC[AES256_GCM,data:A",
            "22:18: secrets[0].data.tls.crt: this SOPS-encrypted value does not decrypt",
        ),
    ],
    ids=["a changed plain value: at the MAC", "a changed ciphertext: at the value"],
)
def test_a_tampered_plan_file_is_refused_at_the_change(
    old: str, new: str, where: str, tmp_path: Path
) -> None:
    text = (DATA / "shop.sops.yaml").read_text()
    (tmp_path / "shop.sops.yaml").write_text(text.replace(old, new, 1))
    (line,) = refusal(tmp_path / "shop.sops.yaml", {"SOPS_AGE_KEY_FILE": str(KEY)})
    assert line.startswith(f"{tmp_path / 'shop.sops.yaml'}:{where}"), line


def test_an_encrypted_value_in_a_file_without_sops_metadata_is_refused(tmp_path: Path) -> None:
    text = (DATA / "shop.sops.yaml").read_text().split("\nsops:\n")[0] + "\n"
    (tmp_path / "copied.yaml").write_text(text)
    lines = refusal(tmp_path / "copied.yaml", {"SOPS_AGE_KEY_FILE": str(KEY)})
    assert [line.split(": ")[1] for line in lines] == ["secrets[0].data.password", "secrets[0].data.tls.crt"]
    assert all("no `sops:` metadata" in line for line in lines)


def test_checks_that_read_no_secret_values_read_no_keys() -> None:
    """`validate` reads no Secret of the cluster, and no age key: every encrypted value reads as ""."""
    (plan,) = load_plans([DATA / "shop.sops.yaml"], secret_refs=unread_secrets, sops_keys=unread_keys).plans
    assert dict(plan.secrets[0].data) == {"password": "", "tls.crt": "", "empty": ""}


def test_keys_are_read_only_when_a_file_needs_them(tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: plain}\n")
    load_plans([plain], environ={"SOPS_AGE_KEY_FILE": str(tmp_path / "missing")})  # no error: never read


def api_server_order(value: Any) -> Any:
    """A Plan object as the API server hands it back: every map's keys sorted."""
    if isinstance(value, dict):
        return {key: api_server_order(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [api_server_order(item) for item in value]
    return value


def vault_object(name: str = "vault.sops.yaml") -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(json.dumps(YAML(typ="safe").load(DATA / name)))
    obj["metadata"].update(namespace="vault", uid="0d9c", resourceVersion="9")
    obj["status"] = {"observedGeneration": 1}
    return api_server_order(obj)


def test_a_plan_object_carrying_its_sops_map_decrypts_with_the_keys_of_its_decryption() -> None:
    loaded = load_plan_object(
        vault_object(),
        secret_refs=unread_secrets,
        sops_keys=environment_keys({"SOPS_AGE_KEY_FILE": str(KEY)}),
    )
    (plan,) = loaded.plans
    assert dict(plan.secrets[0].data) == {"password": "sentinel-plaintext-5d1c0a7e"}


def test_a_plan_object_without_decryption_says_how_to_give_the_key() -> None:
    with pytest.raises(PlanError) as refused:
        load_plan_object(vault_object(), secret_refs=unread_secrets)
    (line,) = map(str, refused.value.diagnostics)
    assert line.startswith("plan/vault -n vault:") and "decryption: {provider: sops, secretRef" in line


def test_a_plan_objects_moved_value_is_still_refused() -> None:
    """No MAC for a Plan object, but each value stays bound to its path."""
    obj = vault_object()
    data = obj["secrets"][0]["data"]
    data["other"] = data["password"]
    with pytest.raises(PlanError) as refused:
        load_plan_object(
            obj, secret_refs=unread_secrets, sops_keys=environment_keys({"SOPS_AGE_KEY_FILE": str(KEY)})
        )
    assert [d.path for d in refused.value.diagnostics] == ["secrets[0].data.other"]


def test_encrypted_values_are_no_literal_secrets_to_warn_of() -> None:
    assert literal_secret_paths(vault_object()) == []


def test_build_refuses_to_merge_a_sealed_file_into_a_plan_object() -> None:
    parsed = read_plan_file(DATA / "app.yaml")
    assert not isinstance(parsed, Exception)
    built = plan_object_of(parsed, show_secrets=False)
    assert isinstance(built, list)
    assert [(d.file, d.path) for d in built] == [(str(DATA / "secrets.sops.yaml"), "sops")]


def test_an_encrypted_value_that_is_no_string_is_refused_where_it_is() -> None:
    (line,) = refusal(DATA / "typed.yaml", {"SOPS_AGE_KEY_FILE": str(KEY)})
    assert line == (
        f"{DATA / 'typed.sops.yaml'}:5:15: secrets[0].data.port: this encrypted value is of type int, and "
        "secret values are strings: quote it before encrypting"
    )


def test_a_pgp_encrypted_plan_file_opens_with_the_key_in_the_gpg_keyring() -> None:
    with temporary_keyring(DATA / "planner-test.pgp.asc") as env:
        assert secrets_of(DATA / "vault.pgp.sops.yaml", env) == {
            "db": {"password": "sentinel-plaintext-5d1c0a7e"}
        }


def test_a_pgp_encrypted_plan_file_without_its_key_is_refused_at_the_sops_map() -> None:
    with temporary_keyring(DATA / "planner-other.pgp.asc") as env:
        (line,) = refusal(DATA / "vault.pgp.sops.yaml", env)
    assert line.startswith(
        f"{DATA / 'vault.pgp.sops.yaml'}:19:1: sops: encrypted with SOPS for PGP key "
        f"F541520FED032A89D0464BEDAB099C14044BAF8E, and the gpg keyring in GNUPGHOME ({env['GNUPGHOME']}): "
        "it holds no secret key for them"
    ), line


def test_a_pgp_encrypted_plan_object_without_decryption_says_how_to_give_the_pgp_key() -> None:
    obj = vault_object("vault.pgp.sops.yaml")
    del obj["decryption"]
    with pytest.raises(PlanError) as refused:
        load_plan_object(obj, secret_refs=unread_secrets)
    (line,) = map(str, refused.value.diagnostics)
    assert "no PGP key was found (looked in the Plan's decryption (none))" in line, line
    assert "the armored PGP secret key (a key ending in .asc)" in line, line


def test_a_git_sources_pgp_encrypted_file_opens_with_an_asc_key_of_the_decryption_secret(
    tmp_path: Path,
) -> None:
    """A Plan's Git source is loaded with the keys of its decryption Secret, as a Plan object is; the
    file's MAC is checked (a file as sops wrote it)."""
    shutil.copy(DATA / "vault.pgp.sops.yaml", tmp_path / "vault.yaml")
    key = ("sops.asc", (DATA / "planner-test.pgp.asc").read_text())
    keys = keys_of([], [key], "Secret sops-gpg", "age hint", "pgp hint")
    loaded = load_checkout_plan(
        tmp_path, "vault.yaml", name="vault", namespace="shop", service_account=None,
        secret_refs=unread_secrets, sops_keys=lambda: keys,
    )  # fmt: skip
    assert dict(loaded.plans[0].secrets[0].data) == {"password": "sentinel-plaintext-5d1c0a7e"}
    text = (tmp_path / "vault.yaml").read_text()
    (tmp_path / "vault.yaml").write_text(text.replace("image: nginx:1.27", "image: nginx:1.28"))
    with pytest.raises(PlanError) as refused:
        load_checkout_plan(
            tmp_path, "vault.yaml", name="vault", namespace="shop", service_account=None,
            secret_refs=unread_secrets, sops_keys=lambda: keys,
        )  # fmt: skip
    assert [d.path for d in refused.value.diagnostics] == ["sops.mac"]

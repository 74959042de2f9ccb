"""SOPS-encrypted secret values end to end (issue 43, item 5), on the embedded cluster: a plan file sops
encrypted (tests/data/sops/planner/vault.sops.yaml) applied by the CLI with the key from
`SOPS_AGE_KEY_FILE`, and the same file as a Plan object reconciled by the controller with the key from
the Secret its `decryption` names; and the same for PGP (vault.pgp.sops.yaml): the CLI with gpg and a
keyring, the controller with an `.asc` key of the decryption Secret. The target Secret holds the value (read through kubectl); every
other channel is searched for it, in plain text, base64 and inside gzip: each command's output in
every format (plan, apply, reconcile and its metrics file, history, diff-generations, render), the
saved plan, every other Secret (generation records but the closure's copy of the target Secret, which
a rollback re-applies; the ApplySet parent), every other object, the Events, the Plan's status, the
controller's log, /metrics and the web pages."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import conditions, get_json, install_crd, wait_ready
from tests.e2e.test_tenancy import tenant
from tests.keyrings import temporary_keyring
from tests.paths import REPO
from tests.simulated import eventually

__all__ = ["controllers"]

DATA = REPO / "tests" / "data" / "sops" / "planner"
PLAINTEXT = "sentinel-plaintext-5d1c0a7e"  # vault.sops.yaml's one secret value
TARGET = "db"  # the Secret that must hold it
PGP_FINGERPRINT = (
    "F541520FED032A89D0464BEDAB099C14044BAF8E"  # planner-test.pgp.asc, vault.pgp.sops.yaml's key
)
GZIP = b"\x1f\x8b"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True, rbac=True) as handle:
        yield handle


def forms(value: str) -> list[str]:
    """The value as a leak could spell it: itself, base64 (padded or not), base64 of base64."""
    once = base64.b64encode(value.encode()).decode()
    return [value, once, once.rstrip("="), base64.b64encode(once.encode()).decode()]


def leaks(texts: Iterable[tuple[str, str]]) -> list[str]:
    """The names of the texts that spell the plaintext in any form."""
    spelled = forms(PLAINTEXT)
    return [name for name, text in texts if any(form in text for form in spelled)]


def unpacked(encoded: str) -> str:
    """A Secret's data value as text: base64 decoded, and gunzipped when it is gzip (a generation
    record, the applied closure)."""
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == GZIP else raw).decode(errors="replace")


def without_target_data(record: str) -> str:
    """A generation record without the target Secret's data in its closure: the copy a rollback
    re-applies (docs/history.md; `--no-secret-history` leaves it out), the target Secret itself."""
    document = json.loads(record)
    for item in document.get("closure", []):
        if (item.get("kind"), item.get("metadata", {}).get("name")) == ("Secret", TARGET):
            item.pop("data")
    return json.dumps(document)


def cluster_texts(kubectl: Runner, namespace: str) -> list[tuple[str, str]]:
    """Everything the namespace holds but the target Secret, as text: other Secrets unpacked."""
    secrets = get_json(kubectl, "secrets", "-n", namespace)["items"]
    texts = [
        (f"secret/{s['metadata']['name']}/{key}", unpacked(value))
        for s in secrets
        if s["metadata"]["name"] != TARGET
        for key, value in (s.get("data") or {}).items()
    ]
    texts = [
        (name, without_target_data(text) if name.startswith("secret/planner.") else text)
        for name, text in texts
    ]
    texts += [(f"secret/{s['metadata']['name']} metadata", json.dumps(s["metadata"])) for s in secrets]
    kinds = "deployments,replicasets,pods,services,configmaps,leases,events"
    texts.append((kinds, kubectl("get", kinds, "-n", namespace, "-o", "json").stdout))
    return texts


def target_value(kubectl: Runner, namespace: str) -> str:
    encoded = get_json(kubectl, "secret", TARGET, "-n", namespace)["data"]["password"]
    return base64.b64decode(encoded).decode()


def refused_then_reconciled(kubectl: Runner, namespace: str, plan: Path, key: str) -> str:
    """`plan` applied as a Plan object before its decryption Secret exists: its refusal message, once
    nothing was written; then the Secret made with the key (`--from-file=ENTRY=FILE`) and a reconcile
    asked for, until the target Secret holds the value."""
    applied = kubectl("apply", "-n", namespace, "-f", str(plan))
    assert applied.returncode == 0, applied.stderr

    def refused() -> str | None:
        ready = conditions(get_json(kubectl, "plan", "vault", "-n", namespace)).get("Ready") or {}
        return str(ready["message"]) if ready.get("status") == "False" else None

    message = eventually(refused, timeout=60)
    assert kubectl("get", "secret", TARGET, "-n", namespace).returncode != 0
    secret = get_json(kubectl, "plan", "vault", "-n", namespace)["decryption"]["secretRef"]["name"]
    made = kubectl("create", "secret", "generic", secret, "-n", namespace, key)
    assert made.returncode == 0, made.stderr
    asked = kubectl("annotate", "plan", "vault", "-n", namespace, "reconcile.planner.dev/requestedAt=now")
    assert asked.returncode == 0, asked.stderr
    wait_ready(kubectl, namespace, "vault")
    assert target_value(kubectl, namespace) == PLAINTEXT
    return message


def test_the_cli_applies_a_sops_encrypted_plan_and_no_output_spells_the_value(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = tmp_path / "vault.sops.yaml"
    shutil.copy(DATA / "vault.sops.yaml", plan)
    env = {"SOPS_AGE_KEY_FILE": str(DATA / "planner-test.agekey")}
    outputs: list[tuple[str, str]] = []

    def run(*args: str, code: int | tuple[int, ...] = 0) -> str:
        done = planner(*args, cwd=tmp_path, env=env)
        assert done.returncode in ((code,) if isinstance(code, int) else code), (
            args,
            done.stdout,
            done.stderr,
        )
        outputs.append((" ".join(args), done.stdout + done.stderr))
        return done.stdout

    without = planner("plan", str(plan), "-n", namespace, cwd=tmp_path)
    assert without.returncode == 1
    assert "vault.sops.yaml:19:1: sops: encrypted with SOPS for age17teuteze9dl" in without.stderr, (
        without.stderr
    )
    outputs.append(("plan without a key", without.stdout + without.stderr))

    for output in ("text", "json", "markdown", "mermaid", "dot"):
        run("plan", str(plan), "-n", namespace, "-o", output)
    run("plan", str(plan), "-n", namespace, "--out", "saved.json")
    run("apply", "saved.json", "-o", "json", "--timeout", "60s")
    assert target_value(kubectl, namespace) == PLAINTEXT
    outputs.append(("saved.json", (tmp_path / "saved.json").read_text()))

    # The Secret deleted by hand and written again: a second generation, for the history commands.
    assert kubectl("delete", "secret", TARGET, "-n", namespace).returncode == 0
    run("apply", str(plan), "-n", namespace, "--timeout", "60s")
    run("apply", str(plan), "-n", namespace, "-o", "json", "--timeout", "60s")
    selector = f"{namespace}/vault"
    for output in ("text", "json"):
        run("history", selector, "-o", output)
    run("history", selector, "--show", "1")
    for output in ("text", "json", "markdown"):
        run("diff-generations", selector, "1", "2", "-o", output)
    run("render", str(plan), "-n", namespace)  # masked without --show-secrets
    for output in ("text", "json"):
        run("reconcile", str(plan), "-n", namespace, "-o", output, "--metrics-file", "reconcile.prom")
    run("reconcile", str(plan), "-n", namespace, "--check")
    outputs.append(("reconcile --metrics-file", (tmp_path / "reconcile.prom").read_text()))

    shown = planner("render", str(plan), "-n", namespace, "--show-secrets", cwd=tmp_path, env=env).stdout
    assert leaks([("render --show-secrets", shown)]) == ["render --show-secrets"]  # the search finds it
    assert leaks(outputs) == []
    in_cluster = cluster_texts(kubectl, namespace)
    records = [text for name, text in in_cluster if name.startswith("secret/planner.vault.g")]
    assert len([text for text in records if "ENC[AES256_GCM" in text]) == 2  # each record's plan file
    assert leaks(in_cluster) == []
    assert target_value(kubectl, namespace) == PLAINTEXT


def test_the_controller_decrypts_a_plan_object_with_its_decryption_secret_and_shows_the_value_nowhere(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1h")
    message = refused_then_reconciled(
        kubectl, namespace, DATA / "vault.sops.yaml", f"--from-file=age.agekey={DATA / 'planner-test.agekey'}"
    )
    assert "encrypted with SOPS for age17teuteze9dl" in message, message
    assert f"Secret sops-age of namespace {namespace} (decryption.secretRef)" in message, message

    status, index = running.get("/")
    page_status, page = running.get(f"/plans/{namespace}/vault")
    assert (status, page_status) == (200, 200), page
    texts = [
        ("controller log", running.output()),
        ("/metrics", running.get("/metrics")[1]),
        ("web index", index),
        ("web plan page", page),
        ("plan status", json.dumps(get_json(kubectl, "plan", "vault", "-n", namespace).get("status"))),
        *cluster_texts(kubectl, namespace),
    ]
    assert leaks(texts) == []


def test_the_key_secret_is_read_as_the_plans_service_account(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """A tenant decrypts only with keys its own RBAC lets it read: the Secret `decryption` names is read
    as the Plan's ServiceAccount, never as the controller (the server's request log says who asked).
    The object also differs from the file sops encrypted (a field added): no MAC holds a Plan object."""
    install_crd(planner, kubectl)
    user = tenant(kubectl, namespace)
    made = kubectl(
        "create", "secret", "generic", "sops-age", "-n", namespace,
        f"--from-file=age.agekey={DATA / 'planner-test.agekey'}",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    controllers("-n", namespace, "--interval", "1h")
    text = (
        (DATA / "vault.sops.yaml")
        .read_text()
        .replace("\ndecryption:", "\nserviceAccountName: deployer\ndecryption:")
    )
    applied = kubectl("apply", "-n", namespace, "-f", "-", stdin=text)
    assert applied.returncode == 0, applied.stderr
    wait_ready(kubectl, namespace, "vault")
    assert target_value(kubectl, namespace) == PLAINTEXT
    reads = [r for r in admin.requests() if (r["resource"], r["name"]) == ("secrets", "sops-age")]
    assert reads and {r["user"] for r in reads} == {user}, reads


def watched_plan_applied(
    controllers: Start, kubectl: Runner, namespace: str, plan: Path, plans: Path
) -> None:
    """`planner controller --plans PLANS` with `plan` in it applies the value; its log and /metrics
    do not spell it."""
    plans.mkdir()
    shutil.copy(plan, plans)
    running = controllers("--plans", str(plans), "-n", namespace, "--interval", "1h")
    eventually(lambda: "plan vault: applied" in running.output(), timeout=90)
    assert target_value(kubectl, namespace) == PLAINTEXT
    assert leaks([("controller log", running.output()), ("/metrics", running.get("/metrics")[1])]) == []


def test_the_controller_reads_sealed_plan_files_with_the_key_where_sops_looks(
    controllers: Start, kubectl: Runner, namespace: str, home: Path, tmp_path: Path
) -> None:
    """`planner controller --plans DIR` loads files as the command line does: here with the key in
    sops's default place under the controller's HOME."""
    keys = home / ".config" / "sops" / "age"
    keys.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "planner-test.agekey", keys / "keys.txt")
    try:
        watched_plan_applied(controllers, kubectl, namespace, DATA / "vault.sops.yaml", tmp_path / "plans")
    finally:
        (keys / "keys.txt").unlink()


def test_the_cli_applies_a_pgp_encrypted_plan_with_the_key_in_the_gpg_keyring(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """As sops does, the command line asks gpg with the user's keyring (here GNUPGHOME, a keyring of
    its own holding the PGP test key); no output spells the value."""
    plan = tmp_path / "vault.pgp.sops.yaml"
    shutil.copy(DATA / "vault.pgp.sops.yaml", plan)
    outputs: list[tuple[str, str]] = []
    with temporary_keyring(DATA / "planner-other.pgp.asc") as other:
        without = planner(
            "plan", str(plan), "-n", namespace, cwd=tmp_path, env={"GNUPGHOME": other["GNUPGHOME"]}
        )
    assert without.returncode == 1
    assert (
        f"vault.pgp.sops.yaml:19:1: sops: encrypted with SOPS for PGP key {PGP_FINGERPRINT}, and the gpg "
        f"keyring in GNUPGHOME ({other['GNUPGHOME']}): it holds no secret key for them"
    ) in without.stderr, without.stderr
    outputs.append(("plan without the key", without.stdout + without.stderr))

    with temporary_keyring(DATA / "planner-test.pgp.asc") as keyring:
        for args in (
            ("plan", str(plan), "-n", namespace),
            ("plan", str(plan), "-n", namespace, "-o", "json"),
            ("apply", str(plan), "-n", namespace, "-o", "json", "--timeout", "60s"),
            ("render", str(plan), "-n", namespace),
        ):
            done = planner(*args, cwd=tmp_path, env={"GNUPGHOME": keyring["GNUPGHOME"]})
            assert done.returncode == 0, (args, done.stdout, done.stderr)
            outputs.append((" ".join(args), done.stdout + done.stderr))
    assert target_value(kubectl, namespace) == PLAINTEXT
    assert leaks(outputs) == []
    assert leaks(cluster_texts(kubectl, namespace)) == []


def test_the_controller_decrypts_a_pgp_encrypted_plan_object_with_an_asc_key_of_its_decryption_secret(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, home: Path
) -> None:
    """Flux's convention: the decryption Secret's entries ending in .asc are armored PGP secret keys.
    The controller uses them in memory: its own keyring (HOME/.gnupg) is never made."""
    install_crd(planner, kubectl)
    running = controllers("-n", namespace, "--interval", "1h")
    message = refused_then_reconciled(
        kubectl,
        namespace,
        DATA / "vault.pgp.sops.yaml",
        f"--from-file=sops.asc={DATA / 'planner-test.pgp.asc'}",
    )
    assert f"encrypted with SOPS for PGP key {PGP_FINGERPRINT}" in message, message
    assert f"Secret sops-gpg of namespace {namespace} (decryption.secretRef)" in message, message
    assert "key ending in .asc" in message, message
    assert not (home / ".gnupg").exists()
    texts = [
        ("controller log", running.output()),
        ("/metrics", running.get("/metrics")[1]),
        ("plan status", json.dumps(get_json(kubectl, "plan", "vault", "-n", namespace).get("status"))),
        *cluster_texts(kubectl, namespace),
    ]
    assert leaks(texts) == []


def test_the_controller_reads_pgp_encrypted_plan_files_with_the_default_gpg_keyring(
    controllers: Start, kubectl: Runner, namespace: str, home: Path, tmp_path: Path
) -> None:
    """`planner controller --plans DIR` asks gpg as the command line does: here with the key in gpg's
    default keyring, HOME/.gnupg (GNUPGHOME unset)."""
    with temporary_keyring(DATA / "planner-test.pgp.asc", at=home / ".gnupg"):
        watched_plan_applied(
            controllers, kubectl, namespace, DATA / "vault.pgp.sops.yaml", tmp_path / "plans"
        )

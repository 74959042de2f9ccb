"""A SOPS-encrypted Plan object on a real control plane (kube-apiserver v1.28.7): the CRD accepts its
`sops` map and `decryption` under strict field validation, the server hands the object back in its own
key order (so no MAC could be checked, as plan-format.md says), and the controller decrypts it with the
key Secret (an age identity, or an armored PGP secret key) and writes the value to the target Secret."""

from __future__ import annotations

import base64

import pytest

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import get_json, install_crd, wait_ready
from tests.paths import REPO
from tests.real.conftest import Runner

__all__ = ["controllers"]

DATA = REPO / "tests" / "data" / "sops" / "planner"


@pytest.mark.parametrize(
    ("file", "secret", "key"),
    [
        ("vault.sops.yaml", "sops-age", "age.agekey=planner-test.agekey"),
        ("vault.pgp.sops.yaml", "sops-gpg", "sops.asc=planner-test.pgp.asc"),
    ],
    ids=["age", "pgp"],
)
def test_a_sops_encrypted_plan_object_is_decrypted_by_the_controller(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str, file: str, secret: str, key: str
) -> None:
    install_crd(planner, kubectl)
    plan = str(DATA / file)
    strict = kubectl("apply", "-n", namespace, "--dry-run=server", "--validate=strict", "-f", plan)
    assert strict.returncode == 0, strict.stderr
    entry, key_file = key.split("=")
    made = kubectl(
        "create", "secret", "generic", secret, "-n", namespace, f"--from-file={entry}={DATA / key_file}"
    )
    assert made.returncode == 0, made.stderr
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-n", namespace, "-f", plan).returncode == 0
    wait_ready(kubectl, namespace, "vault")
    stored = get_json(kubectl, "plan", "vault", "-n", namespace)
    assert list(stored["sops"]) == sorted(stored["sops"])  # not the order sops wrote
    secret = get_json(kubectl, "secret", "db", "-n", namespace)
    assert base64.b64decode(secret["data"]["password"]).decode() == "sentinel-plaintext-5d1c0a7e"
    assert "sentinel-plaintext" not in running.output()

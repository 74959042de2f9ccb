"""`planner build --explain` (#42): the merged plan as YAML with each scalar value followed by the file,
line and column that set it (relative to the plan file's directory), from the positions the merge kept.
The expected output is written by hand, every position counted in the texts below.

Files are written under `<tmp>/repo`, which holds a `.git` directory: the root imports may not leave.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.app.building import explain
from planner.cli.root import cli
from planner.errors import PlanError

BASE = """\
workloads:
  - name: web
    image: nginx:1.27
    replicas: 1
    command: [nginx, -g, daemon off;]
    env: {LOG_LEVEL: info, REGION: eu}
  - name: worker
    image: busybox:1.36
"""

PROD = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: prod}
imports: [../base/app.yaml]
workloads:
  - name: web
    replicas: 3
    env: {LOG_LEVEL: warn}
  - !remove {name: worker}
secrets:
  - name: creds
    data: {PASSWORD: hunter2}
"""

EXPLAINED = """\
apiVersion: planner.dev/v1  # prod.yaml:1:13
kind: Plan  # prod.yaml:2:7
metadata:
  name: shop  # prod.yaml:3:18
  namespace: prod  # prod.yaml:3:35
workloads:
- name: web  # prod.yaml:6:11
  image: nginx:1.27  # ../base/app.yaml:3:12
  replicas: 3  # prod.yaml:7:15
  command:
  - nginx  # ../base/app.yaml:5:15
  - -g  # ../base/app.yaml:5:22
  - daemon off;  # ../base/app.yaml:5:26
  env:
    LOG_LEVEL: warn  # prod.yaml:8:22
    REGION: eu  # ../base/app.yaml:6:36
secrets:
- name: creds  # prod.yaml:11:11
  data:
    PASSWORD: '***'  # prod.yaml:12:22
"""


@pytest.fixture
def prod(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "base").mkdir()
    (root / "environments").mkdir()
    (root / "base" / "app.yaml").write_text(BASE)
    (root / "environments" / "prod.yaml").write_text(PROD)
    return root / "environments" / "prod.yaml"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_explain_follows_every_value_with_the_file_line_and_column_that_set_it(prod: Path) -> None:
    code, out, err = run("build", "--explain", str(prod))
    assert (code, err) == (0, "")
    assert out == EXPLAINED


def test_explain_shows_a_literal_secret_only_with_show_secrets(prod: Path) -> None:
    code, out, _ = run("build", "--explain", "--show-secrets", str(prod))
    assert code == 0
    assert out == EXPLAINED.replace("'***'", "hunter2")


def test_explain_without_imports_names_the_plan_file_itself(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: one}\nworkloads: []\n")
    code, out, _ = run("build", "--explain", str(plan))
    assert code == 0
    assert out == (
        "apiVersion: planner.dev/v1  # plan.yaml:1:13\n"
        "kind: Plan  # plan.yaml:2:7\n"
        "metadata:\n"
        "  name: one  # plan.yaml:3:18\n"
        "workloads: []\n"
    )


def test_explain_refuses_what_build_refuses_except_literal_secrets(prod: Path) -> None:
    base = BASE + "secrets:\n  - name: token\n    data: {TOKEN: {valueFrom: {env: TOKEN}}}\n"
    (prod.parent.parent / "base" / "app.yaml").write_text(base)
    with pytest.raises(PlanError) as refused:
        explain(prod)
    (said,) = map(str, refused.value.diagnostics)
    assert said.startswith(
        f"{prod.parent.parent}/base/app.yaml:11:37: secrets[0].data.TOKEN.valueFrom.env: valueFrom.env cannot be used"
    ), said


def test_explain_masks_an_inlined_manifest_files_secret(prod: Path) -> None:
    (prod.parent.parent / "base" / "app.yaml").write_text(BASE + "manifestFiles: [token.yaml]\n")
    (prod.parent.parent / "base" / "token.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\nstringData: {k: swordfish}\n"
    )
    _, built, _ = explain(prod)
    assert built["manifests"] == [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "stringData": {"k": "***"}}
    ]

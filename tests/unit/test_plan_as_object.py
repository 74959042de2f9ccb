"""`planner build FILE` (#42): a plan file with imports printed as the one Plan object it means — every
value merged, no `imports`, no tags — which loads back to the same plan; and what a Plan object cannot
hold refused at the entry of the file that wrote it, with the messages counted by hand.

Files are written under `<tmp>/repo`, which holds a `.git` directory: the root imports may not leave.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.app.building import build
from planner.cli.root import cli
from planner.errors import PlanError
from planner.plan import Plan, load_plans
from planner.plan.model import Source

BASE = """\
configMaps:
  - name: web-config
    data: {LOG_LEVEL: info, DEBUG: "1"}
secrets:
  - name: creds
    data:
      PASSWORD: {valueFrom: {secretKeyRef: {name: vault, key: password}}}
workloads:
  - name: web
    image: nginx:1.27
    replicas: 1
    env: {A: "1", B: "2"}
  - name: worker
    image: busybox:1.36
    command: [sleep, "3600"]
"""

PROD = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: prod}
imports: [../base.yaml]
configMaps:
  - name: web-config
    data:
      LOG_LEVEL: warn
      DEBUG: !remove
workloads:
  - {name: web, replicas: 3, env: {B: !remove ~}}
  - !remove {name: worker}
"""

BUILT = """\
apiVersion: planner.dev/v1
kind: Plan
metadata:
  name: shop
  namespace: prod
configMaps:
- name: web-config
  data:
    LOG_LEVEL: warn
secrets:
- name: creds
  data:
    PASSWORD:
      valueFrom:
        secretKeyRef:
          name: vault
          key: password
workloads:
- name: web
  image: nginx:1.27
  replicas: 3
  env:
    A: '1'
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "environments").mkdir()
    return root


def write(repo: Path, base: str = BASE, prod: str = PROD) -> Path:
    (repo / "base.yaml").write_text(base)
    (repo / "environments" / "prod.yaml").write_text(prod)
    return repo / "environments" / "prod.yaml"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def without_source(plan: Plan) -> Plan:
    return dataclasses.replace(plan, source=Source(file=""))


def test_build_prints_the_merged_plan_object_with_every_value_merged_and_no_imports(repo: Path) -> None:
    code, out, err = run("build", str(write(repo)))
    assert (code, err) == (0, "")
    assert out == BUILT


def test_the_built_object_loads_to_the_same_plan_as_the_file_it_was_built_from(repo: Path) -> None:
    prod = write(repo)
    loaded, built = build(prod)
    (repo / "built.yaml").write_text(run("build", str(prod))[1])
    again = load_plans([repo / "built.yaml"], environ={}, secret_refs=lambda *_: "x").plans[0]
    original = load_plans([prod], environ={}, secret_refs=lambda *_: "x").plans[0]
    assert without_source(again) == without_source(original)
    assert "imports" not in built and loaded.plans[0].name == "shop"


@pytest.mark.parametrize(
    ("value", "where", "message"),
    [
        (
            "{valueFrom: {env: DB_PASSWORD}}",
            "base.yaml:7:35: secrets[0].data.PASSWORD.valueFrom.env",
            "valueFrom.env cannot be used in a Plan object",
        ),
        (
            "{valueFrom: {file: password.txt}}",
            "base.yaml:7:36: secrets[0].data.PASSWORD.valueFrom.file",
            "valueFrom.file cannot be used in a Plan object",
        ),
        (
            "hunter2",
            "base.yaml:7:17: secrets[0].data.PASSWORD",
            "a literal secret value would be printed: pass --show-secrets",
        ),
    ],
    ids=["from the environment", "from a file", "written literally"],
)
def test_a_secret_a_plan_object_cannot_hold_is_refused_where_the_fragment_wrote_it(
    repo: Path, value: str, where: str, message: str
) -> None:
    (repo / "password.txt").write_text("hunter2\n")
    base = BASE.replace("{valueFrom: {secretKeyRef: {name: vault, key: password}}}", value)
    with pytest.raises(PlanError) as refused:
        build(write(repo, base=base))
    (said,) = map(str, refused.value.diagnostics)
    assert said.startswith(f"{repo}/{where}: {message}")
    assert "hunter2" not in said


def test_a_literal_secret_is_printed_with_show_secrets_as_render_prints_it(repo: Path) -> None:
    base = BASE.replace("{valueFrom: {secretKeyRef: {name: vault, key: password}}}", "hunter2")
    code, out, _ = run("build", str(write(repo, base=base)), "--show-secrets")
    assert code == 0
    assert "    PASSWORD: hunter2\n" in out


def test_manifest_files_are_inlined_under_manifests_since_the_controller_reads_no_files(repo: Path) -> None:
    """As `kustomize build` inlines its resources: the objects of a fragment's `manifestFiles` (matched
    beside the fragment) follow the inline manifests, in file order, and the object loads to the same
    raw objects as the files."""
    (repo / "extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: '1'}\n---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot}\n"
    )
    base = (
        BASE
        + "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: inline}}\nmanifestFiles: [extra.yaml]\n"
    )
    prod = write(repo, base=base)
    _, built = build(prod)
    assert "manifestFiles" not in built
    assert built["manifests"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inline"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    ]
    (repo / "built.yaml").write_text(run("build", str(prod))[1])
    again = load_plans([repo / "built.yaml"], environ={}, secret_refs=lambda *_: "x").plans[0]
    original = load_plans([prod], environ={}, secret_refs=lambda *_: "x").plans[0]
    assert [m.object for m in again.manifests] == [m.object for m in original.manifests]


def test_a_literal_secret_in_a_manifest_file_is_refused_as_one_written_in_the_plan(repo: Path) -> None:
    (repo / "token.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\nstringData: {k: hunter2}\n"
    )
    with pytest.raises(PlanError) as refused:
        build(write(repo, base=BASE + "manifestFiles: [token.yaml]\n"))
    assert all("hunter2" not in str(d) for d in refused.value.diagnostics)
    assert any("a literal secret value would be printed" in str(d) for d in refused.value.diagnostics)


def test_a_plan_that_does_not_validate_is_not_built(repo: Path) -> None:
    with pytest.raises(PlanError) as refused:
        build(write(repo, base=BASE.replace("replicas: 1", "replicas: one")))
    assert f'{repo}/base.yaml:11:15: workloads[0].replicas: expected an integer, found string "one"' in [
        str(d) for d in refused.value.diagnostics
    ]


def test_kustomize_directories_are_rendered_and_inlined_under_manifests(repo: Path) -> None:
    """As `manifestFiles`: the objects Kustomize renders (here one ConfigMap from a generator, with its
    hash suffix) follow the inline manifests, `kustomize` is gone, and the object loads to the same raw
    objects as the file."""
    kustomization = repo / "k8s"
    kustomization.mkdir()
    (kustomization / "kustomization.yaml").write_text(
        "resources: [service.yaml]\nconfigMapGenerator:\n  - {name: settings, literals: [MODE=prod]}\n"
    )
    (kustomization / "service.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"
    )
    base = BASE + "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: inline}}\n"
    base += "kustomize:\n  - path: k8s\n"
    prod = write(repo, base=base)
    _, built = build(prod)
    assert "kustomize" not in built
    assert built["manifests"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inline"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings-2h42td9ggm"},
            "data": {"MODE": "prod"},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"ports": [{"port": 80}]},
        },
    ]
    (repo / "built.yaml").write_text(run("build", str(prod))[1])
    again = load_plans([repo / "built.yaml"], environ={}, secret_refs=lambda *_: "x").plans[0]
    original = load_plans([prod], environ={}, secret_refs=lambda *_: "x").plans[0]
    assert [m.object for m in again.manifests] == [m.object for m in original.manifests]

"""Kustomize directories in a plan: the objects are exactly what `kubectl kustomize` renders (planner
adds only its own labels and annotations at render), bad entries are plan errors at the plan file's
line and column with Kustomize's own message, nothing leaves the repository, and the files of every
directory read are inputs of the plan. The base and overlay are tests/data/kustomize."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from planner.errors import PlanError
from planner.plan import Plan, load_plans
from planner.plan.load import input_files, load_plan_object

DATA = Path(__file__).parent.parent / "data" / "kustomize"
HEAD = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(DATA, tmp_path / "k8s")
    return tmp_path


def load(directory: Path, text: str) -> Plan:
    (directory / "plan.yaml").write_text(HEAD + text)
    return load_plans([directory / "plan.yaml"]).plans[0]


def errors(directory: Path, text: str) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load(directory, text)
    return [str(d).replace(f"{directory}/", "") for d in raised.value.diagnostics]


def test_the_plans_objects_are_what_kubectl_kustomize_renders_in_its_order(repo: Path) -> None:
    plan = load(repo, "kustomize:\n  - path: k8s/overlays/prod\n")
    built = subprocess.run(
        ["kubectl", "kustomize", str(repo / "k8s" / "overlays" / "prod")],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = [document for document in YAML(typ="safe").load_all(built.stdout) if document]
    assert [dict(raw.object) for raw in plan.manifests] == expected
    assert [raw.handle for raw in plan.manifests] == [
        "ConfigMap/extra",
        "ConfigMap/settings-hf678c7m2b",
        "Service/web",
        "Deployment/web",
    ]
    assert plan.manifests[0].file == f"{repo}/k8s/overlays/prod (kustomize output)"


def test_kustomize_objects_follow_inline_and_file_manifests_and_count_against_duplicates(repo: Path) -> None:
    (repo / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n")
    found = errors(repo, "manifestFiles: [extra.yaml]\nkustomize:\n  - path: k8s/overlays/prod\n")
    assert found == [
        "k8s/overlays/prod (kustomize output):8:3: [0].metadata.name: ConfigMap/extra is already "
        "declared at extra.yaml:1:1: one object per kind, namespace and name"
    ]


def test_a_directory_that_does_not_render_is_an_error_at_its_path_with_kustomizes_message(repo: Path) -> None:
    overlay = repo / "k8s" / "overlays" / "prod" / "kustomization.yaml"
    overlay.write_text("resources:\n  - missing.yaml\n")
    [found] = errors(repo, "kustomize:\n  - path: k8s/overlays/prod\n")
    assert found.startswith(
        "plan.yaml:5:11: kustomize[0].path: Kustomize could not render 'k8s/overlays/prod': "
    )
    assert "missing.yaml" in found and "no such file or directory" in found


def test_paths_that_leave_the_repository_are_absolute_or_hold_no_kustomization_are_refused(
    repo: Path,
) -> None:
    (repo / "empty").mkdir()
    found = errors(
        repo,
        "kustomize:\n  - path: ../outside\n  - path: /k8s\n  - path: nothere\n  - path: empty\n",
    )
    assert found == [
        f"plan.yaml:5:11: kustomize[0].path: '../outside' leads outside the repository {repo} (the nearest "
        "directory above the plan file that holds .git): refused; move what it names inside that directory",
        "plan.yaml:6:11: kustomize[1].path: '/k8s' is absolute: a Kustomize directory is named relative to "
        "the plan file's directory",
        "plan.yaml:7:11: kustomize[2].path: no such directory: 'nothere' (relative to the plan file's directory)",
        "plan.yaml:8:11: kustomize[3].path: 'empty' holds no kustomization.yaml / kustomization.yml / "
        "Kustomization: not a Kustomize directory",
    ]


def test_a_base_outside_the_repository_or_remote_is_refused_before_kustomize_runs(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    shutil.copytree(DATA / "base", elsewhere / "base")
    overlay = repo / "k8s" / "overlays" / "prod"
    (overlay / "kustomization.yaml").write_text(f"resources:\n  - {elsewhere / 'base'}\n")
    [outside] = errors(repo, "kustomize:\n  - path: k8s/overlays/prod\n")
    assert outside == (
        f"plan.yaml:5:11: kustomize[0].path: '{elsewhere / 'base'}' (in k8s/overlays/prod) leads outside the "
        f"repository {repo} (the nearest directory above the plan file that holds .git): refused; move what "
        "it names inside that directory"
    )
    (overlay / "kustomization.yaml").write_text(
        "resources:\n  - https://github.com/example/k8s//base?ref=v1\n"
    )
    [remote] = errors(repo, "kustomize:\n  - path: k8s/overlays/prod\n")
    assert remote == (
        "plan.yaml:5:11: kustomize[0].path: 'https://github.com/example/k8s//base?ref=v1' (in "
        "k8s/overlays/prod) is a remote base: planner renders only what the repository holds"
    )


def test_a_remote_base_as_the_entrys_own_path_is_refused_as_one(repo: Path) -> None:
    found = errors(
        repo,
        "kustomize:\n  - path: https://github.com/example/k8s//base?ref=v1\n"
        "  - path: github.com/example/k8s/base\n",
    )
    assert found == [
        "plan.yaml:5:11: kustomize[0].path: 'https://github.com/example/k8s//base?ref=v1' is a remote base: "
        "planner renders only what the repository holds",
        "plan.yaml:6:11: kustomize[1].path: 'github.com/example/k8s/base' is a remote base: "
        "planner renders only what the repository holds",
    ]


def test_the_files_of_the_overlay_and_its_base_are_inputs_of_the_plan(repo: Path) -> None:
    (repo / "plan.yaml").write_text(HEAD + "kustomize:\n  - path: k8s/overlays/prod\n")
    names = [str(path.relative_to(repo)) for path in input_files(repo / "plan.yaml")]
    assert names == [
        "k8s/overlays/prod/extra.yaml",
        "k8s/overlays/prod/kustomization.yaml",
        "k8s/base/deployment.yaml",
        "k8s/base/kustomization.yaml",
        "k8s/base/service.yaml",
    ]


def test_a_plan_object_cannot_name_kustomize_directories() -> None:
    obj = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "shop", "namespace": "shop"},
        "kustomize": [{"path": "k8s"}],
    }
    with pytest.raises(PlanError) as raised:
        load_plan_object(obj, secret_refs=lambda *_: {})
    assert [d.message for d in raised.value.diagnostics] == [
        "a Plan object cannot name Kustomize directories (the cluster has no repository to read them from): "
        "render them into `manifests` instead"
    ]

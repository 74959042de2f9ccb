"""Imports and the merge: every rule of planner/plan/merge.py walked with hand-written expected results,
and the `file:LINE:COL: path: message` of each import problem counted by hand from the text.

Files are written under `<tmp>/repo`, which holds a `.git` directory: the root imports may not leave.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from planner.errors import PlanError
from planner.plan import Plan, load_plans
from planner.plan.docs_imports import IMPORTS_SECTION
from planner.plan.imports import resolve_imports
from planner.plan.load import NO_IMPORTS_IN_OBJECTS, load_plan_object
from planner.plan.model import Position, Source
from planner.plan.secrets import unread_secrets
from planner.plan.source import read_plan_file
from tests.strategies import SECRET_ENV, cluster_secret, plan_documents, write_document

TOP = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata:\n  name: shop\n"  # the body starts on line 5

BASE = """\
workloads:
  - name: web
    image: nginx:1.25
    replicas: 1
    command: [nginx, -g, daemon off;]
    env:
      LOG: info
      DEBUG: "1"
    sidecars:
      - name: proxy
        image: envoy:1
  - name: worker
    image: busybox:1.36
"""

Files = Callable[..., Path]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def files(repo: Path) -> Files:
    """Write `name: text` pairs under the repository; return the path of `plan.yaml` (TOP + its body)."""

    def write(plan: str, **others: str) -> Path:
        for name, text in others.items():
            path = repo / name.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        top = repo / "plan.yaml"
        top.write_text(TOP + plan, encoding="utf-8")
        return top

    return write


def load(path: Path) -> Plan:
    return load_plans([path], environ={}).plans[0]


def errors(path: Path) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load_plans([path], environ={})
    return [str(diagnostic) for diagnostic in raised.value.diagnostics]


# --- the merge rules ---------------------------------------------------------------------------------


def test_nested_imports_merge_by_name_and_the_importer_wins(files: Files, repo: Path) -> None:
    prod = """\
imports: [../base.yaml]
workloads:
  - name: web
    replicas: 2
    command: [nginx]
    env:
      LOG: warn
    sidecars:
      - name: proxy
        image: envoy:2
      - name: metrics
        image: exporter:1
"""
    top = files(
        "imports: [envs/prod.yaml]\nworkloads:\n  - name: web\n    replicas: 3\n",
        **{
            "base.yaml": BASE,
            "envs__prod.yaml": prod,
        },
    )
    plan = load(top)
    web, worker = plan.workloads
    assert (web.name, web.image, web.replicas) == ("web", "nginx:1.25", 3)  # image: base; replicas: top
    assert web.command == ("nginx",)  # another list: replaced whole by prod's
    assert dict(web.env) == {"LOG": "warn", "DEBUG": "1"}  # a mapping: key by key
    assert [(c.name, c.image) for c in web.sidecars] == [("proxy", "envoy:2"), ("metrics", "exporter:1")]
    assert (worker.name, worker.image) == ("worker", "busybox:1.36")  # inherited, after the merged ones
    positions = plan.source.positions
    assert positions["workloads[0].image"] == Position(line=3, column=5, file=str(repo / "base.yaml"))
    assert positions["workloads[0].replicas"] == Position(line=8, column=5)  # the plan file's own
    assert positions["workloads[0].sidecars[0].image"] == Position(
        line=10, column=9, file=str(repo / "envs" / "prod.yaml")
    )
    assert positions["workloads[0].env.DEBUG"] == Position(line=8, column=7, file=str(repo / "base.yaml"))
    assert plan.source.file_of(positions["workloads[0].image"]) == str(repo / "base.yaml")
    assert plan.source.file_of(positions["workloads[0].replicas"]) == str(top)


def test_manifests_merge_by_api_version_kind_namespace_and_name(files: Files) -> None:
    shared = """\
manifests:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings}
    data: {mode: slow, size: "1"}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings, namespace: other}
    data: {mode: other}
"""
    body = "imports: [shared.yaml]\nmanifests:\n  - apiVersion: v1\n    kind: ConfigMap\n"
    body += "    metadata: {name: settings}\n    data: {mode: fast}\n"
    plan = load(files(body, **{"shared.yaml": shared}))
    assert [dict(m.object["data"]) for m in plan.manifests] == [
        {"mode": "fast", "size": "1"},
        {"mode": "other"},
    ]


def test_two_imports_that_disagree_are_an_error_naming_both_places(files: Files, repo: Path) -> None:
    a = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: 2\n"
    b = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: 4\n"
    top = files("imports: [a.yaml, b.yaml]\n", **{"a.yaml": a, "b.yaml": b})
    assert errors(top) == [
        f"{repo}/b.yaml:4:15: workloads[0].replicas: 4 conflicts with 2 set at {repo}/a.yaml:4:15 (both "
        "imported by one file): set it in the importing file, or mark one of them !default"
    ]


def test_a_base_imported_along_two_paths_is_no_conflict_with_itself(files: Files) -> None:
    body = "imports: [web.yaml, jobs.yaml]\n"
    top = files(body, **{
        "base.yaml": BASE,
        "web.yaml": "imports: [base.yaml]\nworkloads:\n  - {name: web, replicas: 2}\n",
        "jobs.yaml": "imports: [base.yaml]\nworkloads:\n  - {name: worker, replicas: 5}\n",
    })  # fmt: skip
    web, worker = load(top).workloads
    assert (web.replicas, worker.replicas, worker.image) == (2, 5, "busybox:1.36")


def test_a_default_gives_way_to_the_other_import(files: Files) -> None:
    a = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: !default 2\n"
    b = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: 4\n"
    assert load(files("imports: [a.yaml, b.yaml]\n", **{"a.yaml": a, "b.yaml": b})).workloads[0].replicas == 4
    assert load(files("imports: [b.yaml, a.yaml]\n")).workloads[0].replicas == 4  # in either order


def test_a_default_on_a_mapping_marks_everything_under_it(files: Files) -> None:
    a = "workloads:\n  - name: web\n    image: nginx:1.25\n    env: !default {LOG: info}\n"
    b = "workloads:\n  - name: web\n    image: nginx:1.25\n    env: {LOG: warn}\n"
    plan = load(files("imports: [a.yaml, b.yaml]\n", **{"a.yaml": a, "b.yaml": b}))
    assert dict(plan.workloads[0].env) == {"LOG": "warn"}


def test_the_importer_setting_a_value_settles_a_disagreement(files: Files) -> None:
    a = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: 2\n"
    b = "workloads:\n  - name: web\n    image: nginx:1.26\n    replicas: 4\n"
    body = "imports: [a.yaml, b.yaml]\nworkloads:\n  - name: web\n    image: nginx:1.27\n    replicas: 3\n"
    web = load(files(body, **{"a.yaml": a, "b.yaml": b})).workloads[0]
    assert (web.image, web.replicas) == ("nginx:1.27", 3)


def test_remove_takes_out_an_inherited_entry_and_an_inherited_key(files: Files) -> None:
    body = "imports: [base.yaml]\nworkloads:\n  - name: web\n    env:\n      DEBUG: !remove\n"
    body += "  - !remove {name: worker}\n"
    plan = load(files(body, **{"base.yaml": BASE}))
    assert [w.name for w in plan.workloads] == ["web"]
    assert dict(plan.workloads[0].env) == {"LOG": "info"}


def test_an_imported_environment_removes_as_the_plan_file_does(files: Files) -> None:
    env = "imports: [base.yaml]\nworkloads:\n  - name: web\n    env:\n      DEBUG: !remove\n"
    env += "  - !remove {name: worker}\n"
    plan = load(files("imports: [env.yaml]\n", **{"base.yaml": BASE, "env.yaml": env}))
    assert [w.name for w in plan.workloads] == ["web"]
    assert dict(plan.workloads[0].env) == {"LOG": "info"}


def test_removing_what_no_import_declares_is_an_error(files: Files) -> None:
    body = "imports: [base.yaml]\nworkloads:\n  - !remove {name: nobody}\n"
    top = files(body, **{"base.yaml": BASE})
    assert errors(top) == [
        f"{top}:7:5: workloads[0]: !remove removes nothing: no file this one imports declares it"
    ]


def test_a_mistyped_remove_is_refused_not_ignored(files: Files, repo: Path) -> None:
    body = "imports: [base.yaml]\nworkloads:\n  - !remov {name: worker}\n"
    top = files(body, **{"base.yaml": BASE, "other.yaml": "metadata: !secret {name: x}\n"})
    assert errors(top) == [
        f"{top}:7:5: invalid YAML: unknown tag '!remov' on a mapping (did you mean \"!remove\"? known tags: "
        "!default, !remove, !!map)"
    ]
    (repo / "plan.yaml").write_text(TOP.replace("metadata:\n  name: shop\n", "") + "imports: [other.yaml]\n")
    assert errors(top) == [
        f"{repo}/other.yaml:1:11: invalid YAML: unknown tag '!secret' on a mapping (known tags: !default, "
        "!remove, !!map)"
    ]


def test_a_fragments_manifest_files_are_relative_to_the_fragment(files: Files, repo: Path) -> None:
    objects = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n"
    top = files("imports: [shared/fragment.yaml]\n", **{
        "shared__fragment.yaml": "manifestFiles: [objects.yaml]\n",
        "shared__objects.yaml": objects,
    })  # fmt: skip
    (manifest,) = load(top).manifests
    assert (manifest.file, manifest.object["metadata"]["name"]) == (
        str(repo / "shared" / "objects.yaml"),
        "shared",
    )


# --- import problems ---------------------------------------------------------------------------------


def test_an_import_cycle_is_refused_with_the_chain(files: Files, repo: Path) -> None:
    top = files("imports: [a.yaml]\n", **{"a.yaml": "imports: [b.yaml]\n", "b.yaml": "imports: [a.yaml]\n"})
    assert errors(top) == [
        f"{repo}/b.yaml:1:11: imports[0]: import cycle: {top} → {repo}/a.yaml → {repo}/b.yaml → {repo}/a.yaml"
    ]


def test_an_import_may_not_leave_the_repository(files: Files, repo: Path) -> None:
    (repo.parent / "outside.yaml").write_text("runtime: k8s\n", encoding="utf-8")
    top = files("imports:\n  - ../outside.yaml\n  - /etc/passwd\n  - missing.yaml\n")
    root = os.path.realpath(repo)
    assert errors(top) == [
        f"{top}:6:5: imports[0]: '../outside.yaml' leads outside the repository {root} (the nearest directory "
        "above the plan file that holds .git): refused; move what it names inside that directory",
        f"{top}:7:5: imports[1]: '/etc/passwd' is absolute: imports are named relative to the importing file",
        f"{top}:8:5: imports[2]: no such file: 'missing.yaml' (relative to the importing file)",
    ]


def test_outside_any_git_checkout_the_plans_own_directory_is_the_root_and_the_error_says_so(
    tmp_path: Path,
) -> None:
    (tmp_path / "environments").mkdir()
    (tmp_path / "base.yaml").write_text("runtime: k8s\n", encoding="utf-8")
    top = tmp_path / "environments" / "prod.yaml"
    top.write_text(TOP + "imports: [../base.yaml]\n", encoding="utf-8")
    root = os.path.realpath(tmp_path / "environments")
    assert errors(top) == [
        f"{top}:5:11: imports[0]: '../base.yaml' leads outside {root}: refused; no directory above the plan "
        "file holds .git, so the plan file's own directory is the repository root: make the plan's files one "
        "git checkout (`git init` where they all are) or move what it names beside the plan file"
    ]
    (tmp_path / ".git").mkdir()
    assert load(top).runtime == "k8s"


def test_imports_that_are_no_list_of_paths_are_a_schema_error(files: Files) -> None:
    top = files("imports: base.yaml\n")
    assert errors(top) == [f'{top}:5:10: imports: expected a list, found string "base.yaml"']


def test_an_error_in_an_imported_file_names_that_file(files: Files, repo: Path) -> None:
    base = "workloads:\n  - name: web\n    image: nginx:1.25\n    replicas: three\n"
    top = files("imports: [base.yaml]\n", **{"base.yaml": base})
    assert errors(top) == [
        f'{repo}/base.yaml:4:15: workloads[0].replicas: expected an integer, found string "three"'
    ]


def test_an_error_in_an_import_is_the_only_error_its_removals_report(files: Files, repo: Path) -> None:
    base = BASE + '    replicas: "x"\n'
    body = "imports: [base.yaml]\nworkloads:\n  - !remove {name: worker}\n  - name: web\n    env:\n"
    top = files(body + "      DEBUG: !remove\n", **{"base.yaml": base})
    expected = f'{repo}/base.yaml:14:15: workloads[1].replicas: expected an integer, found string "x"'
    assert errors(top) == [expected]
    top = files("imports: [env.yaml]\n", **{"env.yaml": body.replace("  - name: web\n    env:\n", "")})
    assert errors(top) == [expected]  # through an environment between the plan and the broken base


def test_an_error_of_the_merged_plan_names_the_file_that_set_the_value(files: Files, repo: Path) -> None:
    base = "workloads:\n  - name: web\n    image: nginx:1.25\n    cpu: lots\n"
    top = files("imports: [base.yaml]\nworkloads:\n  - name: api\n", **{"base.yaml": base})
    assert errors(top) == [
        f'{repo}/base.yaml:4:10: workloads[0].cpu: bad quantity "lots": expected a Kubernetes quantity like '
        "500m, 0.5, 256Mi or 1Gi",
        f'{top}:7:5: workloads[1]: missing required field "image"',
    ]


def test_a_plan_object_cannot_import() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "shop", "namespace": "shop"},
        "imports": ["base.yaml"],
    }
    with pytest.raises(PlanError) as refused:
        load_plan_object(obj, secret_refs=unread_secrets)
    assert [(d.path, d.message) for d in refused.value.diagnostics] == [("imports", NO_IMPORTS_IN_OBJECTS)]


# --- properties --------------------------------------------------------------------------------------


@given(document=plan_documents())
def test_a_plan_without_imports_is_read_as_it_was(document: dict[str, Any], tmp_path_factory: Any) -> None:
    path = write_document(document, tmp_path_factory.mktemp("plan"))
    parsed = read_plan_file(path)
    assert not isinstance(parsed, list)
    assert resolve_imports(parsed) is parsed  # not merged at all: the same data, the same positions


@given(document=plan_documents())
def test_importing_a_whole_plan_loads_that_plan_deterministically(
    document: dict[str, Any], tmp_path_factory: Any
) -> None:
    directory = tmp_path_factory.mktemp("plan")
    fragment = write_document(document, directory).rename(directory / "all.yaml")
    top = directory / "top.yaml"
    top.write_text(f"imports: [{fragment.name}]\n", encoding="utf-8")
    alone = write_document(document, directory)
    expected = load_plans([alone], environ=SECRET_ENV, secret_refs=cluster_secret).plans[0]
    first, second = (
        load_plans([top], environ=SECRET_ENV, secret_refs=cluster_secret).plans[0] for _ in range(2)
    )
    assert first == second  # the same merge twice: the same plan, the same positions
    assert first.source.positions == second.source.positions
    assert _without_source(first) == _without_source(expected)


def _without_source(plan: Plan) -> Plan:
    """`plan` without where it was read from (the file, and positions naming it)."""
    nowhere = Position(line=0, column=0)
    manifests = tuple(replace(manifest, file="", position=nowhere) for manifest in plan.manifests)
    return replace(plan, source=Source(file=""), manifests=manifests)


def test_the_documented_example_merges_as_the_doc_says(repo: Path) -> None:
    base, prod = re.findall(r"```yaml\n# (\S+):.*?\n(.*?)```", IMPORTS_SECTION, re.DOTALL)[:2]
    for (name, text), path in ((base, repo / "base.yaml"), (prod, repo / "environments" / "prod.yaml")):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        assert path.relative_to(repo).as_posix() == name
    plan = load(repo / "environments" / "prod.yaml")
    (web,) = plan.workloads
    assert (web.name, web.image, web.replicas, dict(web.env)) == ("web", "nginx:1.27", 3, {"LOG": "info"})

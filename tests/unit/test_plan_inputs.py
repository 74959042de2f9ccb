"""Every file that went into a merged plan is one of its inputs (#42): whoever watches a plan file
(the controller's `--plans` digest) sees a change to a fragment it imports; a generation records each
input file's text and sha256; `diff-generations` names the input file that changed.

Files are written under `<tmp>/repo`, which holds a `.git` directory: the root imports may not leave.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from planner.app.history import GenerationDiff, plan_sources
from planner.controller.planfiles import file_digest
from planner.generations import (
    changed_inputs,
    diff_closures,
    fitted,
    generation_of,
    input_hashes,
    record_manifest,
)
from planner.output.history_table import diff_json, diff_text, generation_text
from planner.plan import load_plans
from planner.plan.load import input_files
from planner.plan.raw_manifests import manifest_files
from planner.plan.secrets import secret_files
from tests.unit.test_generations import deployment, generation

TOP = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata:\n  name: shop\n"

BASE = """\
secrets:
  - name: creds
    data:
      PASSWORD: hunter2
      TOKEN: {valueFrom: {file: token.txt}}
manifestFiles: [extra.yaml]
workloads:
  - name: web
    image: nginx:1.25
"""

EXTRA = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata: {a: b}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "base").mkdir()
    (root / "base" / "base.yaml").write_text("imports: [common.yaml]\n" + BASE)
    (root / "base" / "common.yaml").write_text("configMaps:\n  - {name: common, data: {a: b}}\n")
    (root / "base" / "token.txt").write_text("s3cret\n")
    (root / "base" / "extra.yaml").write_text(EXTRA)
    (root / "env").mkdir()
    (root / "env" / "prod.yaml").write_text(
        TOP + "imports: [../base/base.yaml]\nworkloads:\n  - {name: web, replicas: 3}\n"
    )
    return root


def test_the_inputs_of_a_plan_are_its_fragments_then_the_secret_and_manifest_files_beside_them(
    repo: Path,
) -> None:
    prod = repo / "env" / "prod.yaml"
    assert input_files(prod) == (
        repo / "base" / "base.yaml",
        repo / "base" / "common.yaml",
        repo / "base" / "token.txt",  # beside the fragment that names it, not beside prod.yaml
        repo / "base" / "extra.yaml",
    )
    assert secret_files(prod) == manifest_files(prod) == ()  # the file alone, as before imports


def test_an_import_that_does_not_exist_or_load_yet_is_watched_so_its_fix_is_seen(repo: Path) -> None:
    prod = repo / "env" / "prod.yaml"
    prod.write_text(TOP + "imports: [../base/base.yaml, missing.yaml]\n")
    assert repo / "env" / "missing.yaml" in input_files(prod)
    (repo / "base" / "common.yaml").write_text("configMaps: 7\n")  # a schema problem: no merge
    assert repo / "base" / "common.yaml" in input_files(prod)


def test_the_controllers_digest_of_a_plan_file_changes_when_only_a_fragment_it_imports_does(
    repo: Path,
) -> None:
    prod = repo / "env" / "prod.yaml"
    before = file_digest(prod, input_files(prod))
    assert file_digest(prod, input_files(prod)) == before
    (repo / "base" / "common.yaml").write_text("configMaps:\n  - {name: common, data: {a: c}}\n")
    assert file_digest(prod, input_files(prod)) != before
    changed = file_digest(prod, input_files(prod))
    (repo / "base" / "token.txt").write_text("other\n")  # a secret file a fragment reads
    assert file_digest(prod, input_files(prod)) != changed


def test_a_plans_sources_are_every_input_file_masked_and_its_record_hashes_each(repo: Path) -> None:
    prod = repo / "env" / "prod.yaml"
    plan = load_plans([prod], environ={}).plans[0]
    sources = plan_sources(plan.source)
    assert list(sources) == [str(prod), str(repo / "base" / "base.yaml"), str(repo / "base" / "common.yaml")]
    assert sources[str(prod)] == prod.read_text()
    assert "hunter2" not in sources[str(repo / "base" / "base.yaml")]
    assert 'PASSWORD: "***"' in sources[str(repo / "base" / "base.yaml")]
    hashes = input_hashes(sources)
    assert (
        hashes[str(repo / "base" / "common.yaml")]
        == hashlib.sha256((repo / "base" / "common.yaml").read_bytes()).hexdigest()
    )
    made = dataclasses.replace(generation(1, deployment("web", "shop:1")), sources=sources, inputs=hashes)
    assert generation_of(record_manifest(*fitted(made))) == made
    cut, _ = fitted(made, limit=10)  # too big: sources go, the inputs' hashes stay
    assert (cut.sources, cut.inputs) == ({}, hashes)
    assert f"  {repo / 'base' / 'common.yaml'}  sha256:{hashes[str(repo / 'base' / 'common.yaml')]}" in (
        generation_text(made).splitlines()
    )


def test_diff_generations_names_the_input_file_that_changed() -> None:
    old = dataclasses.replace(
        generation(1), inputs={"env/prod.yaml": "a", "base.yaml": "b", "gone.yaml": "c"}
    )
    new = dataclasses.replace(generation(2), inputs={"env/prod.yaml": "a", "base.yaml": "B", "new.yaml": "d"})
    assert changed_inputs(old, new) == [
        ("base.yaml", "changed"),
        ("gone.yaml", "removed"),
        ("new.yaml", "added"),
    ]
    assert changed_inputs(generation(1), new) == []  # recorded before inputs were: nothing to say
    compared = GenerationDiff(
        plan="shop",
        namespace="shop",
        old=old,
        new=new,
        objects=diff_closures(old, new),
        inputs=changed_inputs(old, new),
    )
    assert diff_text(compared).splitlines()[1:4] == [
        "  input changed: base.yaml",
        "  input removed: gone.yaml",
        "  input added: new.yaml",
    ]
    assert json.loads(diff_json(compared))["inputs"][0] == {"file": "base.yaml", "change": "changed"}

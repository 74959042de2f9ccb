"""The revision a generation records by default: the plan file's commit, `-dirty` when it differs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from planner.app.history import REVISION_ENVIRONMENT, source_revision


def git(directory: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(command, cwd=directory, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    for name in REVISION_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    git(tmp_path, "init", "-q")
    (tmp_path / "plan.yaml").write_text("kind: Plan\n")
    (tmp_path / "other.yaml").write_text("kind: Plan\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "plans")
    return tmp_path, git(tmp_path, "rev-parse", "HEAD")


def test_a_plan_file_as_committed_records_head(checkout: tuple[Path, str]) -> None:
    directory, head = checkout
    (directory / "other.yaml").write_text(
        "kind: Plan\nchanged: true\n"
    )  # another file's change is not this plan's
    assert source_revision(str(directory / "plan.yaml"), None) == head


@pytest.mark.parametrize("how", ["changed", "staged", "untracked"])
def test_a_plan_file_that_differs_from_head_records_head_dirty(checkout: tuple[Path, str], how: str) -> None:
    directory, head = checkout
    plan = directory / ("new.yaml" if how == "untracked" else "plan.yaml")
    plan.write_text("kind: Plan\nchanged: true\n")
    if how == "staged":
        git(directory, "add", "plan.yaml")
    assert source_revision(str(plan), None) == f"{head}-dirty"


def test_a_given_revision_is_taken_as_it_is(checkout: tuple[Path, str]) -> None:
    directory, _ = checkout
    (directory / "plan.yaml").write_text("changed\n")
    assert source_revision(str(directory / "plan.yaml"), "v1.2") == "v1.2"


def test_a_plan_object_records_no_commit_of_the_checkout_the_controller_runs_in(
    checkout: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, _ = checkout
    (directory / "plan").mkdir()  # where `plan/shop -n shop`, read as a path, would point
    monkeypatch.chdir(directory)
    assert source_revision("plan/shop -n shop", None) is None


def test_a_changed_file_the_plan_imports_makes_the_revision_dirty(checkout: tuple[Path, str]) -> None:
    directory, head = checkout
    (directory / "other.yaml").write_text("kind: Plan\nchanged: true\n")  # imported by plan.yaml
    plan = str(directory / "plan.yaml")
    assert source_revision(plan, None) == head
    assert source_revision(plan, None, imported=[str(directory / "other.yaml")]) == f"{head}-dirty"

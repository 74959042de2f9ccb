"""docs/testing.md's pytest example, run as a user would run it: its files (the fenced blocks that open
with `# <path>`) are written into a fresh directory and a pytest of their own runs there, with
`planner` and kubectl on PATH. Here against the embedded cluster (`embedded_kubeconfig` swapped in, as
the doc says it can be); tests/real/test_testing_docs.py runs it as written against the real tier's
control plane. Changing the example changes what runs here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from markdown_it import MarkdownIt

from tests.paths import REPO

TESTING = REPO / "docs" / "testing.md"


def example_files() -> dict[str, str]:
    """The example's files by path: each fenced block whose first line is `# <path>`."""
    tokens = MarkdownIt("commonmark").parse(TESTING.read_text())
    files: dict[str, str] = {}
    for token in tokens:
        first = token.content.split("\n", 1)[0] if token.type == "fence" else ""
        if first.startswith("# ") and first.endswith((".py", ".yaml")):
            files[first.removeprefix("# ")] = token.content
    return files


def run_example(
    project: Path, *, env: dict[str, str], fixture: str = "real_kubeconfig"
) -> subprocess.CompletedProcess[str]:
    """Write the example into `project` (its tests taking `fixture`) and run pytest there."""
    for name, text in example_files().items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("real_kubeconfig", fixture))
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    environment = {"PATH": path, "HOME": str(project), "LANG": "C.UTF-8", **env}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        command, cwd=project, env=environment, capture_output=True, text=True, check=False, timeout=300
    )


def test_the_example_has_a_conftest_a_plan_and_a_test() -> None:
    assert sorted(example_files()) == ["conftest.py", "plans/hello.yaml", "test_hello.py"]


def test_the_example_passes_against_the_embedded_cluster(tmp_path: Path) -> None:
    ran = run_example(tmp_path, env={}, fixture="embedded_kubeconfig")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout, ran.stdout

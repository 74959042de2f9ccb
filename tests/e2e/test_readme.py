"""The README's first session, run as a new user pastes it: the console block under "A first session"
is read from README.md and its commands run verbatim, in order, in one bash shell, against the embedded
cluster the first of them starts (with a temporary HOME, so the cluster's state and kubeconfig are the
test's own). Changing the README changes what runs here; a command that stops working fails here."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import REPO


def first_session() -> list[str]:
    """The commands of the README's first session, as written (their `# …` comments included)."""
    section = (REPO / "README.md").read_text().split("\n## A first session\n", 1)[1]
    block = section.split("```console\n", 1)[1].split("\n```", 1)[0]
    return [line.removeprefix("$ ") for line in block.splitlines() if line.startswith("$ ")]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    yield home
    # Whatever happened, the cluster the session started is stopped (a no-op after its own `cluster down`).
    subprocess.run(
        [sys.executable, "-m", "planner", "cluster", "down"], env=environment(home), capture_output=True
    )


def environment(home: Path) -> dict[str, str]:
    """A new user's shell: `planner` and kubectl on PATH, nothing else configured."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}


def script(commands: list[str], out: Path, *, before_last: str) -> str:
    """Each command in a `{ …; }` group (so `eval` exports into the shell itself) with its output and exit
    code kept per step; the first failure ends the session. `before_last` runs before the last command."""
    lines = ["set -u"]
    for index, command in enumerate(commands):
        if index == len(commands) - 1:
            lines.append(before_last)
        step = shlex.quote(str(out / str(index)))
        lines += [
            "{",
            command,
            f"}} > {step}.out 2> {step}.err",
            f"rc=$?; echo $rc > {step}.rc; [ $rc -eq 0 ] || exit $rc",
        ]
    return "\n".join(lines) + "\n"


def test_the_readmes_first_session_works_verbatim(home: Path, tmp_path: Path) -> None:
    commands = first_session()
    assert commands[0].startswith('eval "$(planner cluster up)"') and commands[-1] == "planner cluster down"
    out = tmp_path / "steps"
    out.mkdir()
    # Before `cluster down`, the test's own look at the cluster, through kubectl (never planner's reader).
    look = f"kubectl --cache-dir={tmp_path / 'cache'} get deployment web -n shop -o json > {out / 'web.json'}"
    session = subprocess.run(
        ["bash", "-c", script(commands, out, before_last=look)],
        cwd=REPO,
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=900,
    )
    steps = {
        command: ((out / f"{i}.out").read_text(), (out / f"{i}.err").read_text())
        for i, command in enumerate(commands)
        if (out / f"{i}.rc").exists()
    }
    assert session.returncode == 0, (session.stderr, steps)
    validate, plan, apply, status, stateful, stateful_status, stop, down = (steps[c][0] for c in commands[1:])
    assert (
        validate.splitlines()[-1]
        == "plans/web-stack.yaml: plan shop is valid (2 workloads, 1 configMaps, 1 secrets)"
    )
    assert "  + create deployment/shop/web" in plan.splitlines()
    assert "ContainerStarted" in apply and "k8s-shop|deployment|web" in apply
    assert any(line.startswith("k8s-shop|deployment|web") and " 2/2 " in line for line in status.splitlines())
    assert "statefulset/notes/db: ready (ready 1/1)" in stateful and " 0 failed, 0 skipped" in stateful, (
        stateful
    )
    rows = {line.split()[0]: line for line in stateful_status.splitlines() if line.startswith("k8s-notes")}
    assert " 1/1 " in rows["k8s-notes|statefulset|db"], stateful_status
    assert "0 3 * * *" in rows["k8s-notes|cronjob|backup"], stateful_status
    assert "k8s-shop|deployment|web" in stop
    assert json.loads((out / "web.json").read_text())["spec"]["replicas"] == 0  # stopped: scaled to 0
    assert down.strip() == "stopped"


def environments_session() -> list[str]:
    """The commands of the README's environments block, as written."""
    section = (REPO / "README.md").read_text().split("\nEnvironments: ", 1)[1]
    block = section.split("```console\n", 1)[1].split("\n```", 1)[0]
    return [line.removeprefix("$ ") for line in block.splitlines() if line.startswith("$ ")]


def test_the_readmes_environments_block_works_verbatim(home: Path, tmp_path: Path) -> None:
    """Run on a cluster of its own (the block follows the first session, which ends with `cluster down`)."""
    commands = ['eval "$(planner cluster up)"', *environments_session(), "planner cluster down"]
    out = tmp_path / "steps"
    out.mkdir()
    kubectl = f"kubectl --cache-dir={tmp_path / 'cache'}"
    look = (
        f"{kubectl} get deployments -A -o json > {out / 'deployments.json'}; "
        f"{kubectl} get plan shop-production -n shop-production -o json > {out / 'plan.json'}"
    )
    session = subprocess.run(
        ["bash", "-c", script(commands, out, before_last=look)],
        cwd=REPO,
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=900,
    )
    steps = {
        command: ((out / f"{i}.out").read_text(), (out / f"{i}.err").read_text())
        for i, command in enumerate(commands)
        if (out / f"{i}.rc").exists()
    }
    assert session.returncode == 0, (session.stderr, steps)
    _, apply, explain, plan, _, built, _ = (steps[c][0] for c in commands)
    assert "Plan shop-staging (namespace shop-staging): " in apply and " 0 failed" in apply, apply
    assert "name: shop-staging  # staging.yaml:" in explain, explain
    assert "No changes. The cluster matches plan shop-production." in plan, plan
    assert built.strip() == "plan.planner.dev/shop-production created", built
    deployed = json.loads((out / "deployments.json").read_text())["items"]
    assert {d["metadata"]["namespace"] for d in deployed} >= {"shop-staging", "shop-production"}
    assert json.loads((out / "plan.json").read_text())["metadata"]["name"] == "shop-production"

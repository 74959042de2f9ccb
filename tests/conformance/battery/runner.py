"""Running the battery: one kubectl binary, one cluster, the steps in order."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from tests.conformance.battery.shapes import Output, Result, Step, normalise
from tests.conformance.battery.steps import steps


def kubectl_path(version: str) -> Path | None:
    found = subprocess.run(["sh", "-c", "command -v kubectl"], capture_output=True, text=True).stdout.strip()
    if not found:
        return None
    candidate = Path(os.path.realpath(found)).parent / f"kubectl.{version}"
    return candidate if candidate.exists() else None


def served(kubectl: list[str]) -> set[str]:
    """ "group/version resource" for every resource the server lists in discovery."""
    found: set[str] = set()
    core = json.loads(
        subprocess.run([*kubectl, "get", "--raw", "/api/v1"], capture_output=True, text=True).stdout
    )
    found |= {f"v1 {r['name']}" for r in core["resources"]}
    groups = json.loads(
        subprocess.run([*kubectl, "get", "--raw", "/apis"], capture_output=True, text=True).stdout
    )
    for group in groups["groups"]:
        for version in group["versions"]:
            listing = subprocess.run(
                [*kubectl, "get", "--raw", f"/apis/{version['groupVersion']}"], capture_output=True, text=True
            )
            found |= {
                f"{version['groupVersion']} {r['name']}" for r in json.loads(listing.stdout)["resources"]
            }
    return found


def run(binary: Path, kubeconfig: Path, workdir: Path) -> Iterator[Result]:
    """Run every step in order; yields each result as it completes."""
    config = workdir / "kubeconfig"
    config.write_text(kubeconfig.read_text())
    kubectl = [str(binary), "--kubeconfig", str(config), "--cache-dir", str(workdir / "cache")]
    available = served(kubectl)
    for step in steps():
        missing = [need for need in step.needs if need not in available]
        if missing:
            yield Result(step, skipped=f"the server does not serve {', '.join(missing)}")
            continue
        yield _run_step(step, kubectl, workdir)


def _run_step(step: Step, kubectl: list[str], workdir: Path) -> Result:
    env = {**os.environ}
    if step.editor is not None:
        editor = workdir / "editor.sh"
        editor.write_text(f"#!/bin/sh\nsed -i '{step.editor}' \"$1\"\n")
        editor.chmod(0o755)
        env["KUBE_EDITOR"] = str(editor)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*kubectl, *step.args], input=step.stdin, capture_output=True, text=True, timeout=120, env=env
        )
    except subprocess.TimeoutExpired:
        return Result(step, ["timed out after 120 s"], seconds=time.monotonic() - started)
    out = Output(done.returncode, normalise(done.stdout), normalise(done.stderr), done.stdout)
    problems = (
        [] if out.code == step.code else [f"exit code {out.code}, wanted {step.code}; stderr:\n{out.stderr}"]
    )
    for check in step.checks:
        problems += check(out)
    return Result(step, problems, seconds=time.monotonic() - started)

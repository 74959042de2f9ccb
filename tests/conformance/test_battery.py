"""The kubectl battery (`battery.py`) with kubectl 1.27, 1.31 and 1.33: one simulated cluster per version,
the commands in order against it, every exit code and normalised output as expected. Steps needing a kind
the server does not serve are skipped, with their reasons in one warning per version."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from planner.slim.cluster import running_cluster
from tests.conformance import battery
from tests.simulated import SCALE

VERSIONS = ("1.27", "1.31", "1.33")


def test_the_battery_runs_at_least_sixty_kubectl_commands() -> None:
    assert len(battery.steps()) >= 60


@pytest.mark.parametrize("version", VERSIONS, ids=[f"kubectl {v}" for v in VERSIONS])
def test_every_battery_command_behaves_as_against_a_real_server(version: str, tmp_path: Path) -> None:
    binary = battery.kubectl_path(version)
    if binary is None:
        pytest.skip(f"kubectl.{version} is not installed beside kubectl")
    with running_cluster(simulate=True, time_scale=SCALE) as cluster:
        results = list(battery.run(binary, cluster.kubeconfig, tmp_path))
    skipped = [f"{r.step.name} ({r.skipped})" for r in results if r.skipped]
    if skipped:
        warnings.warn(f"kubectl {version} skipped: " + "; ".join(skipped), stacklevel=1)
    failures = [
        f"kubectl {' '.join(r.step.args)} ({r.step.name}):\n" + "\n".join(r.problems)
        for r in results
        if r.problems
    ]
    assert not failures, f"{len(failures)} of {len(results)} steps failed:\n\n" + "\n\n".join(failures)

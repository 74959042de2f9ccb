"""docs/testing.md's pytest example as written (`real_kubeconfig`), against a real control plane: the
run's shared one, handed over through `$PLANNER_TEST_KUBECONFIG` as the doc describes, so no second
control plane starts. Its plan's namespace, `hello`, is no other test's; it is deleted afterwards."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_testing_docs import run_example
from tests.real.conftest import Runner
from tests.realplane import RealCluster


def test_the_example_passes_against_a_real_control_plane(
    cluster: RealCluster, kubectl: Runner, tmp_path: Path
) -> None:
    try:
        ran = run_example(tmp_path, env={"PLANNER_TEST_KUBECONFIG": str(cluster.kubeconfig)})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "1 passed" in ran.stdout, ran.stdout
    finally:
        kubectl("delete", "namespace", "hello", "--ignore-not-found", "--wait=false")

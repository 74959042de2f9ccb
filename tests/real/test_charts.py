"""A Helm chart and a Kustomize overlay on a real kube-apiserver v1.28.7, as the e2e tier runs them on
the embedded cluster (tests/e2e/test_charts.py, tests/e2e/test_kustomize.py): hooks in order (a hook
that is no Job deleted after its phase ran), the cluster's own `.Capabilities`, an upgrade that prunes,
history and rollback; an overlay applied and an object it drops pruned; a chart value changed in an
environment file shown in `plan` with its origin. Checked through kubectl.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_charts import check_chart_lifecycle, check_chart_values, check_other_hook_deleted
from tests.e2e.test_kustomize import check_overlay_lifecycle
from tests.real.conftest import Runner


def test_a_chart_applies_upgrades_prunes_and_rolls_back_on_a_real_api_server(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_chart_lifecycle(planner, kubectl, namespace, tmp_path)


def test_a_hook_that_is_no_job_is_deleted_after_its_phase_ran_on_a_real_api_server(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_other_hook_deleted(planner, kubectl, namespace, tmp_path)


def test_a_chart_value_change_shows_in_plan_with_its_origin_on_a_real_api_server(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_chart_values(planner, kubectl, namespace, tmp_path)


def test_a_kustomize_overlay_applies_and_prunes_on_a_real_api_server(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_overlay_lifecycle(planner, kubectl, namespace, tmp_path)

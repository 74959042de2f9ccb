"""Kustomize directories end to end: a base and a prod overlay (tests/data/kustomize) rendered by
`kubectl kustomize`, applied as members of the plan's ApplySet on the embedded cluster, found unchanged
by a second plan, and an object taken out of the overlay pruned. Everything is checked through kubectl.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan

DATA = Path(__file__).parent.parent / "data" / "kustomize"
PART_OF = "applyset.kubernetes.io/part-of"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:  # Deployments become ready
        yield handle


def get_json(kubectl: Runner, *args: str) -> dict[str, object]:
    result = kubectl("get", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_an_overlay_applies_as_plan_members_and_an_object_it_drops_is_pruned(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_overlay_lifecycle(planner, kubectl, namespace, tmp_path)


def check_overlay_lifecycle(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> None:
    """Plan, apply, a second plan with nothing to do, and a prune (the real tier runs it too)."""
    shutil.copytree(DATA, tmp_path / "k8s")
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: kz, namespace: {namespace}}}\n"
        "kustomize:\n  - path: k8s/overlays/prod\n",
    )

    shown = planner("plan", str(plan))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    for created in ("deployment/web", "service/web", "configmap/extra", "configmap/settings-"):
        assert f"+ create {created.replace('/', f'/{namespace}/')}" in shown.stdout, shown.stdout

    applied = planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    web = get_json(kubectl, "deployment", "web", "-n", namespace)
    assert web["spec"]["replicas"] == 2  # type: ignore[index]  # the overlay's patch
    labels = web["metadata"]["labels"]  # type: ignore[index]
    assert labels["tier"] == "prod" and labels[PART_OF].startswith("applyset-")
    settings = get_json(kubectl, "configmap", "-n", namespace, "-l", "tier=prod")
    names = sorted(item["metadata"]["name"] for item in settings["items"])  # type: ignore[attr-defined]
    assert names[0] == "extra" and names[1].startswith("settings-"), names  # the generator's hashed name
    assert get_json(kubectl, "service", "web", "-n", namespace)["spec"]["ports"][0]["port"] == 80  # type: ignore[index]

    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    overlay = tmp_path / "k8s" / "overlays" / "prod" / "kustomization.yaml"
    overlay.write_text(overlay.read_text().replace("  - extra.yaml\n", ""))
    pruned = planner("apply", str(plan), "--timeout", "60s")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    gone = kubectl("get", "configmap", "extra", "-n", namespace)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    assert kubectl("get", "deployment", "web", "-n", namespace).returncode == 0

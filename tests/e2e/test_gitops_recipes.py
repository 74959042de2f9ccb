"""docs/gitops.md's scheduled-reconcile recipes, run as written against the embedded cluster.

The CronJob's container command and the systemd unit's ExecStart run with only their paths moved
(`/plans`, `/srv/plans` and the metrics file into a temporary directory, `planner` as this checkout's
`python -m planner`). The embedded cluster does not enforce RBAC, so the Role and ClusterRole next to
the CronJob are checked against what the run really did instead: every (verb, resource) in the
server's request accounting for the runs must be granted by one of their rules — cluster-scoped
resources by the ClusterRole.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from ruamel.yaml import YAML

from planner.slim.admin import SlimAdmin
from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import http
from tests.paths import REPO

GITOPS = REPO / "docs" / "gitops.md"
CLUSTER_SCOPED = frozenset({"namespaces", "storageclasses", "nodes", "persistentvolumes"})
TIME_SCALE = 0.2


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True) as handle:
        yield handle


def fences(language: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(GITOPS.read_text())
    return [token.content for token in tokens if token.type == "fence" and token.info == language]


def manifests() -> list[dict[str, Any]]:
    (block,) = [text for text in fences("yaml") if "kind: CronJob" in text]
    return [document for document in YAML(typ="safe").load_all(block) if document]


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [document for document in manifests() if document["kind"] == kind]


def unit(name: str) -> str:
    (text,) = [text for text in fences("ini") if text.startswith(f"# /etc/systemd/system/{name}")]
    return text


def shop(namespace: str, *, image: str, config_maps: tuple[str, ...]) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "configMaps:\n"
        + "".join(f"  - {{name: {name}, data: {{A: b}}}}\n" for name in config_maps)
        + (
            "secrets:\n  - {name: token, data: {token: t0k3n}}\n"
            "workloads:\n"
            f"  - {{name: migrate, kind: job, image: '{image}'}}\n"
            f"  - {{name: web, image: '{image}', port: 8080, expose: true, dependsOn: [migrate]}}\n"
        )
    )


def run(command: list[str], *, cluster: ClusterHandle, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def as_run_here(command: list[str], moves: dict[str, str]) -> list[str]:
    """The recipe's command with `planner` as this checkout's and its paths moved."""
    assert Path(command[0]).name == "planner", command
    return [sys.executable, "-m", "planner", *(moves.get(arg, arg) for arg in command[1:])]


def granted(rules: list[dict[str, Any]], verb: str, resource: str) -> bool:
    return any(
        resource in rule["resources"] and (verb in rule["verbs"] or "*" in rule["verbs"]) for rule in rules
    )


def test_the_cronjobs_command_reconciles_and_its_role_grants_every_request_the_runs_made(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    (cronjob,) = of_kind("CronJob")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = container["volumeMounts"]
    (role,), (cluster_role,) = of_kind("Role"), of_kind("ClusterRole")
    (account,) = of_kind("ServiceAccount")
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    bound = {
        (b["kind"], b["roleRef"]["name"]) for b in of_kind("RoleBinding") + of_kind("ClusterRoleBinding")
    }
    assert bound == {
        ("RoleBinding", role["metadata"]["name"]),
        ("ClusterRoleBinding", cluster_role["metadata"]["name"]),
    }
    plans = tmp_path / "plans"
    plans.mkdir()
    command = as_run_here(container["command"] + container.get("args", []), {mount["mountPath"]: str(plans)})
    admin = SlimAdmin(cluster.url)
    before = admin.request_counts()

    # A first run creates everything; the next one changes an image and prunes a ConfigMap.
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings", "old")))
    first = run(command, cluster=cluster, home=home)
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.28", config_maps=("settings",)))
    second = run(command, cluster=cluster, home=home)

    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/old")[0] == 404
    used = {
        (verb, resource)
        for (verb, resource, code), n in admin.request_counts().items()
        if n > before.get((verb, resource, code), 0) and resource
    }
    assert {("create", "deployments"), ("patch", "deployments"), ("delete", "configmaps")} <= used
    assert ("watch", "jobs") in used and ("update", "leases") not in used  # waited; no renewal needed
    namespaced, cluster_wide = role["rules"], cluster_role["rules"]
    missing = sorted(
        (verb, resource)
        for verb, resource in used
        if not granted(cluster_wide, verb, resource)
        and (resource in CLUSTER_SCOPED or not granted(namespaced, verb, resource))
    )
    assert missing == [], f"the run made requests its Role does not grant: {missing}"


def test_the_systemd_units_execstart_reconciles_and_writes_its_metrics(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    service, timer = unit("planner-reconcile.service"), unit("planner-reconcile.timer")
    lines = dict(
        line.split("=", 1) for line in service.splitlines() if "=" in line and not line.startswith("#")
    )
    assert (lines["Type"], lines["SuccessExitStatus"]) == ("oneshot", "3")
    assert "OnUnitInactiveSec=10min" in timer.splitlines()
    command = shlex.split(lines["ExecStart"])
    plans, metrics = tmp_path / "plans", tmp_path / "planner.prom"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))
    moves = {"/srv/plans": str(plans), "/var/lib/node_exporter/textfile_collector/planner.prom": str(metrics)}

    result = run(as_run_here(command, moves), cluster=cluster, home=home)

    assert result.returncode == 0, result.stdout + result.stderr
    assert f'planner_reconcile_failed{{namespace="{namespace}",plan="shop"}} 0.0' in metrics.read_text()

"""docs/gitops.md's scheduled-reconcile recipes, run as written against the embedded cluster.

The CronJob's container command and the systemd unit's ExecStart run with only their paths moved
(`/plans`, `/srv/plans` and the metrics file into a temporary directory, `planner` as this checkout's
`python -m planner`). The cluster enforces RBAC, and the CronJob's command runs as its ServiceAccount:
the ServiceAccount, Role, RoleBinding, ClusterRole and ClusterRoleBinding next to it are created as
written (moved into the test's namespace), and the run authenticates with a token issued for that
ServiceAccount, so it may do exactly what they grant. The server's request log then shows that no
request of the runs was refused (planner carries on past some refusals, such as reading StorageClasses,
so converging alone would not prove the Role complete) and that they made the writes the recipe is for;
a Role without its Lease rule cannot reconcile at all.
"""

from __future__ import annotations

import json
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
from planner.slim.cluster import ClusterHandle, running_cluster, write_kubeconfig
from tests.e2e.conftest import http
from tests.paths import REPO

GITOPS = REPO / "docs" / "gitops.md"
TIME_SCALE = 0.2


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True, rbac=True) as handle:
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


def run(command: list[str], *, kubeconfig: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(kubeconfig)}
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def as_run_here(command: list[str], moves: dict[str, str]) -> list[str]:
    """The recipe's command with `planner` as this checkout's and its paths moved."""
    assert Path(command[0]).name == "planner", command
    return [sys.executable, "-m", "planner", *(moves.get(arg, arg) for arg in command[1:])]


COLLECTIONS = {
    "ServiceAccount": "/api/v1/namespaces/{namespace}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def moved(document: dict[str, Any], namespace: str) -> dict[str, Any]:
    """`document` with the recipe's namespace (`shop`) replaced by `namespace`, and a cluster-scoped
    object's name made the namespace's own (one cluster serves every test of the module)."""
    written = json.loads(json.dumps(document).replace('"namespace": "shop"', f'"namespace": "{namespace}"'))
    if "namespace" not in written["metadata"]:
        written["metadata"]["name"] = f"{written['metadata']['name']}-{namespace}"
        if "roleRef" in written:
            written["roleRef"]["name"] = f"{written['roleRef']['name']}-{namespace}"
    return written


def as_the_service_account(
    cluster: ClusterHandle, namespace: str, tmp_path: Path, *, without_rules_for: str | None = None
) -> tuple[Path, str]:
    """Create the recipe's ServiceAccount and roles (less the Role's rules for `without_rules_for`, a
    resource) in `namespace` as the admin; a kubeconfig holding a token issued for that ServiceAccount,
    and the user the server knows it as."""
    (account,) = of_kind("ServiceAccount")
    for kind, path in COLLECTIONS.items():
        for document in of_kind(kind):
            body = moved(document, namespace)
            if kind == "Role" and without_rules_for is not None:
                body["rules"] = [r for r in body["rules"] if without_rules_for not in r["resources"]]
            status, created = http(cluster, "POST", path.format(namespace=namespace), body)
            assert status == 201, created
    name = account["metadata"]["name"]
    status, issued = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {})
    assert status == 201, issued
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cluster.url, issued["status"]["token"], cluster.ca)
    return kubeconfig, f"system:serviceaccount:{namespace}:{name}"


def cronjob_command(plans: Path) -> list[str]:
    (cronjob,) = of_kind("CronJob")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = container["volumeMounts"]
    return as_run_here(container["command"] + container.get("args", []), {mount["mountPath"]: str(plans)})


def test_the_recipes_roles_are_bound_to_the_cronjobs_service_account() -> None:
    (cronjob,) = of_kind("CronJob")
    (role,), (cluster_role,), (account,) = of_kind("Role"), of_kind("ClusterRole"), of_kind("ServiceAccount")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    bindings = of_kind("RoleBinding") + of_kind("ClusterRoleBinding")
    assert {(b["kind"], b["roleRef"]["name"]) for b in bindings} == {
        ("RoleBinding", role["metadata"]["name"]),
        ("ClusterRoleBinding", cluster_role["metadata"]["name"]),
    }
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "shop"}
    assert all(b["subjects"] == [subject] for b in bindings)


def test_the_cronjobs_command_reconciles_as_its_service_account_and_no_request_is_refused(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path)
    plans = tmp_path / "plans"
    plans.mkdir()
    command = cronjob_command(plans)

    # A first run creates everything; the next one changes an image and prunes a ConfigMap.
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings", "old")))
    first = run(command, kubeconfig=kubeconfig, home=home)
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.28", config_maps=("settings",)))
    second = run(command, kubeconfig=kubeconfig, home=home)

    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr
    assert "warning" not in first.stderr + second.stderr
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/old")[0] == 404
    web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")[1]
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    requests = SlimAdmin(cluster.url, token=cluster.token, ca=cluster.ca).requests(user=user)
    refused = sorted({(r["verb"], r["resource"], r["code"]) for r in requests if r["code"] in (401, 403)})
    assert refused == [], f"the Role does not grant what the runs asked for: {refused}"
    used = {(r["verb"], r["resource"]) for r in requests}
    assert {("create", "deployments"), ("patch", "deployments"), ("delete", "configmaps")} <= used
    assert {("create", "leases"), ("delete", "leases"), ("list", "storageclasses")} <= used
    assert ("watch", "jobs") in used and ("update", "leases") not in used  # waited; no renewal needed
    assert ("watch", "events") in used  # why a wait would not be over, read through an informer


def test_without_the_roles_lease_rule_the_cronjobs_command_reconciles_nothing(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path, without_rules_for="leases")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))

    result = run(cronjob_command(plans), kubeconfig=kubeconfig, home=home)

    assert result.returncode == 1, result.stdout + result.stderr
    reconciled, _summary = (json.loads(line) for line in result.stdout.splitlines())
    assert (reconciled["plan"], reconciled["result"]) == ("shop", "failed")
    assert reconciled["message"].startswith(
        f'forbidden: leases.coordination.k8s.io is forbidden: User "{user}" cannot create resource "leases" '
        f'in API group "coordination.k8s.io" in the namespace "{namespace}"'
    )
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings")[0] == 404
    requests = SlimAdmin(cluster.url, token=cluster.token, ca=cluster.ca).requests(user=user)
    assert [(r["verb"], r["code"]) for r in requests if r["resource"] == "leases"] == [("create", 403)]


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

    result = run(as_run_here(command, moves), kubeconfig=cluster.kubeconfig, home=home)

    assert result.returncode == 0, result.stdout + result.stderr
    assert f'planner_reconcile_failed{{namespace="{namespace}",plan="shop"}} 0.0' in metrics.read_text()


def test_without_the_roles_events_rule_the_cronjobs_command_still_reconciles_and_says_what_it_misses(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    kubeconfig, user = as_the_service_account(cluster, namespace, tmp_path, without_rules_for="events")
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "shop.yaml").write_text(shop(namespace, image="nginx:1.27", config_maps=("settings",)))

    result = run(cronjob_command(plans), kubeconfig=kubeconfig, home=home)

    assert result.returncode == 0, result.stdout + result.stderr  # reasons help; they are never required
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, result.stderr
    assert warnings[0].startswith(
        f"warning: cannot read events for wait reasons: the events cache ({namespace})"
    )
    assert warnings[0].endswith("; reasons leave out what they say")
    web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web[0] == 200
    requests = SlimAdmin(cluster.url, token=cluster.token, ca=cluster.ca).requests(user=user)
    assert {(r["verb"], r["code"]) for r in requests if r["resource"] == "events"} == {("list", 403)}

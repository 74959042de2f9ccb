"""One way to name a plan in every command that acts on one already applied: a plan file, a directory
of it, `NAME -n NS` or `NS/NAME` (docs/cli.md, "Naming a plan"). history, diff-generations, rollback,
unlock and status run here with each form against a plan applied twice; what they report is checked
against the generation records and the Deployment read through raw HTTP, and a name that is not a plan
name fails with one line before any request reaches the cluster (the server's request log says so)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, http, write_plan


def shop(namespace: str, version: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"workloads:\n  - {{name: web, image: 'shop:{version}'}}\n"
    )


@pytest.fixture(scope="module")
def applied(
    cluster: ClusterHandle, home: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A namespace and the directory of the plan `shop` applied there twice (generations 1 and 2)."""
    namespace = f"sel{os.getpid()}"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert status == 201, body
    directory = tmp_path_factory.mktemp("selector")
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    for version in ("1.0", "2.0"):
        plan = write_plan(directory, shop(namespace, version))
        done = subprocess.run(
            [sys.executable, "-m", "planner", "apply", str(plan), "--no-wait"],
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    yield namespace, directory


SELECTORS = ["file", "directory", "name -n", "ns/name"]


def selector(form: str, namespace: str, directory: Path) -> list[str]:
    return {
        "file": [str(directory / "plan.yaml")],
        "directory": [str(directory)],
        "name -n": ["shop", "-n", namespace],
        "ns/name": [f"{namespace}/shop"],
    }[form]


def recorded_generations(cluster: ClusterHandle, namespace: str) -> list[int]:
    selector = "planner.dev/plan=shop,planner.dev/generation"
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets?labelSelector={selector}")
    assert status == 200, body
    return sorted(int(item["metadata"]["labels"]["planner.dev/generation"]) for item in body["items"])


def web_image(cluster: ClusterHandle, namespace: str) -> str:
    status, body = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert status == 200, body
    image: str = body["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


@pytest.mark.parametrize("form", SELECTORS)
def test_history_and_diff_generations_take_every_form_of_plan_selector(
    cluster: ClusterHandle, planner: Runner, applied: tuple[str, Path], form: str
) -> None:
    namespace, directory = applied
    chosen = selector(form, namespace, directory)

    listed = planner("history", *chosen, "-o", "json")
    compared = planner("diff-generations", *chosen, "1", "2")

    assert listed.returncode == 0, listed.stderr
    document: dict[str, Any] = json.loads(listed.stdout)
    assert (document["plan"], document["namespace"]) == ("shop", namespace)
    assert [g["generation"] for g in document["generations"]] == recorded_generations(cluster, namespace)
    assert compared.returncode == 0, compared.stderr
    assert "shop:1.0 → shop:2.0" in compared.stdout


@pytest.mark.parametrize("form", SELECTORS)
def test_rollback_dry_run_takes_every_form_and_writes_nothing(
    cluster: ClusterHandle, planner: Runner, applied: tuple[str, Path], form: str
) -> None:
    namespace, directory = applied
    planned = planner("rollback", *selector(form, namespace, directory), "--to", "1", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert "shop:2.0" in planned.stdout and "shop:1.0" in planned.stdout
    assert web_image(cluster, namespace) == "shop:2.0"


@pytest.mark.parametrize("form", SELECTORS)
def test_unlock_and_status_take_every_form(
    cluster: ClusterHandle, planner: Runner, applied: tuple[str, Path], form: str
) -> None:
    namespace, directory = applied
    chosen = selector(form, namespace, directory)

    asked = planner("unlock", *chosen)
    forced = planner("unlock", *chosen, "--force")
    shown = planner("status", *chosen, "-o", "json")

    assert (asked.returncode, asked.stdout) == (0, f"plan shop (namespace {namespace}) is not locked\n")
    assert forced.returncode == 1
    assert forced.stderr == (
        f"error: plan shop (namespace {namespace}) is not locked: there is no lock to break\n"
    )
    assert shown.returncode == 0, shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [row["runtime_id"] for row in rows] == [f"k8s-{namespace}|deployment|web"]
    status, _ = http(
        cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-lock-shop"
    )
    assert status == 404


def test_unlock_force_of_a_plan_that_does_not_exist_says_so_and_exits_1(
    planner: Runner, applied: tuple[str, Path]
) -> None:
    namespace, _ = applied
    forced = planner("unlock", f"{namespace}/nothing-here", "--force")
    assert forced.returncode == 1
    assert forced.stderr == (
        f"error: plan nothing-here (namespace {namespace}) does not exist (no ApplySet parent Secret) and is "
        "not locked: there is no lock to break\n"
    )


BAD = [
    ("history", "Shop"),
    ("diff-generations", "my/app.yaml", "1", "2"),
    ("rollback", "shop_1", "--to", "1"),
    ("unlock", "Bad/shop", "--force"),
    ("status", "web_stack"),
]


@pytest.mark.parametrize("args", BAD, ids=[" ".join(args) for args in BAD])
def test_a_name_that_is_not_a_plan_name_fails_in_one_line_before_any_request(
    cluster: ClusterHandle, planner: Runner, args: tuple[str, ...]
) -> None:
    admin = SlimAdmin.of(cluster)
    before = len(admin.requests())
    refused = planner(*args)
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1, refused.stderr
    assert refused.stderr.startswith(f"error: {args[1]!r} is neither a plan file nor ")
    assert len(admin.requests()) == before

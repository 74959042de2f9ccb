"""Fixtures for end-to-end tests: the CLI as a subprocess against an embedded cluster over HTTP.

One in-memory cluster per test module (so modules run in parallel), a fresh namespace per test, and
`planner(...)`/`kubectl(...)` runners pointed at it. Assertions go through kubectl or raw HTTP, never
through planner's own reader, so a shared misreading cannot pass.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen
from tests import clirun, slimcluster
from tests.paths import REPO

_names = itertools.count()

Runner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster() as handle:
        yield handle


def http(cluster: ClusterHandle, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One raw JSON request as the cluster's admin (over TLS, with its token): (status, parsed body)."""
    reply = slimcluster.http(cluster, method, path, body)
    return reply.status, reply.body


def put_retrying(
    cluster: ClusterHandle, path: str, change: Callable[[dict[str, Any]], dict[str, Any]], *, read: str = ""
) -> dict[str, Any]:
    """GET `read` (default: `path`), PUT `change(object)` to `path`, again from a fresh read on a 409, as
    kubectl and client-go's RetryOnConflict do: a controller writing the same object (its status, its
    scale) between the read and the write is no test failure. The object as written."""
    for _ in range(10):
        status, current = http(cluster, "GET", read or path)
        assert status == 200, current
        status, body = http(cluster, "PUT", path, change(current))
        if status != 409:
            break
    assert status == 200, body
    written: dict[str, Any] = body
    return written


def current_rv(cluster: ClusterHandle) -> int:
    """The server's resourceVersion now (one counter for every kind, as etcd's revision)."""
    status, body = http(cluster, "GET", "/api/v1/namespaces?limit=1")
    assert status == 200, body
    return int(body["metadata"]["resourceVersion"])


def events_since(cluster: ClusterHandle, path: str, rv: int) -> list[dict[str, Any]]:
    """Every watch event of a collection after `rv`, replayed from the server's history, in order."""
    with urlopen(cluster, f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=1", timeout=10) as reply:
        return [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]


@pytest.fixture
def namespace(cluster: ClusterHandle) -> str:
    name = f"e{os.getpid()}-{next(_names)}"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


def _environment(kubeconfig: Path | None, home: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return env


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="planner-e2e-home-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def planner(cluster: ClusterHandle, home: Path) -> Runner:
    """Run `planner ARGS` against the module's cluster, in a process of its own forked from this one
    (tests/clirun.py); `cwd` and `env` may be given."""

    def run(
        *args: str, cwd: Path = REPO, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return clirun.run(args, cwd=cwd, env=_environment(cluster.kubeconfig, home) | (env or {}))

    return run


@pytest.fixture
def kubectl(cluster: ClusterHandle, home: Path) -> Runner:
    """Run real kubectl against the module's cluster with a fresh discovery cache."""
    cache = Path(tempfile.mkdtemp(prefix="kubectl-cache-", dir=home))

    def run(
        *args: str, stdin: str | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = ["kubectl", f"--kubeconfig={cluster.kubeconfig}", f"--cache-dir={cache}", *args]
        environment = {**os.environ, **env} if env else None
        return subprocess.run(
            command, input=stdin, env=environment, capture_output=True, text=True, check=False
        )

    return run


def write_plan(directory: Path, text: str, name: str = "plan.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def write_bad_plan_files(directory: Path) -> dict[str, str]:
    """Every kind of `*.yaml` that is no readable regular file, in `directory`: name -> the reason
    planner must give. Unreadable is mode 000, or for root (whom modes do not stop) a link to
    `/proc/self/mem`, whose first page no process has mapped."""
    (directory / "loop.yaml").symlink_to("loop.yaml")
    os.mkfifo(directory / "f.yaml")
    (directory / "zero.yaml").symlink_to("/dev/zero")
    if os.geteuid() == 0:
        (directory / "unreadable.yaml").symlink_to("/proc/self/mem")
        unreadable = "Input/output error"
    else:
        (directory / "unreadable.yaml").write_text("kind: Plan\n")
        (directory / "unreadable.yaml").chmod(0)
        unreadable = "Permission denied"
    return {
        "f.yaml": "a FIFO, not a regular file",
        "loop.yaml": "Too many levels of symbolic links",
        "unreadable.yaml": unreadable,
        "zero.yaml": "a character device, not a regular file",
    }

"""planner.testing without a cluster: where the real control plane finds its binaries (and their cache),
and the node agent's pure status helpers."""

from __future__ import annotations

import hashlib
import lzma
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planner.testing.controlplane import (
    BINARIES_ENV,
    COMPONENTS,
    ControlPlaneUnavailable,
    binaries_directory,
    etcd_binary,
    unpacked_binaries,
)
from planner.testing.simnodes import _same_status, stopped_status


def archives(directory: Path) -> dict[str, bytes]:
    directory.mkdir()
    contents = {name: f"#!/bin/sh\necho {name}\n".encode() for name in COMPONENTS}
    for name, data in contents.items():
        (directory / f"{name}.xz").write_bytes(lzma.compress(data))
    return contents


def test_binaries_are_unpacked_once_under_their_archives_sha256_and_executable(tmp_path: Path) -> None:
    contents = archives(tmp_path / "bin")
    found = unpacked_binaries(tmp_path / "bin", tmp_path / "cache")
    for name, path in found.items():
        digest = hashlib.sha256((tmp_path / "bin" / f"{name}.xz").read_bytes()).hexdigest()
        assert path == tmp_path / "cache" / digest / name
        assert path.read_bytes() == contents[name]
        assert os.access(path, os.X_OK)
    before = {name: path.stat().st_mtime_ns for name, path in found.items()}
    again = unpacked_binaries(tmp_path / "bin", tmp_path / "cache")
    assert {name: path.stat().st_mtime_ns for name, path in again.items()} == before
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*")) == sorted(
        [*COMPONENTS, *(found[n].parent.name for n in COMPONENTS)]
    )


def test_a_missing_archive_says_which(tmp_path: Path) -> None:
    archives(tmp_path / "bin")
    (tmp_path / "bin" / "kube-scheduler.xz").unlink()
    with pytest.raises(ControlPlaneUnavailable, match=r"kube-scheduler\.xz not found"):
        unpacked_binaries(tmp_path / "bin", tmp_path / "cache")


def test_plain_executables_serve_as_they_are_and_nothing_is_cached(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name in COMPONENTS:
        (tmp_path / "bin" / name).write_text("#!/bin/sh\n")
        (tmp_path / "bin" / name).chmod(0o755)
    found = unpacked_binaries(tmp_path / "bin", tmp_path / "cache")
    assert found == {name: tmp_path / "bin" / name for name in COMPONENTS}
    assert not (tmp_path / "cache").exists()


def test_a_binary_that_is_not_executable_is_no_binary(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    for name in COMPONENTS:
        (tmp_path / "bin" / name).write_text("#!/bin/sh\n")
    with pytest.raises(ControlPlaneUnavailable, match=r"kube-apiserver\.xz not found \(nor an executable"):
        unpacked_binaries(tmp_path / "bin", tmp_path / "cache")


def test_the_binaries_directory_is_the_callers_else_the_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BINARIES_ENV, str(tmp_path / "from-env"))
    assert binaries_directory(tmp_path / "given") == tmp_path / "given"
    assert binaries_directory(str(tmp_path / "given")) == tmp_path / "given"
    assert binaries_directory() == tmp_path / "from-env"
    monkeypatch.delenv(BINARIES_ENV)
    with pytest.raises(ControlPlaneUnavailable, match=r"set \$PLANNER_K8S_BIN to a directory holding"):
        binaries_directory()


def test_an_etcd_beside_the_binaries_is_the_one_started(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("#!/bin/sh\n")
    (tmp_path / "etcd").chmod(0o755)
    assert etcd_binary(tmp_path) == tmp_path / "etcd"


def test_a_status_equal_but_for_what_the_server_drops_is_not_written_again() -> None:
    written = {
        "phase": "Running",
        "podIP": "10.244.0.2",
        "conditions": [{"type": "Ready", "lastProbeTime": None}],
    }
    read_back = {"phase": "Running", "podIP": "10.244.0.2", "conditions": [{"type": "Ready"}]}
    assert _same_status(read_back, written)
    assert not _same_status(read_back, {**written, "phase": "Succeeded"})


def test_a_deleted_pods_containers_stop_and_it_is_no_longer_ready() -> None:
    running = {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-02T09:00:00Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-02T09:00:05Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-12-02T09:00:05Z"},
        ],
        "containerStatuses": [
            {
                "name": "app",
                "ready": True,
                "started": True,
                "containerID": "containerd://abc",
                "state": {"running": {"startedAt": "2026-12-02T09:00:00Z"}},
            }
        ],
    }
    at = datetime(2026, 12, 2, 9, 1, 0, tzinfo=UTC).timestamp()

    stopped = stopped_status(running, at)

    unready = {
        "status": "False",
        "lastTransitionTime": "2026-12-02T09:01:00Z",
        "reason": "ContainersNotReady",
        "message": "containers with unready status: [app]",
    }
    assert stopped == {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-12-02T09:00:00Z"},
            {"type": "Ready", **unready},
            {"type": "ContainersReady", **unready},
        ],
        "containerStatuses": [
            {
                "name": "app",
                "ready": False,
                "started": False,
                "containerID": "containerd://abc",
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": "2026-12-02T09:00:00Z",
                        "finishedAt": "2026-12-02T09:01:00Z",
                        "containerID": "containerd://abc",
                    }
                },
            }
        ],
    }
    assert running["containerStatuses"][0]["ready"] is True  # the cached copy is left alone

"""The real control plane's binary cache and the node agent's pure status helpers, without a cluster."""

from __future__ import annotations

import hashlib
import lzma
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planner.slim.realcluster.controlplane import COMPONENTS, ControlPlaneUnavailable, unpacked_binaries
from planner.slim.realcluster.nodeagent import _same_status, stopped_status


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

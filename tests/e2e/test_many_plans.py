"""`planner apply DIR` over many small plans: its threads stay few however many plans (and so run locks)
it holds, it says how far it got before its first write, and an interrupted run leaves no Lease.

The thread count is the kernel's (`Threads:` of /proc/<pid>/status, sampled while the apply runs); the
Leases and ConfigMaps are read through raw HTTP.
"""

from __future__ import annotations

import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle
from tests.e2e.conftest import http
from tests.paths import REPO

PLANS = 240


def write_plans(directory: Path, namespace: str, count: int = PLANS) -> None:
    for index in range(count):
        (directory / f"p{index:03d}.yaml").write_text(
            "apiVersion: planner.dev/v1\nkind: Plan\n"
            f"metadata: {{name: p{index:03d}, namespace: {namespace}}}\n"
            f"configMaps:\n  - {{name: c{index:03d}, data: {{a: '1'}}}}\n"
        )


def threads_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))
    except (OSError, StopIteration):
        return 0  # exited


def start_apply(cluster: ClusterHandle, home: Path, directory: Path) -> subprocess.Popen[bytes]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.Popen(
        [sys.executable, "-m", "planner", "apply", str(directory), "--no-wait"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def follow(process: subprocess.Popen[bytes], *, interrupt_at: str = "") -> tuple[int, str, str, int]:
    """Read the apply's output to the end, sampling its threads between reads; with `interrupt_at`,
    send Ctrl-C (SIGINT) once a line of stderr starts with it. (exit code, stdout, stderr, peak threads)."""
    assert process.stdout is not None and process.stderr is not None
    streams = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    selector = selectors.DefaultSelector()
    for stream in (process.stdout, process.stderr):
        selector.register(stream, selectors.EVENT_READ)
    peak, sent = 0, False
    while selector.get_map():
        peak = max(peak, threads_of(process.pid))
        for key, _ in selector.select(timeout=0.05):
            chunk = key.fileobj.read1(65536)  # type: ignore[union-attr]
            if not chunk:
                selector.unregister(key.fileobj)
                continue
            streams[key.fd] += chunk
            err = streams[process.stderr.fileno()].decode()
            if interrupt_at and not sent and any(line.startswith(interrupt_at) for line in err.splitlines()):
                process.send_signal(signal.SIGINT)
                sent = True
                # Where the output stood when Ctrl-C went out, for a failure to say (a run that went on
                # writing once shows whether the signal came late or was lost).
                streams[process.stderr.fileno()] += b"[test: SIGINT sent here]\n"
    code = process.wait(timeout=120)
    out, err = (streams[s.fileno()].decode() for s in (process.stdout, process.stderr))
    return code, out, err, peak


def leases(cluster: ClusterHandle, namespace: str) -> list[str]:
    status, body = http(cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases")
    assert status == 200, body
    return [item["metadata"]["name"] for item in body["items"]]


def test_an_apply_of_many_plans_keeps_its_threads_few_and_says_how_far_it_got(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    write_plans(tmp_path, namespace)

    code, out, err, peak = follow(start_apply(cluster, home, tmp_path))

    assert code == 0, out + err
    # It holds 240 run locks at once: one thread each would be 240 and more; they share a few.
    assert 0 < peak < PLANS // 4, peak
    progress = err.splitlines()
    assert progress[0] == f"loading plan files: 0/{PLANS}", err
    assert f"taking run locks: {PLANS}/{PLANS}" in progress, err
    assert f"reading the cluster: 0/{PLANS}" in progress, err
    status, listed = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert status == 200, listed
    assert len([item for item in listed["items"] if item["metadata"]["name"].startswith("c")]) == PLANS
    assert leases(cluster, namespace) == []


@pytest.mark.parametrize(
    "phase", ["taking run locks", "reading the cluster"], ids=["while taking the locks", "while planning"]
)
def test_an_interrupted_apply_of_many_plans_leaves_no_lease(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path, phase: str
) -> None:
    write_plans(tmp_path, namespace)

    code, out, err, _ = follow(start_apply(cluster, home, tmp_path), interrupt_at=phase)

    assert code == 1, out + err
    assert any(line.startswith(phase) for line in err.splitlines()), err
    assert leases(cluster, namespace) == []
    # Stopped before its writes: it records no generation of what it did not do (issue 39, item 13).
    selector = "planner.dev/generation"
    status, records = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets?labelSelector={selector}")
    assert status == 200, records
    written = {item["metadata"]["name"].split(".")[1] for item in records["items"]}
    status, made = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert written <= {"p" + item["metadata"]["name"][1:] for item in made["items"]}, (written, made)

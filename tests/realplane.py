"""One real control plane (kube-apiserver v1.28.7 & co., with simulated nodes) shared by a test run.

The pytest process that schedules the run (xdist's controller, or the only process without xdist)
starts it in a background thread at configure time, when the run includes `tests/real` and
`../shared/k8s-bin` exists, so start-up overlaps the other tiers; the workers find it through
`$PLANNER_REAL_DIR`, wait for its `ready.json` (or `failed.txt`) and give each test its own namespace.
It is stopped at unconfigure (and, should that never run, by the control plane's atexit and signal
hooks). Without the binaries the tier is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO

BINARIES = REPO.parent / "shared" / "k8s-bin"
ENV = "PLANNER_REAL_DIR"
WAIT_SECONDS = 180.0
REAL_TESTS = REPO / "tests" / "real"


@dataclass(frozen=True)
class RealCluster:
    url: str
    kubeconfig: Path
    ca: Path
    directory: Path
    audit_log: Path  # every request of a ServiceAccount outside kube-system (JSON lines)


def skip_reason() -> str | None:
    if not (BINARIES / "kube-apiserver.xz").is_file():
        return "../shared/k8s-bin not found: the real control-plane tier needs kube-apiserver & co. there"
    try:
        from planner.testing.controlplane import etcd_binary

        etcd_binary()
    except Exception as exc:
        return f"no etcd: {exc}"
    return None


def wanted(config: pytest.Config) -> bool:
    """Whether this run collects tests/real (by its paths and -m expression)."""
    markers = str(config.option.markexpr or "")
    if markers and ("not real" in markers or "real" not in markers):
        return False
    args = [Path(str(a).split("::")[0]).resolve() for a in config.args] or [REPO / "tests"]
    return any(a == REAL_TESTS or REAL_TESTS in a.parents or a in REAL_TESTS.parents for a in args)


class _Starter:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="planner-real-run-"))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="real-control-plane", daemon=True)

    def _run(self) -> None:
        """Serve the plane until stopped. A port another process took between its pick and its bind
        (`address already in use`, seen under a loaded CI machine) is a new start on new ports."""
        try:
            for attempt in range(3):
                try:
                    self._serve(self.directory / ("plane" if attempt == 0 else f"plane-{attempt}"))
                    return
                except Exception as failed:
                    if "address already in use" not in str(failed) or attempt == 2:
                        raise
        except BaseException:
            (self.directory / "failed.txt").write_text(traceback.format_exc())

    def _serve(self, directory: Path) -> None:
        from kubernetes import config

        from planner.testing.controlplane import running_control_plane
        from planner.testing.simnodes import running_node_agent

        with running_control_plane(BINARIES, directory=directory) as plane:
            api = config.new_client_from_config(str(plane.kubeconfig))
            with running_node_agent(api, nodes=2):
                ready = {
                    "url": plane.url,
                    "kubeconfig": str(plane.kubeconfig),
                    "ca": str(plane.ca),
                    "audit_log": str(plane.audit_log),
                    "startup_seconds": round(plane.startup_seconds, 2),
                }
                (self.directory / "ready.json").write_text(json.dumps(ready))
                self.stop.wait()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)
        shutil.rmtree(self.directory, ignore_errors=True)


_STARTER: _Starter | None = None


def configure(config: pytest.Config) -> None:
    """In the scheduling process: start the shared control plane when this run needs it."""
    global _STARTER
    if hasattr(config, "workerinput") or ENV in os.environ or not wanted(config) or skip_reason():
        return
    _STARTER = _Starter()
    os.environ[ENV] = str(_STARTER.directory)
    _STARTER.thread.start()


def unconfigure() -> None:
    global _STARTER
    if _STARTER is not None:
        _STARTER.close()
        os.environ.pop(ENV, None)
        _STARTER = None


def shared_cluster() -> RealCluster:
    """The run's control plane, once ready; skips the test when there is none."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    directory = os.environ.get(ENV)
    if not directory:
        pytest.skip("the real control plane was not started for this run (run tests/real directly)")
    root = Path(directory)
    deadline = time.monotonic() + WAIT_SECONDS
    while not (root / "ready.json").exists():
        if (root / "failed.txt").exists():
            pytest.fail("the real control plane failed to start:\n" + (root / "failed.txt").read_text())
        if time.monotonic() > deadline:
            pytest.fail(f"the real control plane was not ready within {WAIT_SECONDS:g} s")
        time.sleep(0.2)
    ready = json.loads((root / "ready.json").read_text())
    return RealCluster(
        ready["url"], Path(ready["kubeconfig"]), Path(ready["ca"]), root, Path(ready["audit_log"])
    )

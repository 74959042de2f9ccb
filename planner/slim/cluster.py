"""Starting, finding and stopping the embedded cluster: the functions `planner cluster …` calls.

`up` starts `python -m planner.slim serve` detached, waits for /readyz, and leaves three files in the
data directory: `server.pid`, `server.port` and `kubeconfig` (context `planner-embedded`), plus
`server.mode` ("memory" or "disk") and `server.log`. `status` trusts those files only while the pid
is alive and /readyz answers. `running_cluster` is the test fixture's context manager: an in-memory
server in a subprocess (so tests do not share the GIL with it) on a free port.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.slim.runtime import FULL_RESYNC_SECONDS
from planner.slim.server import DB_NAME, HOST

CONTEXT = "planner-embedded"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
STATE_FILES = ("server.pid", "server.port", "server.mode", "server.portfile", "kubeconfig", "server.log")


@dataclass(frozen=True)
class ClusterInfo:
    pid: int
    port: int
    url: str
    kubeconfig: Path
    data_dir: Path
    memory: bool


@dataclass(frozen=True)
class ClusterHandle:
    url: str
    kubeconfig: Path
    port: int
    pid: int


def default_data_dir() -> Path:
    state_home = os.environ.get("XDG_STATE_HOME")
    base = Path(state_home) if state_home else Path.home() / ".local" / "state"
    return base / "planner" / "cluster"


def _resolve(data_dir: Path | None) -> Path:
    return (data_dir or default_data_dir()).expanduser().resolve()


def kubeconfig_document(url: str, token: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}
        ],
        "current-context": CONTEXT,
        "users": [{"name": CONTEXT, "user": {"token": token} if token else {}}],
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, token: str | None) -> Path:
    path.write_text(json.dumps(kubeconfig_document(url, token), indent=2) + "\n")
    path.chmod(0o600)
    return path


def ready(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=timeout) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _serve_command(
    *,
    port: int,
    data_dir: Path | None,
    memory: bool,
    token: str | None,
    port_file: Path,
    extra: list[str] | None = None,
) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "planner.slim",
        "serve",
        "--port",
        str(port),
        "--port-file",
        str(port_file),
    ]
    if memory:
        command.append("--memory")
    if data_dir is not None:
        command += ["--data", str(data_dir)]
    if token:
        command += ["--token", token]
    return command + (extra or [])


def _child_env() -> dict[str, str]:
    """The environment for the server process, able to import planner even when it is not installed."""
    env = dict(os.environ)
    source_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH", "")) if p)
    return env


def _wait_for_port(process: subprocess.Popen[bytes], port_file: Path, log: Path | None) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if port_file.exists():
            port = int(port_file.read_text())
            if ready(f"http://{HOST}:{port}"):
                return port
        if process.poll() is not None:
            detail = log.read_text()[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"embedded cluster exited with code {process.returncode}\n{detail}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("embedded cluster did not become ready in time")


# --- the CLI's functions ------------------------------------------------------------------------------


def status(*, data_dir: Path | None) -> ClusterInfo | None:
    root = _resolve(data_dir)
    try:
        pid = int((root / "server.pid").read_text())
        port = int((root / "server.port").read_text())
    except (OSError, ValueError):
        return None
    url = f"http://{HOST}:{port}"
    if not _alive(pid) or not ready(url):
        return None
    memory = (root / "server.mode").exists() and (root / "server.mode").read_text().strip() == "memory"
    return ClusterInfo(pid, port, url, root / "kubeconfig", root, memory)


def up(
    *,
    data_dir: Path | None,
    port: int | None,
    memory: bool,
    token: str | None = None,
    time_scale: float = 1.0,
    resync_seconds: float = FULL_RESYNC_SECONDS,
) -> ClusterInfo:
    running = status(data_dir=data_dir)
    if running is not None:
        return running
    root = _resolve(data_dir)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)  # it will hold every Secret
    port_file = root / "server.portfile"
    port_file.unlink(missing_ok=True)
    log = root / "server.log"
    extra = ["--time-scale", str(time_scale)] if time_scale != 1.0 else []
    if resync_seconds != FULL_RESYNC_SECONDS:
        extra += ["--resync-seconds", str(resync_seconds)]
    command = _serve_command(
        port=port or 0, data_dir=root, memory=memory, token=token, port_file=port_file, extra=extra
    )
    with log.open("ab") as log_stream:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_stream,
            stderr=log_stream,
            start_new_session=True,
            env=_child_env(),
        )
    bound = _wait_for_port(process, port_file, log)
    url = f"http://{HOST}:{bound}"
    (root / "server.pid").write_text(str(process.pid))
    (root / "server.port").write_text(str(bound))
    (root / "server.mode").write_text("memory" if memory else "disk")
    kubeconfig = write_kubeconfig(root / "kubeconfig", url, token)
    return ClusterInfo(process.pid, bound, url, kubeconfig, root, memory)


def down(*, data_dir: Path | None) -> bool:
    root = _resolve(data_dir)
    try:
        pid = int((root / "server.pid").read_text())
    except (OSError, ValueError):
        return False
    was_running = _alive(pid)
    if was_running:
        _stop_pid(pid)
    for name in ("server.pid", "server.port", "server.portfile", "server.mode"):
        (root / name).unlink(missing_ok=True)
    return was_running


def _stop_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def reset(*, data_dir: Path | None) -> None:
    root = _resolve(data_dir)
    down(data_dir=root)
    for name in (*STATE_FILES, DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
        (root / name).unlink(missing_ok=True)


def serve(
    *,
    data_dir: Path | None,
    port: int,
    memory: bool,
    token: str | None,
    time_scale: float = 1.0,
    resync_seconds: float = FULL_RESYNC_SECONDS,
) -> None:
    """Foreground server (blocks until SIGINT/SIGTERM)."""
    from planner.slim.server import ServerOptions, serve_forever

    root = None if memory and data_dir is None else _resolve(data_dir)
    options = ServerOptions(
        port=port,
        data_dir=root,
        memory=memory,
        token=token,
        time_scale=time_scale,
        resync_seconds=resync_seconds,
    )
    serve_forever(options)


# --- tests --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def running_cluster(*, time_scale: float = 1.0, **options: Any) -> Iterator[ClusterHandle]:
    """An in-memory server in a subprocess on a free port; options: token, watch_cache_size,
    simulate (controllers, node agent, faults and /metrics; off by default so the API-core tests see
    a passive server), paused (component names: "controllers", "nodeagent"), faults (the
    /slim/faults JSON), resync_seconds (the controllers' full-resync period)."""
    workdir = Path(tempfile.mkdtemp(prefix="planner-slim-"))
    port_file = workdir / "port"
    extra = ["--time-scale", str(time_scale)]
    if not options.get("simulate"):
        extra.append("--no-simulation")
    for component in options.get("paused") or ():
        extra += ["--pause", component]
    if options.get("faults"):
        extra += ["--faults", json.dumps(options["faults"])]
    if options.get("watch_cache_size"):
        extra += ["--watch-cache-size", str(options["watch_cache_size"])]
    if options.get("resync_seconds"):
        extra += ["--resync-seconds", str(options["resync_seconds"])]
    token = options.get("token")
    command = _serve_command(
        port=0, data_dir=None, memory=True, token=token, port_file=port_file, extra=extra
    )
    log = workdir / "server.log"
    with log.open("ab") as log_stream:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log_stream, stderr=log_stream, env=_child_env()
        )
    try:
        port = _wait_for_port(process, port_file, log)
        url = f"http://{HOST}:{port}"
        kubeconfig = write_kubeconfig(workdir / "kubeconfig", url, token)
        yield ClusterHandle(url, kubeconfig, port, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)

"""Starting, finding and stopping the embedded cluster: the functions `planner cluster …` calls.

`up` starts `python -m planner.slim serve` detached, waits for /readyz, and leaves in the data
directory `server.pid`, `server.port`, `server.url` and `kubeconfig` (context `planner-embedded`), plus
`server.mode` ("memory" or "disk") and `server.log`. `status` trusts those files only while the pid
is alive and /readyz answers. `running_cluster` is the test fixture's context manager: an in-memory
server in a subprocess (so tests do not share the GIL with it) on a free port.

Every cluster started here speaks HTTPS and requires an admin token, made here when none is given:
otherwise any local user could read its Secrets or set its faults. kubectl sends a kubeconfig's token
to an https server only, so the certificates are made beside the state (`certs.py`), and the
kubeconfig (mode 0600) holds the CA and the token; the token reaches the server process through its
environment, never a command line, and is printed nowhere. With `rbac` the server also authorizes by
RBAC. Only `running_cluster(insecure=True)` serves plain HTTP to anyone (for benchmarks).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.slim.certs import Certificates, ensure_certificates, tls_context, write_private
from planner.slim.reconcilers import FULL_RESYNC_SECONDS
from planner.slim.server import DB_NAME, HOST, TOKEN_ENV

CONTEXT = "planner-embedded"
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
RUN_FILES = ("server.pid", "server.port", "server.portfile", "server.mode", "server.url")
STATE_FILES = (*RUN_FILES, "kubeconfig", "server.log", "ca.crt", "server.crt", "server.key", "token.key")


@dataclass(frozen=True)
class ClusterInfo:
    pid: int
    port: int
    url: str
    kubeconfig: Path
    data_dir: Path
    memory: bool
    token: str | None = field(default=None, repr=False)  # the admin's bearer token
    ca: Path | None = None  # the CA that signed the server's certificate


@dataclass(frozen=True)
class ClusterHandle:
    url: str
    kubeconfig: Path
    port: int
    pid: int
    token: str | None = field(default=None, repr=False)  # the admin's (None only for an insecure server)
    ca: Path | None = None  # the CA to trust (None only for an insecure server)


def default_data_dir() -> Path:
    state_home = os.environ.get("XDG_STATE_HOME")
    base = Path(state_home) if state_home else Path.home() / ".local" / "state"
    return base / "planner" / "cluster"


def _resolve(data_dir: Path | None) -> Path:
    return (data_dir or default_data_dir()).expanduser().resolve()


def kubeconfig_document(url: str, token: str | None, ca: Path | None = None) -> dict[str, Any]:
    cluster: dict[str, str] = {"server": url}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"}}
        ],
        "current-context": CONTEXT,
        "users": [{"name": CONTEXT, "user": {"token": token} if token else {}}],
        "preferences": {},
    }


def write_kubeconfig(path: Path, url: str, token: str | None, ca: Path | None = None) -> Path:
    """Write the kubeconfig readable by its owner only, from its first byte (it holds the token)."""
    write_private(path, (json.dumps(kubeconfig_document(url, token, ca), indent=2) + "\n").encode())
    return path


def kubeconfig_token(path: Path) -> str | None:
    """The admin token in a kubeconfig written by `write_kubeconfig` (None when it has none)."""
    try:
        users = json.loads(path.read_text())["users"]
        token = users[0]["user"].get("token")
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return token if isinstance(token, str) else None


def ready(url: str, timeout: float = 1.0, *, ca: Path | None = None) -> bool:
    """Whether the server at `url` answers /readyz (over TLS trusting `ca`, for an https url)."""
    context = tls_context(ca)
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=timeout, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def server_url(port: int, tls: Certificates | None) -> str:
    return f"{'https' if tls is not None else 'http'}://{HOST}:{port}"


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
    return command + (extra or [])


def _child_env(token: str | None) -> dict[str, str]:
    """The environment for the server process, able to import planner even when it is not installed.

    The admin token travels in the environment, not the command line: a command line is readable by
    every local user (`ps`), and a token starting with `-` would read as an option.
    """
    env = dict(os.environ)
    env.pop(TOKEN_ENV, None)
    if token:
        env[TOKEN_ENV] = token
    source_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH", "")) if p)
    return env


def _wait_for_port(
    process: subprocess.Popen[bytes], port_file: Path, log: Path | None, tls: Certificates | None = None
) -> int:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if port_file.exists():
            port = int(port_file.read_text())
            if ready(server_url(port, tls), ca=tls.ca if tls else None):
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
    url_file = root / "server.url"
    url = url_file.read_text().strip() if url_file.exists() else f"http://{HOST}:{port}"
    ca = root / "ca.crt" if url.startswith("https:") else None
    if not _alive(pid) or not ready(url, ca=ca):
        return None
    memory = (root / "server.mode").exists() and (root / "server.mode").read_text().strip() == "memory"
    kubeconfig = root / "kubeconfig"
    return ClusterInfo(pid, port, url, kubeconfig, root, memory, kubeconfig_token(kubeconfig), ca)


def up(
    *,
    data_dir: Path | None,
    port: int | None,
    memory: bool,
    token: str | None = None,
    time_scale: float = 1.0,
    resync_seconds: float = FULL_RESYNC_SECONDS,
    rbac: bool = False,
) -> ClusterInfo:
    """Start the server in the background (or find the one running): HTTPS, and the kubeconfig holds
    the admin token (one is made when none is given); with `rbac`, requests are authorized by RBAC."""
    running = status(data_dir=data_dir)
    if running is not None:
        return running
    token = token or new_admin_token()
    root = _resolve(data_dir)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)  # it will hold every Secret
    root.chmod(0o700)  # also when it existed already, with looser modes
    port_file = root / "server.portfile"
    port_file.unlink(missing_ok=True)
    log = root / "server.log"
    extra = ["--time-scale", str(time_scale)] if time_scale != 1.0 else []
    if resync_seconds != FULL_RESYNC_SECONDS:
        extra += ["--resync-seconds", str(resync_seconds)]
    tls = ensure_certificates(root)
    extra += ["--tls-dir", str(root), *(["--rbac"] if rbac else [])]
    command = _serve_command(port=port or 0, data_dir=root, memory=memory, port_file=port_file, extra=extra)
    with _private(log).open("ab") as log_stream:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_stream,
            stderr=log_stream,
            start_new_session=True,
            env=_child_env(token),
        )
    bound = _wait_for_port(process, port_file, log, tls)
    url = server_url(bound, tls)
    for name, text in (
        ("server.pid", str(process.pid)),
        ("server.port", str(bound)),
        ("server.url", url),
        ("server.mode", "memory" if memory else "disk"),
    ):
        _private(root / name).write_text(text)
    kubeconfig = write_kubeconfig(root / "kubeconfig", url, token, tls.ca)
    return ClusterInfo(process.pid, bound, url, kubeconfig, root, memory, token, tls.ca)


def _private(path: Path) -> Path:
    """`path` made to exist with mode 0600 (a run file of the server's: only its user reads it)."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    return path


def down(*, data_dir: Path | None) -> bool:
    root = _resolve(data_dir)
    try:
        pid = int((root / "server.pid").read_text())
    except (OSError, ValueError):
        return False
    was_running = _alive(pid)
    if was_running:
        _stop_pid(pid)
    for name in RUN_FILES:
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
    rbac: bool = False,
    announce: Callable[[Path], None] | None = None,
) -> None:
    """Foreground server (blocks until SIGINT/SIGTERM) over HTTPS. It writes to the data directory
    first the certificates and a kubeconfig holding the admin token (one is made when none is given);
    `announce` is told where the kubeconfig is. With `rbac` it authorizes by RBAC."""
    from planner.slim.server import ServerOptions, serve_forever

    root = None if memory and data_dir is None else _resolve(data_dir)
    home = _resolve(data_dir)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # it will hold the key and the token
    tls = ensure_certificates(home)
    token = token or new_admin_token()
    port = port or free_port()
    kubeconfig = write_kubeconfig(home / "kubeconfig", server_url(port, tls), token, tls.ca)
    if announce is not None:
        announce(kubeconfig)
    options = ServerOptions(
        port=port,
        data_dir=root,
        memory=memory,
        token=token,
        time_scale=time_scale,
        resync_seconds=resync_seconds,
        rbac=rbac,
        tls=tls,
    )
    serve_forever(options)


def new_admin_token() -> str:
    return secrets.token_urlsafe(32)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


# --- tests --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def running_cluster(*, time_scale: float = 1.0, **options: Any) -> Iterator[ClusterHandle]:
    """An in-memory HTTPS server in a subprocess on a free port; the handle's `token` (made up unless
    given), `ca` and kubeconfig are the admin's. Options: token, watch_cache_size, simulate
    (controllers, node agent, faults and /metrics; off by default so the API-core tests see a passive
    server), paused (component names: "controllers", "nodeagent"), faults (the /slim/faults JSON),
    resync_seconds (the controllers' full-resync period), rbac (authorize by RBAC), insecure (plain
    HTTP open to anyone, no token: for benchmarks that compare against it)."""
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
    token = None
    tls = None
    if options.get("insecure"):
        extra.append("--insecure-no-auth")
    else:
        token = options.get("token") or new_admin_token()
        tls = ensure_certificates(workdir)
        extra += ["--tls-dir", str(workdir)]
    if options.get("rbac"):
        extra.append("--rbac")
    command = _serve_command(port=0, data_dir=None, memory=True, port_file=port_file, extra=extra)
    log = workdir / "server.log"
    with log.open("ab") as log_stream:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log_stream, stderr=log_stream, env=_child_env(token)
        )
    try:
        port = _wait_for_port(process, port_file, log, tls)
        url = server_url(port, tls)
        kubeconfig = write_kubeconfig(workdir / "kubeconfig", url, token, tls.ca if tls else None)
        yield ClusterHandle(url, kubeconfig, port, process.pid, token, tls.ca if tls else None)
    finally:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)

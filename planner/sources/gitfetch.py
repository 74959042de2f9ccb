"""One fetch of a Git source with dulwich: the commit its ref names now, checked out as a plain tree.

dulwich speaks Git's protocols in pure Python (docs/architecture.md says why it and not libgit2; over SSH it runs the `ssh` command): one
upload-pack conversation per fetch, in which the advertised refs choose what is wanted (`gitref`), so
resolving the ref and fetching it is one connection (git://) or one GET and one POST (smart HTTP). The
fetch is shallow (depth 1) but for a ref that is a commit, which no server advertises: every branch's
history is fetched and the commit must be in it.

Each source (URL, ref, credentials) keeps a bare repository under its own directory, so a later fetch
transfers only what is new; each commit's tree is written once to `checkouts/<commit>/` beside it, with
a `.git` file that marks the repository's root for the loader (imports may not leave it). Symbolic
links and submodules are not written: nothing in a checkout leads outside it.

Over SSH, dulwich runs the `ssh` command with the Secret's private key and `known_hosts` written to a
private directory for the one fetch, and nothing else of the machine's configuration (`-F /dev/null`,
no agent, `StrictHostKeyChecking=yes`): a host whose key is not in `known_hosts` is refused.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.client import HTTPUnauthorized, get_transport_and_path
from dulwich.config import ConfigDict
from dulwich.errors import NotGitRepository
from dulwich.object_store import iter_tree_contents
from dulwich.objects import Commit, ObjectID, Tag
from dulwich.refs import Ref
from dulwich.repo import Repo

from planner.errors import SourceError
from planner.plan.git_source import GitSource
from planner.sources.failures import (
    AUTHENTICATION_FAILED,
    FETCH_FAILED,
    HOST_KEY_REFUSED,
    REF_NOT_FOUND,
    without_credentials,
)
from planner.sources.gitref import HEADS, Wanted, revision, wanted
from planner.sources.signatures import SignedCommit, signed_commit

HTTP_TIMEOUT = 30.0  # seconds per HTTP request: a stalled server fails the fetch, not the reconcile
GITLINK = 0o160000
KEPT_CHECKOUTS = 3  # the newest trees kept per source: a reconcile still reading an older one finds it


@dataclass(frozen=True)
class Credentials:
    """From the source's Secret: HTTP basic auth (`username`, `password`: a token goes in
    `password`), or for SSH a private key (`identity`) and the host keys it accepts (`known_hosts`)."""

    username: str = ""
    password: str = ""
    identity: str = ""
    known_hosts: str = ""

    def __repr__(self) -> str:  # never shown, even in a traceback's locals
        return "Credentials(***)"


@dataclass(frozen=True)
class Checkout:
    """A fetched commit: its revision (`main@sha1:…`), the commit, the directory its tree is in, and
    what its signature covers (for `source.git.verify`)."""

    revision: str
    commit: str
    root: Path
    signed: SignedCommit


def fetch(source: GitSource, credentials: Credentials, store: Path) -> Checkout:
    """The commit `source.ref` names now, fetched into `store` and checked out; SourceError (with a
    message free of credentials) when it cannot be."""
    store.mkdir(parents=True, exist_ok=True)
    bare = store / "repository.git"
    repo = Repo(str(bare)) if bare.exists() else Repo.init_bare(str(bare), mkdir=True)
    try:
        chosen, commit = _fetched(source, credentials, repo)
        root = _checked_out(repo, commit, store / "checkouts")
        found = repo[commit.encode()]
        assert isinstance(found, Commit)
        signed = signed_commit(found)
    finally:
        repo.close()
    _drop_old_checkouts(store / "checkouts", keep=root)
    return Checkout(revision(chosen.name, commit), commit, root, signed)


def _fetched(source: GitSource, credentials: Credentials, repo: Repo) -> tuple[Wanted, str]:
    config = ConfigDict()
    config.set((b"http",), b"timeout", str(HTTP_TIMEOUT).encode())
    secrets = (credentials.username, credentials.password)
    chosen: list[Wanted] = []

    def determine_wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        advertised = {name.decode(): sha.decode() for name, sha in refs.items() if sha}
        found = wanted(source.ref, advertised)
        chosen.append(found)
        if source.ref.commit is not None:  # no server advertises it: every branch's history
            return [ObjectID(sha.encode()) for name, sha in advertised.items() if name.startswith(HEADS)]
        wanted_id = ObjectID(found.advertised.encode())
        return [] if wanted_id in repo.object_store else [wanted_id]

    try:
        with _ssh_command(source, credentials) as ssh_command:
            client, path = get_transport_and_path(
                source.url,
                config=config,
                username=credentials.username or None,
                password=credentials.password or None,
                ssh_command=ssh_command,
            )
            client.fetch(path, repo, determine_wants=determine_wants, depth=None if source.ref.commit else 1)
    except SourceError:
        raise
    except HTTPUnauthorized:
        raise SourceError(
            AUTHENTICATION_FAILED,
            f"{without_credentials(source.url)}: authentication refused"
            + (" (credentials from the Secret in secretRef)" if credentials.password else " (no secretRef)"),
        ) from None
    except NotGitRepository:
        raise SourceError(
            FETCH_FAILED, f"{without_credentials(source.url)}: no Git repository there"
        ) from None
    except Exception as failure:  # the network, the server and the protocol fail in many ways
        said = without_credentials(f"{type(failure).__name__}: {failure}", secrets)
        if "Host key verification failed" in said:
            raise SourceError(
                HOST_KEY_REFUSED,
                f"{without_credentials(source.url)}: the server's host key is not in the Secret's known_hosts",
            ) from None
        if "Permission denied" in said:
            raise SourceError(
                AUTHENTICATION_FAILED, f"{without_credentials(source.url)}: the server refused the identity"
            ) from None
        raise SourceError(FETCH_FAILED, f"{without_credentials(source.url)}: fetch failed: {said}") from None
    return chosen[0], _commit(repo, chosen[0], source)


@contextmanager
def _ssh_command(source: GitSource, credentials: Credentials) -> Iterator[str | None]:
    """For an SSH URL, the ssh command dulwich runs: the Secret's key and known hosts only, written
    to a directory only this process may read, deleted after the fetch. None for other URLs."""
    if not source.over_ssh:
        yield None
        return
    private = Path(tempfile.mkdtemp(prefix="planner-ssh-"))
    try:
        identity, known = private / "identity", private / "known_hosts"
        for file, text in ((identity, credentials.identity), (known, credentials.known_hosts)):
            file.touch(mode=0o600)
            file.write_text(text if text.endswith("\n") else text + "\n")
        yield shlex.join(
            [
                "ssh", "-F", "/dev/null", "-i", str(identity), "-o", "IdentitiesOnly=yes",
                "-o", "IdentityAgent=none", "-o", f"UserKnownHostsFile={known}",
                "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
                "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(HTTP_TIMEOUT)}",
            ]
        )  # fmt: skip
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _commit(repo: Repo, chosen: Wanted, source: GitSource) -> str:
    """The commit fetched: an annotated tag peeled to what it points at."""
    sha = ObjectID(chosen.advertised.encode())
    if sha not in repo.object_store:
        raise SourceError(REF_NOT_FOUND, f"{source.ref.describe()}: not on any branch of the repository")
    found: Any = repo[sha]
    while isinstance(found, Tag):
        found = repo[found.object[1]]
    if not isinstance(found, Commit):
        raise SourceError(REF_NOT_FOUND, f"{source.ref.describe()}: names no commit")
    return str(found.id.decode())


def _checked_out(repo: Repo, commit: str, checkouts: Path) -> Path:
    """The commit's tree under `checkouts/<commit>`, written once (atomically, by a rename)."""
    root = checkouts / commit
    if root.is_dir():
        os.utime(root)  # the newest again (a force-push back to it)
        return root
    checkouts.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{commit}-", dir=checkouts))
    try:
        tree = repo[commit.encode()]
        assert isinstance(tree, Commit)
        _write_tree(repo, tree.tree, partial)
        (partial / ".git").write_text("planner: the root of a fetched Git source\n")
        os.rename(partial, root)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not root.is_dir():  # not a concurrent writer's rename that won
            raise
    return root


def _drop_old_checkouts(checkouts: Path, *, keep: Path) -> None:
    """All but the newest `KEPT_CHECKOUTS` trees (and `keep`, the one just fetched) deleted."""
    trees = sorted(
        (tree for tree in checkouts.iterdir() if tree.is_dir() and not tree.name.startswith(".")),
        key=lambda tree: tree.stat().st_mtime,
        reverse=True,
    )
    for old in trees[KEPT_CHECKOUTS:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def _write_tree(repo: Repo, tree: ObjectID, into: Path) -> None:
    for entry in iter_tree_contents(repo.object_store, tree):
        if entry.path is None or entry.mode is None or entry.sha is None:
            continue
        if stat.S_ISLNK(entry.mode) or entry.mode == GITLINK:
            continue
        parts = entry.path.decode("utf-8", "replace").split("/")
        if any(part in ("", ".", "..", ".git") for part in parts):
            continue
        target = into.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        blob: Any = repo[entry.sha]
        target.write_bytes(blob.as_raw_string())
        if entry.mode & 0o111:
            target.chmod(0o755)

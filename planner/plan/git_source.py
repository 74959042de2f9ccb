"""A Plan object's `source: {git: …}`: where its plan lives instead of inline (docs/gitops.md). Read from
the object once the API server's schema has judged it, into a frozen `GitSource` the controller fetches
by; `beside_source` names the plan fields such a Plan may not hold as well (its plan is the fetched
file, not a merge of two). A plan file never has a source (`SOURCE_IN_FILE`): the file is the plan.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.plan.durations import parse_duration

SOURCE = "source"
DEFAULT_BRANCH = "main"
DEFAULT_INTERVAL = 60.0
# What a Plan with a source may hold besides it: who it is, as whom and how it is reconciled.
BESIDE_SOURCE = frozenset(
    {"apiVersion", "kind", "metadata", "status", "serviceAccountName", "reconcile", "decryption", SOURCE}
)
SOURCE_IN_FILE = (
    "a plan file cannot name a source: only a Plan object in the cluster fetches its plan (planner "
    "controller); this file is the plan itself"
)


@dataclass(frozen=True, kw_only=True)
class GitRef:
    """Exactly one is set: `branch`, `tag`, `semver` (a range of release tags) or `commit` (40 hex)."""

    branch: str | None = None
    tag: str | None = None
    semver: str | None = None
    commit: str | None = None

    def describe(self) -> str:
        for kind in ("branch", "tag", "semver", "commit"):
            value = getattr(self, kind)
            if value is not None:
                return f"{kind} {value}"
        return ""


@dataclass(frozen=True, kw_only=True)
class GitSource:
    url: str
    ref: GitRef
    path: str  # normalised, relative to the repository's root
    secret_name: str | None = None
    interval: float = DEFAULT_INTERVAL
    verify_secret: str | None = None  # `verify.secretRef`: only commits signed by its keys are applied

    @property
    def over_ssh(self) -> bool:
        """`ssh://…`, or Git's scp-like `[user@]host:path` (`git@github.com:acme/deploy.git`)."""
        return self.url.startswith("ssh://") or scp_like(self.url)


def scp_like(url: str) -> bool:
    """Git's short SSH form `[user@]host:path`: no scheme, and a `:` before any `/`."""
    head, colon, path = url.partition(":")
    return bool(colon) and bool(head) and "/" not in head and not path.startswith("//")


def git_source(plan: Mapping[str, Any]) -> GitSource | None:
    """The Plan object's Git source, or None when it holds its plan inline."""
    source = plan.get(SOURCE)
    git = source.get("git") if isinstance(source, Mapping) else None
    if not isinstance(git, Mapping):
        return None
    ref = git.get("ref")
    secret = git.get("secretRef")
    interval = git.get("interval")
    verify = git.get("verify")
    trusted = verify.get("secretRef") if isinstance(verify, Mapping) else None
    return GitSource(
        url=str(git.get("url", "")),
        ref=_ref(ref if isinstance(ref, Mapping) else {}),
        path=str(git.get("path", "")),
        secret_name=str(secret["name"]) if isinstance(secret, Mapping) and "name" in secret else None,
        interval=parse_duration(interval) if isinstance(interval, str) else DEFAULT_INTERVAL,
        verify_secret=str(trusted["name"]) if isinstance(trusted, Mapping) and "name" in trusted else None,
    )


def _ref(ref: Mapping[str, Any]) -> GitRef:
    given = {kind: str(ref[kind]) for kind in ("branch", "tag", "semver", "commit") if kind in ref}
    return GitRef(**given) if given else GitRef(branch=DEFAULT_BRANCH)


def beside_source(plan: Mapping[str, Any]) -> list[str]:
    """The plan fields a Plan with a source holds besides it (none is allowed), in its order."""
    return [key for key in plan if key not in BESIDE_SOURCE]


def path_problem(path: str) -> str | None:
    """Why `path` cannot name a plan file in the repository (absolute, or leaving it), or None."""
    if not path or path.startswith("/") or "\\" in path:
        return f"source.git.path {path!r}: a path relative to the repository's root, with '/' between names"
    if posixpath.normpath(path).split("/")[0] == "..":
        return f"source.git.path {path!r}: leaves the repository"
    return None

"""Which commit a Git source's `ref` names, from the refs the server advertises (pure), and how that
commit is spelt in a Plan's status, its Events and its generations: Flux's revision form,
`<branch or tag>@sha1:<40 hex>`, or `sha1:<40 hex>` for a ref that is a commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from planner.errors import SourceError
from planner.plan.git_source import GitRef
from planner.sources.failures import REF_NOT_FOUND
from planner.sources.semver import highest

HEADS, TAGS, PEELED = "refs/heads/", "refs/tags/", "^{}"


@dataclass(frozen=True)
class Wanted:
    """The ref chosen (`refs/heads/main`; "" for a commit), what the server advertises for it (a commit,
    or an annotated tag's own object) and its short name in revisions (`main`, `v1.2.0`; "" for a
    commit)."""

    ref: str
    advertised: str
    name: str


def wanted(ref: GitRef, advertised: Mapping[str, str]) -> Wanted:
    """The ref `ref` names among `advertised` (ref name → object id, peeled tags as `NAME^{}`);
    SourceError (RefNotFound) when the server has no such ref. A commit is wanted as it is."""
    if ref.commit is not None:
        return Wanted("", ref.commit, "")
    if ref.branch is not None:
        return _named(HEADS + ref.branch, ref.branch, advertised, f"branch {ref.branch!r}")
    if ref.tag is not None:
        return _named(TAGS + ref.tag, ref.tag, advertised, f"tag {ref.tag!r}")
    assert ref.semver is not None
    tags = [
        name.removeprefix(TAGS) for name in advertised if name.startswith(TAGS) and not name.endswith(PEELED)
    ]
    try:
        chosen = highest(tags, ref.semver)
    except ValueError as bad:
        raise SourceError(REF_NOT_FOUND, str(bad)) from None
    if chosen is None:
        raise SourceError(REF_NOT_FOUND, f"no release tag in the range {ref.semver!r}")
    return _named(TAGS + chosen, chosen, advertised, f"tag {chosen!r}")


def _named(full: str, name: str, advertised: Mapping[str, str], described: str) -> Wanted:
    found = advertised.get(full)
    if found is None:
        raise SourceError(REF_NOT_FOUND, f"the repository has no {described}")
    return Wanted(full, found, name)


def peeled(wanted_ref: Wanted, advertised: Mapping[str, str]) -> str | None:
    """The commit an annotated tag points at, when the server advertised it peeled."""
    return advertised.get(wanted_ref.ref + PEELED) if wanted_ref.ref else None


def revision(name: str, commit: str) -> str:
    """Flux's revision: `main@sha1:<commit>`, or `sha1:<commit>` for a ref that is a commit."""
    return f"{name}@sha1:{commit}" if name else f"sha1:{commit}"


def commit_of(revision_text: str) -> str:
    """The commit a revision names ("" when it names none)."""
    _, found, commit = revision_text.rpartition("sha1:")
    return commit if found else ""

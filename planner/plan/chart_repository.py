"""Charts from an HTTP(S) chart repository (`repo:`): the `.tgz` of one pinned version, fetched through
the repository's `index.yaml` and kept in a cache by its digest.

Each load reads the index (a published chart must be findable now), finds the entry of `chart` at
`version` and its `digest` (sha256 of the archive, as `helm repo index` writes it). The archive is
read from the cache when one with that digest is there, else downloaded from the entry's first URL
(relative to the repository, or absolute), checked against the digest and cached under it. The cache
also remembers which digest each (repository, chart, version) had: a version whose digest changes
later is refused, since a published version that changes under the same number is either a mistake or
an attack, and a plan pinned to it must not silently apply something else. Where the cache lives:
`$PLANNER_CACHE_DIR`, else `$XDG_CACHE_HOME/planner`, else `~/.cache/planner`, under `charts/`.

Credentials (`credentials`, resolved by the loader as every secret value is) are sent as HTTP basic
auth only to the repository's own origin (scheme, host and port, as Helm does without
`--pass-credentials`): an archive URL in the index on another host gets none, and a redirect carries
none (urllib drops an unredirected header), so a repository cannot hand them to a third party. A
repository URL holding credentials itself (`https://user:pass@host`) is refused, since it would be
printed wherever the URL is. OCI registries (`oci_registry`) share this module's cache, digest record
and HTTP reads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

MAX_INDEX_BYTES = 32 * 1024 * 1024
MAX_CHART_BYTES = 32 * 1024 * 1024
TIMEOUT_SECONDS = 30
SEEN = "digests.json"
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Credentials:
    """A chart repository's basic-auth username and password (never in a repr, so never in a message)."""

    username: str
    password: str = field(repr=False)

    def header(self) -> str:
        token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")
        return f"Basic {token}"


def same_origin(repo: str, url: str) -> bool:
    """Whether `url` is on the repository's own scheme, host and port: the only place its credentials go."""
    a, b = urllib.parse.urlsplit(repo), urllib.parse.urlsplit(url)
    try:
        ports = (a.port or DEFAULT_PORTS.get(a.scheme), b.port or DEFAULT_PORTS.get(b.scheme))
    except ValueError:  # a port that is not a number
        return False
    return a.scheme.lower() == b.scheme.lower() and a.hostname == b.hostname and ports[0] == ports[1]


def cache_directory() -> Path:
    base = os.environ.get("PLANNER_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    root = Path(base) if base else Path.home() / ".cache"
    return (root if os.environ.get("PLANNER_CACHE_DIR") else root / "planner") / "charts"


def fetch_chart(repo: str, chart: str, version: str, credentials: Credentials | None = None) -> Path | str:
    """The cached archive of `chart` at `version` in `repo`, or why it cannot be had."""
    parts = urllib.parse.urlsplit(repo)
    if parts.username is not None or parts.password is not None:
        return "a repository URL must not hold credentials (user:password@): give them in `credentials`"
    base = repo.rstrip("/") + "/"
    index = _download(urllib.parse.urljoin(base, "index.yaml"), MAX_INDEX_BYTES, base, credentials)
    if isinstance(index, str):
        return f"cannot read the repository's index: {index}"
    entry = _entry(index, chart, version)
    if isinstance(entry, str):
        return entry
    digest, url = entry
    problem = remember_digest(f"{base}{chart}@{version}", digest)
    if problem is not None:
        return problem
    location = urllib.parse.urljoin(base, url)
    return cached_archive(
        digest,
        lambda: _download(location, MAX_CHART_BYTES, base, credentials),
        f"{chart} {version}",
        location,
        "the index gives",
    )


def cached_archive(
    digest: str, download: Callable[[], bytes | str], name: str, location: str, whose: str
) -> Path | str:
    """The chart archive whose sha256 is `digest`: from the cache when there, else `download`ed (chart
    `name` from `location`), checked against the digest and cached under it. `whose` says, in a
    refusal, where the digest came from ("the index gives")."""
    archive = cache_directory() / f"sha256-{digest}.tgz"
    if archive.is_file() and _sha256(archive.read_bytes()) == digest:
        return archive
    data = download()
    if isinstance(data, str):
        return f"cannot download {name}: {data}"
    if _sha256(data) != digest:
        return f"{name} downloaded from {location} has digest sha256:{_sha256(data)}, not the sha256:{digest} {whose}: refused"
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(archive)
    return archive


def _entry(index: bytes, chart: str, version: str) -> tuple[str, str] | str:
    try:
        data = YAML(typ="safe").load(index.decode("utf-8", "replace"))
    except YAMLError as error:
        return f"the repository's index.yaml is not YAML: {str(error).splitlines()[0]}"
    entries: Any = data.get("entries") if isinstance(data, dict) else None
    versions = entries.get(chart) if isinstance(entries, dict) else None
    if not isinstance(versions, list) or not versions:
        return f"the repository has no chart {chart!r}"
    found = next((v for v in versions if isinstance(v, dict) and str(v.get("version")) == version), None)
    if found is None:
        known = ", ".join(str(v.get("version")) for v in versions[:10] if isinstance(v, dict))
        return f"the repository has no version {version} of {chart!r} (it has {known})"
    digest = str(found.get("digest") or "").removeprefix("sha256:")
    urls = found.get("urls")
    if len(digest) != 64 or not isinstance(urls, list) or not urls:
        return f"the index entry of {chart} {version} has no sha256 digest or no URL: refused"
    return digest, str(urls[0])


def remember_digest(key: str, digest: str) -> str | None:
    """Record the digest `key` (a chart version where it is published) has; refuse one that differs
    from the digest recorded before."""
    cache = cache_directory()
    seen_file = cache / SEEN
    try:
        seen = json.loads(seen_file.read_text()) if seen_file.is_file() else {}
    except (OSError, ValueError):
        seen = {}
    earlier = seen.get(key)
    if earlier is not None and earlier != digest:
        return (
            f"{key} now has digest sha256:{digest}, but had sha256:{earlier} before: a published chart "
            "version must not change; refused (if the change is known and trusted, remove its line from "
            f"{seen_file})"
        )
    if earlier is None:
        cache.mkdir(parents=True, exist_ok=True)
        partial = seen_file.with_suffix(".partial")
        partial.write_text(json.dumps({**seen, key: digest}, indent=1, sort_keys=True))
        partial.replace(seen_file)
    return None


def _download(url: str, limit: int, repo: str, credentials: Credentials | None) -> bytes | str:
    authorization = credentials.header() if credentials is not None and same_origin(repo, url) else None
    got = http_get(url, limit, authorization=authorization)
    if isinstance(got, urllib.error.HTTPError):
        return f"{url}: HTTP {got.code} {got.reason}{refused_hint(got.code, credentials)}"
    return got


def http_get(
    url: str, limit: int, *, authorization: str | None = None, accept: str | None = None
) -> bytes | urllib.error.HTTPError | str:
    """The body of `url` (at most `limit` bytes), the HTTP error answered (its code and headers, a
    challenge among them), or why nothing was read. `authorization` goes as an unredirected header: the
    caller has checked the URL's origin, and a redirect carries none."""
    if urllib.parse.urlparse(url).scheme not in ("http", "https"):
        return f"{url}: only http and https are read"
    request = urllib.request.Request(url, headers={"User-Agent": "planner"})
    if accept is not None:
        request.add_header("Accept", accept)
    if authorization is not None:
        request.add_unredirected_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            data: bytes = response.read(limit + 1)
    except urllib.error.HTTPError as error:
        error.close()
        return error
    except (urllib.error.URLError, OSError) as error:
        return f"{url}: {getattr(error, 'reason', error)}"
    if len(data) > limit:
        return f"{url}: over {limit:,} bytes"
    return data


def refused_hint(code: int, credentials: Credentials | None, where: str = "repository") -> str:
    if code not in (401, 403):
        return ""
    if credentials is None:
        return f" (the {where} requires authentication: give its `credentials`)"
    return f" (the {where} refused the `credentials` given)"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

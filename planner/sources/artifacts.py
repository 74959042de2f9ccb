"""The controller's shared cache of Git sources: one fetch serves every Plan on the same URL, ref and
credentials, however many there are, for the source's interval (the shortest any of its Plans asks).

An entry keeps its last fetch's outcome, a checkout or the SourceError, and when it was made; `get`
answers from it until the interval has passed (a failure is kept as long, so a thousand Plans on an
unreachable server make one attempt per interval, not a thousand). A per-entry lock makes the Plans
that ask at once wait for the one fetch in flight. `due` names the entries whose interval has passed;
`refresh` fetches one again and says whether its outcome changed, so the caller queues the Plans that
use it (`users_of`). Credentials are keyed by a digest and never shown. An entry no Plan uses any more
(deleted, or moved to other credentials or another ref) is dropped with its files.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from planner.errors import SourceError
from planner.plan.git_source import GitSource, scp_like
from planner.sources.gitfetch import Checkout, Credentials, fetch

_KEY = secrets.token_bytes(32)  # keyed per process: a key seen (a directory's name) cannot test a guess
MIN_INTERVAL = 1.0  # seconds: no source is fetched more often, whatever its interval says
Fetcher = Callable[[GitSource, Credentials, Path], Checkout]


def source_key(source: GitSource, credentials: Credentials) -> str:
    """The cache key of (URL, ref, credentials): a keyed digest, so neither the key nor a directory
    named after it reveals a credential, or lets one be guessed."""
    secret = (credentials.username, credentials.password, credentials.identity, credentials.known_hosts)
    text = "\0".join((source.url, source.ref.describe(), *secret)).encode()
    return hmac.new(_KEY, text, hashlib.sha256).hexdigest()[:32]


def same_repository(url: str, other: str) -> bool:
    """Whether two URLs name one repository: scheme, user information, a trailing `/` or `.git` and
    the host's case aside (a webhook's `clone_url` and a Plan's `url` differ in these)."""
    return _bare(url) == _bare(other)


def _bare(url: str) -> str:
    if scp_like(url):  # `git@host:acme/deploy.git` is `ssh://git@host/acme/deploy.git`
        host, _, path = url.rsplit("@", 1)[-1].partition(":")
        return f"{host.lower()}/{path.strip('/').removesuffix('.git')}"
    rest = url.split("://", 1)[-1].rsplit("@", 1)[-1] if "://" in url else url
    host, _, path = rest.partition("/")
    return f"{host.lower()}/{path.rstrip('/').removesuffix('.git')}"


@dataclass(frozen=True)
class Outcome:
    checkout: Checkout | None
    error: SourceError | None
    at: float  # monotonic seconds


@dataclass
class _Entry:
    source: GitSource
    credentials: Credentials
    lock: threading.Lock = field(default_factory=threading.Lock)
    outcome: Outcome | None = None


class SourceCache:
    def __init__(
        self,
        root: Path,
        *,
        fetcher: Fetcher = fetch,
        clock: Callable[[], float] = time.monotonic,
        on_fetch: Callable[[bool], None] = lambda ok: None,
    ) -> None:
        self.root, self.fetcher, self.clock, self.on_fetch = root, fetcher, clock, on_fetch
        self._mutex = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._users: dict[str, str] = {}  # a Plan's key → its source's key
        self.fetches = 0  # every fetch made, for the metric and the tests that count them

    def get(
        self, user: str, source: GitSource, credentials: Credentials, *, refresh: bool = False
    ) -> Checkout:
        """The checkout `source` gives now, fetched when the entry has none younger than its interval
        (or `refresh`); `user` (a Plan's key) is recorded as using it. Raises its SourceError."""
        key = source_key(source, credentials)
        with self._mutex:
            entry = self._entry(key, source, credentials)
            before, self._users[user] = self._users.get(user), key
            # Only when the Plan moved (new credentials, a ref) can its old source be left unused: a
            # look over every Plan on each get would cost O(Plans) per reconcile.
            unused = self._unused() if before not in (None, key) else {}
        self._remove(unused)
        with entry.lock:
            outcome = entry.outcome
            if refresh or outcome is None or self.clock() - outcome.at >= self._interval(entry):
                outcome = self._fetch(key, entry)
        if outcome.checkout is None:
            assert outcome.error is not None
            raise outcome.error
        return outcome.checkout

    def release(self, user: str) -> None:
        """`user` no longer uses a source; an entry nobody uses is dropped, its files with it."""
        with self._mutex:
            self._users.pop(user, None)
            unused = self._unused()
        self._remove(unused)

    def _unused(self) -> dict[str, _Entry]:
        """Take out the entries no Plan uses (the caller holds the mutex)."""
        return {key: self._entries.pop(key) for key in set(self._entries) - set(self._users.values())}

    def _remove(self, unused: Mapping[str, _Entry]) -> None:
        """Delete dropped entries' repositories and checkouts, each once a fetch of it in flight ends."""
        for key, entry in unused.items():
            with entry.lock:
                trash = self._set_aside(key)
            if trash is not None:
                shutil.rmtree(trash, ignore_errors=True)

    def _set_aside(self, key: str) -> Path | None:
        """Move a dropped entry's directory out of the way; not when a Plan has asked for the same
        source again since (its new entry fetches there)."""
        directory = self.root / key
        with self._mutex:
            if key in self._entries or not directory.exists():
                return None
            trash = self.root / f".removed-{key}-{secrets.token_hex(4)}"
            directory.rename(trash)
            return trash

    def users_of(self, key: str) -> list[str]:
        with self._mutex:
            return sorted(user for user, used in self._users.items() if used == key)

    def keys_for(self, url: str) -> list[str]:
        """The entries fetching the repository at `url` (any ref or credentials)."""
        with self._mutex:
            return [key for key, entry in self._entries.items() if same_repository(entry.source.url, url)]

    def due(self) -> list[str]:
        """The entries whose interval has passed since their last fetch."""
        now = self.clock()
        with self._mutex:
            entries = list(self._entries.items())
        return [
            key
            for key, entry in entries
            if entry.outcome is not None and now - entry.outcome.at >= self._interval(entry)
        ]

    def refresh(self, key: str) -> bool:
        """Fetch the entry again; whether what it gives changed (another commit, or another failure)."""
        with self._mutex:
            entry = self._entries.get(key)
        if entry is None:
            return False
        with entry.lock:
            before = entry.outcome
            after = self._fetch(key, entry)
        return _said(before) != _said(after)

    def _entry(self, key: str, source: GitSource, credentials: Credentials) -> _Entry:
        """The entry for `key`, made when new (the caller holds the mutex)."""
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(source, credentials)
        elif source.interval < entry.source.interval:  # the shortest interval any Plan asks
            entry.source = replace(entry.source, interval=source.interval)
        return entry

    def _fetch(self, key: str, entry: _Entry) -> Outcome:
        with self._mutex:
            self.fetches += 1
        try:
            checkout = self.fetcher(entry.source, entry.credentials, self.root / key)
            entry.outcome = Outcome(checkout, None, self.clock())
        except SourceError as failure:
            entry.outcome = Outcome(None, failure, self.clock())
        self.on_fetch(entry.outcome.checkout is not None)
        return entry.outcome

    @staticmethod
    def _interval(entry: _Entry) -> float:
        return max(entry.source.interval, MIN_INTERVAL)


def _said(outcome: Outcome | None) -> tuple[str, str]:
    if outcome is None:
        return ("", "")
    if outcome.checkout is not None:
        return (outcome.checkout.revision, "")
    return ("", str(outcome.error))

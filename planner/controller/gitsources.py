"""The Git sources of the controller's Plan objects: the shared cache (`planner.sources.artifacts`) fed
with each Plan's source and credentials, and a thread that fetches each source again once its interval
has passed and queues the Plans on it when what it gives changed (another commit, or another failure).
A Plan's reconcile asks for its source's checkout (`checkout`): at 1,000 Plans on one repository, one
fetch per interval. A webhook (`hooks`) asks for the sources of one repository now (`fetch_now`).

The credentials are read from the Secret `secretRef` names, in the Plan's namespace, as whom the Plan
is reconciled (its ServiceAccount), so a tenant reads no Secret its account may not: `username` and
`password` (a token goes in `password`), as Flux reads them. So are the public keys a `verify` section
trusts (`read_trusted_keys`): a commit is verified for each Plan against its own Secret, after the
shared fetch.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from planner.app.target import Target
from planner.errors import ApiError, NotFoundError, SourceError, UnreachableError
from planner.kinds import SECRET
from planner.kube.client import resource_path
from planner.objects import Manifest
from planner.plan.git_source import GitSource
from planner.sources.artifacts import SourceCache
from planner.sources.failures import CREDENTIALS_INVALID, VERIFICATION_ERROR
from planner.sources.gitfetch import Checkout, Credentials
from planner.sources.signatures import TrustedKeys, trusted_keys

REFRESH_EVERY = 0.5  # seconds between looks at which sources are due


class GitSources:
    def __init__(
        self,
        *,
        queue_plans: Callable[[list[str]], None],
        notice: Callable[[str], None],
        paused: threading.Event,
        on_fetch: Callable[[bool], None] = lambda ok: None,
        root: Path | None = None,
    ) -> None:
        self.root = root or Path(tempfile.mkdtemp(prefix="planner-sources-"))
        if root is None:
            atexit.register(shutil.rmtree, self.root, True)
        self.cache = SourceCache(self.root, on_fetch=on_fetch)
        self.queue_plans, self.notice = queue_plans, notice
        self.paused = paused  # set while this replica does not lead, or is shutting down: no fetch
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._refresh_loop, name="controller-git-sources", daemon=True)
        self._thread.start()

    def checkout(
        self, key: str, source: GitSource, target: Target, namespace: str, *, refresh: bool = False
    ) -> Checkout:
        """The commit the Plan `key`'s source gives now (fetched at most once per interval for all its
        Plans, or now when `refresh`); SourceError when its credentials or the fetch fail."""
        credentials = read_credentials(target, namespace, source)
        return self.cache.get(key, source, credentials, refresh=refresh)

    def forget(self, key: str) -> None:
        self.cache.release(key)

    def fetch_now(self, url: str) -> list[str]:
        """Fetch every source on the repository at `url` now; queue the Plans of those that changed,
        and return every Plan on it."""
        users: list[str] = []
        for source in self.cache.keys_for(url):
            users += self._refresh(source)
        return users

    def _refresh_loop(self) -> None:
        while True:
            time.sleep(REFRESH_EVERY)
            if not self.paused.is_set():
                for source in self.cache.due():
                    self._refresh(source)

    def _refresh(self, source: str) -> list[str]:
        users = self.cache.users_of(source)
        if self.cache.refresh(source):
            self.queue_plans(users)
        return users


def read_trusted_keys(target: Target, namespace: str, source: GitSource) -> TrustedKeys | None:
    """The public keys of the Secret `source.verify.secretRef` names (None: no verification), read as
    whom the Plan is reconciled; SourceError (VerificationError) when it cannot be read or holds none."""
    if source.verify_secret is None:
        return None
    where = f"Secret {source.verify_secret!r} (source.git.verify.secretRef) in namespace {namespace}"
    secret = _read_secret(target, namespace, source.verify_secret, where, VERIFICATION_ERROR)
    data: dict[str, str] = {}
    for entry, encoded in (secret.get("data") or {}).items():
        try:
            data[entry] = base64.b64decode(encoded or "", validate=True).decode()
        except (binascii.Error, UnicodeDecodeError, TypeError):
            raise SourceError(VERIFICATION_ERROR, f"{where}: entry {entry} is not UTF-8 text") from None
    return trusted_keys(data, where)


def _read_secret(target: Target, namespace: str, name: str, where: str, reason: str) -> Manifest:
    """The Secret `name`, read as `target`; SourceError with `reason` when it is missing or unreadable."""
    try:
        secret: Manifest = target.client.request("GET", resource_path(SECRET, namespace, name), verb="get")
    except NotFoundError:
        raise SourceError(reason, f"{where} not found") from None
    except (ApiError, UnreachableError) as failure:
        raise SourceError(reason, f"{where} could not be read: {failure}") from None
    return secret


def read_credentials(target: Target, namespace: str, source: GitSource) -> Credentials:
    """The credentials from the Secret `source.secretRef` names (none: no credentials): `username` and
    `password` for HTTP, `identity` and `known_hosts` for SSH; SourceError (CredentialsInvalid) when
    they cannot be read. Values are never shown."""
    ssh = source.over_ssh
    if source.secret_name is None:
        if ssh:
            raise SourceError(CREDENTIALS_INVALID, "an SSH source needs a secretRef (identity, known_hosts)")
        return Credentials()
    where = f"Secret {source.secret_name!r} (source.git.secretRef) in namespace {namespace}"
    data = _read_secret(target, namespace, source.secret_name, where, CREDENTIALS_INVALID).get("data") or {}
    keys = ("identity", "known_hosts") if ssh else ("username", "password")
    try:
        values = {key: base64.b64decode(data.get(key) or "", validate=True).decode() for key in keys}
    except (binascii.Error, UnicodeDecodeError, TypeError):
        raise SourceError(CREDENTIALS_INVALID, f"{where}: {' or '.join(keys)} is not UTF-8 text") from None
    if ssh:
        missing = [key for key in keys if not values[key]]
        if missing:
            raise SourceError(CREDENTIALS_INVALID, f"{where} has no key {', '.join(missing)} (an SSH source)")
        return Credentials(identity=values["identity"], known_hosts=values["known_hosts"])
    if not values["password"]:
        raise SourceError(CREDENTIALS_INVALID, f"{where} has no key 'password' (a token goes there)")
    return Credentials(username=values["username"] or "git", password=values["password"])

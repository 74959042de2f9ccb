"""The webhook receiver: `POST /hooks/<name>` from a Git host asks for the Plans on a repository to be
reconciled now, instead of at their source's next interval (`--hooks-secret`, off by default).

Each hook's secret is a key of the Secret `--hooks-secret` names, in the controller's namespace, read
at every request (a rotated secret is taken at once): the key is the hook's name, its value the token.
A request is verified before anything else is read: GitHub's `X-Hub-Signature-256` (`sha256=` and the
HMAC-SHA256 of the body under the token) or GitLab's `X-Gitlab-Token` (the token itself), each compared
in constant time. Anything unsigned, wrongly signed, or for a hook that does not exist is 401 and does
nothing (the same answer, so the names of the hooks are not revealed). A verified push names its
repository (GitHub's `repository` URLs, GitLab's `project`'s); every source on that repository is
fetched again on a thread of its own, and the Plans on those whose commit changed are queued. The
answer, 202, does not wait for the fetch.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from planner.errors import ApiError, NotFoundError, UnreachableError
from planner.kinds import SECRET
from planner.kube.client import KubeClient, resource_path

GITHUB_SIGNATURE = "x-hub-signature-256"
GITLAB_TOKEN = "x-gitlab-token"
GITHUB_EVENT = "x-github-event"
URL_FIELDS = {
    "repository": (
        "clone_url",
        "git_url",
        "ssh_url",
        "html_url",
        "url",
        "git_http_url",
        "git_ssh_url",
        "homepage",
    ),
    "project": ("git_http_url", "git_ssh_url", "http_url", "ssh_url", "web_url"),
}
HOOK_NAME = re.compile(r"[-._a-zA-Z0-9]{1,253}")  # a Secret's data key
Answer = tuple[int, str]


def github_signed(token: bytes, body: bytes, header: str) -> bool:
    """Whether `header` is `sha256=` and the HMAC-SHA256 of `body` under `token`."""
    expected = "sha256=" + hmac.new(token, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def gitlab_signed(token: bytes, header: str) -> bool:
    return hmac.compare_digest(token, header.strip().encode())


def verified(token: bytes | None, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the request is signed with `token` (None: no such hook, never verified)."""
    if not token:
        return False
    if GITHUB_SIGNATURE in headers:
        return github_signed(token, body, headers[GITHUB_SIGNATURE])
    if GITLAB_TOKEN in headers:
        return gitlab_signed(token, headers[GITLAB_TOKEN])
    return False


def repository_urls(payload: object) -> list[str]:
    """The URLs a GitHub or GitLab push payload gives its repository, each once."""
    found: dict[str, None] = {}
    if isinstance(payload, Mapping):
        for section, fields in URL_FIELDS.items():
            part = payload.get(section)
            if isinstance(part, Mapping):
                found.update(
                    (str(part[key]), None) for key in fields if isinstance(part.get(key), str) and part[key]
                )
    return list(found)


class Hooks:
    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        secret_name: str,
        fetch_now: Callable[[str], list[str]],
        notice: Callable[[str], None],
    ) -> None:
        self.client, self.namespace, self.secret_name = client, namespace, secret_name
        self.fetch_now, self.notice = fetch_now, notice

    def answer(self, name: str, headers: Mapping[str, str], body: bytes) -> Answer:
        """The answer to `POST /hooks/<name>` (header names lowercase)."""
        token = self._token(name) if HOOK_NAME.fullmatch(name) else None
        if not verified(token, headers, body):
            return 401, "unauthorized: not signed with this hook's secret\n"
        if headers.get(GITHUB_EVENT) == "ping":
            return 200, "pong\n"
        try:
            payload: Any = json.loads(body)
        except ValueError:
            return 400, "the body is not JSON\n"
        urls = repository_urls(payload)
        if not urls:
            return 400, "the payload names no repository (repository or project URLs)\n"
        threading.Thread(target=self._fetch, args=(name, urls), name="controller-hook", daemon=True).start()
        return 202, f"fetching the sources on {urls[0]}\n"

    def _fetch(self, name: str, urls: list[str]) -> None:
        plans: dict[str, None] = {}
        for url in urls:
            plans.update(dict.fromkeys(self.fetch_now(url)))
        self.notice(f"hook {name}: {urls[0]}: {len(plans)} Plans on it")

    def _token(self, name: str) -> bytes | None:
        """The hook's token: the key `name` of the hooks' Secret (None: no such key, or no Secret)."""
        try:
            secret = self.client.request(
                "GET", resource_path(SECRET, self.namespace, self.secret_name), verb="get"
            )
        except NotFoundError:
            self.notice(f"hooks: Secret {self.secret_name} not found in namespace {self.namespace}")
            return None
        except (ApiError, UnreachableError) as failure:
            self.notice(f"hooks: Secret {self.secret_name} in namespace {self.namespace}: {failure}")
            return None
        encoded = (secret.get("data") or {}).get(name)
        try:
            return base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else None
        except binascii.Error:
            return None

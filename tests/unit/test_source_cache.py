"""The controller's shared cache of Git sources: one fetch per interval for every Plan on the same
URL, ref and credentials (counted by the cache, with a stand-in fetcher: the cache is what is under
test here; tests/e2e/test_git_sources.py counts a real server's fetches), a failure kept as long, and
`refresh` saying when what a source gives changed. Plus the loader of a fetched tree: imports inside
the repository, none leaving it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from planner.errors import PlanError, SourceError
from planner.plan.git_source import GitRef, GitSource
from planner.plan.load import load_checkout_plan
from planner.plan.secrets import unread_secrets
from planner.sources.artifacts import SourceCache, source_key
from planner.sources.failures import FETCH_FAILED
from planner.sources.gitfetch import Checkout, Credentials
from planner.sources.signatures import SignedCommit

SOURCE = GitSource(
    url="git://example.com/deploy.git", ref=GitRef(branch="main"), path="plan.yaml", interval=60
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Server:
    """Answers fetches with the commit `head` (or fails while `down`), counting them."""

    def __init__(self) -> None:
        self.head, self.down, self.fetched = "a" * 40, False, 0
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, source: GitSource, credentials: Credentials, store: Path) -> Checkout:
        self.gate.wait()
        self.fetched += 1
        if self.down:
            raise SourceError(FETCH_FAILED, "unreachable")
        return Checkout(
            f"main@sha1:{self.head}", self.head, store / self.head, SignedCommit(self.head, b"", b"", 0)
        )


def test_every_plan_on_one_source_shares_one_fetch_per_interval(tmp_path: Path) -> None:
    server, clock = Server(), Clock()
    cache = SourceCache(tmp_path, fetcher=server, clock=clock)
    server.gate.clear()  # a thousand Plans asking at once wait for the one fetch in flight
    threads = [
        threading.Thread(target=cache.get, args=(f"ns/plan-{n}", SOURCE, Credentials())) for n in range(1000)
    ]
    for thread in threads:
        thread.start()
    server.gate.set()
    for thread in threads:
        thread.join()
    assert server.fetched == 1 and cache.fetches == 1
    assert len(cache.users_of(source_key(SOURCE, Credentials()))) == 1000

    clock.now = 59.0
    cache.get("ns/plan-0", SOURCE, Credentials())
    assert server.fetched == 1
    clock.now = 60.0
    assert cache.due() == [source_key(SOURCE, Credentials())]
    server.head = "b" * 40
    assert cache.refresh(source_key(SOURCE, Credentials())) is True  # another commit: queue its Plans
    assert cache.get("ns/plan-1", SOURCE, Credentials()).commit == "b" * 40
    assert server.fetched == 2


def test_other_credentials_or_refs_are_other_sources_and_a_failure_is_kept_for_the_interval(
    tmp_path: Path,
) -> None:
    server, clock = Server(), Clock()
    cache = SourceCache(tmp_path, fetcher=server, clock=clock)
    cache.get("ns/a", SOURCE, Credentials())
    cache.get("ns/b", SOURCE, Credentials("alice", "token"))
    cache.get("ns/c", GitSource(url=SOURCE.url, ref=GitRef(tag="v1"), path="other.yaml"), Credentials())
    assert server.fetched == 3
    assert "token" not in source_key(SOURCE, Credentials("alice", "token"))

    server.down = True
    with pytest.raises(SourceError):
        cache.get("ns/a", SOURCE, Credentials(), refresh=True)
    with pytest.raises(SourceError):
        cache.get("ns/d", SOURCE, Credentials())  # kept: no second attempt within the interval
    assert server.fetched == 4
    key = source_key(SOURCE, Credentials())
    assert cache.refresh(key) is False  # the same failure: nothing to queue
    server.down = False
    assert cache.refresh(key) is True

    for user in ("ns/a", "ns/d"):
        cache.release(user)
    assert cache.users_of(key) == [] and key not in cache.due() and not cache.refresh(key)


def checkout(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").write_text("planner: the root of a fetched Git source\n")
    return root


PLAN = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: from-file}\nimports: [%s]\n"


def test_a_fetched_plan_imports_inside_the_repository_and_takes_the_objects_name(tmp_path: Path) -> None:
    root = checkout(
        tmp_path / "tree",
        {
            "envs/prod/plan.yaml": PLAN % "../../base.yaml",
            "base.yaml": "configMaps:\n  - name: settings\n    data: {mode: prod}\n",
        },
    )
    loaded = load_checkout_plan(
        root,
        "envs/prod/plan.yaml",
        name="shop",
        namespace="prod",
        service_account=None,
        secret_refs=unread_secrets,
    )
    (plan,) = loaded.plans
    assert (plan.name, plan.namespace, [c.name for c in plan.config_maps]) == ("shop", "prod", ["settings"])
    assert set(plan.source.inputs) == {"envs/prod/plan.yaml", "base.yaml"}  # named in the repository


def test_a_fetched_plan_may_not_import_from_outside_the_repository_nor_name_a_source(tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text("configMaps: []\n")
    root = checkout(tmp_path / "tree", {"plan.yaml": PLAN % "../outside.yaml", "sourced.yaml": SOURCED})
    for path, said in (("plan.yaml", "outside.yaml"), ("sourced.yaml", "a plan file cannot name a source")):
        with pytest.raises(PlanError) as raised:
            load_checkout_plan(
                root, path, name="shop", namespace="prod", service_account=None, secret_refs=unread_secrets
            )
        (problem,) = raised.value.diagnostics
        assert problem.file == path and said in str(problem), str(problem)
        assert str(tmp_path) not in str(problem)  # where the controller keeps checkouts is its own


SOURCED = (
    "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\n"
    "source: {git: {url: 'git://example.com/x.git', path: p.yaml}}\n"
)


class Writer(Server):
    """Fetches into `store` for real: the files a dropped entry must take with it."""

    def __call__(self, source: GitSource, credentials: Credentials, store: Path) -> Checkout:
        checkout = super().__call__(source, credentials, store)
        checkout.root.mkdir(parents=True, exist_ok=True)
        (checkout.root / "plan.yaml").write_text("workloads: []\n")
        return checkout


def test_a_source_no_plan_uses_any_more_leaves_no_files_behind(tmp_path: Path) -> None:
    cache = SourceCache(tmp_path, fetcher=Writer(), clock=Clock())
    rotated = Credentials(username="git", password="new")
    kept = cache.get("ns/a", SOURCE, Credentials())
    cache.get("ns/b", SOURCE, Credentials())
    cache.release("ns/a")
    assert kept.root.exists()  # ns/b still uses it
    moved = cache.get("ns/b", SOURCE, rotated)  # its Secret rotated: another entry, the old one unused
    assert not kept.root.exists() and moved.root.exists()
    cache.release("ns/b")
    assert [path.name for path in tmp_path.iterdir()] == []


def test_a_source_asked_for_again_keeps_the_files_its_new_entry_fetched(tmp_path: Path) -> None:
    cache = SourceCache(tmp_path, fetcher=Writer(), clock=Clock())
    cache.get("ns/a", SOURCE, Credentials())
    cache.release("ns/a")
    again = cache.get("ns/a", SOURCE, Credentials())
    assert (again.root / "plan.yaml").read_text() == "workloads: []\n"

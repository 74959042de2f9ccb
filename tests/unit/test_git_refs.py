"""The pure parts of a Plan's Git source: which commit a ref names among the refs a server advertises
(a semver range choosing the highest release tag), how a revision is spelt (Flux's form), the
`source:` section read from a Plan object, and messages cut free of credentials."""

from __future__ import annotations

import jsonschema
import pytest
from ruamel.yaml import YAML

from planner.errors import SourceError
from planner.plan.git_source import GitRef, GitSource, beside_source, git_source, path_problem
from planner.plan.schema import plan_schema
from planner.sources.artifacts import same_repository
from planner.sources.failures import REF_NOT_FOUND, without_credentials
from planner.sources.gitref import commit_of, revision, wanted
from planner.sources.semver import highest
from tests.paths import REPO

A, B, C, T = "a" * 40, "b" * 40, "c" * 40, "d" * 40
ADVERTISED = {
    "HEAD": A,
    "refs/heads/main": A,
    "refs/heads/release": B,
    "refs/tags/v1.2.0": T,  # annotated: the tag object, peeled below
    "refs/tags/v1.2.0^{}": B,
    "refs/tags/v1.10.1": C,
    "refs/tags/v2.0.0-rc.1": C,
    "refs/tags/0.9.0": A,
}

CHOSEN = [
    (GitRef(branch="main"), "refs/heads/main", A, "main"),
    (GitRef(branch="release"), "refs/heads/release", B, "release"),
    (GitRef(tag="v1.2.0"), "refs/tags/v1.2.0", T, "v1.2.0"),
    (GitRef(semver=">=1.0.0 <2.0.0"), "refs/tags/v1.10.1", C, "v1.10.1"),
    (GitRef(semver="~1.2"), "refs/tags/v1.2.0", T, "v1.2.0"),
    (GitRef(semver="^0.9.0 || 3.x"), "refs/tags/0.9.0", A, "0.9.0"),
    (GitRef(commit=C), "", C, ""),
]


@pytest.mark.parametrize(
    ("ref", "full", "advertised", "name"),
    CHOSEN,
    ids=[
        "a branch is its head",
        "another branch",
        "an annotated tag is wanted as its tag object",
        "a range takes the highest release in it, 1.10 above 1.2, not the pre-release 2.0.0-rc.1",
        "a tilde range stays within its minor",
        "alternatives: the first matches 0.9.0 only",
        "a commit is wanted as it is",
    ],
)
def test_a_ref_names_one_advertised_object(ref: GitRef, full: str, advertised: str, name: str) -> None:
    chosen = wanted(ref, ADVERTISED)
    assert (chosen.ref, chosen.advertised, chosen.name) == (full, advertised, name)


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        (GitRef(branch="gone"), "the repository has no branch 'gone'"),
        (GitRef(tag="v9"), "the repository has no tag 'v9'"),
        (GitRef(semver=">=3.0.0"), "no release tag in the range '>=3.0.0'"),
        (GitRef(semver="one.two"), "bad semver range 'one.two'"),
    ],
    ids=["a missing branch", "a missing tag", "no tag in the range", "a range that does not parse"],
)
def test_a_ref_the_server_lacks_is_ref_not_found(ref: GitRef, said: str) -> None:
    with pytest.raises(SourceError) as raised:
        wanted(ref, ADVERTISED)
    assert raised.value.reason == REF_NOT_FOUND
    assert str(raised.value).startswith(said)


def test_semver_ranges_choose_the_highest_release() -> None:
    tags = ["v1.0.0", "v1.2.3", "v1.3.0", "v2.0.0", "v2.1.0-beta", "latest", "v0.2.5", "v0.3.0"]
    assert highest(tags, "1.x") == "v1.3.0"
    assert highest(tags, "1.2") == "v1.2.3"
    assert highest(tags, "^1.2.3") == "v1.3.0"
    assert highest(tags, "^0.2.3") == "v0.2.5"
    assert highest(tags, ">1.0.0, <=1.2.3") == "v1.2.3"
    assert highest(tags, "!=2.0.0") == "v1.3.0"
    assert highest(tags, "*") == "v2.0.0"
    assert highest(tags, ">=3") is None


def test_a_revision_is_spelt_as_flux_spells_it() -> None:
    assert revision("main", A) == f"main@sha1:{A}"
    assert revision("v1.2.0", B) == f"v1.2.0@sha1:{B}"
    assert revision("", C) == f"sha1:{C}"
    assert commit_of(f"main@sha1:{A}") == A and commit_of(f"sha1:{C}") == C and commit_of("abc") == ""


def test_the_source_section_is_read_with_its_defaults() -> None:
    plan = {
        "metadata": {"name": "shop"},
        "reconcile": {"interval": "5m"},
        "source": {"git": {"url": "https://example.com/deploy.git", "path": "plans/shop.yaml"}},
    }
    assert git_source(plan) == GitSource(
        url="https://example.com/deploy.git", ref=GitRef(branch="main"), path="plans/shop.yaml", interval=60.0
    )
    plan["source"]["git"].update(ref={"tag": "v1"}, secretRef={"name": "repo"}, interval="10s")  # type: ignore[index]
    found = git_source(plan)
    assert found is not None and (found.ref, found.secret_name, found.interval) == (
        GitRef(tag="v1"),
        "repo",
        10.0,
    )
    assert git_source({"workloads": []}) is None
    assert beside_source({**plan, "workloads": [], "secrets": []}) == ["workloads", "secrets"]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("plans/shop.yaml", None),
        ("./plans/../shop.yaml", None),
        ("/etc/plan.yaml", "a path relative to the repository's root"),
        ("plans/../../outside.yaml", "leaves the repository"),
    ],
    ids=["inside", "inside after normalising", "absolute", "leaving the repository"],
)
def test_the_plan_path_stays_inside_the_repository(path: str, problem: str | None) -> None:
    found = path_problem(path)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_messages_lose_credentials_and_urls_compare_without_them() -> None:
    said = "fetch https://alice:tok3n@example.com/deploy.git failed: tok3n refused"
    assert without_credentials(said, ["tok3n"]) == "fetch https://example.com/deploy.git failed: *** refused"
    assert same_repository("https://GitHub.com/acme/deploy.git", "https://github.com/acme/deploy/")
    assert same_repository("git://example.com/deploy", "https://token@example.com/deploy.git")
    assert not same_repository("https://github.com/acme/deploy", "https://github.com/acme/other")


def test_the_documented_plans_with_a_git_source_are_valid_plan_objects() -> None:
    """deploy/plans/git-source.yaml and docs/gitops.md's example pass the schema and read as sources."""
    yaml = YAML(typ="safe")
    deployed = next(iter(yaml.load_all((REPO / "deploy" / "plans" / "git-source.yaml").read_text())))
    text = (REPO / "docs" / "gitops.md").read_text()
    documented = yaml.load(text.split("```yaml\napiVersion: planner.dev/v1\n", 1)[1].split("```", 1)[0])
    documented = {"apiVersion": "planner.dev/v1", **documented}
    for plan in (deployed, documented):
        jsonschema.validate(plan, plan_schema())
        found = git_source(plan)
        assert found is not None and found.path == "plans/shop.yaml" and found.secret_name == "deploy-repo"
        assert beside_source(plan) == []


def _with_url(url: str) -> dict[str, object]:
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "shop", "namespace": "shop"},
        "source": {"git": {"url": url, "path": "plans/shop.yaml"}},
    }


@pytest.mark.parametrize(
    ("url", "over_ssh"),
    [
        ("https://github.com/acme/deploy.git", False),
        ("git://example.com/deploy.git", False),
        ("ssh://git@github.com/acme/deploy.git", True),
        ("git@github.com:acme/deploy.git", True),  # Git's scp-like form, as Argo CD takes it
        ("gitea.internal:/srv/git/deploy.git", True),
    ],
)
def test_a_source_url_is_ssh_in_either_form_and_valid(url: str, over_ssh: bool) -> None:
    jsonschema.validate(_with_url(url), plan_schema())
    found = git_source(_with_url(url))
    assert found is not None and found.over_ssh is over_ssh


@pytest.mark.parametrize(
    "url",
    [
        "https://alice:tok3n@github.com/acme/deploy.git",
        "alice:tok3n@github.com:acme/deploy.git",
        "git@host://x",
    ],
    ids=["password in an https URL", "password in the short SSH form", "a scheme's slashes after the host"],
)
def test_a_source_url_with_a_password_or_a_mangled_scheme_is_refused(url: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(_with_url(url), plan_schema())


def test_the_short_ssh_form_names_the_same_repository_as_its_other_urls() -> None:
    """A webhook's `clone_url` (https) finds Plans that fetch `git@github.com:acme/deploy.git`."""
    assert same_repository("git@github.com:acme/deploy.git", "https://github.com/acme/deploy")
    assert same_repository("git@GitHub.com:acme/deploy.git", "ssh://git@github.com/acme/deploy.git")
    assert not same_repository("git@github.com:acme/deploy.git", "https://github.com/acme/other")

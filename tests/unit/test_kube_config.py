"""Which kubeconfig and context a command uses: kubectl's sources, and never a guess.

A named source (`--kubeconfig`, `KUBECONFIG`, `--context`) that cannot be used is an error saying what
is wrong; in-cluster credentials are used only when nothing names a kubeconfig and `~/.kube/config` is
absent. The files are real (tmp_path); HOME, KUBECONFIG and KUBERNETES_SERVICE_HOST are set per test.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest
import urllib3

from planner.errors import KubeconfigError, NoClusterError
from planner.kube.client import connection_cause, describe_request
from planner.kube.config import IN_CLUSTER, KubeconfigContext, choose_context, default_namespace

TWO_CONTEXTS = """\
apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: "https://lab.example:6443"}
users:
- name: ci
  user: {token: abc}
contexts:
- name: a
  context: {cluster: lab, user: ci}
- name: b
  context: {cluster: lab, user: ci, namespace: shop}
current-context: a
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, no KUBECONFIG, not in a pod."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return home


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_a_missing_context_in_a_named_kubeconfig_is_an_error_listing_the_contexts(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(home / "kc", TWO_CONTEXTS)
    monkeypatch.setenv("KUBECONFIG", path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # in a pod: must still not fall back
    with pytest.raises(KubeconfigError) as error:
        choose_context(kubeconfig=None, context="prod")
    assert str(error.value) == f'context "prod" not found in {path} (contexts: a, b)'


@pytest.mark.parametrize("source", ["flag", "env"], ids=["--kubeconfig", "KUBECONFIG"])
def test_a_named_kubeconfig_that_does_not_exist_is_an_error_even_in_a_pod(
    home: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    missing = str(home / "nowhere" / "kubeconfig")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    if source == "env":
        monkeypatch.setenv("KUBECONFIG", missing)
    with pytest.raises(KubeconfigError) as error:
        choose_context(kubeconfig=missing if source == "flag" else None, context=None)
    assert str(error.value) == f"kubeconfig {missing}: no such file"


def test_in_cluster_credentials_only_when_nothing_names_a_kubeconfig(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert choose_context(kubeconfig=None, context=None) == IN_CLUSTER
    with pytest.raises(KubeconfigError) as error:
        choose_context(kubeconfig=None, context="prod")
    assert str(error.value).startswith('context "prod" not found: no kubeconfig')


def test_no_source_at_all_says_how_to_start_a_cluster(home: Path) -> None:
    with pytest.raises(NoClusterError) as error:
        choose_context(kubeconfig=None, context=None)
    assert "planner cluster up" in str(error.value)


def test_the_default_kubeconfig_gives_the_current_context_with_its_user_and_server(home: Path) -> None:
    path = write(home / ".kube" / "config", TWO_CONTEXTS)
    assert choose_context(kubeconfig=None, context=None) == KubeconfigContext(
        files=(path,), context="a", namespace=None, user="ci", server="https://lab.example:6443"
    )
    assert choose_context(kubeconfig=None, context="b").namespace == "shop"


def test_kubeconfig_files_are_merged_and_every_one_must_exist(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = write(home / "one", TWO_CONTEXTS)
    second = write(
        home / "two",
        "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\n"
        "contexts:\n- name: c\n  context: {cluster: lab, user: ci, namespace: ops}\n",
    )
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert choose_context(kubeconfig=None, context="c").namespace == "ops"
    monkeypatch.setenv("KUBECONFIG", f"{first}:{home / 'gone'}")
    with pytest.raises(KubeconfigError, match="gone: no such file"):
        choose_context(kubeconfig=None, context=None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("clusters: [\n", "not valid YAML: "),
        ("- just\n- a list\n", "not a kubeconfig (expected a mapping with clusters, contexts and users)"),
        (TWO_CONTEXTS.replace("current-context: a\n", ""), "sets no current-context: pass --context"),
    ],
    ids=["broken YAML", "not a mapping", "no current context"],
)
def test_a_broken_kubeconfig_says_what_is_wrong_in_one_line(home: Path, text: str, expected: str) -> None:
    path = write(home / "kc", text)
    with pytest.raises(KubeconfigError) as error:
        choose_context(kubeconfig=path, context=None)
    assert expected in str(error.value)
    assert str(error.value).startswith(f"kubeconfig {path}")
    assert "\n" not in str(error.value)


def test_the_default_namespace_comes_from_the_flag_the_context_or_default(home: Path) -> None:
    path = write(home / "kc", TWO_CONTEXTS)
    assert default_namespace(namespace="x", kubeconfig=str(home / "absent"), context=None) == "x"
    assert default_namespace(namespace=None, kubeconfig=path, context="b") == "shop"
    assert default_namespace(namespace=None, kubeconfig=path, context="a") == "default"
    assert default_namespace(namespace=None, kubeconfig=None, context=None) == "default"
    with pytest.raises(KubeconfigError):
        default_namespace(namespace=None, kubeconfig=path, context="prod")


@pytest.mark.parametrize(
    ("verb", "path", "expected"),
    [
        ("list", "/apis/apps/v1/namespaces/shop/deployments", "list deployments in namespace shop"),
        ("get", "/api/v1/namespaces/shop/secrets/shop", "get secrets/shop in namespace shop"),
        ("list", "/api/v1/namespaces?limit=500", "list namespaces"),
        ("get", "/api/v1/namespaces/shop", "get namespaces/shop"),
        ("list", "/apis/storage.k8s.io/v1/storageclasses", "list storageclasses"),
    ],
)
def test_a_request_is_described_by_verb_resource_and_namespace(verb: str, path: str, expected: str) -> None:
    assert describe_request(verb, path) == expected


def _wrapped(cause: BaseException, outer: urllib3.exceptions.HTTPError) -> urllib3.exceptions.HTTPError:
    outer.__cause__ = cause
    return outer


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            _wrapped(
                ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
                urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection"),  # type: ignore[arg-type]
            ),
            "connection refused",
        ),
        (
            _wrapped(
                socket.gaierror(-2, "Name or service not known"),
                urllib3.exceptions.NewConnectionError(None, "Failed to resolve"),  # type: ignore[arg-type]
            ),
            "host name not found",
        ),
        (urllib3.exceptions.ConnectTimeoutError("timed out"), "no connection within 5s"),
        (urllib3.exceptions.ProtocolError("Connection aborted."), "connection closed by the server"),
    ],
    ids=["refused", "unresolvable", "connect timeout", "closed"],
)
def test_a_connection_error_is_named_by_its_cause(error: BaseException, expected: str) -> None:
    assert connection_cause(error, connect_timeout=5.0) == expected

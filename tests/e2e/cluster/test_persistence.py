"""The lifecycle functions `planner cluster …` calls: up, status, down, reset — and state surviving a
restart when it lives in a data directory."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from planner.slim import cluster


def _get(url: str, path: str) -> tuple[int, dict[str, object]]:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url + path, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _post(url: str, path: str, body: dict[str, object]) -> int:
    import urllib.request

    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return int(reply.status)


def test_state_survives_down_and_up_and_reset_empties_it(tmp_path: Path) -> None:
    data = tmp_path / "cluster"
    first = cluster.up(data_dir=data, port=None, memory=False)
    try:
        assert cluster.up(data_dir=data, port=None, memory=False) == first  # idempotent
        assert cluster.status(data_dir=data) == first
        assert (data / "server.pid").read_text() == str(first.pid)
        assert (data / "server.port").read_text() == str(first.port)
        kubeconfig = json.loads(first.kubeconfig.read_text())
        assert kubeconfig["current-context"] == "planner-embedded"
        assert (
            _post(first.url, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "kept"}}) == 201
        )
        rv_before = _get(first.url, "/api/v1/namespaces/default/configmaps/kept")[1]["metadata"][
            "resourceVersion"
        ]  # type: ignore[index]
    finally:
        assert cluster.down(data_dir=data) is True
    assert cluster.status(data_dir=data) is None
    assert cluster.down(data_dir=data) is False

    second = cluster.up(data_dir=data, port=None, memory=False)
    try:
        status, kept = _get(second.url, "/api/v1/namespaces/default/configmaps/kept")
        assert status == 200 and kept["metadata"]["resourceVersion"] == rv_before  # type: ignore[index]
        _post(second.url, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "later"}})
        later = _get(second.url, "/api/v1/namespaces/default/configmaps/later")[1]
        assert int(later["metadata"]["resourceVersion"]) > int(rv_before)  # type: ignore[index]
    finally:
        cluster.reset(data_dir=data)
    assert cluster.status(data_dir=data) is None
    assert not (data / "state.db").exists()

    third = cluster.up(data_dir=data, port=None, memory=False)
    try:
        assert _get(third.url, "/api/v1/namespaces/default/configmaps/kept")[0] == 404
    finally:
        cluster.reset(data_dir=data)


def test_memory_mode_keeps_nothing(tmp_path: Path) -> None:
    data = tmp_path / "mem"
    info = cluster.up(data_dir=data, port=None, memory=True)
    try:
        assert info.memory and cluster.status(data_dir=data) == info
        _post(info.url, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "fleeting"}})
    finally:
        cluster.down(data_dir=data)
    again = cluster.up(data_dir=data, port=None, memory=True)
    try:
        assert _get(again.url, "/api/v1/namespaces/default/configmaps/fleeting")[0] == 404
        assert not (data / "state.db").exists()
    finally:
        cluster.reset(data_dir=data)


def test_bearer_token_is_required_when_set() -> None:
    with cluster.running_cluster(token="s3cret") as handle:
        status, body = _get(handle.url, "/api/v1/namespaces")
        assert (status, body["reason"]) == (401, "Unauthorized")
        assert cluster.ready(handle.url)  # health endpoints stay open, as on a real apiserver
        kubeconfig = json.loads(handle.kubeconfig.read_text())
        assert kubeconfig["users"][0]["user"] == {"token": "s3cret"}


def test_default_data_dir_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert cluster.default_data_dir() == tmp_path / "planner" / "cluster"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert cluster.default_data_dir() == Path.home() / ".local" / "state" / "planner" / "cluster"


def test_the_admin_token_is_kept_off_the_command_line_even_when_it_looks_like_an_option() -> None:
    token = "-starts-with-a-dash"  # a made-up token_urlsafe value starts with "-" one time in 64
    with cluster.running_cluster(token=token) as handle:
        command_line = Path(f"/proc/{handle.pid}/cmdline").read_bytes().decode()
        assert token not in command_line  # any local user can read a command line
        assert _get(handle.url, "/api/v1/namespaces")[0] == 401
        request = urllib.request.Request(
            f"{handle.url}/api/v1/namespaces", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200

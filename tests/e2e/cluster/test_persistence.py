"""The lifecycle functions `planner cluster …` calls: up, status, down, reset — and state surviving a
restart when it lives in a data directory."""

from __future__ import annotations

import json
import urllib.error
from dataclasses import replace
from pathlib import Path

import pytest

from planner.slim import cluster
from planner.testing.slimadmin import Endpoint, urlopen


def _get(endpoint: Endpoint, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urlopen(endpoint, path, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _post(endpoint: Endpoint, path: str, body: dict[str, object]) -> int:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    with urlopen(endpoint, path, data=data, method="POST", headers=headers, timeout=10) as reply:
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
        assert _post(first, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "kept"}}) == 201
        rv_before = _get(first, "/api/v1/namespaces/default/configmaps/kept")[1]["metadata"][
            "resourceVersion"
        ]  # type: ignore[index]
    finally:
        assert cluster.down(data_dir=data) is True
    assert cluster.status(data_dir=data) is None
    assert cluster.down(data_dir=data) is False

    second = cluster.up(data_dir=data, port=None, memory=False)
    try:
        status, kept = _get(second, "/api/v1/namespaces/default/configmaps/kept")
        assert status == 200 and kept["metadata"]["resourceVersion"] == rv_before  # type: ignore[index]
        _post(second, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "later"}})
        later = _get(second, "/api/v1/namespaces/default/configmaps/later")[1]
        assert int(later["metadata"]["resourceVersion"]) > int(rv_before)  # type: ignore[index]
    finally:
        cluster.reset(data_dir=data)
    assert cluster.status(data_dir=data) is None
    assert not (data / "state.db").exists()

    third = cluster.up(data_dir=data, port=None, memory=False)
    try:
        assert _get(third, "/api/v1/namespaces/default/configmaps/kept")[0] == 404
    finally:
        cluster.reset(data_dir=data)


def test_memory_mode_keeps_nothing(tmp_path: Path) -> None:
    data = tmp_path / "mem"
    info = cluster.up(data_dir=data, port=None, memory=True)
    try:
        assert info.memory and cluster.status(data_dir=data) == info
        _post(info, "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "fleeting"}})
    finally:
        cluster.down(data_dir=data)
    again = cluster.up(data_dir=data, port=None, memory=True)
    try:
        assert _get(again, "/api/v1/namespaces/default/configmaps/fleeting")[0] == 404
        assert not (data / "state.db").exists()
    finally:
        cluster.reset(data_dir=data)


def test_bearer_token_is_required_when_set() -> None:
    with cluster.running_cluster(token="s3cret") as handle:
        status, body = _get(replace(handle, token=None), "/api/v1/namespaces")
        assert (status, body["reason"]) == (403, "Forbidden")
        assert _get(replace(handle, token="wrong"), "/api/v1/namespaces")[0] == 401
        assert cluster.ready(handle.url, ca=handle.ca)  # health endpoints stay open, as on a real apiserver
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
        assert _get(replace(handle, token="starts-with-a-dash"), "/api/v1/namespaces")[0] == 401
        assert _get(handle, "/api/v1/namespaces")[0] == 200

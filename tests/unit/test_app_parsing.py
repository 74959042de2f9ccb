"""Each command reads each plan file once. `apply` used to load its files a second time to plan them;
on a 1,000-workload plan that doubled the time before the first request."""

from __future__ import annotations

import socket
from collections import Counter
from pathlib import Path

import pytest

import planner.plan.load
from planner import app
from planner.errors import Diagnostic, PlannerError
from planner.kube.client import ClientOptions
from planner.plan.source import ParsedFile
from tests.fakes import RecordingSink
from tests.paths import PLANS

FILES = [PLANS / "web-stack.yaml", PLANS / "sandboxes.yaml"]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each plan file is parsed, counted around the loader's real parser."""
    counts: Counter[str] = Counter()
    parse = planner.plan.load.read_plan_file

    def counted(path: Path) -> ParsedFile | Diagnostic:
        counts[path.name] += 1
        return parse(path)

    monkeypatch.setattr(planner.plan.load, "read_plan_file", counted)
    return counts


@pytest.fixture
def unreachable(tmp_path: Path) -> app.Target:
    """A cluster nothing answers for: the first request fails at once, after the plans were read."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: gone\n"
        f"clusters: [{{name: gone, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "contexts: [{name: gone, context: {cluster: gone, user: nobody}}]\n"
        "users: [{name: nobody, user: {}}]\n",
        encoding="utf-8",
    )
    return app.Target(kubeconfig=str(kubeconfig), options=ClientOptions(retries=0))


def test_apply_parses_each_plan_file_once(parses: Counter[str], unreachable: app.Target) -> None:
    options = app.ApplyOptions(no_wait=True)
    with pytest.raises(PlannerError, match="cannot reach"):
        app.apply_plans(
            FILES, target=unreachable, options=options, watch=None, sink=RecordingSink(), notice=print
        )
    assert parses == {"web-stack.yaml": 1, "sandboxes.yaml": 1}


def test_plan_parses_each_plan_file_once(parses: Counter[str], unreachable: app.Target) -> None:
    with pytest.raises(PlannerError, match="cannot reach"):
        app.plan(FILES, target=unreachable, options=app.PlanOptions())
    assert parses == {"web-stack.yaml": 1, "sandboxes.yaml": 1}

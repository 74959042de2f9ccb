"""What `planner apply` says while it waits, end to end against the simulated cluster: why each wait is
not over (from the pods' statuses and the scheduler's and kubelet's Events), in JSON, in plain text and
on a terminal; what a timeout says; and colour only where it is wanted.

The simulation's pod-template annotations (`sim.planner.dev/*`, docs/embedded-cluster.md) and a node
affinity no node matches make the stuck states; the cluster's own view of them is read over raw HTTP.
"""

from __future__ import annotations

import itertools
import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan
from tests.paths import REPO

SGR = re.compile(r"\x1b\[[0-9;]*m")
UNSCHEDULABLE = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def stuck_plan(namespace: str) -> str:
    """`place` cannot be scheduled, `pull` cannot pull its image, `crash` exits 1 before it could be
    ready (a crash loop), `fine` becomes ready, and `after` depends on `pull`."""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: stuck, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: place\n    image: nginx:1.27\n"
        "    scheduling: [{type: node, key: disktype, operator: In, values: [ssd]}]\n"
        "  - name: pull\n    image: 'web:nope'\n"
        "    podAnnotations: {sim.planner.dev/image-pull-error: 'manifest unknown'}\n"
        "  - name: crash\n    image: nginx:1.27\n"
        "    podAnnotations: {sim.planner.dev/exit-code: '1', sim.planner.dev/run-seconds: '0.1',\n"
        "      sim.planner.dev/ready-after-seconds: '5'}\n"
        "  - {name: fine, image: 'nginx:1.27'}\n"
        "  - {name: after, image: 'nginx:1.27', dependsOn: [pull]}\n"
    )


EVENTS_SCHEMA = jsonschema.Draft7Validator(json.loads((REPO / "schemas" / "events.schema.json").read_text()))


def json_events(output: str) -> list[dict[str, Any]]:
    """The JSON lines, each checked against the documented schema."""
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    for event in events:
        assert [error.message for error in EVENTS_SCHEMA.iter_errors(event)] == [], event
    return events


def pods(cluster: ClusterHandle, namespace: str, workload: str) -> list[dict[str, Any]]:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{workload}")
    assert status == 200, body
    items: list[dict[str, Any]] = body["items"]
    return items


def reasons_of(events: list[dict[str, Any]], obj: str) -> list[str]:
    return [e["reason"] for e in events if e["type"] == "Waiting" and e["object"] == obj and "reason" in e]


def test_json_waiting_events_say_why_each_wait_is_not_over_and_a_timeout_carries_the_last_reason(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, stuck_plan(namespace))
    result = planner("apply", str(plan), "--timeout", "12s", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    events = json_events(result.stdout)
    place, pull, crash = (f"deployment/{namespace}/{name}" for name in ("place", "pull", "crash"))

    assert reasons_of(events, place)[0] == f"0/1 pods scheduled: {UNSCHEDULABLE}"
    assert (
        reasons_of(events, pull)[0] == 'ImagePullBackOff: Failed to pull image "web:nope": manifest unknown'
    )
    assert re.fullmatch(
        r"CrashLoopBackOff \(\d+ restarts?\): container crash exited with code 1",
        reasons_of(events, crash)[0],
    ), reasons_of(events, crash)
    assert reasons_of(events, f"deployment/{namespace}/fine") == []  # ready at once: nothing to explain

    failed = {e["object"]: e for e in events if e["type"] == "Failed"}
    assert (
        failed[place]["message"]
        == f"timed out after 12s waiting until ready: 0/1 pods scheduled: {UNSCHEDULABLE}"
    )
    assert failed[place]["reason"] == f"0/1 pods scheduled: {UNSCHEDULABLE}"
    assert failed[pull]["reason"] == reasons_of(events, pull)[-1]
    skipped = [e["task"] for e in events if e["type"] == "Skipped"]
    assert f"create deployment/{namespace}/after" in skipped

    # the cluster agrees: the pod is unschedulable, the other waits on its image
    [placed] = pods(cluster, namespace, "place")
    scheduled = next(c for c in placed["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    [pulling] = pods(cluster, namespace, "pull")
    waiting = pulling["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] in ("ErrImagePull", "ImagePullBackOff")


def test_a_reason_is_reported_again_only_when_it_changes_and_at_most_every_ten_seconds(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: loop, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: crash\n    image: nginx:1.27\n"
        "    podAnnotations: {sim.planner.dev/exit-code: '1', sim.planner.dev/run-seconds: '0.1',\n"
        "      sim.planner.dev/ready-after-seconds: '5'}\n",
    )
    result = planner("apply", str(plan), "--timeout", "25s", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    reports = [
        e
        for e in json_events(result.stdout)
        if e["type"] == "Waiting" and "reason" in e and e["object"] == f"deployment/{namespace}/crash"
    ]
    texts = [e["reason"] for e in reports]
    assert len(texts) >= 2, texts  # the restart count grows, so the reason changes
    assert all(earlier != later for earlier, later in itertools.pairwise(texts)), texts
    times = [_seconds(e["time"]) for e in reports]
    assert all(later - earlier >= 9.9 for earlier, later in itertools.pairwise(times)), times


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_plain_text_lines_count_tasks_and_elapsed_time_and_print_each_reason(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, stuck_plan(namespace))
    result = planner("apply", str(plan), "--timeout", "8s")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert all(re.match(r"\[\d+/\d+ \d+:\d\d\] ", line) for line in progress), progress
    assert f"deployment/{namespace}/place: not ready yet: 0/1 pods scheduled: {UNSCHEDULABLE}" in {
        line.split("] ", 1)[1] for line in progress
    }
    [timed_out] = [line for line in progress if f"failed wait-ready deployment/{namespace}/place" in line]
    assert timed_out.endswith(f"timed out after 8s waiting until ready: 0/1 pods scheduled: {UNSCHEDULABLE}")
    done, total = map(int, re.findall(r"\[(\d+)/(\d+)", progress[-1])[0])
    assert done == total  # the last line has every task accounted for
    assert "\x1b[" not in result.stdout  # a pipe gets no styles


# --- a terminal ----------------------------------------------------------------------------------------


def in_terminal(
    cluster: ClusterHandle, home: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run the CLI with its stdout on a pseudo-terminal; (exit code, everything it wrote there)."""
    primary, secondary = pty.openpty()
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(cluster.kubeconfig),
        "TERM": "xterm-256color",
        "COLUMNS": "200",
        "LINES": "50",
    } | (env or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "planner", *args],
        cwd=REPO,
        env=environment,
        stdout=secondary,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    process.wait(timeout=120)
    assert process.stderr is not None
    process.stderr.close()
    return process.returncode, b"".join(chunks).decode(errors="replace")


def test_on_a_terminal_apply_draws_a_live_display_and_leaves_the_lines_and_the_summary(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, stuck_plan(namespace))
    code, screen = in_terminal(cluster, home, "apply", str(plan), "--timeout", "6s")
    assert code == 1
    plain = SGR.sub("", screen)
    assert re.search(r"\d+/\d+ tasks done · \d+:\d\d · \d+ writes? in flight · \d+ waits? pending", plain), (
        plain
    )
    assert f"deployment/{namespace}/place" in plain and UNSCHEDULABLE in plain
    assert f"Plan stuck (namespace {namespace}): " in plain
    assert SGR.search(screen) is not None  # coloured


@pytest.mark.parametrize(
    ("flags", "env"),
    [(("--no-color",), {}), ((), {"NO_COLOR": "1"})],
    ids=["--no-color before the command", "NO_COLOR set to anything"],
)
def test_no_color_and_NO_COLOR_leave_apply_and_plan_without_styles_on_a_terminal(
    cluster: ClusterHandle,
    home: Path,
    namespace: str,
    tmp_path: Path,
    flags: tuple[str, ...],
    env: dict[str, str],
) -> None:
    plan = write_plan(
        tmp_path,
        stuck_plan(namespace).replace(
            "    scheduling: [{type: node, key: disktype, operator: In, values: [ssd]}]\n", ""
        ),
    )
    _, planned = in_terminal(cluster, home, "plan", str(plan))
    assert SGR.search(planned) is not None  # without either, the plan is coloured on a terminal
    _, plain_plan = in_terminal(cluster, home, *flags, "plan", str(plan), env=env)
    assert f"  + create deployment/{namespace}/fine\r\n" in plain_plan
    assert SGR.search(plain_plan) is None, plain_plan
    _, applied = in_terminal(cluster, home, *flags, "apply", str(plan), "--timeout", "3s", env=env)
    assert "tasks done" in applied
    assert SGR.search(applied) is None, applied

"""The simulated kubelet's timeline as pure functions: knobs, probe timings, restarts, init order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from planner.slim import podsim, podstatus

T0 = 1_000_000.0


def pod(
    containers: list[dict[str, Any]],
    *,
    init: list[dict[str, Any]] | None = None,
    policy: str = "Always",
    **annotations: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "restartPolicy": policy}
    if init:
        spec["initContainers"] = init
    meta = {
        "name": "p",
        "namespace": "ns",
        "uid": "u1",
        "annotations": {f"sim.planner.dev/{k.replace('_', '-')}": v for k, v in annotations.items()},
    }
    return {"metadata": meta, "spec": spec}


def view_at(obj: dict[str, Any], seconds: float) -> podsim.PodView:
    return podsim.pod_view(obj, t0=T0, now=T0 + seconds, scale=1.0)


@pytest.mark.parametrize(
    ("annotations", "container", "expected"),
    [
        ({}, "app", podsim.Knobs()),
        ({"sim.planner.dev/exit-code": "3"}, "app", podsim.Knobs(exit_code=3)),
        ({"sim.planner.dev/exit-code.sidecar": "3"}, "app", podsim.Knobs()),
        (
            {"sim.planner.dev/exit-code.sidecar": "3", "sim.planner.dev/exit-code": "1"},
            "sidecar",
            podsim.Knobs(exit_code=3),
        ),
        ({"sim.planner.dev/never-ready": "true"}, "app", podsim.Knobs(never_ready=True)),
        ({"sim.planner.dev/ready-after-seconds": "2.5"}, "app", podsim.Knobs(ready_after=2.5)),
        ({"sim.planner.dev/run-seconds": "oops"}, "app", podsim.Knobs()),
    ],
    ids=[
        "no annotations give the defaults",
        "a pod-wide knob applies to every container",
        "a knob suffixed with another container's name does not apply",
        "the container's own suffix wins over the pod-wide value",
        "never-ready is a boolean",
        "ready-after-seconds is a number of seconds",
        "a value that is not a number is ignored",
    ],
)
def test_knobs_are_read_per_container(
    annotations: dict[str, str], container: str, expected: podsim.Knobs
) -> None:
    assert podsim.knobs_for(annotations, container) == expected


@pytest.mark.parametrize(
    ("restarts", "expected"),
    [(0, 0.0), (1, 10.0), (2, 20.0), (3, 40.0), (6, 300.0), (20, 300.0)],
    ids=[
        "the first crash restarts at once",
        "then 10 s",
        "then 20 s",
        "then 40 s",
        "capped at five minutes",
        "still capped much later",
    ],
)
def test_restart_backoff_doubles_to_five_minutes(restarts: int, expected: float) -> None:
    assert podsim.restart_delay(restarts, 1.0) == expected


@pytest.mark.parametrize(
    ("probe", "ready_after", "expected"),
    [
        (None, 0.0, 0.0),
        (None, 3.0, 3.0),
        ({"initialDelaySeconds": 5, "periodSeconds": 10}, 0.0, 5.0),
        ({"initialDelaySeconds": 5, "periodSeconds": 10}, 7.0, 15.0),
        ({"initialDelaySeconds": 0, "periodSeconds": 2, "successThreshold": 3}, 1.0, 6.0),
    ],
    ids=[
        "no probe: ready when started",
        "no probe: ready after the knob's delay",
        "probe: the first probe after initialDelaySeconds succeeds",
        "probe: readiness waits for the first probe after the knob's delay",
        "probe: successThreshold consecutive successes, one period apart",
    ],
)
def test_readiness_follows_probe_timings(
    probe: dict[str, Any] | None, ready_after: float, expected: float
) -> None:
    container = {"name": "app"} if probe is None else {"name": "app", "readinessProbe": probe}
    assert podsim.ready_offset(container, podsim.Knobs(ready_after=ready_after), 1.0) == expected


def test_liveness_failure_restarts_with_growing_backoff() -> None:
    container = {
        "name": "app",
        "image": "nginx",
        "livenessProbe": {"periodSeconds": 1, "failureThreshold": 2},
    }
    obj = pod([container], liveness_fail_after_seconds="2")
    # start 0.3; killed at 0.3+2+1=3.3; restarted at once; killed 6.3; back-off 10 s until 16.3
    samples = [view_at(obj, s).main[0] for s in (3.0, 4.0, 7.0, 17.0)]
    assert [c.restart_count for c in samples] == [0, 1, 1, 2]
    assert samples[2].waiting_reason == "CrashLoopBackOff"
    assert samples[2].backoff_seconds == 10.0
    assert samples[1].runs[0].exit_code == podsim.LIVENESS_EXIT_CODE


def test_init_containers_run_in_order_before_the_main_containers() -> None:
    obj = pod([{"name": "app"}], init=[{"name": "one"}, {"name": "two"}], run_seconds="1")
    # created at 0.3; "one" runs 0.3–1.3; "two" 1.3–2.3; then "app"
    during_second = view_at(obj, 1.5)
    assert [bool(c.runs) for c in during_second.init] == [True, True]
    assert during_second.init[0].done and not during_second.init[1].done
    assert during_second.main[0].waiting_reason == "PodInitializing"
    assert view_at(obj, 2.5).init_done_at == pytest.approx(T0 + 2.3)


def test_failing_init_under_never_fails_the_pod() -> None:
    obj = pod([{"name": "app"}], init=[{"name": "setup"}], policy="Never", init_exit_code="2")
    view = view_at(obj, 5.0)
    assert view.failed
    assert podstatus.phase(view, T0 + 5.0) == "Failed"


def test_failing_init_under_always_retries_and_stays_pending() -> None:
    obj = pod([{"name": "app"}], init=[{"name": "setup"}], init_exit_code="2")
    view = view_at(obj, 15.0)
    assert not view.failed
    assert view.init[0].restart_count >= 1
    assert podstatus.phase(view, T0 + 15.0) == "Pending"


SIDECAR = {"name": "proxy", "restartPolicy": "Always"}


def _printed(obj: dict[str, Any], seconds: float) -> tuple[str, str, str]:
    """What kubectl prints for the pod at `seconds`, from the status the node agent would write."""
    view = view_at(obj, seconds)
    status = podstatus.pod_status(
        obj, view, t0=T0, now=T0 + seconds, host_ip="10.0.0.10", pod_ip="10.244.0.5"
    )
    return podstatus.pod_status_cells({**obj, "status": status}, datetime.fromtimestamp(T0 + seconds, UTC))


def test_a_sidecar_starts_in_its_place_and_lets_the_next_init_container_start_at_once() -> None:
    obj = pod([{"name": "app"}], init=[SIDECAR, {"name": "setup"}])
    view = view_at(obj, 0.5)  # created at 0.3: the sidecar and "setup" both started then
    assert [c.runs[0].start for c in view.init] == [T0 + 0.3, T0 + 0.3]
    assert view.initialized(view.init[0]) and not view.initialized(view.init[1])
    assert view_at(obj, 0.7).init_done_at == pytest.approx(T0 + 0.6)


def test_a_sidecar_keeps_running_and_counts_in_ready_while_the_pod_runs() -> None:
    obj = pod([{"name": "app"}], init=[SIDECAR])
    view = view_at(obj, 60.0)
    assert view.init[0].running(T0 + 60.0) and not view.init[0].done
    assert _printed(obj, 60.0) == ("2/2", "Running", "0")


def test_a_crashing_sidecar_is_restarted_whatever_the_pod_policy() -> None:
    knobs = {"crash-after-seconds.proxy": "1", "run-seconds.app": "30"}
    view = view_at(pod([{"name": "app"}], init=[SIDECAR], policy="Never", **knobs), 5.0)
    assert view.init[0].restart_count >= 1 and not view.failed


def test_a_jobs_sidecar_stops_when_its_regular_containers_finish() -> None:
    obj = pod([{"name": "work"}], init=[SIDECAR], policy="Never")  # "work" exits 0 after 0.5 s
    view = view_at(obj, 5.0)
    proxy = view.init[0]
    assert proxy.done and proxy.runs[-1].end == pytest.approx(T0 + 0.8) and proxy.runs[-1].exit_code == 0
    assert podstatus.phase(view, T0 + 5.0) == "Succeeded"
    assert _printed(obj, 5.0) == ("0/2", "Completed", "0")


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.25", "docker.io/library/nginx:1.25"),
        ("ghcr.io/acme/app:v1", "ghcr.io/acme/app:v1"),
        ("acme/app", "docker.io/acme/app:latest"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
    ],
    ids=[
        "an official image gets docker.io/library and :latest",
        "an official image keeps its tag",
        "a registry host is kept",
        "a user image gets docker.io",
        "a registry with a port keeps its port",
    ],
)
def test_images_are_reported_fully_qualified(image: str, expected: str) -> None:
    assert podstatus.qualified_image(image) == expected

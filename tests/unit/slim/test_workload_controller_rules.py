"""The pure rules of the StatefulSet, CronJob and HPA controllers, with hand-computed expectations."""

from __future__ import annotations

import math
from typing import Any

import pytest

from planner.cron import zone
from planner.slim.controllers.autoscaling import (
    Pods,
    Ratio,
    legacy_limits,
    replicas_for,
    scale_down_limit,
    scale_up_limit,
    stabilize,
    utilization,
)
from planner.slim.controllers.cronjobs import ScheduleClock, job_name, scheduled_stamp
from planner.slim.controllers.daemonsets import (
    pinned_to,
    scaled_budget,
    should_run,
    target_node,
    with_daemon_tolerations,
)
from planner.slim.controllers.statefulsets import ordinal_of, rolling_targets, update_revision_for

# --- StatefulSet -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "ordinal"),
    [("web-0", 0), ("web-12", 12), ("web-x", None), ("web-01", None), ("webb-1", None), ("my-web-1", None)],
)
def test_ordinals_are_read_from_pod_names(pod: str, ordinal: int | None) -> None:
    assert ordinal_of("web", pod) == ordinal


def test_a_rolling_update_visits_ordinals_from_the_highest_down_to_the_partition() -> None:
    assert rolling_targets([0, 1, 2, 3, 4], 0) == [4, 3, 2, 1, 0]
    assert rolling_targets([0, 1, 2, 3, 4], 3) == [4, 3]
    assert rolling_targets([0, 1], 5) == []


def test_pods_below_the_partition_are_created_at_the_current_revision() -> None:
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    assert [update_revision_for(o, rolling) for o in range(4)] == [False, False, True, True]
    assert update_revision_for(0, {"type": "OnDelete"})


# --- CronJob -----------------------------------------------------------------------------------------


def test_jobs_are_named_by_their_scheduled_minute() -> None:
    assert job_name("tick", 1_700_000_040.0) == "tick-28333334"


def test_the_scheduled_timestamp_is_written_in_the_schedules_zone() -> None:
    assert scheduled_stamp(1_700_000_040.0, zone(None)) == "2023-11-14T22:14:00Z"
    assert scheduled_stamp(1_700_000_040.0, zone("Asia/Kolkata")) == "2023-11-15T03:44:00+05:30"


def test_a_run_recorded_in_wall_seconds_reads_back_at_or_after_its_scheduled_minute() -> None:
    clock = ScheduleClock(anchor=1_700_000_003.0, factor=0.05)
    scheduled = 1_700_000_040.0 + 60 * 7  # a minute mark on the schedule clock
    recorded = math.ceil(clock.wall_time(scheduled))
    assert scheduled <= clock.schedule_time(recorded) < scheduled + 60


def test_the_schedule_clock_runs_faster_by_the_time_scale_from_creation() -> None:
    clock = ScheduleClock(anchor=1000.0, factor=0.05)
    assert clock.schedule_time(1000.0) == 1000.0
    assert clock.schedule_time(1003.0) == 1060.0
    assert clock.wall_time(1120.0) == 1006.0


# --- HPA ---------------------------------------------------------------------------------------------


def by_utilization(target: int) -> Ratio:
    return lambda samples: utilization(samples) / target


def test_utilization_is_usage_over_requests_in_whole_percent() -> None:
    assert utilization([(200.0, 300.0), (200.0, 100.0)]) == 100
    assert utilization([(300.0, 100.0)]) == 33


def test_replicas_follow_the_usage_ratio() -> None:
    # two ready pods at 150% against a 50% target: ratio 3 → ceil(3 × 2) = 6
    pods = Pods([(200.0, 300.0), (200.0, 300.0)])
    assert replicas_for(2, pods, by_utilization(50), lambda r: r) == 6


def test_a_ratio_within_the_tolerance_keeps_the_replicas() -> None:
    pods = Pods([(100.0, 54.0), (100.0, 54.0)])  # 54% against 50%: ratio 1.08
    assert replicas_for(2, pods, by_utilization(50), lambda r: r) == 2


def test_scaling_down_counts_pods_without_metrics_at_their_request() -> None:
    # measured: 10% against 50% (ratio 0.2); the missing pod counts as 100% of its request:
    # (10 + 100) / 200 = 55% → ratio 1.1, within tolerance → unchanged
    pods = Pods([(100.0, 10.0)], missing=[100.0])
    assert replicas_for(2, pods, by_utilization(50), lambda r: r) == 2
    # without the missing pod: ceil(0.2 × 1) = 1
    assert replicas_for(2, Pods([(100.0, 10.0)]), by_utilization(50), lambda r: r) == 1


def test_scaling_up_counts_unready_pods_as_idle() -> None:
    # measured: 100% against 50% (ratio 2); with two unready pods at 0%: 100/300 = 33% → ratio 0.66,
    # which would scale down: the direction flipped, so the replicas stay
    pods = Pods([(100.0, 100.0)], unready=[100.0, 100.0])
    assert replicas_for(3, pods, by_utilization(50), lambda r: r) == 3
    # one unready pod: 100/200 = 50% → ratio 1.0, within tolerance
    assert replicas_for(2, Pods([(100.0, 100.0)], unready=[100.0]), by_utilization(50), lambda r: r) == 2
    # measured 300% (ratio 6), one unready: 300/200 = 150% → ratio 3 → ceil(3 × 2) = 6
    assert replicas_for(2, Pods([(100.0, 300.0)], unready=[100.0]), by_utilization(50), lambda r: r) == 6


def test_stabilization_keeps_the_highest_recent_recommendation_when_scaling_down() -> None:
    recent = [(100.0, 6), (150.0, 4)]
    assert stabilize(recent, 200.0, 2, 6, up_window=0.0, down_window=300.0) == 6
    assert stabilize(recent, 420.0, 2, 6, up_window=0.0, down_window=300.0) == 4  # (100, 6) left the window
    assert stabilize(recent, 500.0, 2, 6, up_window=0.0, down_window=300.0) == 2
    assert stabilize([], 500.0, 8, 6, up_window=0.0, down_window=300.0) == 8
    assert stabilize([(450.0, 7)], 500.0, 9, 6, up_window=60.0, down_window=300.0) == 7


def test_the_legacy_limits_double_at_most_and_clamp_to_min_and_max() -> None:
    assert legacy_limits(1, 10, 1, 20) == (
        4,
        "ScaleUpLimit",
        "the desired replica count is increasing faster than the maximum scale rate",
    )
    assert legacy_limits(5, 9, 1, 8) == (
        8,
        "TooManyReplicas",
        "the desired replica count is more than the maximum replica count",
    )
    assert legacy_limits(5, 0, 2, 8) == (
        2,
        "TooFewReplicas",
        "the desired replica count is less than the minimum replica count",
    )
    assert legacy_limits(5, 7, 1, 8) == (
        7,
        "DesiredWithinRange",
        "the desired count is within the acceptable range",
    )


def test_behavior_policies_limit_the_rate() -> None:
    up = {
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    assert scale_up_limit(up, 3, lambda _s: 0) == 7  # max(3 + 4, 3 × 2)
    assert scale_up_limit(up, 10, lambda _s: 0) == 20
    assert scale_up_limit(up, 10, lambda _s: 5) == 10  # the period started at 5: max(9, 10)
    assert scale_up_limit({**up, "selectPolicy": "Min"}, 10, lambda _s: 0) == 14
    assert scale_up_limit({**up, "selectPolicy": "Disabled"}, 10, lambda _s: 0) == 10
    down = {
        "selectPolicy": "Max",
        "policies": [
            {"type": "Percent", "value": 50, "periodSeconds": 60},
            {"type": "Pods", "value": 1, "periodSeconds": 60},
        ],
    }
    assert scale_down_limit(down, 9, lambda _s: 0) == 4  # min(int(9 × 0.5), 9 - 1)
    assert scale_down_limit({**down, "selectPolicy": "Min"}, 9, lambda _s: 0) == 8


# --- DaemonSet ---------------------------------------------------------------------------------------

NODE = {"metadata": {"name": "n1", "labels": {"disk": "ssd"}}, "spec": {}}


def tainted(*taints: dict[str, str]) -> dict[str, Any]:
    return {**NODE, "spec": {"taints": list(taints)}}


def template(**spec: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x"}], **spec}}


def test_a_daemon_pod_goes_where_its_selector_matches_and_taints_are_tolerated() -> None:
    assert should_run(template(), NODE)
    assert should_run(template(nodeSelector={"disk": "ssd"}), NODE)
    assert not should_run(template(nodeSelector={"disk": "hdd"}), NODE)
    gpu = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    assert not should_run(template(), tainted(gpu))
    assert should_run(
        template(tolerations=[{"key": "gpu", "operator": "Equal", "value": "yes"}]), tainted(gpu)
    )
    assert not should_run(template(tolerations=[{"key": "gpu", "value": "no"}]), tainted(gpu))
    assert should_run(template(tolerations=[{"operator": "Exists"}]), tainted(gpu))
    assert should_run(template(), tainted({"key": "gpu", "effect": "PreferNoSchedule"}))
    # the controller's own tolerations: an unschedulable or not-ready node still runs daemons
    assert should_run(
        template(), tainted({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    )
    assert should_run(template(), tainted({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}))


def test_a_daemon_pod_is_pinned_to_its_node() -> None:
    spec = pinned_to(with_daemon_tolerations(template()["spec"]), "n1")
    assert target_node({"spec": spec}) == "n1"
    assert target_node({"spec": {**spec, "nodeName": "n2"}}) == "n2"
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    }


def test_max_unavailable_and_surge_percentages_round_up() -> None:
    assert scaled_budget("25%", 10) == 3
    assert scaled_budget("10%", 1) == 1
    assert scaled_budget(2, 10) == 2
    assert scaled_budget(None, 10) == 0

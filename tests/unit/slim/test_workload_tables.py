"""`kubectl get` rows of StatefulSets, DaemonSets, CronJobs and ControllerRevisions, as the apiserver's
printers compute them (hand-built objects, hand-written rows)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from planner.slim.printers import to_table

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-11-29T11:55:00Z"
TEMPLATE = {
    "spec": {"containers": [{"name": "db", "image": "postgres:16"}, {"name": "x", "image": "busybox"}]}
}


def row(kind: str, obj: dict[str, Any]) -> tuple[list[str], list[Any]]:
    table = to_table(kind, [obj], now=NOW, resource_version="1")
    return [c["name"] for c in table["columnDefinitions"]], table["rows"][0]["cells"]


def test_a_statefulset_shows_ready_over_desired() -> None:
    sts = {
        "metadata": {"name": "db", "creationTimestamp": CREATED},
        "spec": {"replicas": 3, "template": TEMPLATE},
        "status": {"replicas": 3, "readyReplicas": 2},
    }
    assert row("StatefulSet", sts) == (
        ["Name", "Ready", "Age", "Containers", "Images"],
        ["db", "2/3", "5m", "db,x", "postgres:16,busybox"],
    )


def test_a_daemonset_shows_its_counts_and_node_selector() -> None:
    ds = {
        "metadata": {"name": "agent", "creationTimestamp": CREATED},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {**TEMPLATE["spec"], "nodeSelector": {"disk": "ssd", "arch": "amd64"}}},
        },
        "status": {
            "desiredNumberScheduled": 3,
            "currentNumberScheduled": 2,
            "numberReady": 1,
            "updatedNumberScheduled": 2,
            "numberMisscheduled": 0,
        },
    }
    columns, cells = row("DaemonSet", ds)
    assert columns == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Up-to-date",
        "Available",
        "Node Selector",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert cells == [
        "agent",
        3,
        2,
        1,
        2,
        0,
        "arch=amd64,disk=ssd",
        "5m",
        "db,x",
        "postgres:16,busybox",
        "app=agent",
    ]


def test_a_cronjob_shows_its_schedule_and_last_run() -> None:
    cronjob = {
        "metadata": {"name": "tick", "creationTimestamp": CREATED},
        "spec": {
            "schedule": "*/5 * * * *",
            "suspend": False,
            "jobTemplate": {"spec": {"template": TEMPLATE}},
        },
        "status": {"active": [{"name": "tick-1"}], "lastScheduleTime": "2026-11-29T11:58:30Z"},
    }
    columns, cells = row("CronJob", cronjob)
    assert columns == [
        "Name",
        "Schedule",
        "Suspend",
        "Active",
        "Last Schedule",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert cells == [
        "tick",
        "*/5 * * * *",
        "False",
        1,
        "90s",
        "5m",
        "db,x",
        "postgres:16,busybox",
        "<none>",
    ]
    never = {**cronjob, "spec": {**cronjob["spec"], "timeZone": "Europe/Berlin"}, "status": {}}
    # v1.28 prints no time zone column: the schedule's zone shows only in the object
    assert row("CronJob", never)[1][1:5] == ["*/5 * * * *", "False", 0, "<none>"]


def test_a_controller_revision_names_its_controller_with_group() -> None:
    revision = {
        "metadata": {
            "name": "db-5994f76557",
            "creationTimestamp": CREATED,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": True}
            ],
        },
        "revision": 2,
    }
    assert row("ControllerRevision", revision) == (
        ["Name", "Controller", "Revision", "Age"],
        ["db-5994f76557", "statefulset.apps/db", 2, "5m"],
    )

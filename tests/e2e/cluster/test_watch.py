"""Watch through the Python client and raw HTTP: resourceVersion semantics, selector enter/leave,
bookmarks, server-closed streams (timeoutSeconds) and a forced 410 followed by a relist.

This module's server keeps only 30 watch events, so a handful of writes compacts the buffer."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen

CACHE = 30
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(watch_cache_size=CACHE) as handle:
        yield handle


def _events(stream: Any) -> list[tuple[str, str]]:
    return [(e["type"], e["object"].metadata.name) for e in stream]


def _first(count: int, *args: Any, **kwargs: Any) -> list[tuple[str, str]]:
    """The first `count` events of a watch, which then stops: a fixed short timeout would race the
    background writes on a busy machine."""
    watcher = watch.Watch()
    events: list[tuple[str, str]] = []
    for event in watcher.stream(*args, timeout_seconds=10, **kwargs):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == count:
            watcher.stop()
    return events


def test_watch_from_a_list_sees_added_modified_deleted(core_v1: client.CoreV1Api, namespace: str) -> None:
    rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version

    def writes() -> None:
        time.sleep(0.2)
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "w"}})
        core_v1.patch_namespaced_config_map("w", namespace, {"data": {"a": "b"}}, _content_type=MERGE)
        core_v1.delete_namespaced_config_map("w", namespace)

    threading.Thread(target=writes).start()
    events = _first(3, core_v1.list_namespaced_config_map, namespace, resource_version=rv)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_server_closes_the_stream_at_timeout_seconds(core_v1: client.CoreV1Api, namespace: str) -> None:
    started = time.monotonic()
    events = _events(watch.Watch().stream(core_v1.list_namespaced_config_map, namespace, timeout_seconds=1))
    assert events == [("ADDED", "kube-root-ca.crt")]
    assert 0.9 < time.monotonic() - started < 5


def test_resource_version_zero_starts_with_synthetic_added_events(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    for name in ("z1", "z2"):
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    stream = watch.Watch().stream(
        core_v1.list_namespaced_config_map, namespace, resource_version="0", timeout_seconds=1
    )
    assert _events(stream) == [("ADDED", "kube-root-ca.crt"), ("ADDED", "z1"), ("ADDED", "z2")]


def test_too_old_resource_version_then_relist(core_v1: client.CoreV1Api, namespace: str) -> None:
    old_rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version
    for i in range(CACHE + 5):
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": f"churn-{i}"}})
    with pytest.raises(ApiException) as expired:
        list(watch.Watch().stream(core_v1.list_namespaced_config_map, namespace, resource_version=old_rv))
    assert expired.value.status == 410
    relisted = core_v1.list_namespaced_config_map(namespace)
    assert len(relisted.items) == CACHE + 6

    def late_write() -> None:
        time.sleep(0.2)
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "after-relist"}})

    threading.Thread(target=late_write).start()
    events = _first(
        1, core_v1.list_namespaced_config_map, namespace, resource_version=relisted.metadata.resource_version
    )
    assert events == [("ADDED", "after-relist")]


def _raw_watch(cluster: ClusterHandle, path: str) -> list[dict[str, Any]]:
    with urlopen(cluster, path, timeout=10) as reply:
        assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
        return [json.loads(line) for line in reply.read().decode().splitlines()]


def test_too_old_watch_is_a_200_with_one_expired_error_event(cluster: ClusterHandle, namespace: str) -> None:
    events = _raw_watch(cluster, f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion=1")
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith("too old resource version: 1 (")


def test_bookmark_just_before_closing(
    cluster: ClusterHandle, core_v1: client.CoreV1Api, namespace: str
) -> None:
    rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    events = _raw_watch(cluster, path)
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert events[0]["object"]["kind"] == "ConfigMap"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_label_changes_enter_and_leave_a_filtered_watch(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "mover", "labels": {"tier": "a"}}})
    rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version

    def relabel() -> None:
        time.sleep(0.2)
        core_v1.patch_namespaced_config_map(
            "mover", namespace, {"metadata": {"labels": {"tier": "b"}}}, _content_type=MERGE
        )
        core_v1.patch_namespaced_config_map("mover", namespace, {"data": {"x": "1"}}, _content_type=MERGE)
        core_v1.patch_namespaced_config_map(
            "mover", namespace, {"metadata": {"labels": {"tier": "a"}}}, _content_type=MERGE
        )

    threading.Thread(target=relabel).start()
    events = _first(
        2, core_v1.list_namespaced_config_map, namespace, label_selector="tier=a", resource_version=rv
    )
    assert events == [("DELETED", "mover"), ("ADDED", "mover")]


def test_watch_with_field_selector_on_one_name(core_v1: client.CoreV1Api, namespace: str) -> None:
    rv = core_v1.list_namespaced_config_map(namespace).metadata.resource_version

    def writes() -> None:
        time.sleep(0.2)
        for name in ("other", "target"):
            core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": name}})

    threading.Thread(target=writes).start()
    events = _first(
        1,
        core_v1.list_namespaced_config_map,
        namespace,
        resource_version=rv,
        field_selector="metadata.name=target",
    )
    assert events == [("ADDED", "target")]

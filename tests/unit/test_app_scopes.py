"""app.apply's informer scopes: one informer per kind, wide enough for every wait, for the pods and
Events that explain them, and with `apply --watch` for every workload the monitor will follow."""

from __future__ import annotations

from planner.app.applying import explained_namespaces, informer_scopes


def test_pods_and_events_are_read_where_workloads_pods_and_claims_are_waited_on() -> None:
    waits = {
        "Deployment": frozenset({"shop"}),
        "Job": frozenset({"jobs"}),
        "PersistentVolumeClaim": frozenset({"data"}),
        "Namespace": None,
        "ConfigMap": frozenset({"config"}),
    }
    assert explained_namespaces(waits) == frozenset({"shop", "jobs", "data"})


def test_the_pod_informer_covers_the_pod_waits_and_every_explained_namespace() -> None:
    waits = {"Deployment": frozenset({"shop"}), "Pod": frozenset({"sandboxes"})}
    assert informer_scopes(waits) == {
        "Deployment": frozenset({"shop"}),
        "Pod": frozenset({"shop", "sandboxes"}),
    }


def test_without_waits_on_workloads_no_pod_informer_is_added() -> None:
    waits = {"ConfigMap": frozenset({"shop"}), "Namespace": None}
    assert informer_scopes(waits) == waits


def test_cover_widens_every_namespaced_informer_and_leaves_cluster_wide_ones() -> None:
    waits = {"Deployment": frozenset({"shop"}), "Namespace": None}
    assert informer_scopes(waits, cover=frozenset({"shop", "jobs"})) == {
        "Deployment": frozenset({"shop", "jobs"}),
        "Pod": frozenset({"shop", "jobs"}),
        "Namespace": None,
    }

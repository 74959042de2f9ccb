"""The pure admission of the kinds beyond workloads, with hand-written expectations (the messages are a
v1.28.7 apiserver's, from tests/golden/apigroups/): ResourceQuota usage and refusals, LimitRange
defaults and bounds, disruption budget counts and evictions, PriorityClass and IngressClass defaults,
and the events.k8s.io ↔ core Event conversion."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from planner.slim import admission, budgets, clusterkinds, limitranges, quota
from planner.slim.status_errors import StatusError, Target

Obj = dict[str, Any]
POD = Target("", "pods", "Pod", "two")


def pod(name: str, *, cpu: str | None = None, memory: str | None = None, **extra: Any) -> Obj:
    requests = {k: v for k, v in (("cpu", cpu),) if v}
    limits = {k: v for k, v in (("memory", memory),) if v}
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {
        "metadata": {"name": name, "namespace": "ns", **extra.pop("metadata", {})},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]},
        **extra,
    }


def a_quota(**hard: str) -> Obj:
    return {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"hard": hard}}


# --- ResourceQuota -------------------------------------------------------------------------------------


def test_a_pods_usage_counts_it_and_its_compute_resources() -> None:
    used = quota.usage("", "pods", pod("p", cpu="500m", memory="512Mi"))
    assert used == {
        "count/pods": (Decimal(1), "DecimalSI"),
        "pods": (Decimal(1), "DecimalSI"),
        "requests.cpu": (Decimal("0.5"), "DecimalSI"),
        "cpu": (Decimal("0.5"), "DecimalSI"),
        "limits.memory": (Decimal(536870912), "BinarySI"),
    }


def test_a_finished_pod_uses_nothing() -> None:
    assert quota.usage("", "pods", pod("p", cpu="1", status={"phase": "Succeeded"})) == {}


def test_a_deployment_counts_under_count_resource_dot_group() -> None:
    assert quota.usage("apps", "deployments", {"spec": {}}) == {
        "count/deployments.apps": (Decimal(1), "DecimalSI")
    }


def test_a_create_within_the_quota_returns_the_new_usage() -> None:
    existing = quota.total("", "pods", [pod("one", cpu="500m", memory="512Mi")])
    new = pod("two", cpu="200m", memory="256Mi")
    [changed] = quota.charge(
        [a_quota(pods="2", **{"requests.cpu": "1", "limits.memory": "1Gi"})],
        quota.usage("", "pods", new),
        existing,
        POD,
        new,
    )
    assert changed["status"]["used"] == {"limits.memory": "768Mi", "pods": "2", "requests.cpu": "700m"}
    assert changed["status"]["hard"] == {"pods": "2", "requests.cpu": "1", "limits.memory": "1Gi"}


def test_exceeding_a_quota_is_the_apiservers_403_naming_only_what_is_exceeded() -> None:
    existing = quota.total("", "pods", [pod("one", cpu="500m", memory="512Mi")])
    new = pod("two", cpu="600m", memory="256Mi")
    with pytest.raises(StatusError) as raised:
        quota.charge(
            [a_quota(pods="5", **{"requests.cpu": "1", "limits.memory": "1Gi"})],
            quota.usage("", "pods", new),
            existing,
            POD,
            new,
        )
    assert raised.value.code == 403
    assert raised.value.body["message"] == (
        'pods "two" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, '
        "limited: requests.cpu=1"
    )


def test_a_pod_must_state_the_compute_resources_a_quota_limits() -> None:
    new = pod("two")
    with pytest.raises(StatusError) as raised:
        quota.charge([a_quota(**{"requests.cpu": "1", "limits.memory": "1Gi"})], {}, {}, POD, new)
    assert raised.value.body["message"] == (
        'pods "two" is forbidden: failed quota: q: must specify limits.memory for: c; requests.cpu for: c'
    )


def test_a_quotas_status_is_counted_from_the_namespace() -> None:
    stored = {"/configmaps": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}], "/pods": []}
    status = quota.status_of(a_quota(configmaps="3", pods="1"), lambda key, ns: stored.get(key, []))
    assert status == {"hard": {"configmaps": "3", "pods": "1"}, "used": {"configmaps": "2", "pods": "0"}}


# --- LimitRange ----------------------------------------------------------------------------------------

RANGE = [
    {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}}
]


def test_limit_range_defaults_fill_only_what_a_container_lacks() -> None:
    spec = {"containers": [{"name": "c"}, {"name": "d", "resources": {"limits": {"memory": "1Gi"}}}]}
    notes = limitranges.apply_defaults(spec, RANGE)
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "100m"},
        "limits": {"cpu": "500m", "memory": "256Mi"},
    }
    assert spec["containers"][1]["resources"] == {
        "limits": {"memory": "1Gi", "cpu": "500m"},
        "requests": {"cpu": "100m"},
    }
    assert notes == [
        "cpu request for container c",
        "cpu, memory limit for container c",
        "cpu request for container d",
        "cpu limit for container d",
    ]


def test_a_limit_above_the_ranges_max_is_named() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "3"}}}]}
    assert limitranges.violations(spec, [{"type": "Container", "max": {"cpu": "2"}}]) == [
        "maximum cpu usage per Container is 2, but limit is 3"
    ]


def test_a_limit_range_defaults_default_to_max() -> None:
    obj = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "default": {"memory": "256Mi"}}]}}
    clusterkinds.default_limit_range(obj)
    assert obj["spec"]["limits"][0] == {
        "type": "Container",
        "max": {"cpu": "2"},
        "default": {"memory": "256Mi", "cpu": "2"},
        "defaultRequest": {"memory": "256Mi", "cpu": "2"},
    }


# --- PodDisruptionBudget -------------------------------------------------------------------------------


def ready(name: str, **meta: Any) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "w"}, **meta},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def budget(**spec: Any) -> Obj:
    return {
        "metadata": {"name": "w", "namespace": "ns", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "w"}}, **spec},
    }


def nothing(kind: str, namespace: str, name: str) -> Obj | None:
    return None


def test_min_available_counts_the_matched_pods() -> None:
    pods = [ready("a"), ready("b"), ready("c"), {"metadata": {"name": "x", "labels": {"app": "other"}}}]
    status = budgets.status_of(budget(minAvailable=2), pods, nothing, "T")
    assert status == {
        "observedGeneration": 1,
        "disruptionsAllowed": 1,
        "currentHealthy": 3,
        "desiredHealthy": 2,
        "expectedPods": 3,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True",
                "observedGeneration": 1,
                "lastTransitionTime": "T",
                "reason": "SufficientPods",
                "message": "",
            }
        ],
    }


def test_max_unavailable_counts_the_controllers_scale() -> None:
    owner = {"ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}]}
    replica_set = {
        "metadata": {
            "name": "rs",
            "uid": "u1",
            "ownerReferences": [{"kind": "Deployment", "name": "d", "controller": True}],
        },
        "spec": {"replicas": 3},
    }
    deployment = {"metadata": {"name": "d", "uid": "u2"}, "spec": {"replicas": 4}}
    found = {"ReplicaSet": replica_set, "Deployment": deployment}
    pods = [ready("a", **owner), ready("b", **owner), ready("c", **owner)]
    expected, desired, healthy = budgets.counts(
        budget(maxUnavailable="50%"), pods, lambda kind, ns, name: found.get(kind)
    )
    assert (expected, desired, healthy) == (4, 2, 3)


def test_pods_without_a_controller_expect_nothing_under_max_unavailable() -> None:
    status = budgets.status_of(budget(maxUnavailable=1), [ready("a")], nothing, "T")
    assert (status["expectedPods"], status["disruptionsAllowed"]) == (0, 0)


def test_an_eviction_that_would_break_the_budget_is_the_apiservers_429() -> None:
    covering = {
        **budget(minAvailable=2),
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": 0,
            "currentHealthy": 2,
            "desiredHealthy": 2,
        },
    }
    with pytest.raises(StatusError) as raised:
        budgets.check_eviction(ready("a"), [covering])
    assert raised.value.code == 429
    assert raised.value.body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert raised.value.body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget w needs 2 healthy pods and has 2 currently",
        }
    ]


def test_an_allowed_eviction_takes_one_disruption() -> None:
    covering = {**budget(minAvailable=2), "status": {"observedGeneration": 1, "disruptionsAllowed": 1}}
    assert budgets.check_eviction(ready("a"), [covering]) is covering
    assert budgets.after_eviction(covering, "a", "T")["status"] == {
        "observedGeneration": 1,
        "disruptionsAllowed": 0,
        "disruptedPods": {"a": "T"},
    }


def test_a_pending_pod_goes_whatever_the_budget() -> None:
    assert budgets.evictable_at_once({"metadata": {}, "status": {"phase": "Pending"}})
    assert not budgets.evictable_at_once(ready("a"))


# --- PriorityClass and IngressClass ------------------------------------------------------------------


def cluster(**kinds: list[Obj]) -> admission.Admission:
    def find(kind: str, namespace: str, name: str) -> Obj | None:
        return next((o for o in kinds.get(kind, []) if o["metadata"]["name"] == name), None)

    return admission.Admission(find, lambda kind: kinds.get(kind, []))


def test_priority_comes_from_the_named_class_then_from_the_global_default() -> None:
    high = {"metadata": {"name": "high"}, "value": 1000}
    low = {"metadata": {"name": "low"}, "value": 10, "globalDefault": True, "preemptionPolicy": "Never"}
    named = {"priorityClassName": "high"}
    admission.apply_priority(cluster(PriorityClass=[high, low]), named, POD)
    assert named == {
        "priorityClassName": "high",
        "priority": 1000,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    unnamed: Obj = {}
    admission.apply_priority(cluster(PriorityClass=[high, low]), unnamed, POD)
    assert unnamed == {"priorityClassName": "low", "priority": 10, "preemptionPolicy": "Never"}


def test_a_missing_priority_class_is_forbidden() -> None:
    with pytest.raises(StatusError) as raised:
        admission.apply_priority(cluster(), {"priorityClassName": "nope"}, POD)
    assert (
        raised.value.body["message"] == 'pods "two" is forbidden: no PriorityClass with name nope was found'
    )


def test_a_second_global_default_is_forbidden() -> None:
    first = {"metadata": {"name": "dflt"}, "value": 10, "globalDefault": True}
    target = Target("scheduling.k8s.io", "priorityclasses", "PriorityClass", "dflt2")
    with pytest.raises(StatusError) as raised:
        admission.admit_priority_class(
            cluster(PriorityClass=[first]),
            {"metadata": {"name": "dflt2"}, "globalDefault": True},
            None,
            target,
        )
    assert raised.value.body["message"] == (
        'priorityclasses.scheduling.k8s.io "dflt2" is forbidden: PriorityClass dflt is already marked as '
        "default. Only one default can exist"
    )


def test_system_priority_class_names_are_reserved() -> None:
    [cause] = clusterkinds.validate_priority_class({"metadata": {"name": "system-x"}, "value": 10})
    assert cause.field == "metadata.name"
    [cause] = clusterkinds.validate_priority_class({"metadata": {"name": "huge"}, "value": 2000000000})
    assert cause.message == "Forbidden: maximum allowed value of a user defined priority is 1000000000"


def test_an_ingress_without_a_class_gets_the_default_one() -> None:
    default = {
        "metadata": {"name": "nginx", "annotations": {admission.DEFAULT_INGRESS_CLASS_ANNOTATION: "true"}}
    }
    ingress: Obj = {"metadata": {"name": "web"}, "spec": {}}
    admission.admit_ingress(cluster(IngressClass=[default]), ingress, None, POD)
    assert ingress["spec"] == {"ingressClassName": "nginx"}


# --- events.k8s.io -------------------------------------------------------------------------------------


def test_an_events_v1_event_is_stored_as_the_core_event_and_read_back() -> None:
    event = {
        "metadata": {"name": "e1"},
        "regarding": {"kind": "Pod", "name": "x"},
        "note": "scaled up",
        "reportingController": "example.com/ctl",
        "reason": "Scaled",
    }
    core = clusterkinds.events_to_core(event)
    assert core == {
        "metadata": {"name": "e1"},
        "apiVersion": "v1",
        "involvedObject": {"kind": "Pod", "name": "x"},
        "message": "scaled up",
        "reportingComponent": "example.com/ctl",
        "reason": "Scaled",
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
    }
    back = clusterkinds.events_from_core(core)
    assert {
        k: v
        for k, v in back.items()
        if k not in ("apiVersion", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp")
    } == event


def test_an_unready_pod_goes_when_its_budget_is_met_or_always_allows_it() -> None:
    unready = {
        **ready("a"),
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
    }
    short = {"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 2}
    with pytest.raises(StatusError):
        budgets.check_eviction(unready, [{**budget(minAvailable=2), "status": short}])
    always = budget(minAvailable=2, unhealthyPodEvictionPolicy="AlwaysAllow")
    assert budgets.check_eviction(unready, [{**always, "status": short}]) is None
    met = {**short, "currentHealthy": 2}
    assert budgets.check_eviction(unready, [{**budget(minAvailable=2), "status": met}]) is None


# --- DaemonSet template generation -------------------------------------------------------------------


def test_a_daemonsets_template_generation_rises_only_with_its_template() -> None:
    def daemonset(image: str, generation: str) -> Obj:
        template = {"spec": {"containers": [{"name": "c", "image": image}]}}
        annotations = {"deprecated.daemonset.template.generation": generation}
        return {"metadata": {"name": "d", "annotations": annotations}, "spec": {"template": template}}

    stored = daemonset("agent:1", "3")
    kept, changed = daemonset("agent:1", "9"), daemonset("agent:2", "1")  # what a client sends is ignored
    for new in (kept, changed):
        assert admission.admit_daemonset(cluster(), new, stored, POD) == []
    assert kept["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "3"}
    assert changed["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "4"}
    created = daemonset("agent:1", "7")
    admission.admit_daemonset(cluster(), created, None, POD)  # a create keeps what defaulting set
    assert created["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "7"}

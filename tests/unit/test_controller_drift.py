"""The pure half of event-driven drift correction: which fields a watched object shows drifted and who
wrote them (`driftfields`), and when their correction runs (`driftpolicy`). Objects and managedFields
are written out by hand, as an API server serves them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from planner.changeset import Action, Change, ChangeSet, FieldChange
from planner.controller.driftfields import (
    DriftedField,
    corrected_fields,
    declared_object,
    drifted_fields,
    unlike_applied,
)
from planner.controller.driftpolicy import Conflict, DriftPolicy, DriftTimings
from planner.objects import ObjectRef

WEB = "deployment/shop/web"
IMAGE = ".spec.template.spec.containers[name=web].image"


def desired(**annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "annotations": {"planner.dev/hash": "h1", **annotations},
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": "shop:1", "env": [{"name": "MODE", "value": "fast"}]}
                    ]
                },
            },
        },
    }


PLANNER_FIELDS = {
    "f:metadata": {"f:annotations": {"f:planner.dev/hash": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"web"}': {
                        ".": {},
                        "f:name": {},
                        "f:image": {},
                        "f:env": {'k:{"name":"MODE"}': {".": {}, "f:name": {}, "f:value": {}}},
                    }
                }
            },
        },
    },
}


def entry(manager: str, fields: dict[str, Any], *, operation: str = "Update", **more: str) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": "apps/v1",
        "time": more.pop("time", "2026-12-07T10:00:00Z"),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        **more,
    }


def live(*entries: dict[str, Any], planner_fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """The applied object as served: server defaults, a status, planner's apply entry (owning
    `planner_fields`) and `entries`."""
    obj = copy.deepcopy(desired())
    obj["metadata"]["resourceVersion"] = "7"
    obj["spec"]["strategy"] = {"type": "RollingUpdate"}
    obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    obj["status"] = {"replicas": 2, "readyReplicas": 2}
    applied = entry("planner", planner_fields or PLANNER_FIELDS, operation="Apply")
    status = entry("kube-controller-manager", {"f:status": {"f:replicas": {}}}, subresource="status")
    obj["metadata"]["managedFields"] = [applied, status, *entries]
    return obj


def without(fields: dict[str, Any], *path: str) -> dict[str, Any]:
    """`fields` with the FieldsV1 node at `path` removed (another manager took it)."""
    copied = copy.deepcopy(fields)
    node = copied
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return copied


# --- which fields drifted -------------------------------------------------------------------------


def test_a_foreign_scale_is_drift_named_with_its_writer() -> None:
    scaled = live(
        entry("kubectl", {"f:spec": {"f:replicas": {}}}, subresource="scale"),
        planner_fields=without(PLANNER_FIELDS, "f:spec", "f:replicas"),
    )
    scaled["spec"]["replicas"] = 5
    assert drifted_fields(declared_object(desired()), scaled) == (
        DriftedField(WEB, ".spec.replicas", "kubectl"),
    )


def test_a_foreign_image_is_drift_at_the_containers_keyed_path() -> None:
    container = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image")
    image_only = {
        "f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:image": {}}}}}}
    }
    changed = live(entry("kubectl-set", image_only), planner_fields=without(PLANNER_FIELDS, *container))
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "other:9"
    assert drifted_fields(declared_object(desired()), changed) == (DriftedField(WEB, IMAGE, "kubectl-set"),)


def test_a_value_planner_still_owns_is_its_own_write_not_drift() -> None:
    """Planner applied another rendering (a reconcile under way): its manager owns the new value."""
    rewritten = live()
    rewritten["spec"]["replicas"] = 5
    assert drifted_fields(declared_object(desired()), rewritten) == ()


def test_fields_planner_does_not_declare_and_the_status_are_not_drift() -> None:
    annotated = live(entry("kubectl-annotate", {"f:metadata": {"f:annotations": {"f:team": {}}}}))
    annotated["metadata"]["annotations"]["team"] = "blue"
    annotated["status"] = {"replicas": 5, "readyReplicas": 1}
    env = annotated["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "EXTRA", "value": "1"})  # an item beside planner's: another manager's
    assert drifted_fields(declared_object(desired()), annotated) == ()


def test_an_autoscaled_workloads_replicas_are_create_only_so_never_drift() -> None:
    autoscaled = desired(**{"planner.dev/create-only": "spec.replicas"})
    scaled = live(
        entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale"),
        planner_fields=without(PLANNER_FIELDS, "f:spec", "f:replicas"),
    )
    scaled["metadata"]["annotations"]["planner.dev/create-only"] = "spec.replicas"
    scaled["spec"]["replicas"] = 4
    assert drifted_fields(declared_object(autoscaled), scaled) == ()


def test_an_object_planner_never_applied_or_applied_from_another_rendering_is_not_judged() -> None:
    foreign = live()
    foreign["metadata"]["managedFields"] = [entry("helm", PLANNER_FIELDS)]
    foreign["spec"]["replicas"] = 5
    assert drifted_fields(declared_object(desired()), foreign) == ()
    listed = live()  # a list's objects come without managedFields
    del listed["metadata"]["managedFields"]
    listed["spec"]["replicas"] = 5
    assert drifted_fields(declared_object(desired()), listed) == ()
    other = live(planner_fields=without(PLANNER_FIELDS, "f:spec", "f:replicas"))
    other["metadata"]["annotations"]["planner.dev/hash"] = "h2"
    other["spec"]["replicas"] = 5
    assert drifted_fields(declared_object(desired()), other) == ()


def test_a_removed_field_names_the_latest_foreign_writer() -> None:
    env = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:env")
    edited = live(
        entry(
            "kubectl-annotate", {"f:metadata": {"f:annotations": {"f:team": {}}}}, time="2026-12-07T09:00:00Z"
        ),
        entry("kubectl-edit", {"f:spec": {"f:paused": {}}}, time="2026-12-07T11:00:00Z"),
        entry("planner-lifecycle", {"f:metadata": {}}, time="2026-12-07T12:00:00Z"),
        planner_fields=without(PLANNER_FIELDS, *env),
    )
    del edited["spec"]["template"]["spec"]["containers"][0]["env"]
    seen = datetime(2026, 12, 7, 11, 0, 3, tzinfo=UTC)  # the watch event, 3 s after kubectl-edit's write
    found = drifted_fields(declared_object(desired()), edited, now=seen)
    assert found == (DriftedField(WEB, ".spec.template.spec.containers[name=web].env", "kubectl-edit"),)
    # An hour later the newest write is not the removal's (a JSON-patch remove keeps no entry): unknown.
    later = drifted_fields(declared_object(desired()), edited, now=seen + timedelta(hours=1))
    assert later == (DriftedField(WEB, ".spec.template.spec.containers[name=web].env", "unknown"),)


def test_a_cached_object_is_as_applied_unless_missing_of_another_rendering_or_a_declared_field_differs() -> (
    None
):
    """The watch cache holds objects without managedFields: values alone decide."""
    declared = declared_object(desired())
    cached = live()
    del cached["metadata"]["managedFields"]
    assert unlike_applied(declared, cached) is None
    assert unlike_applied(declared, None) == "deployment/shop/web is not in the watch cache"
    other = copy.deepcopy(cached)
    other["metadata"]["annotations"]["planner.dev/hash"] = "h2"
    assert unlike_applied(declared, other) == "deployment/shop/web holds another rendering"
    scaled = copy.deepcopy(cached)
    scaled["spec"]["replicas"] = 5
    assert unlike_applied(declared, scaled) == "deployment/shop/web .spec.replicas differs"
    autoscaled = desired(**{"planner.dev/create-only": "spec.replicas"})
    scaled["metadata"]["annotations"]["planner.dev/create-only"] = "spec.replicas"
    assert unlike_applied(declared_object(autoscaled), scaled) is None


# --- what a reconcile corrected ------------------------------------------------------------------


def change(name: str, action: Action, *fields: FieldChange) -> Change:
    ref = ObjectRef(group="apps", kind="Deployment", namespace="shop", name=name)
    return Change(ref=ref, action=action, desired=None, live=None, fields=fields, drift=True)


def test_corrected_fields_name_the_diffs_manager_else_the_watchs_writer() -> None:
    changeset = ChangeSet(
        plan="shop",
        namespace="shop",
        changes=(
            change(
                "web",
                "update",
                FieldChange(path=".spec.replicas", before=5, after=2, manager="kubectl"),
                FieldChange(path=IMAGE, before=None, after="shop:1"),
            ),
            change("api", "create"),
        ),
    )
    seen = (DriftedField(WEB, IMAGE, "kubectl-edit"), DriftedField(WEB, ".spec.paused", "someone"))
    assert corrected_fields(changeset, seen) == (
        DriftedField("deployment/shop/api", "(deleted)", "unknown"),
        DriftedField(WEB, ".spec.replicas", "kubectl"),
        DriftedField(WEB, IMAGE, "kubectl-edit"),
    )
    assert corrected_fields(None, seen) == ()
    said = [each.describe() for each in corrected_fields(changeset, seen)]
    assert said == [
        "deployment/shop/api (deleted)",
        "deployment/shop/web .spec.replicas (written by kubectl)",
        f"deployment/shop/web {IMAGE} (written by kubectl-edit)",
    ]


# --- when the correction runs --------------------------------------------------------------------

TIMINGS = DriftTimings(
    debounce=0.2, min_gap=1.0, window=60.0, conflict_after=3, backoff_base=5.0, backoff_cap=30.0
)
REPLICAS = DriftedField(WEB, ".spec.replicas", "hpa")
OTHER = DriftedField(WEB, IMAGE, "kubectl")


def test_a_first_drift_waits_the_debounce_then_the_rest_of_the_plans_gap() -> None:
    policy = DriftPolicy(TIMINGS)
    assert policy.delay("shop/a", [REPLICAS], now=100.0) == 0.2
    policy.started("shop/a", now=100.25)
    assert policy.delay("shop/a", [REPLICAS], now=100.5) == 0.75  # the gap: started + 1.0
    assert policy.delay("shop/a", [REPLICAS], now=102.0) == 0.2
    assert policy.delay("shop/b", [REPLICAS], now=100.5) == 0.2  # per Plan


def test_a_field_corrected_three_times_in_a_row_is_a_conflict_whose_back_off_doubles() -> None:
    policy = DriftPolicy(TIMINGS)
    assert policy.corrected("shop/a", [REPLICAS], now=10.0) == []
    assert policy.corrected("shop/a", [REPLICAS], now=12.0) == []
    assert policy.corrected("shop/a", [REPLICAS], now=14.0) == [Conflict(REPLICAS, 3, 5.0)]
    assert policy.delay("shop/a", [REPLICAS], now=15.0) == 4.0  # 14 + 5
    assert policy.corrected("shop/a", [REPLICAS], now=19.0) == [Conflict(REPLICAS, 4, 10.0)]
    assert policy.delay("shop/a", [REPLICAS], now=20.0) == 9.0  # 19 + 10
    assert policy.corrected("shop/a", [REPLICAS], now=29.0) == [Conflict(REPLICAS, 5, 20.0)]
    assert policy.corrected("shop/a", [REPLICAS], now=49.0) == [Conflict(REPLICAS, 6, 30.0)]  # capped
    assert policy.corrected("shop/a", [REPLICAS], now=79.0) == [Conflict(REPLICAS, 7, 30.0)]


def test_another_field_of_a_plan_in_conflict_is_still_corrected_at_once() -> None:
    policy = DriftPolicy(TIMINGS)
    for now in (10.0, 12.0, 14.0):
        policy.corrected("shop/a", [REPLICAS], now=now)
    assert policy.delay("shop/a", [REPLICAS, OTHER], now=15.0) == 0.2
    assert policy.delay("shop/a", [REPLICAS], now=15.0) == 4.0


def test_a_field_left_alone_for_the_window_beyond_its_back_off_starts_afresh() -> None:
    policy = DriftPolicy(TIMINGS)
    for now in (10.0, 12.0, 14.0):
        policy.corrected("shop/a", [REPLICAS], now=now)
    assert policy.conflicts("shop/a", now=78.9) == [Conflict(REPLICAS, 3, 5.0)]  # 14 + 60 + 5 > 78.9
    assert policy.conflicts("shop/a", now=79.0) == []
    assert policy.delay("shop/a", [REPLICAS], now=79.0) == 0.2
    assert policy.corrected("shop/a", [REPLICAS], now=80.0) == []


def test_corrections_further_apart_than_the_window_never_conflict() -> None:
    policy = DriftPolicy(TIMINGS)
    for now in (0.0, 61.0, 122.0, 183.0):
        assert policy.corrected("shop/a", [REPLICAS], now=now) == []


def test_a_forgotten_plan_has_no_conflicts_and_no_gap() -> None:
    policy = DriftPolicy(TIMINGS)
    for now in (10.0, 12.0, 14.0):
        policy.corrected("shop/a", [REPLICAS], now=now)
    policy.started("shop/a", now=14.0)
    policy.forget("shop/a")
    assert policy.conflicts("shop/a", now=15.0) == []
    assert policy.delay("shop/a", [REPLICAS], now=14.5) == 0.2

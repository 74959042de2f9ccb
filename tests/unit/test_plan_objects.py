"""Plan objects: loaded as files are (their status and server metadata ignored, secrets only from
Secrets), and the status the controller writes for them, as kstatus reads it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.app.applying import ApplyOptions
from planner.app.reconciling import ReconcileOptions
from planner.controller import planstatus
from planner.controller.driftfields import DriftedField
from planner.controller.settings import plan_reconcile_options
from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.load import load_plan_object, plan_object_text
from planner.plan.reconcile_section import ReconcileSection, reconcile_section
from planner.plan.source import Diagnostic, parse_plan_text

T0, T1 = "2026-12-02T01:00:00Z", "2026-12-02T01:05:00Z"


def plan_object(**fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {
            "name": "shop",
            "namespace": "shop",
            "uid": "0d9c",
            "generation": 3,
            "resourceVersion": "812",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "managedFields": [{"manager": "kubectl"}],
        },
        "status": {"observedGeneration": 2, "conditions": []},
        **fields,
    }


def secrets_of(refs: dict[tuple[str | None, str, str], str]) -> Callable[[str | None, str, str], str]:
    def read(namespace: str | None, name: str, key: str) -> str:
        if (namespace, name, key) not in refs:
            raise LookupError(f'Secret "{name}" has no key "{key}"')
        return refs[(namespace, name, key)]

    return read


def test_a_plan_object_loads_as_its_file_would_with_secrets_from_its_namespace() -> None:
    obj = plan_object(
        workloads=[{"name": "web", "image": "nginx:1.27", "replicas": 2}],
        secrets=[
            {"name": "db", "data": {"password": {"valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}}}
        ],
    )
    (plan,) = load_plan_object(obj, secret_refs=secrets_of({("shop", "db", "pw"): "hunter2"})).plans
    assert (plan.name, plan.namespace, plan.source.file) == ("shop", "shop", "plan/shop -n shop")
    assert plan.workloads[0].replicas == 2
    assert dict(plan.secrets[0].data) == {"password": "hunter2"}


def test_a_plan_object_may_not_read_the_controllers_files_or_environment() -> None:
    obj = plan_object(
        secrets=[
            {
                "name": "db",
                "data": {"a": {"valueFrom": {"file": "/etc/passwd"}}, "b": {"valueFrom": {"env": "HOME"}}},
            },
        ]
    )
    with pytest.raises(PlanError) as refused:
        load_plan_object(obj, secret_refs=secrets_of({}))
    messages = [(d.file, d.path, d.message.split(":")[0]) for d in refused.value.diagnostics]
    assert messages == [
        (
            "plan/shop -n shop",
            "secrets[0].data.a.valueFrom.file",
            "valueFrom.file cannot be used in a Plan object",
        ),
        (
            "plan/shop -n shop",
            "secrets[0].data.b.valueFrom.env",
            "valueFrom.env cannot be used in a Plan object",
        ),
    ]


def test_a_plan_objects_bad_field_is_a_diagnostic_at_its_path() -> None:
    with pytest.raises(PlanError) as refused:
        load_plan_object(
            plan_object(workloads=[{"name": "web", "image": "x", "replicas": "two"}]),
            secret_refs=secrets_of({}),
        )
    (diagnostic,) = refused.value.diagnostics
    assert (diagnostic.file, diagnostic.path) == ("plan/shop -n shop", "workloads[0].replicas")


def test_a_plan_file_reads_a_secret_key_ref_in_its_namespace_and_says_what_is_missing(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan(
        "secrets:\n  - name: db\n    data: {password: {valueFrom: {secretKeyRef: {name: db, key: pw}}}}\n"
    )
    refs = secrets_of({(None, "db", "pw"): "s3cr3t"})
    assert dict(load_plans([path], secret_refs=refs).plans[0].secrets[0].data) == {"password": "s3cr3t"}
    with pytest.raises(PlanError) as missing:
        load_plans([path], secret_refs=secrets_of({}))
    assert [d.message for d in missing.value.diagnostics] == ['Secret "db" has no key "pw"']
    with pytest.raises(PlanError) as offline:
        load_plans([path])
    assert [d.path for d in offline.value.diagnostics] == ["secrets[0].data.password.valueFrom.secretKeyRef"]


def test_wants_reconcile_only_for_what_the_controller_has_not_handled() -> None:
    done = {
        "observedGeneration": 3,
        "lastAttemptedRevision": "",
        "lastHandledReconcileAt": "",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    assert planstatus.wants_reconcile(plan_object())  # generation 3 never observed
    assert not planstatus.wants_reconcile(plan_object(status=done))
    requested = plan_object(status=done)
    requested["metadata"]["annotations"]["reconcile.planner.dev/requestedAt"] = "now"
    assert planstatus.wants_reconcile(requested)
    revised = plan_object(status=done)
    revised["metadata"]["annotations"]["planner.dev/revision"] = "main@sha1:abc"
    assert planstatus.wants_reconcile(revised)


def test_status_progressing_then_succeeded_then_failed() -> None:
    obj = plan_object()
    started = planstatus.progressing(obj, T0)
    assert started == {
        "observedGeneration": 2,
        "conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "Progressing", "message": "reconciliation in progress",
             "observedGeneration": 3, "lastTransitionTime": T0},
            {"type": "Reconciling", "status": "True", "reason": "Progressing", "message": "reconciliation in progress",
             "observedGeneration": 3, "lastTransitionTime": T0},
        ],
    }  # fmt: skip
    applied = planstatus.Applied(
        planner_generation=7, objects={"Secret": 1, "Deployment": 2}, drift_found=1, drift_corrected=1
    )
    attempt = planstatus.Attempt(
        generation=3, revision="r1", requested_at="", ready="True", reason="ReconciliationSucceeded",
        message="converged", applied=applied,
    )  # fmt: skip
    succeeded = planstatus.finished(started, attempt, T1)
    assert succeeded == {
        "observedGeneration": 3,
        "lastAppliedGeneration": 7,
        "lastAppliedRevision": "r1",
        "lastAttemptedRevision": "r1",
        "lastHandledReconcileAt": "",
        "lastError": "",
        "inventory": {"objects": {"Deployment": 2, "Secret": 1}, "driftFound": 1, "driftCorrected": 1},
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded", "message": "converged",
             "observedGeneration": 3, "lastTransitionTime": T1},
        ],
    }  # fmt: skip
    failing = planstatus.Attempt(
        generation=4, revision="r2", requested_at="", ready="False", reason="ReconciliationFailed",
        message="web: timed out", error="web: timed out",
    )  # fmt: skip
    failed = planstatus.finished(succeeded, failing, "2026-12-02T01:09:00Z")
    assert failed["lastAppliedGeneration"] == 7 and failed["lastAppliedRevision"] == "r1"  # what last worked
    assert failed["lastAttemptedRevision"] == "r2" and failed["lastError"] == "web: timed out"
    again = planstatus.finished(failed, failing, "2026-12-02T01:10:00Z")
    assert again["conditions"][0]["lastTransitionTime"] == "2026-12-02T01:09:00Z"  # no transition since


def test_a_status_says_what_drifted_who_wrote_it_and_a_conflict_while_there_is_one() -> None:
    replicas = DriftedField("deployment/shop/web", ".spec.replicas", "kubectl")
    conflict = "deployment/shop/web .spec.replicas: written back by kubectl after each correction"
    attempt = planstatus.Attempt(
        generation=3, revision="", requested_at="", ready="True", reason="ReconciliationSucceeded",
        message="converged", drifted=(replicas,), conflict=conflict,
    )  # fmt: skip
    fought = planstatus.finished({"observedGeneration": 3}, attempt, T0)
    assert fought["lastDrift"] == {
        "time": T0,
        "fields": [{"object": "deployment/shop/web", "path": ".spec.replicas", "writer": "kubectl"}],
    }
    assert fought["conditions"][1] == {
        "type": "DriftConflict", "status": "True", "reason": "FightingWriter", "message": conflict,
        "observedGeneration": 3, "lastTransitionTime": T0,
    }  # fmt: skip
    calm = planstatus.finished(fought, dataclasses.replace(attempt, drifted=(), conflict=""), T1)
    assert calm["lastDrift"] == fought["lastDrift"]  # the last drift stays said
    assert [c["type"] for c in calm["conditions"]] == ["Ready"]


def test_the_reconcile_section_reads_with_its_defaults() -> None:
    assert reconcile_section({}) == ReconcileSection(
        suspend=False, interval=None, prune=True, timeout=None, depends_on=(), allow_data_loss=False
    )
    section = {
        "suspend": True,
        "interval": "1m30s",
        "prune": False,
        "timeout": "2s",
        "dependsOn": [{"name": "db"}, {"name": "cache"}],
        "allowDataLoss": True,
        "driftCorrection": "off",
    }
    assert reconcile_section({"reconcile": section}) == ReconcileSection(
        suspend=True,
        interval=90.0,
        prune=False,
        timeout=2.0,
        depends_on=("db", "cache"),
        allow_data_loss=True,
        drift_correction="off",
    )
    assert reconcile_section({"reconcile": {"driftCorrection": False}}).drift_correction is None


def test_a_bad_reconcile_section_is_a_diagnostic_at_its_line_and_column(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan("reconcile:\n  interval: soon\n  dependsOn: [{nmae: db}]\n")
    with pytest.raises(PlanError) as refused:
        load_plans([path])
    assert [(d.line, d.column, d.path, d.message) for d in refused.value.diagnostics] == [
        (6, 13, "reconcile.interval", 'bad duration "soon": expected a Go duration like 90s, 5m, 1h30m'),
        (7, 15, "reconcile.dependsOn[0]", 'missing required field "name"'),
        (
            7,
            16,
            "reconcile.dependsOn[0].nmae",
            'unknown field "nmae" (did you mean "name"? expected one of: name)',
        ),
    ]


def test_an_interval_or_timeout_below_its_floor_is_refused_at_its_line_and_column_and_clamped(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan("reconcile:\n  interval: 0s\n  timeout: 1ms\n")
    with pytest.raises(PlanError) as refused:
        load_plans([path])
    assert [(d.line, d.column, d.path, d.message) for d in refused.value.diagnostics] == [
        (
            6,
            13,
            "reconcile.interval",
            "0s is too short: at least 10s (the controller would reconcile the Plan without pause)",
        ),
        (7, 12, "reconcile.timeout", "1ms is too short: at least 1s (no reconcile could wait for anything)"),
    ]
    # A Plan object that never passed validate is held to the floors all the same.
    clamped = reconcile_section({"reconcile": {"interval": "1ms", "timeout": "0s"}})
    assert (clamped.interval, clamped.timeout) == (10.0, 1.0)
    assert reconcile_section({"reconcile": {"interval": "10s"}}).interval == 10.0


def test_a_plan_depending_on_itself_is_refused_at_its_line_and_column(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan("reconcile:\n  dependsOn: [{name: db}, {name: shop}]\n")  # the header names it shop
    with pytest.raises(PlanError) as refused:
        load_plans([path])
    assert [(d.line, d.column, d.path, d.message) for d in refused.value.diagnostics] == [
        (
            6,
            34,
            "reconcile.dependsOn[1].name",
            "shop is this Plan: a Plan cannot depend on itself (it would wait for itself for ever)",
        )
    ]


def test_a_plans_reconcile_section_amends_the_controllers_options() -> None:
    given = ReconcileOptions(apply=ApplyOptions(timeout=300.0))
    section = ReconcileSection(timeout=30.0, prune=False, allow_data_loss=True)
    amended = plan_reconcile_options(given, section, revision="main@sha1:abc")
    assert (amended.prune, amended.apply.timeout, amended.apply.history.revision) == (
        False,
        30.0,
        "main@sha1:abc",
    )
    assert (amended.apply.plan.allow_data_loss, amended.apply.plan.allow_empty) == (True, False)
    plain = plan_reconcile_options(given, ReconcileSection(), revision="")
    assert (plain.prune, plain.apply.timeout, plain.apply.history.revision) == (True, 300.0, None)
    assert plain.apply.plan.allow_data_loss is False
    pruning = plan_reconcile_options(given, section, revision="", prune=True, allow_empty=True)
    assert (pruning.prune, pruning.apply.plan.allow_empty) == (True, True)
    assert plain.correct_drift is True
    assert plan_reconcile_options(given, section, revision="", drift_correction="interval").correct_drift
    assert not plan_reconcile_options(given, section, revision="", drift_correction="off").correct_drift


def test_a_status_is_written_as_the_merge_patch_that_removes_what_it_no_longer_has() -> None:
    before = {"inventory": {"objects": {"ConfigMap": 1, "Deployment": 1}, "driftFound": 0}, "lastError": "x"}
    after = {"inventory": {"objects": {"Deployment": 1}, "driftFound": 2}, "conditions": [{"type": "Ready"}]}
    assert planstatus.merge_patch(before, after) == {
        "lastError": None,
        "inventory": {"objects": {"ConfigMap": None, "Deployment": 1}, "driftFound": 2},
        "conditions": [{"type": "Ready"}],
    }


_SCALARS = st.one_of(
    st.text(max_size=40),  # newlines, quotes, "yes", "null", "0x1f", leading blanks, any code point
    st.sampled_from(
        [
            "yes",
            "on",
            "null",
            "~",
            "1e3",
            "0o17",
            ".inf",
            "1_000",
            "012",
            "1:20",
            "- x",
            "a: b",
            "#c",
            '"',
            "\n x \n",
        ]
    ),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(min_size=1, max_size=12), _VALUES, max_size=5))
def test_a_plan_objects_fields_read_back_from_its_text_exactly_as_they_were(fields: dict[str, Any]) -> None:
    """The YAML a Plan object is loaded through (libyaml's emitter, the YAML 1.2 parser) changes no value."""
    obj = {"apiVersion": "planner.dev/v1", "kind": "Plan", "metadata": {"name": "shop", "namespace": "shop"}}
    obj |= {key: value for key, value in fields.items() if key not in (*obj, "status")}
    parsed = parse_plan_text("plan/shop -n shop", plan_object_text(obj))
    assert not isinstance(parsed, Diagnostic), parsed
    assert parsed.data == obj

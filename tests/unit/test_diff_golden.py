"""Zero perpetual diffs: every object a real kube-apiserver v1.28.7 defaulted (tests/golden/k8s) shows no
change against the minimal desired form that created it (the recorded request body)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.diff import diff
from planner.live import LiveState
from planner.objects import ref_of
from tests.paths import GOLDEN


def request_body(name: str) -> dict[str, Any]:
    body = json.loads((GOLDEN / f"{name}.json").read_text())["request"]["body"]
    loaded = YAML(typ="safe").load(body) if isinstance(body, str) else body  # SSA bodies are YAML text
    assert isinstance(loaded, dict)
    return loaded


def response_body(name: str) -> dict[str, Any]:
    loaded = json.loads((GOLDEN / f"{name}.json").read_text())["response_body"]
    assert isinstance(loaded, dict)
    return loaded


def desired_for(request: str, live: dict[str, Any]) -> dict[str, Any]:
    """The request body placed in the live object's namespace, as a rendered manifest would be."""
    desired = request_body(request)
    desired.setdefault("metadata", {})["namespace"] = live["metadata"]["namespace"]
    return desired


PAIRS = [
    ("deployment_create", "deployment_create", "a created Deployment with every default filled in"),
    ("deployment_create", "deployment_get_immediately", "a Deployment read back right after create"),
    (
        "deployment_create",
        "deployment_get_after_controller",
        "a Deployment with controller status and annotation",
    ),
    ("job_create", "job_create", "a Job with its generated selector and controller-uid labels"),
    ("job_create", "job_get", "a Job read back right after create"),
    ("job_create", "job_get_after_controller", "a Job with controller status"),
    ("service_create", "service_create", "a Service with an allocated clusterIP and defaulted ports"),
    ("service_create", "service_get", "a Service read back"),
    ("pvc_create", "pvc_create", "a PVC with volumeMode defaulted and the protection finalizer"),
    ("pvc_create", "pvc_get", "a PVC read back"),
    ("pvc_block_create", "pvc_block_create", "a Block PVC"),
    ("pvc_block_create", "pvc_block_get", "a Block PVC read back"),
    ("secret_create", "secret_create", "a Secret whose stringData the server folded into data"),
    ("secret_create", "secret_get", "a Secret read back"),
    ("configmap_create", "configmap_create", "a ConfigMap"),
    ("configmap_create", "configmap_get", "a ConfigMap read back"),
    ("pod_create", "pod_create", "a Pod with admission's token volume, mounts and tolerations"),
    ("pod_create", "pod_get", "a Pod read back"),
    ("lease_create", "lease_create", "a Lease with MicroTime timestamps"),
    ("lease_create", "lease_get", "a Lease read back"),
    ("ssa_apply_create", "ssa_apply_create", "a Deployment created by server-side apply"),
    ("ssa_apply_create", "ssa_apply_again_noop", "a Deployment re-applied without change"),
    ("ssa_force_other_manager", "ssa_force_other_manager", "a Deployment co-owned after a forced apply"),
    ("ssa_force_other_manager", "ssa_get", "a Deployment with three managers in managedFields"),
    ("dry_run_create", "dry_run_create", "a dry-run create's returned object"),
    ("delete_fg_setup_create", "delete_fg_setup_create", "another created Deployment"),
    ("delete_bg_setup_create", "delete_bg_setup_create", "a third created Deployment"),
]


@pytest.mark.parametrize(("request_file", "response_file"), [p[:2] for p in PAIRS], ids=[p[2] for p in PAIRS])
def test_defaulted_object_is_unchanged_against_its_request(request_file: str, response_file: str) -> None:
    live = response_body(response_file)
    desired = desired_for(request_file, live)

    changes = diff([desired], LiveState(members={ref_of(live): live}), plan="p", namespace="default").changes

    assert [(c.action, c.fields, c.reason, c.transition) for c in changes] == [("noop", (), "", None)]


def test_the_golden_comparison_does_see_a_real_change() -> None:
    """Guards the table above against comparing nothing: the same pair with another image is an update."""
    live = response_body("deployment_get_after_controller")
    desired = desired_for("deployment_create", live)
    changed = copy.deepcopy(desired)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    changed["metadata"]["annotations"] = {"planner.dev/hash": "new"}

    (change,) = diff(
        [changed], LiveState(members={ref_of(live): live}), plan="p", namespace="default"
    ).changes

    assert change.action == "update"
    assert [(f.path, f.before, f.after) for f in change.fields if not f.is_takeover] == [
        (".spec.template.spec.containers[name=nginx].image", "nginx", "nginx:1.27"),
    ]

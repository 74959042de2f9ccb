"""deploy/'s least privilege, proven on a real kube-apiserver: `kubectl apply -k deploy/` is accepted,
and the controller, run as its ServiceAccount (a token from the TokenRequest API, so only deploy/'s
roles apply), goes through a scenario that exercises every path (reconcile and prune, a warm pool,
the idle reaper, leader election, events; then a Plan object reconciled into its status) without one
request refused, listening as deploy/ says (the web view on the loopback only, never beside the
probes); the API server's audit log shows that it used every verb of its ClusterRole but the
recovery-only `get`s, and nothing else.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

from tests.e2e.test_deploy import (
    DEPLOY,
    RECOVERY_ONLY,
    USER,
    check_web_view_apart,
    deploy_addresses,
    deploy_listen_flags,
    role_rules,
    scenario_plan,
    start_controller,
    verbs_of,
)
from tests.real.conftest import Runner, eventually, token_kubeconfig
from tests.realplane import RealCluster


def audited(cluster: RealCluster, user: str) -> list[dict[str, object]]:
    lines = cluster.audit_log.read_text().splitlines() if cluster.audit_log.exists() else []
    events = [json.loads(line) for line in lines if line.strip()]
    return [
        e
        for e in events
        if e.get("user", {}).get("username") == user and e.get("stage") == "ResponseComplete"
    ]


def test_the_controller_as_its_service_account_is_never_refused_and_uses_exactly_its_role(
    cluster: RealCluster, kubectl: Runner, tmp_path: Path
) -> None:
    applied = kubectl("apply", "-k", str(DEPLOY))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    scaled = kubectl("scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0")
    assert scaled.returncode == 0, scaled.stderr
    kubeconfig = token_kubeconfig(cluster, "planner-system", "planner-controller", tmp_path / "kubeconfig")
    plans = tmp_path / "plans"
    plans.mkdir()
    plan = plans / "plan.yaml"
    plan.write_text(scenario_plan("scenario", full=True))
    before = len(audited(cluster, USER))
    process, log = start_controller(
        tmp_path,
        kubeconfig,
        plans,
        "--leader-elect",
        "--lease-namespace",
        "planner-system",
        "--resync",
        "0.5s",
        "--poll",
        "0.2s",
        "--interval",
        "1h",
        "--allow-data-loss",
        "-n",
        "scenario",
        *deploy_listen_flags(),
    )
    try:
        eventually(lambda: "plan everything: applied" in log.read_text(), timeout=120, what=log)
        check_web_view_apart(*deploy_addresses(log))
        eventually(lambda: "paused (idle)" in log.read_text(), timeout=60, what=log)
        eventually(lambda: re.search(r"pool dev \(plan everything\): created 1", log.read_text()), timeout=60)
        plan.write_text(scenario_plan("scenario", full=False))
        eventually(lambda: log.read_text().count("plan everything: applied") >= 2, timeout=120)
        eventually(
            lambda: re.search(r"pool dev \(plan everything\): created 0, deleted 1", log.read_text()),
            timeout=60,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    assert code == 0, log.read_text()
    assert kubectl("create", "namespace", "objects").returncode == 0
    assert kubectl("apply", "-f", "-", stdin=scenario_plan("objects", full=False)).returncode == 0
    process, log = start_controller(tmp_path, kubeconfig, None, "-n", "objects", "--interval", "1h")
    try:
        ready = kubectl("wait", "--for=condition=Ready", "plan/everything", "-n", "objects", "--timeout=120s")
        assert ready.returncode == 0, ready.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    made = audited(cluster, USER)[before:]

    assert code == 0, log.read_text()
    refused = [e for e in made if e["responseStatus"]["code"] == 403]  # type: ignore[index]
    assert not refused, refused
    used = {
        (
            ref.get("apiGroup", ""),
            ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else ""),
            verb,
        )
        for e in made
        if (ref := e.get("objectRef")) and isinstance(ref, dict) and ref.get("resource")
        for verb in verbs_of(str(e["verb"]), e["responseStatus"]["code"])  # type: ignore[index]
    }
    assert used <= role_rules(), used - role_rules()
    assert role_rules() - used <= RECOVERY_ONLY, role_rules() - used - RECOVERY_ONLY

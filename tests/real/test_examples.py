"""Perpetual-diff freedom on a real kube-apiserver: after applying every example plan in plans/ (as
`make demo` does), a second `plan --detailed-exitcode` finds nothing to do. Whatever the real API
server defaults, normalises or has its controllers write must not read as a change.

The examples name their own namespaces (fidelity, sandboxes, shop); no other test uses them.
"""

from __future__ import annotations

from tests.paths import PLANS
from tests.real.conftest import Runner


def test_every_example_plan_applies_and_a_second_plan_is_empty(planner: Runner, kubectl: Runner) -> None:
    plans = sorted(str(p) for p in PLANS.glob("*.yaml"))
    applied = planner("apply", *plans, "--timeout", "180s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = planner("plan", "--detailed-exitcode", *plans)
    assert again.returncode == 0, again.stdout + again.stderr
    listed = kubectl("get", "deployments", "-n", "shop", "-o", "name")
    assert listed.returncode == 0 and listed.stdout.strip(), listed.stderr

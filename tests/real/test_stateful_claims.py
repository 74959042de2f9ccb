"""On a real control plane (whose StatefulSet controller and garbage collector delete claims as the
retention policy says): a replace or prune of a set whose policy deletes its claims is refused as data
loss, and a resized claim template keeps the claim's size and the next plan says so (the e2e twin:
tests/e2e/test_stateful_claims.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_stateful_claims import (
    test_a_policy_that_deletes_claims_makes_a_replace_and_a_prune_data_loss as policy_deletes,
)
from tests.e2e.test_stateful_claims import (
    test_a_resized_claim_template_keeps_the_claims_size_and_the_plan_says_so as resized,
)
from tests.real.conftest import Runner


def test_a_policy_that_deletes_claims_makes_a_replace_and_a_prune_data_loss(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    policy_deletes(planner, kubectl, namespace, tmp_path)


def test_a_resized_claim_template_keeps_the_claims_size_and_the_plan_says_so(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    resized(planner, kubectl, namespace, tmp_path)

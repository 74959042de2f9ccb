"""Deleting a Plan object on a real control plane deletes everything it made but its claims, in every
shape (a `secretKeyRef` Secret read by a Deployment, a Lease only discovery places), and a prune held
by a foreign finalizer keeps the Plan's finalizer and says why (the e2e twin: tests/e2e/test_plan_deletion.py)."""

from __future__ import annotations

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_deletion import a_deleted_namespace, a_held_prune, deleting_a_plan
from tests.real.conftest import Runner

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def test_deleting_a_plan_deletes_every_object_but_its_claims_and_says_which(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    deleting_a_plan(controllers, planner, kubectl, namespace)


def test_a_prune_that_cannot_finish_keeps_the_finalizer_and_says_why(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    a_held_prune(controllers, planner, kubectl, namespace)


def test_a_plan_in_a_namespace_being_deleted_lets_the_namespace_go(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    a_deleted_namespace(controllers, planner, kubectl, namespace)

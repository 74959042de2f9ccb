"""`planner reconcile --now` on a suspended Plan: said at once, nothing asked, against a hand-written API."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from planner.app.target import Target
from planner.controller.reconcile_now import request_reconcile
from planner.errors import PlannerError


class Api:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.requests: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        self.requests.append((method, path))
        return self.plan


def test_a_suspended_plan_is_said_at_once_and_not_asked() -> None:
    plan = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "app", "namespace": "shop"},
        "reconcile": {"suspend": True},
    }
    api = Api(plan)
    target = cast(Target, SimpleNamespace(client=api))

    with pytest.raises(PlannerError) as refused:
        request_reconcile(target, "app", "shop", timeout=0.5)

    assert str(refused.value) == (
        "plan/app -n shop is suspended (reconcile.suspend: true): the controller reconciles it only once it "
        "is resumed, so nothing was asked"
    )
    assert api.requests == [("GET", "/apis/planner.dev/v1/namespaces/shop/plans/app")]

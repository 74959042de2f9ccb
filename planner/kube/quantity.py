"""Kubernetes quantity parsing, borrowed from the official client so planner accepts exactly what the
API server accepts. It lives in `kube/` because only this package may import `kubernetes`; the plan loader
reaches it through here."""

from __future__ import annotations

from decimal import Decimal

from kubernetes.utils.quantity import parse_quantity as _parse_quantity


def parse_quantity(text: str) -> Decimal:
    """The value of a quantity such as `500m`, `0.5` or `1Gi`; ValueError when it is not one."""
    value = _parse_quantity(text)
    if not isinstance(value, Decimal):  # pragma: no cover - the client always returns a Decimal
        raise ValueError(f"not a quantity: {text}")
    return value

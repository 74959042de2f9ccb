"""The pure parts of cluster access: HTTP status to exception class, the rate limiter, paths."""

from __future__ import annotations

import json

import pytest

from planner.errors import (
    AlreadyExistsError,
    ApiError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidError,
    NotFoundError,
    ServerError,
    TooManyRequestsError,
    UnauthorizedError,
    api_error,
)
from planner.kinds import CONFIG_MAP, DEPLOYMENT, NAMESPACE
from planner.kube.client import TokenBucket, exponential_backoff, resource_path


def status_body(code: int, reason: str, message: str = "m") -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "reason": reason, "message": message, "code": code}
    ).encode()


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        (400, "BadRequest", BadRequestError),
        (401, "Unauthorized", UnauthorizedError),
        (403, "Forbidden", ForbiddenError),
        (404, "NotFound", NotFoundError),
        (409, "AlreadyExists", AlreadyExistsError),
        (409, "Conflict", ConflictError),
        (410, "Expired", GoneError),
        (422, "Invalid", InvalidError),
        (429, "TooManyRequests", TooManyRequestsError),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (418, "Teapot", ApiError),
    ],
    ids=[
        "400 is a bad request",
        "401 is unauthorized",
        "403 is forbidden",
        "404 is not found",
        "409 AlreadyExists is its own conflict",
        "409 Conflict is a conflict but not already-exists",
        "410 is gone (expired)",
        "422 is invalid",
        "429 is too many requests",
        "500 is a server error",
        "503 is a server error too",
        "an unknown status is a plain ApiError",
    ],
)
def test_each_status_maps_to_one_class(status: int, reason: str, expected: type[ApiError]) -> None:
    error = api_error(status, status_body(status, reason, 'deployments.apps "web" not found'))
    assert type(error) is expected
    assert (error.http_status, error.reason, str(error)) == (
        status,
        reason,
        'deployments.apps "web" not found',
    )


def test_a_body_that_is_not_a_status_still_gives_a_message() -> None:
    error = api_error(502, "upstream went away")
    assert isinstance(error, ServerError) and str(error) == "upstream went away"
    assert str(api_error(500, b"")) == "HTTP 500"


def test_long_messages_are_cut_short() -> None:
    error = api_error(422, status_body(422, "Invalid", "x" * 1000))
    assert len(str(error)) == 401 and str(error).endswith("…")


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "path"),
    [
        (CONFIG_MAP, "shop", "web", "/api/v1/namespaces/shop/configmaps/web"),
        (CONFIG_MAP, "shop", None, "/api/v1/namespaces/shop/configmaps"),
        (DEPLOYMENT, "shop", "web", "/apis/apps/v1/namespaces/shop/deployments/web"),
        (DEPLOYMENT, None, None, "/apis/apps/v1/deployments"),
        (NAMESPACE, None, "shop", "/api/v1/namespaces/shop"),
    ],
    ids=[
        "a core object",
        "a core collection in a namespace",
        "a grouped object",
        "a grouped collection across namespaces",
        "a cluster-scoped object",
    ],
)
def test_resource_paths(kind: object, namespace: str | None, name: str | None, path: str) -> None:
    assert resource_path(kind, namespace, name) == path  # type: ignore[arg-type]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_token_bucket_allows_a_burst_then_refills_at_the_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    slept: list[float] = []

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.now += seconds

    monkeypatch.setattr("planner.kube.client.time.sleep", fake_sleep)
    bucket = TokenBucket(qps=10.0, burst=3, clock=clock)
    for _ in range(3):
        bucket.take()
    assert slept == []
    bucket.take()
    assert slept == [pytest.approx(0.1)]
    clock.now += 1.0
    for _ in range(3):
        bucket.take()
    assert len(slept) == 1


def test_backoff_doubles_and_is_capped() -> None:
    assert [exponential_backoff(n) for n in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]

"""The create-only kinds that are answered rather than stored: access reviews, rules reviews, token
reviews and "who am I".

- `SelfSubjectAccessReview` (`kubectl auth can-i`): may the requester do this? `SubjectAccessReview`:
  may this user (and groups) do it? `LocalSubjectAccessReview`: the same, within the URL's namespace.
  Their `status` is the authorizer's decision: `allowed`, and the reason RBAC gives
  (`RBAC: allowed by RoleBinding "ci/shop" of Role "deployer" to ServiceAccount "planner/ci"`).
- `SelfSubjectRulesReview` (`kubectl auth can-i --list`): every rule the requester has in a namespace.
- `SelfSubjectReview` (`kubectl auth whoami`): the requester's user info.
- `TokenReview`: who a token authenticates as.

Each answer is a function of the request's `Review` (who asks, and the server's `Auth`), the URL's
namespace and the decoded body; the answer echoes the body with `metadata.creationTimestamp: null` and
the computed `status`, as the apiserver does. Invalid specs are the apiserver's 422s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.slim import status_errors, validators
from planner.slim.authorizer import Attributes
from planner.slim.requestinfo import RequestInfo
from planner.slim.status_errors import Cause, Target
from planner.slim.users import User

if TYPE_CHECKING:
    from planner.slim.auth import Auth

Obj = dict[str, Any]
AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"
NO_NON_RESOURCE = "(*authorization.NonResourceAttributes)(nil)"


@dataclass(frozen=True)
class Review:
    user: User
    auth: Auth


Answer = Callable[[Review, str, Obj], Obj]


def _answer(body: Obj, status: Obj) -> Obj:
    return {
        "kind": body["kind"],
        "apiVersion": body["apiVersion"],
        "metadata": {**(body.get("metadata") or {}), "creationTimestamp": None},
        "spec": body.get("spec") or {},
        "status": status,
    }


# --- access reviews -----------------------------------------------------------------------------------


def _attribute_causes(spec: Obj) -> list[Cause]:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        detail = "cannot be specified in combination with resourceAttributes"
        return [validators.invalid_value("spec.nonResourceAttributes", non_resource, detail)]
    if resource is None and non_resource is None:
        detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        return [validators.invalid_value("spec.resourceAttributes", None, detail, rendered=NO_NON_RESOURCE)]
    return []


def _check(kind: str, causes: list[Cause]) -> None:
    if causes:
        raise status_errors.invalid(Target(AUTHORIZATION, "", kind, ""), causes)


def attributes(user: User, spec: Obj) -> Attributes:
    """What an access review's spec asks about, for `user`."""
    non_resource = spec.get("nonResourceAttributes")
    if non_resource is not None:
        path, verb = str(non_resource.get("path", "")), str(non_resource.get("verb", ""))
        return Attributes(user, RequestInfo(False, path, verb))
    asked = {key: str(value) for key, value in (spec.get("resourceAttributes") or {}).items()}
    return Attributes(
        user,
        RequestInfo(
            True,
            "",
            asked.get("verb", ""),
            asked.get("group", ""),
            asked.get("version", ""),
            asked.get("namespace", ""),
            asked.get("resource", ""),
            asked.get("subresource", ""),
            asked.get("name", ""),
        ),
    )


def _decide(review: Review, body: Obj, user: User) -> Obj:
    decision = review.auth.decide(attributes(user, body.get("spec") or {}))
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return _answer(body, status)


def self_subject_access_review(review: Review, namespace: str, body: Obj) -> Obj:
    _check(body["kind"], _attribute_causes(body.get("spec") or {}))
    return _decide(review, body, review.user)


def _subject(spec: Obj) -> User:
    extra = {key: tuple(values or ()) for key, values in (spec.get("extra") or {}).items()}
    return User(
        str(spec.get("user") or ""), str(spec.get("uid") or ""), tuple(spec.get("groups") or ()), extra
    )


def _subject_causes(spec: Obj) -> list[Cause]:
    causes = _attribute_causes(spec)
    if not spec.get("user") and not spec.get("groups"):
        detail = "at least one of user or group must be specified"
        causes.append(validators.invalid_value("spec.user", "", detail))
    return causes


def subject_access_review(review: Review, namespace: str, body: Obj) -> Obj:
    spec = body.get("spec") or {}
    _check(body["kind"], _subject_causes(spec))
    return _decide(review, body, _subject(spec))


def local_subject_access_review(review: Review, namespace: str, body: Obj) -> Obj:
    spec = body.get("spec") or {}
    causes = _subject_causes(spec)
    if spec.get("nonResourceAttributes") is not None:
        detail = "disallowed on this kind of request"
        causes.append(
            validators.invalid_value("spec.nonResourceAttributes", spec["nonResourceAttributes"], detail)
        )
    _check(body["kind"], causes)
    asked = spec.get("resourceAttributes") or {}
    if asked.get("namespace", "") != namespace:
        raise status_errors.bad_request(
            f"spec.resourceAttributes.namespace must match namespace: {namespace}"
        )
    return _decide(review, body, _subject(spec))


# --- rules, identity ----------------------------------------------------------------------------------


def self_subject_rules_review(review: Review, namespace: str, body: Obj) -> Obj:
    spec = body.get("spec") or {}
    if not spec.get("namespace"):
        raise status_errors.bad_request("no namespace on request")
    rules = review.auth.rules_for(review.user, str(spec["namespace"]))
    status: Obj = {
        "resourceRules": rules.resource_rules,
        "nonResourceRules": rules.non_resource_rules,
        "incomplete": False,
    }
    if rules.errors:
        status["evaluationError"] = (
            rules.errors[0] if len(rules.errors) == 1 else "[" + ", ".join(rules.errors) + "]"
        )
    return _answer(body, status)


def self_subject_review(review: Review, namespace: str, body: Obj) -> Obj:
    answer = _answer(body, {"userInfo": review.user.as_user_info()})
    del answer["spec"]
    return answer


def token_review(review: Review, namespace: str, body: Obj) -> Obj:
    spec = body.get("spec") or {}
    user = review.auth.authenticate_token(str(spec.get("token") or ""))
    if user is None:
        return _answer(body, {"user": {}, "error": "invalid bearer token"})
    audiences = list(spec.get("audiences") or review.auth.audiences)
    return _answer(body, {"authenticated": True, "user": user.as_user_info(), "audiences": audiences})

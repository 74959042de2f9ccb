"""Saved plans (planner/savedplan.py): what makes one stale, what never does, and telling one apart
from a plan file. Expected values are written by hand."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from planner.diff import diff
from planner.errors import PlanFilesMissingError, PlannerError
from planner.savedplan import (
    FORMAT,
    ClusterIdentity,
    changed_secrets,
    closure_digest,
    cluster_mismatch,
    declared_digest,
    is_saved_plan,
    key_id,
    moved_objects,
    plan_files,
    read_saved_plans,
    saved_plan,
    shape_digest,
    write_saved_plans,
)
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    find,
    live_state,
    rendered,
    secret,
    served,
    workload,
)

DESIRED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "shop", "labels": {"app": "shop"}},
    "data": {"LOG_LEVEL": "info"},
}
LIVE: dict[str, Any] = {
    **DESIRED,
    "metadata": {**DESIRED["metadata"], "uid": "u1", "resourceVersion": "10", "annotations": {}},
}


def _with_metadata(key: str, values: dict[str, str]) -> dict[str, Any]:
    return {**LIVE, "metadata": {**LIVE["metadata"], key: {**LIVE["metadata"].get(key, {}), **values}}}


@pytest.mark.parametrize(
    ("live", "same"),
    [
        ({**LIVE, "metadata": {**LIVE["metadata"], "resourceVersion": "99", "generation": 4}}, True),
        (_with_metadata("annotations", {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}), True),
        (_with_metadata("annotations", {"deployment.kubernetes.io/revision": "3"}), True),
        ({**LIVE, "status": {"phase": "Whatever"}}, True),
        ({**LIVE, "data": {"LOG_LEVEL": "info", "EXTRA": "x"}}, True),
        (_with_metadata("annotations", {"owner": "someone"}), False),
        (_with_metadata("labels", {"team": "payments"}), False),
        ({**LIVE, "data": {"LOG_LEVEL": "debug"}}, False),
    ],
    ids=[
        "a new resourceVersion and generation keep the digest",
        "kubectl's restartedAt annotation keeps the digest",
        "a controller's revision annotation keeps the digest",
        "a status write keeps the digest",
        "a field the plan does not declare keeps the digest",
        "kubectl annotate changes the digest",
        "kubectl label changes the digest",
        "an edit of a declared field changes the digest",
    ],
)
def test_declared_digest_moves_only_when_someone_moves_the_object(live: dict[str, Any], same: bool) -> None:
    assert (declared_digest(DESIRED, live, None) == declared_digest(DESIRED, LIVE, None)) is same


def _observed(*objects: tuple[str, str, str]) -> dict[str, Any]:
    return {"objects": [{"object": o, "uid": u, "digest": d} for o, u, d in objects]}


@pytest.mark.parametrize(
    ("saved", "fresh", "moved"),
    [
        (_observed(("configmap/shop/a", "u1", "d1")), _observed(("configmap/shop/a", "u1", "d1")), []),
        (_observed(("configmap/shop/a", "u1", "d1")), _observed(), [("configmap/shop/a", "deleted")]),
        (_observed(), _observed(("configmap/shop/a", "u1", "d1")), [("configmap/shop/a", "appeared")]),
        (
            _observed(("configmap/shop/a", "u1", "d1")),
            _observed(("configmap/shop/a", "u2", "d1")),
            [("configmap/shop/a", "deleted and created again")],
        ),
        (
            _observed(("configmap/shop/a", "u1", "d1"), ("service/shop/b", "u3", "d3")),
            _observed(("configmap/shop/a", "u1", "d2"), ("service/shop/b", "u3", "d4")),
            [("configmap/shop/a", "changed"), ("service/shop/b", "changed")],
        ),
    ],
    ids=[
        "the same observation moves nothing",
        "an object gone is named deleted",
        "an object that was not there is named appeared",
        "another uid is named deleted and created again",
        "every changed digest is named, in order",
    ],
)
def test_moved_objects_names_each_object_and_what_happened(
    saved: dict[str, Any], fresh: dict[str, Any], moved: list[tuple[str, str]]
) -> None:
    assert moved_objects(saved, fresh) == moved


KEY = bytes(range(32))  # the digest key the plan's parent Secret holds


def test_the_closure_digest_sees_a_secret_value_change_without_holding_it() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "data": {"k": "dmFsdWU="}}
    changed = {**secret, "data": {"k": "b3RoZXI="}}
    assert closure_digest([secret], KEY) != closure_digest([changed], KEY)
    assert closure_digest([secret], KEY) == closure_digest([dict(secret)], KEY)
    assert closure_digest([secret], KEY) != closure_digest([secret], bytes(32))


# --- a saved plan of a weak secret gives an offline attacker nothing to test guesses against -------

PIN = "4821"
CANDIDATES = [f"{n:04d}" for n in range(10_000)]


def pin_plan(pin: str) -> list[Manifest]:
    return rendered(secrets=(secret("door", pin=pin),), workloads=(workload("web"),))


def saved_pin_plan() -> dict[str, Any]:
    """`plan --out` of the PIN plan against a cluster holding it already at another PIN: the PIN Secret
    is both desired and read, so it enters the closure digest and a declared-field digest."""
    desired = pin_plan(PIN)
    live = [served(m) for m in pin_plan("0000")]
    changeset = diff(desired, live_state(*live), plan=PLAN, namespace=NAMESPACE)
    document = saved_plan(
        files=["plan.yaml"],
        root="/work/ci",
        changeset=changeset,
        desired=desired,
        live=live_state(*live),
        options={},
        key=KEY,
    )
    return document


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def unsalted_closure_digest(manifests: list[Manifest]) -> str:
    """What anyone holding the artifact and the plan files can compute: each Secret value replaced by its
    plain sha256 (the scheme of saved plans v1), then one sha256 of the canonical JSON."""
    hidden = [
        {**m, "data": {k: sha256(str(v)) for k, v in m["data"].items()}} if m["kind"] == "Secret" else m
        for m in manifests
    ]
    return sha256(json.dumps(hidden, sort_keys=True, separators=(",", ":")))


def test_a_saved_plan_holds_no_digest_from_which_a_four_digit_pin_can_be_found_without_the_key() -> None:
    document = saved_pin_plan()
    text = json.dumps(document)
    digests = set(re.findall(r"[0-9a-f]{64}", text))
    assert PIN not in text and base64.b64encode(PIN.encode()).decode() not in text
    for candidate in CANDIDATES:  # each value a guess could be digested to, plain or as stored
        encoded = base64.b64encode(candidate.encode()).decode()
        assert not {sha256(candidate), sha256(encoded), sha256(base64.b64decode(encoded))} & digests
    guessed = [c for c in CANDIDATES if unsalted_closure_digest(pin_plan(c)) == document["closure_digest"]]
    assert guessed == []
    assert document["digest_key_id"] == key_id(KEY) and KEY.hex() not in text


def test_the_shape_digest_is_the_same_whatever_the_pin_and_the_secret_digests_are_keyed() -> None:
    document = saved_pin_plan()
    assert {shape_digest(pin_plan(c)) for c in CANDIDATES[::97]} == {document["shape_digest"]}
    assert list(document["secret_digests"]) == ["secret/shop/door"]
    assert changed_secrets(document, pin_plan(PIN), bytes(32)) == ["secret/shop/door"]  # another key


@pytest.mark.parametrize(
    ("now", "changed"),
    [
        (pin_plan(PIN), []),
        (pin_plan("1234"), ["secret/shop/door"]),
        (rendered(secrets=(secret("door", pin="1234"),), workloads=(workload("web", image="web:2"),)), []),
        (rendered(secrets=(secret("door", pin=PIN, other="x"),), workloads=(workload("web"),)), []),
    ],
    ids=[
        "the same closure changes no secret",
        "only the pin's value changed: the secret is named",
        "a value and a workload changed: not only secrets",
        "a secret's key added is a plan change, not a value change",
    ],
)
def test_changed_secrets_names_the_secrets_when_only_their_values_differ(
    now: list[Manifest], changed: list[str]
) -> None:
    assert changed_secrets(saved_pin_plan(), now, KEY) == changed


def test_plan_files_are_found_where_apply_runs_else_under_the_recorded_root(tmp_path: Path) -> None:
    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    (checkout / "plans").mkdir(parents=True)
    (checkout / "plans" / "shop.yaml").write_text("kind: Plan\n")
    elsewhere.mkdir()
    saved = {"plan": "shop", "files": ["plans/shop.yaml"], "root": str(checkout)}
    assert plan_files(saved, checkout) == ["plans/shop.yaml"]
    assert plan_files(saved, elsewhere) == [str(checkout / "plans" / "shop.yaml")]
    with pytest.raises(PlanFilesMissingError) as missing:
        plan_files({**saved, "root": str(elsewhere)}, elsewhere)
    assert str(missing.value) == (
        "plan shop: plan files not found: plans/shop.yaml: a saved plan's relative paths are relative to "
        f"the directory `plan` ran in ({elsewhere}), which does not hold them either; run `apply` from a "
        "checkout with the same layout, at its top (where `plan` ran)"
    )


def test_with_the_clusters_key_the_closure_digest_still_tells_exactly_which_pin_was_planned() -> None:
    document = saved_pin_plan()
    matching = [
        c for c in CANDIDATES[4800:4900] if closure_digest(pin_plan(c), KEY) == document["closure_digest"]
    ]
    assert matching == [PIN]


def test_a_secrets_declared_field_digest_is_keyed_and_other_objects_are_not() -> None:
    door = find(pin_plan(PIN), "Secret", "door")
    live = served(door)
    assert declared_digest(door, live, KEY) != declared_digest(door, live, bytes(32))
    config = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    assert declared_digest(config, config, KEY) == declared_digest(config, config, None)


@pytest.mark.parametrize(
    ("text", "saved"),
    [
        (json.dumps({"format": FORMAT, "plans": []}), True),
        ("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\n", False),
        (json.dumps({"apiVersion": "planner.dev/v1", "kind": "Plan", "metadata": {"name": "shop"}}), False),
        ("{not json", False),
    ],
    ids=[
        "JSON with the saved-plan format is a saved plan",
        "a YAML plan file is not",
        "a JSON plan file is not",
        "a broken JSON file is not",
    ],
)
def test_a_saved_plan_is_told_from_a_plan_file_by_its_content(tmp_path: Path, text: str, saved: bool) -> None:
    path = tmp_path / "file"
    path.write_text(text)
    assert is_saved_plan(path) is saved


A = ClusterIdentity(uid="5f1e-a", server="https://a.example:6443")


@pytest.mark.parametrize(
    ("saved", "here", "refusal"),
    [
        (A, ClusterIdentity(uid="5f1e-a", server="https://a-lb.example:6443"), None),
        (
            A,
            ClusterIdentity(uid="77c0-b", server="https://a.example:6443"),
            "plan was made against cluster 5f1e-a at https://a.example:6443; "
            "this is cluster 77c0-b at https://a.example:6443",
        ),
        (A, ClusterIdentity(uid="", server="https://a.example:6443"), None),
        (
            A,
            ClusterIdentity(uid="", server="https://b.example:6443"),
            "plan was made against cluster 5f1e-a at https://a.example:6443; "
            "this is cluster (uid unreadable) at https://b.example:6443",
        ),
        (
            None,
            A,
            "the saved plan does not say which cluster it was made against; plan again",
        ),
    ],
    ids=[
        "the same uid through another URL is the same cluster",
        "another uid at the same URL is another cluster (rebuilt behind the same name)",
        "without a readable uid the same URL passes",
        "without a readable uid another URL is refused",
        "a saved plan that records no cluster is refused",
    ],
)
def test_a_saved_plan_applies_only_to_the_cluster_it_was_made_against(
    saved: ClusterIdentity | None, here: ClusterIdentity, refusal: str | None
) -> None:
    assert cluster_mismatch(saved, here) == refusal


def test_the_cluster_travels_with_the_plans_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "shop.plan.json"
    document = saved_pin_plan()
    write_saved_plans(path, [document], cluster=A)

    assert json.loads(path.read_text())["cluster"] == {"uid": "5f1e-a", "server": "https://a.example:6443"}
    assert read_saved_plans(path) == ([json.loads(json.dumps(document))], A)  # it matches its schema too


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"format": "planner.dev/saved-plan/v2"}, 'the document: "cluster" is a required property'),
        (
            {"format": "planner.dev/saved-plan/v2", "cluster": {}, "plans": [{}]},
            'plans[0]: "plan" is a required',
        ),
        (
            {
                "format": "planner.dev/saved-plan/v2",
                "cluster": {},
                "plans": [{**saved_pin_plan(), "changes": [1]}],
            },
            "plans[0].changes[0]: 1 is not of type",
        ),
    ],
)
def test_a_saved_plan_file_that_is_not_as_plan_out_wrote_it_is_refused_saying_where(
    tmp_path: Path, document: dict[str, Any], said: str
) -> None:
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PlannerError) as refused:
        read_saved_plans(path)
    assert f"{path}: not a saved plan `plan --out` wrote ({said}" in str(refused.value)

"""Golden replay: every recorded kube-apiserver exchange in tests/golden/k8s, replayed in recording order
against one fresh embedded server, must produce the recorded response exactly after masking.

What may differ is data, not code: `golden_deviations.yaml` lists the run-specific keys and string
patterns masked everywhere (uids, timestamps — managedFields times too —, resourceVersions, IPs,
generated suffixes), per-file extra masks with the reason, `before` steps that stand in for the controllers
the recording cluster ran (writing exactly the state the recording shows), and the files this replay
leaves out, each saying why: `controller_replay` (test_golden_controllers.py replays them with the
controllers running) or `not_replayed`. A file that is neither replayed nor left out with a reason fails
the test.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen
from tests.paths import GOLDEN
from tests.slimcluster import Response, http

DEVIATIONS = YAML(typ="safe").load((Path(__file__).parent / "golden_deviations.yaml").read_text())
INDEX = [entry["file"] for entry in json.loads((GOLDEN / "_index.json").read_text())]


def load(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / name).read_text())


def deviation(name: str) -> dict[str, Any]:
    return DEVIATIONS["files"].get(name) or {}


LEFT_OUT = ("controller_replay", "not_replayed")


def left_out(name: str) -> bool:
    """Whether the main replay leaves the file out (the deviation says why)."""
    return any(key in deviation(name) for key in LEFT_OUT)


# --- masking ------------------------------------------------------------------------------------------


def mask(value: Any, extra_paths: list[str], replacements: list[dict[str, str]]) -> Any:
    masked = _drop_keys(copy.deepcopy(value), set(DEVIATIONS["dropped_keys"]))
    masked = _mask_keys(masked, set(DEVIATIONS["masked_keys"]))
    for path in extra_paths:
        _mask_path(masked, path.split("."))
    return _order_managed_fields(_mask_strings(masked, DEVIATIONS["masked_patterns"] + replacements))


def _order_managed_fields(value: Any) -> Any:
    """managedFields sorted without their (masked) times: the apiserver orders entries by operation, then
    time, then manager, so two writes a second apart swap places that the recording had in one second."""
    if isinstance(value, dict):
        ordered = {k: _order_managed_fields(v) for k, v in value.items()}
        entries = ordered.get("managedFields")
        if isinstance(entries, list) and all(isinstance(e, dict) for e in entries):
            ordered["managedFields"] = sorted(
                entries,
                key=lambda e: (str(e.get("operation")), str(e.get("manager")), str(e.get("subresource"))),
            )
        return ordered
    if isinstance(value, list):
        return [_order_managed_fields(v) for v in value]
    return value


def _drop_keys(value: Any, keys: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_drop_keys(v, keys) for v in value]
    return value


def _mask_keys(value: Any, keys: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: ("<masked>" if k in keys else _mask_keys(v, keys)) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_keys(v, keys) for v in value]
    return value


def _mask_path(value: Any, parts: list[str]) -> None:
    head, rest = parts[0], parts[1:]
    if head == "*" and rest:
        for item in value if isinstance(value, list) else []:
            _mask_path(item, rest)
        return
    targets = value if head == "*" and isinstance(value, list) else [value]
    for target in targets:
        key: Any = head
        if isinstance(target, list):
            if head == "*":
                _mask_path(target, rest) if rest else None
                continue
            key = int(head)
            if key >= len(target):
                continue
        elif not isinstance(target, dict) or head not in target:
            continue
        if rest:
            _mask_path(target[key], rest)
        else:
            target[key] = "<masked>"


def _mask_strings(value: Any, patterns: list[dict[str, str]]) -> Any:
    if isinstance(value, dict):
        return {k: _mask_strings(v, patterns) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_strings(v, patterns) for v in value]
    if isinstance(value, str):
        for rule in patterns:
            value = re.sub(rule["pattern"], rule["with"], value)
    return value


def _subset(value: Any, path: str, key: str, keep: set[str]) -> Any:
    """Restrict the list at `path` (`*` walks lists) to entries whose `key` is in `keep`."""
    parts = path.split(".")
    if not parts or value is None:
        return value
    head, rest = parts[0], ".".join(parts[1:])
    if head == "*":
        return [_subset(v, rest, key, keep) if rest else v for v in value]
    if rest:
        return {**value, head: _subset(value.get(head), rest, key, keep)}
    return {**value, head: [item for item in value.get(head) or [] if _dig(item, key) in keep]}


def _dig(item: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(item, list) and part.isdigit():
            item = item[int(part)] if int(part) < len(item) else None
        else:
            item = item.get(part) if isinstance(item, dict) else None
    return item


def _keys_at(value: Any, path: str, key: str) -> set[str]:
    parts = path.split(".")
    head, rest = parts[0], ".".join(parts[1:])
    if value is None:
        return set()
    if head == "*":
        return set().union(*(_keys_at(v, rest, key) for v in value)) if value else set()
    if rest:
        return _keys_at(value.get(head), rest, key)
    return {_dig(item, key) for item in value.get(head) or []}


def comparable(name: str, recorded: Any, actual: Any) -> tuple[Any, Any]:
    rules = deviation(name)
    for subset in rules.get("subset", []):
        both = _keys_at(recorded, subset["path"], subset["key"]) & _keys_at(
            actual, subset["path"], subset["key"]
        )
        recorded = _subset(recorded, subset["path"], subset["key"], both)
        actual = _subset(actual, subset["path"], subset["key"], both)
    paths, replacements = rules.get("mask", []), rules.get("replace", [])
    for path in rules.get("drop", []):
        recorded, actual = _drop_path(recorded, path), _drop_path(actual, path)
    return mask(recorded, paths, replacements), mask(actual, paths, replacements)


def _drop_path(value: Any, path: str) -> Any:
    value = copy.deepcopy(value)
    *parents, last = path.split(".")
    target = value
    for part in parents:
        target = target.get(part) if isinstance(target, dict) else None
    if isinstance(target, dict):
        target.pop(last, None)
    return value


# --- replay -------------------------------------------------------------------------------------------


def _string_pairs(recorded: Any, live: Any, out: dict[str, str]) -> dict[str, str]:
    """Map each recorded run-specific string (uid, resourceVersion, generated name…) to its live value."""
    if isinstance(recorded, dict) and isinstance(live, dict):
        for k in recorded.keys() & live.keys():
            _string_pairs(recorded[k], live[k], out)
    elif isinstance(recorded, list) and isinstance(live, list) and len(recorded) == len(live):
        for r, v in zip(recorded, live, strict=True):
            _string_pairs(r, v, out)
    elif isinstance(recorded, str) and isinstance(live, str) and recorded != live:
        out[recorded] = live
    return out


def _substitute(value: Any, pairs: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, pairs) for v in value]
    return pairs.get(value, value) if isinstance(value, str) else value


def _live_pairs(cluster: ClusterHandle, rules: dict[str, Any]) -> dict[str, str]:
    source = rules.get("live_from")
    if not source:
        return {}
    recorded = load(source)
    live = http(cluster, "GET", recorded["request"]["path"]).body
    # managedFields are paired in a time-free order: writes straddling a second boundary order the live
    # entries differently from the recording, and pairing by position would swap the managers' names.
    pairs = _string_pairs(_order_managed_fields(recorded["response_body"]), _order_managed_fields(live), {})
    return {k: v for k, v in pairs.items() if k not in set(rules.get("keep_recorded_values", []))}


def _run_before(cluster: ClusterHandle, steps: list[dict[str, Any]]) -> None:
    for step in steps:
        body = step.get("body")
        if "status_from" in step:
            body = {**(body or {}), "status": load(step["status_from"])["response_body"]["status"]}
        reply = http(
            cluster,
            step["method"],
            step["path"],
            body,
            content_type=step.get("content_type", "application/merge-patch+json"),
            headers={"User-Agent": RECORDING_USER_AGENT},
        )
        assert reply.status < 300, (step, reply.body)


def _watch(cluster: ClusterHandle, path: str, headers: dict[str, str]) -> Response:
    with urlopen(cluster, path, headers=headers) as reply:
        events = [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]
        return Response(reply.status, events, dict(reply.headers))


# The recording client; the apiserver names a writer's managedFields entry after it.
RECORDING_USER_AGENT = "python-requests/2.31.0"


def replay_one(cluster: ClusterHandle, name: str) -> Response:
    recorded, rules = load(name), deviation(name)
    _run_before(cluster, rules.get("before", []))
    request = recorded["request"]
    body = _substitute(request.get("body"), _live_pairs(cluster, rules))
    headers = {k: v for k, v in request["headers"].items() if k != "Content-Type"}
    headers["User-Agent"] = RECORDING_USER_AGENT
    if "watch=" in request["path"]:
        return _watch(cluster, request["path"], headers)
    content_type = request["headers"].get("Content-Type", "application/json")
    return http(cluster, request["method"], request["path"], body, content_type=content_type, headers=headers)


@pytest.fixture(scope="module")
def replayed() -> Iterator[dict[str, Response]]:
    """The whole recording replayed in order (state flows from file to file, as it did when recorded)."""
    with running_cluster() as cluster:
        _run_before(cluster, DEVIATIONS.get("setup", []))
        yield {name: replay_one(cluster, name) for name in INDEX if not left_out(name)}


REPLAYED = [name for name in INDEX if not left_out(name)]


def test_every_golden_file_is_replayed_or_left_out_with_a_reason() -> None:
    on_disk = sorted(p.name for p in GOLDEN.glob("*.json") if p.name != "_index.json")
    assert sorted(INDEX) == on_disk
    for name, rules in DEVIATIONS["files"].items():
        assert name in INDEX, f"{name} is not a golden file"
        reasons = [rules[key] for key in LEFT_OUT if key in rules]
        assert len(reasons) <= 1 and all(isinstance(r, str) and r for r in reasons), name
    assert set(DEVIATIONS["files"]) <= set(INDEX)


@pytest.mark.parametrize("name", REPLAYED, ids=[f"{n} replays exactly" for n in REPLAYED])
def test_replayed_response_equals_recording(name: str, replayed: dict[str, Response]) -> None:
    recorded = load(name)
    actual = replayed[name]
    assert actual.status == recorded["response_status"], actual.body
    want, got = comparable(name, recorded["response_body"], actual.body)
    assert got == want

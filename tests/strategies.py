"""Hypothesis strategies for plan documents that pass the loader.

`plan_documents()` walks `schemas/plan.schema.json`: every property of every object may appear, with
values drawn to fit its type, enum, pattern and bounds, so the strategy follows the schema as it grows.
The few rules the schema cannot state (DESIGN §3 names, references without cycles, kind-specific fields,
pod rules) are then applied by `_make_valid`, which renames, drops or fills in only what those rules
require. Secret values may refer to `SECRET_ENV` and `SECRET_FILES`; `write_document` and
`load_document` set those up (and the manifest file `manifestFiles` names, and the Kustomize
directory `kustomize` names), so a property test can load any generated document.

`schema_locations()` and `locations_in()` name every property by its place in the schema
(`#probe.httpGet.port`, `workloads[]`): the unit test proves the strategy reaches each one.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy
from ruamel.yaml import YAML

from planner import workloads
from planner.plan import Plan, load_plans
from planner.plan.schema import plan_schema

Schema = dict[str, Any]
SECRET_ENV = {"PLANNER_STRATEGY_SECRET": "from-the-environment"}
SECRET_FILES = {"secret.txt": "from-a-file\n"}
MAX_ITEMS = 3

_DNS = st.from_regex(r"[a-z]([-a-z0-9]{0,8}[a-z0-9])?", fullmatch=True)
_TEXT = st.from_regex(r"[a-zA-Z0-9][-a-zA-Z0-9_.:/]{0,12}", fullmatch=True)
_ENV_NAME = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
_PATH = st.lists(st.from_regex(r"[a-z0-9][-a-z0-9_.]{0,6}", fullmatch=True), min_size=1, max_size=3).map(
    lambda parts: "/" + "/".join(parts)
)
_DURATION = st.lists(
    st.tuples(st.integers(1, 90), st.sampled_from(["ms", "s", "m", "h"])), min_size=1, max_size=2
).map(lambda parts: "".join(f"{number}{unit}" for number, unit in parts))
_QUANTITY = st.one_of(
    st.tuples(st.integers(1, 4096), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "M", "G"])).map(
        lambda pair: f"{pair[0]}{pair[1]}"
    ),
    st.integers(1, 64),
    st.sampled_from([0.5, 0.25, 1.5]),
)
_PATTERNS: dict[str, SearchStrategy[str]] = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": _DNS,
    "^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$": _DNS,
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": _DNS,
    "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$": _DURATION,
    "^/": _PATH,
    "^[A-Za-z_][A-Za-z0-9_]*$": st.just("PLANNER_STRATEGY_SECRET"),
    "^[-._a-zA-Z][-._a-zA-Z0-9]*$": _ENV_NAME,
    "^[-._a-zA-Z0-9]+$": st.from_regex(r"[a-z0-9][-._a-z0-9]{0,8}", fullmatch=True),
    "^[0-9]+%$": st.integers(0, 100).map(lambda percent: f"{percent}%"),
}
# Built afresh per example: a shared `st.just` dict would carry one test's in-place edits into the next.
_SECRET_VALUE = st.one_of(
    _TEXT,
    st.builds(lambda: {"valueFrom": {"env": "PLANNER_STRATEGY_SECRET"}}),
    st.builds(lambda: {"valueFrom": {"file": "secret.txt"}}),
    st.builds(lambda: {"valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}),
)
_NAME_PART = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?", fullmatch=True)
_QUALIFIED_NAME = st.tuples(
    st.one_of(st.just(""), _DNS.map(lambda prefix: f"{prefix}.dev/")), _NAME_PART
).map("".join)
_LABELS = st.dictionaries(_QUALIFIED_NAME, st.one_of(st.just(""), _NAME_PART), max_size=MAX_ITEMS)
_ANNOTATIONS = st.dictionaries(_QUALIFIED_NAME, _TEXT, max_size=MAX_ITEMS)
# Image references as the docker grammar reads them: a lowercase repository, an optional tag.
_IMAGE = st.from_regex(r"[a-z0-9]{1,8}(/[a-z0-9]{1,8})?(:[a-z0-9][a-z0-9.]{0,5})?", fullmatch=True)
# Raw manifests: namespaced kinds Kubernetes accepts with nothing but a name (names made unique later).
_RAW_KINDS = st.sampled_from(
    [("v1", "ConfigMap"), ("v1", "ServiceAccount"), ("policy/v1", "PodDisruptionBudget")]
)
_MANIFEST = st.builds(
    lambda kind, name, namespaced: {
        "apiVersion": kind[0],
        "kind": kind[1],
        "metadata": {"name": name, **({"namespace": "raw-ns"} if namespaced else {})},
    },
    _RAW_KINDS,
    _DNS,
    st.booleans(),
)
MANIFEST_FILES = {
    "manifests.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-a-file}\n",
    "kustomized/kustomization.yaml": "resources: [settings.yaml]\n",
    "kustomized/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-kustomize}\n",
}
_LOCATION_OVERRIDES: dict[str, SearchStrategy[Any]] = {
    "#manifest": _MANIFEST,
    "#.manifestFiles": st.just(["manifests.yaml"]),
    "#.kustomize": st.sampled_from([[], [{"path": "kustomized"}]]),  # each one runs `kubectl kustomize`
    "#workload.dependsOn": st.just([]),  # references are drawn by `_valid_references`
    "#workload.image": _IMAGE,
    "#container.image": _IMAGE,
    "#sandbox.image": _IMAGE,
    "#sandboxTemplate.image": _IMAGE,
    "#workload.labels": _LABELS,
    "#workload.nodeSelector": _LABELS,
    "#workload.annotations": _ANNOTATIONS,
    "#workload.podAnnotations": _ANNOTATIONS,
    "#scheduling.key": _QUALIFIED_NAME,
    "#probe.httpGet.port": st.one_of(st.integers(1, 65535), st.sampled_from(["http", "metrics"])),
    "#probe.tcpSocket.port": st.one_of(st.integers(1, 65535), st.sampled_from(["http", "metrics"])),
    "#secretValue": _SECRET_VALUE,
    "#envValue.fieldRef": st.sampled_from(["status.podIP", "metadata.name", "metadata.labels['app']"]),
    "#envValue.resourceFieldRef.resource": st.sampled_from(["limits.cpu", "requests.memory"]),
    "#envValue.resourceFieldRef.divisor": st.sampled_from(["1", 1]),
    "#workload.user": st.one_of(st.integers(0, 65535), st.sampled_from(["1000", "1000:1000", "nobody"])),
    "#workload.schedule": st.sampled_from(["0 3 * * *", "*/15 * * * *", "@daily", "5 4 1-7 jan,jul mon"]),
    "#workload.timeZone": st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]),
    "#workload.ingress.host": st.one_of(_DNS, _DNS.map(lambda label: f"*.{label}.example.com")),
    "#workload.ingress.tls.secretName": _DNS,
    "#workload.ingress.annotations": _ANNOTATIONS,
    # A DaemonSet's tolerations, each field met: drawn field by field, `value` (kept only with a key and
    # Equal) was too rare for the coverage test to meet in its examples under every hash seed.
    "#workload.tolerations": st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {
                    "key": st.just("example.com/dedicated"),
                    "operator": st.just("Equal"),
                    "value": st.sampled_from(["gpu", "batch"]),
                },
                optional={"effect": st.sampled_from(["NoSchedule", "PreferNoSchedule"])},
            ),
            st.fixed_dictionaries({"operator": st.just("Exists")}),
            st.fixed_dictionaries(
                {
                    "key": st.just("node.kubernetes.io/unreachable"),
                    "operator": st.just("Exists"),
                    "effect": st.just("NoExecute"),
                    "tolerationSeconds": st.integers(0, 3600),
                }
            ),
        ),
        min_size=1,
        max_size=3,
    ),
    # The controller's minimums, a semantic check the schema cannot say (planner.plan.reconcile_section).
    "#.reconcile.interval": st.integers(10, 90).map(lambda seconds: f"{seconds}s"),
    "#.reconcile.timeout": st.integers(1, 90).map(lambda seconds: f"{seconds}s"),
}


def plan_documents() -> SearchStrategy[dict[str, Any]]:
    """Plan documents (plain dicts, as YAML loads them) that load without errors."""
    return _valid_documents()


@st.composite
def _valid_documents(draw: DrawFn) -> dict[str, Any]:
    document = draw(_from_schema(plan_schema(), "#"))
    _make_valid(document, draw)
    return document


# -- walking the schema ------------------------------------------------------------------------------


def _from_schema(node: Schema, location: str) -> SearchStrategy[Any]:
    if location in _LOCATION_OVERRIDES:
        return _LOCATION_OVERRIDES[location]
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return st.deferred(lambda: _from_schema(plan_schema()["definitions"][name], f"#{name}"))
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        if kind == ["string", "number"]:
            return _QUANTITY
        return st.one_of([_from_schema({**node, "type": one}, location) for one in kind])
    return _BY_TYPE[kind](node, location) if kind in _BY_TYPE else _object(node, location)


def _string(node: Schema, location: str) -> SearchStrategy[Any]:
    del location
    return _PATTERNS.get(node.get("pattern", ""), _TEXT)


def _integer(node: Schema, location: str) -> SearchStrategy[Any]:
    del location
    low = node.get("minimum", 0)
    return st.integers(low, node.get("maximum", low + 1000))


def _boolean(node: Schema, location: str) -> SearchStrategy[Any]:
    del node, location
    return st.booleans()


def _array(node: Schema, location: str) -> SearchStrategy[Any]:
    items = _from_schema(node.get("items", {}), f"{location}[]")
    unique = node.get("uniqueItems", False)
    low = node.get("minItems", 0)
    return st.lists(items, min_size=low, max_size=max(low, MAX_ITEMS), unique=unique)


# Properties a generated plan leaves out: it is one file (test_plan_imports imports whole generated plans),
# not one sops encrypted (its `sops` map is sops's to write: tests/unit/test_sops_files.py), without
# charts (they run Helm for each example and have their own tests: test_plan_charts.py), and without a
# source (only a Plan object in the cluster names one; a plan file with one is refused).
NOT_GENERATED = frozenset({"#.imports", "#.sops", "#.charts", "#.source"})


def _object(node: Schema, location: str) -> SearchStrategy[Any]:
    properties: dict[str, Schema] = {
        name: field
        for name, field in node.get("properties", {}).items()
        if f"{location}.{name}" not in NOT_GENERATED
    }
    if not properties and isinstance(node.get("additionalProperties"), dict):
        keys = _PATTERNS.get(node.get("propertyNames", {}).get("pattern", ""), _TEXT)
        values = _from_schema(node["additionalProperties"], f"{location}.*")
        return st.dictionaries(keys, values, max_size=MAX_ITEMS)
    required = set(node.get("required", []))
    choices = [branch["required"][0] for branch in node.get("oneOf", []) if "required" in branch]
    fields = {name: _from_schema(field, f"{location}.{name}") for name, field in properties.items()}
    return st.builds(
        _pick_fields,
        st.fixed_dictionaries(
            {name: fields[name] for name in properties if name in required or name in choices}
        ),
        st.fixed_dictionaries(
            {}, optional={name: fields[name] for name in properties if name not in required}
        ),
        st.sampled_from(choices) if choices else st.none(),
        st.just(tuple(choices)),
        st.just(node.get("maxProperties")),
    )


def _pick_fields(
    required: dict[str, Any],
    optional: dict[str, Any],
    choice: str | None,
    choices: tuple[str, ...],
    most: int | None,
) -> dict[str, Any]:
    """The object: required fields, some optional ones, exactly one of a `oneOf` set of choices."""
    picked = {**optional, **required}
    for other in choices:
        if other != choice:
            picked.pop(other, None)
    if most is not None:
        picked = dict(list(picked.items())[:most])
    return picked


_BY_TYPE: dict[str, Callable[[Schema, str], SearchStrategy[Any]]] = {
    "string": _string,
    "integer": _integer,
    "boolean": _boolean,
    "array": _array,
    "object": _object,
}


# -- the rules beyond the schema -----------------------------------------------------------------------


def _make_valid(document: dict[str, Any], draw: DrawFn) -> None:
    metadata = document["metadata"]
    metadata["name"] = f"{metadata['name']}-plan"
    sections = (
        ("workloads", "w"),
        ("sandboxes", "s"),
        ("configMaps", "c"),
        ("secrets", "k"),
        ("volumeClaims", "v"),
    )
    for section, tag in sections:
        for index, item in enumerate(document.get(section, [])):
            item["name"] = f"{item['name']}-{tag}{index}"
    for index, manifest in enumerate(document.get("manifests", [])):
        manifest["metadata"]["name"] = f"{manifest['metadata']['name']}-m{index}"
    for index, pool in enumerate(document.get("warmPools", [])):
        pool["name"] = f"{pool['name']}-pool{index}"
    claims = [claim["name"] for claim in document.get("volumeClaims", [])]
    for workload in document.get("workloads", []):
        _valid_workload(workload, claims, draw)
    for sandbox in document.get("sandboxes", []):
        sandbox.pop("forkFrom", None)
    _valid_references(document, draw)


def _valid_toleration(toleration: dict[str, Any]) -> None:
    """What the API server accepts: a toleration with a value is Equal and has a key (kept so: the
    coverage test must meet `value`), a keyless one is Exists, Exists has no value, and
    tolerationSeconds is for NoExecute."""
    if toleration.get("value"):
        toleration.setdefault("key", "example.com/dedicated")
        toleration["key"] = toleration["key"] or "example.com/dedicated"
        toleration["operator"] = "Equal"
    if not toleration.get("key"):
        toleration["operator"] = "Exists"
    if toleration.get("operator") == "Exists":
        toleration.pop("value", None)
    if "tolerationSeconds" in toleration:
        toleration["effect"] = "NoExecute"


def _valid_workload(workload: dict[str, Any], claims: list[str], draw: DrawFn) -> None:
    asked = _kinds_asked_for(workload)
    if asked:  # else the fields only one kind takes are rarely kept
        workload["kind"] = draw(st.sampled_from(asked))
    kind = workload.get("kind") or "deployment"
    for field in workloads.own_fields():
        if field not in workloads.named(kind).fields:
            workload.pop(field, None)
    if kind == "cronjob":
        workload.setdefault("schedule", "@hourly")
    update = workload.get("updateStrategy", {})
    if update.get("type") == "OnDelete":
        update.pop("partition", None)
    for key in (
        ("maxUnavailable", "maxSurge") if kind != "daemonset" or update.get("type") == "OnDelete" else ()
    ):
        update.pop(key, None)
    if kind == "daemonset":
        update.pop("partition", None)
        if all(update.get(key, 1) in (0, "0%") for key in ("maxUnavailable", "maxSurge")):
            update["maxUnavailable"] = 1
    for toleration in workload.get("tolerations", []):
        _valid_toleration(toleration)
    if scale := workload.get("autoscale"):
        scale["max"] = max(scale["max"], scale["min"])
        if "replicas" in workload:
            workload["replicas"] = min(max(workload["replicas"], scale["min"]), scale["max"])
    strategy = workload.get("strategy", {})
    if strategy.get("type") == "Recreate":
        strategy.pop("maxSurge", None)
        strategy.pop("maxUnavailable", None)
    elif all(strategy.get(key, 1) in (0, "0%") for key in ("maxSurge", "maxUnavailable")):
        strategy["maxSurge"] = 1
    if workload.get("expose") is True:
        if kind != "deployment":
            workload["expose"] = False
        else:
            workload.setdefault("port", 8080)
    if workload.get("expose") is not True:
        workload.pop("ingress", None)
    for term in workload.get("scheduling", []):
        if term["operator"] in ("In", "NotIn"):
            term["values"] = term.get("values") or ["x"]
        else:
            term.pop("values", None)
    for index, sidecar in enumerate(workload.get("sidecars", [])):
        sidecar["name"] = f"{sidecar['name']}-side{index}"
    for index, init in enumerate(workload.get("initContainers", [])):
        init["name"] = f"{init['name']}-init{index}"
        init.pop("readinessProbe", None)
        init.pop("livenessProbe", None)
    containers = [workload, *workload.get("sidecars", []), *workload.get("initContainers", [])]
    for container in containers:
        if "successThreshold" in container.get("livenessProbe", {}):
            container["livenessProbe"]["successThreshold"] = 1
        for name, value in container.get("env", {}).items():
            if value == {}:  # an env value object names exactly one source
                container["env"][name] = {"fieldRef": "status.podIP"}
            elif "resourceFieldRef" in value and "containerName" in value["resourceFieldRef"]:
                value["resourceFieldRef"]["containerName"] = workload["name"]  # a container of the pod
    _valid_volumes(containers, claims, stateful=kind == "statefulset")


def _kinds_asked_for(workload: dict[str, Any]) -> list[str]:
    """The kinds a workload's fields ask for, one of which it becomes: a claim volume asks for a
    StatefulSet, else each field only one kind takes asks for its kind; none for a workload with an
    Ingress (an exposed Deployment's), or one that names its kind and has no claim volume."""
    if "ingress" in workload:
        return []
    volumes = [v for c in (workload, *workload.get("sidecars", [])) for v in c.get("volumes", [])]
    if any("claim" in v for v in volumes):
        return ["statefulset"]
    if "kind" in workload:
        return []
    only = {field: workloads.accepting(field) for field in workloads.own_fields()}
    return sorted({kinds[0].name for field, kinds in only.items() if field in workload and len(kinds) == 1})


def _valid_volumes(containers: list[dict[str, Any]], claims: list[str], *, stateful: bool) -> None:
    """Explicit volume names are made unique per pod (their sources differ); mount paths per container.
    Claim volumes name a declared claim, and claim templates (named) are a StatefulSet's only."""
    counter = 0
    for container in containers:
        mounts: set[str] = set()
        container["volumes"] = [
            volume
            for volume in container.get("volumes", [])
            if ("claim" not in volume or stateful) and ("persistentVolumeClaim" not in volume or claims)
        ]
        for volume in container["volumes"]:
            if "persistentVolumeClaim" in volume:
                volume["persistentVolumeClaim"] = claims[0]
            if "claim" in volume:
                volume.setdefault("name", "tpl")
            if "name" in volume:
                counter += 1
                volume["name"] = f"vol{counter}-{volume['name']}"
            while volume["mountPath"] in mounts:
                volume["mountPath"] += "/m"
            mounts.add(volume["mountPath"])


def _valid_references(document: dict[str, Any], draw: DrawFn) -> None:
    """dependsOn and forkFrom only point backwards in (workloads, then sandboxes) order: never a cycle."""
    earlier: list[str] = []
    earlier_sandboxes: list[str] = []
    for section in ("workloads", "sandboxes"):
        for item in document.get(section, []):
            if "dependsOn" in item or draw(st.booleans()):
                item["dependsOn"] = (
                    draw(st.lists(st.sampled_from(earlier), unique=True, max_size=2)) if earlier else []
                )
            if section == "sandboxes" and earlier_sandboxes and draw(st.booleans()):
                item["forkFrom"] = draw(st.sampled_from(earlier_sandboxes))
            earlier.append(item["name"])
            if section == "sandboxes":
                earlier_sandboxes.append(item["name"])


# -- loading a generated document -------------------------------------------------------------------


def write_document(document: dict[str, Any], directory: Path) -> Path:
    """Write `document` as `plan.yaml` in `directory`, with the secret files it may refer to."""
    for name, content in {**SECRET_FILES, **MANIFEST_FILES}.items():
        (directory / name).parent.mkdir(exist_ok=True)
        (directory / name).write_text(content, encoding="utf-8")
    path = directory / "plan.yaml"
    with path.open("w", encoding="utf-8") as stream:
        YAML(typ="safe", pure=True).dump(document, stream)
    return path


def load_document(document: dict[str, Any]) -> Plan:
    """The Plan the loader builds from `document` (its secrets resolved from SECRET_ENV/SECRET_FILES, and
    a `secretKeyRef` as if the cluster's Secret held `<name>/<key>`)."""
    with tempfile.TemporaryDirectory() as directory:
        path = write_document(document, Path(directory))
        return load_plans([path], environ=SECRET_ENV, secret_refs=cluster_secret).plans[0]


def cluster_secret(namespace: str | None, name: str, key: str) -> str:
    return f"{name}/{key}"


# -- where a document's properties sit in the schema ------------------------------------------------------


def schema_locations() -> set[str]:
    """Every property of the schema, named by its place: `#.workloads`, `#workload.readinessProbe`,
    `#probe.httpGet.port`, `#secretValue.valueFrom.env`."""
    schema = plan_schema()
    found = set(_properties(schema, "#"))
    for name, definition in schema["definitions"].items():
        found |= set(_properties(definition, f"#{name}"))
    return {
        each
        for each in found
        if not any(
            (base := each.partition("[]")[0]) == skip or base.startswith(f"{skip}.") for skip in NOT_GENERATED
        )
    }


def _properties(node: Schema, location: str) -> Iterator[str]:
    for branch in node.get("oneOf", []):
        yield from _properties(branch, location)
    for name, field in node.get("properties", {}).items():
        here = f"{location}.{name}"
        yield here
        if "$ref" not in field:
            yield from _properties(field, here)
            yield from _properties(field.get("items", {}), f"{here}[]")


def locations_in(document: Any) -> set[str]:
    """The schema locations of every property present in `document`."""
    return set(_walk(document, plan_schema(), "#"))


def _walk(value: Any, node: Schema, location: str) -> Iterator[str]:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        yield from _walk(value, plan_schema()["definitions"][name], f"#{name}")
        return
    if isinstance(value, list):
        for item in value:
            yield from _walk(item, node.get("items", {}), f"{location}[]")
    if not isinstance(value, dict):
        return
    branches = [branch for branch in node.get("oneOf", []) if "properties" in branch]
    properties = {
        **node.get("properties", {}),
        **{k: v for b in branches for k, v in b["properties"].items()},
    }
    for key, item in value.items():
        if key in properties:
            yield f"{location}.{key}"
            yield from _walk(item, properties[key], f"{location}.{key}")
        elif isinstance(node.get("additionalProperties"), dict):
            yield from _walk(item, node["additionalProperties"], f"{location}.*")


__all__ = [
    "SECRET_ENV",
    "SECRET_FILES",
    "load_document",
    "locations_in",
    "plan_documents",
    "schema_locations",
]

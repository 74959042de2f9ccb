"""Values with provenance (#44 item 4): a chart's values as the plan gives them (an environment over its
base, values files under `values`), each with the file, line and column that set it; what changed since
the applied generation recorded them, leaf by leaf; secret values told only as changed, recorded only as
digests under the plan's key; and how `plan` prints it in text, markdown and JSON. Expected values are
written by hand."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from planner.changeset import Change, ChangeSet, ChartChange, ValueChange
from planner.generations import Generation, Who
from planner.objects import ObjectRef
from planner.output.changes import chart_details, chart_headline, chart_objects
from planner.output.comment import to_markdown
from planner.output.plan import planned_records, to_text
from planner.plan import Plan, load_plans
from planner.plan.charted import value_path
from planner.plan.helm_engine import Capabilities
from planner.provenance import (
    AppliedCharts,
    recorded_charts,
    secret_digests,
    value_changes,
    with_chart_changes,
)
from tests.paths import REPO

DATA = Path(__file__).parent.parent / "data" / "charts"
KEY = b"k" * 32

BASE = """\
charts:
  - name: web
    chart: ../charts/web
    skipTests: true
    valuesFiles: [../values/web.yaml]
    values:
      replicaCount: 2
      image: nginx:1.27
"""
PROD = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: shop}
allowClusterScoped: true
imports: [base.yaml]
charts:
  - name: web
    values:
      replicaCount: 3
      extra: {hosts: [a.example.com, b.example.com]}
    secretValues:
      auth: {password: pw-1234}
"""
VALUES_FILE = "greeting: salut\nlabels:\n  team: shop\n"


# --- the values diff ----------------------------------------------------------------------------------


def test_nested_maps_lists_and_added_and_removed_keys_differ_leaf_by_leaf() -> None:
    before = {
        "controller": {"replicaCount": 1, "image": {"tag": "1.0"}, "old": True},
        "hosts": ["a", "b", "c"],
        "ports": [80],
        "same": {"x": [1, {"y": 2}]},
        "flag": 1,
    }
    after = {
        "controller": {"replicaCount": 3, "image": {"tag": "1.0", "pull": "Always"}},
        "hosts": ["a", "z"],
        "ports": [80, 443],
        "same": {"x": [1, {"y": 2}]},
        "flag": True,
        "new": {"k": "v"},
    }
    origins = {".controller.replicaCount": "prod.yaml:8:21", ".new": "prod.yaml:9:7", ".hosts[1]": "x:1:1"}
    assert value_changes(before, after, origins) == [
        ValueChange(path=".controller.replicaCount", before=1, after=3, origin="prod.yaml:8:21"),
        ValueChange(path=".controller.image.pull", before=None, after="Always"),
        ValueChange(path=".controller.old", before=True, after=None),
        ValueChange(path=".hosts[1]", before="b", after="z", origin="x:1:1"),
        ValueChange(path=".hosts[2]", before="c", after=None),
        ValueChange(path=".ports[1]", before=None, after=443),
        ValueChange(path=".flag", before=1, after=True),  # `true` is not `1`
        ValueChange(path=".new", before=None, after={"k": "v"}, origin="prod.yaml:9:7"),
    ]
    assert value_changes(before, before, origins) == []
    assert value_changes({"a": {"b": 1}}, {"a": 5}, {}) == [ValueChange(path=".a", before={"b": 1}, after=5)]


def test_a_value_path_quotes_a_key_that_is_not_a_plain_name() -> None:
    assert value_path("", "controller") == ".controller"
    assert value_path(".a", 0) == ".a[0]"
    assert value_path(".annotations", "example.com/x") == '.annotations["example.com/x"]'


# --- the values a plan gives, and where --------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(DATA / "web", tmp_path / "charts" / "web")
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "web.yaml").write_text(VALUES_FILE)
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "base.yaml").write_text(BASE)
    (tmp_path / "envs" / "prod.yaml").write_text(PROD)
    return tmp_path


def load(repo: Path) -> Plan:
    return load_plans([repo / "envs" / "prod.yaml"], capabilities=lambda: Capabilities()).plans[0]


def test_a_charts_values_merge_an_environment_over_its_base_with_the_file_that_set_each(repo: Path) -> None:
    (chart,) = load(repo).charts
    assert chart.values == {
        "greeting": "salut",
        "labels": {"team": "shop"},
        "replicaCount": 3,
        "image": "nginx:1.27",
        "extra": {"hosts": ["a.example.com", "b.example.com"]},
    }
    envs = repo / "envs"
    assert {path: chart.origins[path] for path in sorted(chart.origins)} == {
        ".extra": f"{envs}/prod.yaml:10:7",
        ".extra.hosts": f"{envs}/prod.yaml:10:15",
        ".extra.hosts[0]": f"{envs}/prod.yaml:10:23",
        ".extra.hosts[1]": f"{envs}/prod.yaml:10:38",
        ".greeting": f"{repo}/values/web.yaml:1:11",
        ".image": f"{envs}/base.yaml:8:14",
        ".labels": f"{repo}/values/web.yaml:2:1",
        ".labels.team": f"{repo}/values/web.yaml:3:9",
        ".replicaCount": f"{envs}/prod.yaml:9:21",
    }
    assert chart.secrets == {".auth.password": "pw-1234"}
    assert "pw-1234" not in repr(chart)


# --- what changed since the applied generation ---------------------------------------------------------


def member(kind: str, name: str, group: str = "") -> Change:
    api = f"{group}/v1" if group else "v1"
    desired = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "shop"}}
    ref = ObjectRef(group=group, kind=kind, namespace="shop", name=name)
    return Change(ref=ref, action="update", desired=desired, live=desired)


DEPLOYMENT = member("Deployment", "web", "apps")
SETTINGS = member("ConfigMap", "web-settings")
OTHER = member("ConfigMap", "not-the-charts")


CHANGESET = ChangeSet(plan="shop", namespace="shop", changes=(DEPLOYMENT, SETTINGS, OTHER))


def changes(
    plan: Plan, applied: AppliedCharts | None, changeset: ChangeSet = CHANGESET
) -> tuple[ChartChange, ...]:
    return with_chart_changes(changeset, plan, applied, KEY).charts


def test_a_values_change_names_its_origin_and_the_objects_the_chart_changed(repo: Path) -> None:
    plan = load(repo)
    recorded = recorded_charts(CHANGESET, plan, KEY)
    recorded["web"]["values"] = {**recorded["web"]["values"], "replicaCount": 1, "gone": "x"}
    recorded["web"]["version"] = "0.9.0"
    (change,) = changes(plan, AppliedCharts(charts={"web": "web-0.9.0"}, inputs=recorded))
    assert change == ChartChange(
        name="web",
        version_before="0.9.0",
        version_after="1.0.0",
        values=(
            ValueChange(path=".replicaCount", before=1, after=3, origin=f"{repo}/envs/prod.yaml:9:21"),
            ValueChange(path=".gone", before="x", after=None),
        ),
        objects=(DEPLOYMENT, SETTINGS),  # not OTHER: another entry's object
    )


def test_a_generation_records_the_charts_objects_so_a_later_delete_of_one_is_listed_under_it(
    repo: Path,
) -> None:
    plan = load(repo)
    recorded = recorded_charts(CHANGESET, plan, KEY)
    assert recorded["web"]["objects"] == ["configmap/shop/web-settings", "deployment/shop/web"]  # not OTHER
    recorded["web"]["objects"] += ["service/shop/web"]
    recorded["web"]["values"] = {**recorded["web"]["values"], "replicaCount": 1}
    gone = ObjectRef(group="", kind="Service", namespace="shop", name="web")
    deleted = Change(ref=gone, action="delete", desired=None, live={})
    unrelated = Change(ref=dataclasses.replace(gone, name="other"), action="delete", desired=None, live={})
    changeset = dataclasses.replace(CHANGESET, changes=(DEPLOYMENT, deleted, unrelated))
    (change,) = changes(plan, AppliedCharts(charts={"web": "web-1.0.0"}, inputs=recorded), changeset)
    assert [str(c.ref) for c in change.objects] == ["deployment/shop/web", "service/shop/web"]


def test_a_chart_the_plan_no_longer_has_is_listed_as_removed_with_the_deletes_of_its_objects(
    repo: Path,
) -> None:
    plan = load(repo)
    recorded = recorded_charts(CHANGESET, plan, KEY)
    recorded["api"] = {"version": "2.1.0", "values": {}, "objects": ["service/shop/api"]}
    gone = ObjectRef(group="", kind="Service", namespace="shop", name="api")
    deleted = Change(ref=gone, action="delete", desired=None, live={})
    unrelated = Change(ref=dataclasses.replace(gone, name="other"), action="delete", desired=None, live={})
    changeset = dataclasses.replace(CHANGESET, changes=(deleted, unrelated))
    applied = AppliedCharts(charts={"web": "web-1.0.0", "api": "api-2.1.0"}, inputs=recorded)
    (removed,) = changes(plan, applied, changeset)
    assert removed == ChartChange(name="api", version_before="2.1.0", version_after=None, objects=(deleted,))
    assert chart_headline(removed) == "chart/api: removed (was version 2.1.0)"
    assert chart_objects(removed) == "deletes 1 object"
    assert chart_details(removed) == []
    # A generation recorded before chart inputs were has only `<chart>-<version>`: its objects are unknown.
    (old,) = changes(
        plan,
        AppliedCharts(charts={"web": "web-1.0.0", "api": "api-2.1.0"}, inputs={"web": recorded["web"]}),
        changeset,
    )
    assert (old.version_before, old.version_after, old.recorded, old.objects) == (
        "api-2.1.0",
        None,
        False,
        (),
    )


def test_unchanged_inputs_show_no_chart_and_nothing_shows_before_the_first_apply(repo: Path) -> None:
    plan = load(repo)
    applied = AppliedCharts(charts={"web": "web-1.0.0"}, inputs=recorded_charts(CHANGESET, plan, KEY))
    assert changes(plan, applied) == ()
    assert changes(plan, None) == ()


def test_a_secret_value_is_recorded_only_as_a_keyed_digest_and_shown_only_as_changed(repo: Path) -> None:
    plan = load(repo)
    recorded = recorded_charts(CHANGESET, plan, KEY)
    assert "pw-1234" not in json.dumps(recorded)
    digest = recorded["web"]["secretDigests"][".auth.password"]
    assert digest not in (
        hashlib.sha256(b"pw-1234").hexdigest(),
        hashlib.sha256(b".auth.password\0pw-1234").hexdigest(),
    )
    assert secret_digests({".auth.password": "pw-1234"}, b"o" * 32)[".auth.password"] != digest
    assert recorded_charts(CHANGESET, plan, None)["web"].keys() == {
        "version",
        "values",
        "objects",
    }  # no digest

    recorded["web"]["secretDigests"] = secret_digests({".auth.password": "pw-0000", ".auth.old": "x"}, KEY)
    (change,) = changes(plan, AppliedCharts(charts={"web": "web-1.0.0"}, inputs=recorded))
    assert change.values == (
        ValueChange(path=".auth.old", before=None, after=None, secret=True),
        ValueChange(path=".auth.password", before=None, after=None, secret=True),
    )


def test_a_generation_that_recorded_no_values_still_shows_a_version_change_and_the_objects(
    repo: Path,
) -> None:
    plan = load(repo)
    (change,) = changes(plan, AppliedCharts(charts={"web": "web-0.9.0"}, inputs={}))
    assert (change.version_before, change.version_after, change.values, change.recorded) == (
        "0.9.0",
        "1.0.0",
        (),
        False,
    )
    assert len(change.objects) == 2
    added = changes(plan, AppliedCharts(charts={}, inputs={}))
    assert [(c.version_before, c.recorded) for c in added] == [(None, True)]


def test_a_generation_keeps_its_chart_inputs_and_an_old_record_reads_without_them() -> None:
    who = Who(user="u", host="h")
    generation = Generation(
        plan="p", namespace="n", number=2, result="converged", started="s", finished="f", who=who,
        chart_inputs={"web": {"version": "1.0.0", "values": {"a": 1}}},
    )  # fmt: skip
    document = generation.document()
    assert Generation.from_document(document).chart_inputs == {
        "web": {"version": "1.0.0", "values": {"a": 1}}
    }
    del document["chartInputs"]
    assert Generation.from_document(document).chart_inputs == {}


# --- how plan prints it ------------------------------------------------------------------------------------


def shown() -> ChangeSet:
    chart = ChartChange(
        name="web",
        version_before="1.0.0",
        version_after="1.1.0",
        values=(
            ValueChange(path=".replicaCount", before=1, after=3, origin="envs/prod.yaml:9:21"),
            ValueChange(path=".auth.password", before=None, after=None, secret=True),
        ),
        objects=(DEPLOYMENT,),
    )
    old = ChartChange(
        name="api", version_before="2.0.0", version_after="2.0.0", recorded=False, objects=(SETTINGS,)
    )
    return ChangeSet(plan="shop", namespace="shop", changes=(DEPLOYMENT, SETTINGS), charts=(chart, old))


def test_text_shows_each_charts_change_before_the_objects() -> None:
    lines = to_text(shown()).splitlines()
    assert lines[1:10] == [
        "  chart/web: version 1.0.0 → 1.1.0",
        "      values .replicaCount: 1 → 3 (from envs/prod.yaml:9:21)",
        "      secretValues .auth.password: changed (value not shown)",
        "      changes 1 object:",
        "        ~ deployment/shop/web",
        "  chart/api: values of the applied generation not recorded",
        "      changes 1 object:",
        "        ~ configmap/shop/web-settings",
        "  ~ update deployment/shop/web",
    ]


def test_markdown_lists_each_chart_with_its_values_and_objects() -> None:
    text = to_markdown([shown()])
    assert (
        "**Charts whose inputs changed:**\n\n"
        "- `chart/web: version 1.0.0 → 1.1.0`; changes 1 object: `deployment/shop/web`\n"
        "  - `values .replicaCount: 1 → 3 (from envs/prod.yaml:9:21)`\n"
        "  - `secretValues .auth.password: changed (value not shown)`\n"
        "- `chart/api: values of the applied generation not recorded`; changes 1 object: "
        "`configmap/shop/web-settings`\n"
    ) in text


def test_json_summary_lists_the_charts_masks_secret_values_and_validates() -> None:
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    records = planned_records(shown())
    for record in records:
        jsonschema.validate(record, schema)
    assert records[-1]["charts"] == [
        {
            "chart": "chart/web",
            "version": {"before": "1.0.0", "after": "1.1.0"},
            "recorded": True,
            "values": [
                {"path": ".replicaCount", "before": 1, "after": 3, "origin": "envs/prod.yaml:9:21"},
                {"path": ".auth.password", "before": "***", "after": "***", "secret": True},
            ],
            "objects": ["deployment/shop/web"],
            "message": "chart/web: version 1.0.0 → 1.1.0",
        },
        {
            "chart": "chart/api",
            "version": {"before": "2.0.0", "after": "2.0.0"},
            "recorded": False,
            "values": [],
            "objects": ["configmap/shop/web-settings"],
            "message": "chart/api: values of the applied generation not recorded",
        },
    ]


def test_a_removed_chart_prints_its_deletes_and_its_json_validates() -> None:
    gone = ObjectRef(group="", kind="Service", namespace="shop", name="api")
    deleted = Change(ref=gone, action="delete", desired=None, live={})
    removed = ChartChange(name="api", version_before="2.1.0", version_after=None, objects=(deleted,))
    changeset = ChangeSet(plan="shop", namespace="shop", changes=(deleted,), charts=(removed,))
    assert to_text(changeset).splitlines()[1:5] == [
        "  chart/api: removed (was version 2.1.0)",
        "      deletes 1 object:",
        "        - service/shop/api",
        "  - delete service/shop/api",
    ]
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    records = planned_records(changeset)
    for record in records:
        jsonschema.validate(record, schema)
    (chart,) = records[-1]["charts"]
    assert chart["version"] == {"before": "2.1.0", "after": None}
    assert chart["objects"] == ["service/shop/api"]

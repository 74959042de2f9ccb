"""The offline commands (validate, render, schema, version) run as a user runs them: a subprocess.

Exit codes and output streams are the contract (DESIGN §5), so these tests go through `python -m planner`
rather than calling click in-process.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import write_bad_plan_files
from tests.paths import REPO

PLANS = REPO / "plans"
DB_PASSWORD = "correct-horse-battery-staple"


def planner(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    nowhere = Path("/nonexistent-home")  # no ~/.kube/config, and KUBECONFIG unset: no kubeconfig at all
    env_free = {"PATH": "/usr/bin:/bin", "HOME": str(nowhere)}
    return subprocess.run(
        [sys.executable, "-m", "planner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env_free,
        check=False,
    )


def test_validate_accepts_every_example_plan() -> None:
    result = planner("validate", "plans/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [  # plans/envs/base/app.yaml is a fragment: no plan, left alone
        "plans/envs/production.yaml: plan shop-production is valid (2 workloads, 1 configMaps, 1 secrets)",
        "plans/envs/staging.yaml: plan shop-staging is valid (2 workloads, 1 configMaps, 1 secrets)",
        "plans/pod-fidelity.yaml: plan fidelity is valid (1 workloads, 1 configMaps, 1 secrets)",
        "plans/sandboxes.yaml: plan devboxes is valid (4 sandboxes, 1 warmPools)",
        "plans/stateful-app.yaml: plan notes is valid (3 workloads, 1 secrets, 1 volumeClaims, 1 manifests)",
        "plans/web-stack.yaml: plan shop is valid (2 workloads, 1 configMaps, 1 secrets)",
    ]


def test_validate_walks_subdirectories_in_path_order_leaving_other_yaml_alone(tmp_path: Path) -> None:
    (tmp_path / "plans" / "team-a").mkdir(parents=True)
    (tmp_path / "plans" / ".github").mkdir()
    for path, name in [
        ("plans/team-a/web.yaml", "web"),
        ("plans/z.yaml", "zed"),
        ("plans/.github/x.yaml", "x"),
    ]:
        (tmp_path / path).write_text(f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: {name}}}\n")
    (tmp_path / "plans" / "team-a" / "service.yaml").write_text("apiVersion: v1\nkind: Service\n")

    result = planner("validate", "plans", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "plans/team-a/web.yaml: plan web is valid (empty)",
        "plans/z.yaml: plan zed is valid (empty)",
    ]


def test_validate_counts_the_objects_and_charts_of_a_plan_made_only_of_them(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    shutil.copytree(REPO / "tests" / "data" / "charts" / "web", tmp_path / "chart")
    shutil.copytree(REPO / "tests" / "data" / "kustomize", tmp_path / "k8s")
    (tmp_path / "objects.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: listed}\n")
    head = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: NAME, namespace: NAME}\n"
    plans = {
        "manifests": "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: inline}}\n"
        "manifestFiles: [objects.yaml]\n",
        "kustomize": "kustomize:\n  - path: k8s/overlays/prod\n",
        "chart": "allowClusterScoped: true\ncharts:\n  - {name: web, chart: chart, skipTests: true}\n",
    }
    for name, body in plans.items():
        (tmp_path / f"{name}.yaml").write_text(head.replace("NAME", name) + body)
    result = planner("validate", *(f"{name}.yaml" for name in plans), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "manifests.yaml: plan manifests is valid (2 manifests)",
        "kustomize.yaml: plan kustomize is valid (4 manifests)",
        "chart.yaml: plan chart is valid (1 charts)",
    ]
    records = planner("validate", "chart.yaml", "-o", "json", cwd=tmp_path).stdout.splitlines()
    assert [(r["manifests"], r["charts"]) for r in map(json.loads, records)] == [(0, 1)]


def test_a_zero_duration_is_read_as_go_reads_it_and_refused_only_where_it_means_nothing() -> None:
    refused = planner("apply", "plans/web-stack.yaml", "--timeout", "0")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        "Error: Invalid value for '--timeout': '0': expected a duration above zero like 90s, 5m, 1h30m (a "
        "wait of 0 would fail every object not ready at once; --no-wait writes without waiting)"
    )
    accepted = planner("apply", "plans/web-stack.yaml", "--lock-timeout", "0")  # 0: exit 3 at once
    assert accepted.returncode == 1
    assert accepted.stderr.startswith("error: no cluster configured"), accepted.stderr


def test_validate_reports_every_error_in_file_order_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        "metadata: {name: shop}\n"
        "runtime: docker\n"
        "workloads:\n"
        "  - name: web\n"
        "    image: nginx\n"
        "    pullPolicy: Never\n"
        "    env: {PORT: 8080}\n"
    )
    result = planner("validate", "bad.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 3
    assert [line.split(": ")[0] for line in lines] == ["bad.yaml:4:10", "bad.yaml:8:17", "bad.yaml:9:17"]


HOSTILE_HEAD = b"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\n"
HOSTILE = [
    ("100,000 nested brackets (libyaml's composer overflowed the C stack)", b"a: " + b"[" * 100_000, "1:67"),
    ("a self-referencing anchor (a RecursionError)", HOSTILE_HEAD + b"x: &m {self: *m}\n", "4:14"),
    ("a NUL byte (ruamel's ReaderError)", HOSTILE_HEAD + b"x: a\x00\n", "4:5"),
    ("a byte that is not UTF-8", HOSTILE_HEAD + b"x: caf\xe9\n", "4:7"),
]


@pytest.mark.parametrize(("data", "where"), [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_validate_refuses_hostile_yaml_with_one_line_and_exit_1(
    tmp_path: Path, data: bytes, where: str
) -> None:
    (tmp_path / "plan.yaml").write_bytes(data)
    result = planner("validate", "plan.yaml", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"plan.yaml:{where}: ")
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_validate_refuses_a_55_mb_plan_at_once(tmp_path: Path) -> None:
    with (tmp_path / "plan.yaml").open("wb") as sparse:
        sparse.truncate(55_000_000)
    result = planner("validate", "plan.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        "plan.yaml:1:1: plan file is 55,000,000 bytes (52.5 MiB), over the limit of 8,388,608 bytes (8 MiB) "
        "per plan file: split it into several plans\n"
    )


def test_validate_reports_each_bad_file_once_and_never_blocks_on_them(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: good}\n")
    expected = write_bad_plan_files(tmp_path)

    result = subprocess.run(
        [sys.executable, "-m", "planner", "validate", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"},
        timeout=60,  # a FIFO opened for a blocking read would hang here
        check=False,
    )

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{name}:1:1: cannot read plan file: {message}" for name, message in sorted(expected.items())
    ]


def test_validate_names_the_files_of_two_plans_declaring_one_object(tmp_path: Path) -> None:
    for plan in ("a", "b", "c"):
        namespace = ", namespace: other" if plan == "c" else ""
        (tmp_path / f"{plan}.yaml").write_text(
            f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: {plan}{namespace}}}\n"
            "configMaps:\n  - {name: c, data: {x: '1'}}\n"
        )

    result = planner("validate", ".", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        'b.yaml:3:12: metadata.name: configmap/default/c is also declared by plan "a" (a.yaml): an object '
        "belongs to one plan's ApplySet, so declare it in one of them"
    ]


def test_validate_json_prints_one_object_per_plan() -> None:
    result = planner("validate", "plans/web-stack.yaml", "-o", "json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert (record["type"], record["plan"], record["workloads"], record["secrets"]) == (
        "Validated",
        "shop",
        2,
        1,
    )


def test_validate_json_prints_every_diagnostic_as_json_on_stdout_and_the_error_as_json_on_stderr(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\n"
        "workloads:\n  - name: web\n    image: nginx\n    user: nobody\n    imagee: nginx:1.27\n"
    )
    result = planner("validate", "bad.yaml", "-o", "json", cwd=tmp_path)
    assert result.returncode == 1
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [{k: v for k, v in r.items() if k != "time"} for r in records] == [
        {
            "type": "Diagnostic",
            "file": "bad.yaml",
            "line": 8,
            "column": 5,
            "path": "workloads[0].imagee",
            "message": records[0]["message"],
            "severity": "error",
        }
    ]
    assert records[0]["message"].startswith('unknown field "imagee" (did you mean "image"? ')
    text, error = result.stderr.splitlines()
    assert text.startswith("bad.yaml:8:5: workloads[0].imagee: unknown field")
    reported = json.loads(error)
    assert (reported["type"], reported["message"], reported["exit_code"]) == ("Error", text, 1)
    untimed = [{k: v for k, v in r.items() if k != "time"} for r in reported["diagnostics"]]
    assert untimed == [
        {k: v for k, v in r.items() if k != "time"} for r in records
    ]  # each stamped when printed


def test_validate_json_prints_warnings_as_diagnostics_too(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\n"
        "workloads:\n  - name: web\n    image: nginx\n    user: nobody\n"
    )
    result = planner("validate", "plan.yaml", "-o", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warning, validated = [json.loads(line) for line in result.stdout.splitlines()]
    assert (warning["type"], warning["severity"], warning["line"], warning["path"]) == (
        "Diagnostic",
        "warning",
        7,
        "workloads[0].user",
    )
    assert validated["type"] == "Validated"
    assert result.stderr.startswith("plan.yaml:7:")  # the text warning, as without -o json


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "plans/web-stack.yaml", "-o", "json"), "no cluster configured: "),
        (("start", "not-an-id", "-o", "json"), "malformed runtime ID"),
        (("plan", "--bogus", "plans/", "--output=json"), "No such option '--bogus'"),
        (("render", "plans/", "-o", "json", "--namespace"), "Option '--namespace' requires an argument"),
    ],
    ids=["a planner error", "a bad runtime ID", "an unknown flag", "a flag without its value"],
)
def test_errors_with_output_json_are_a_json_line_on_stderr_after_the_text(
    args: tuple[str, ...], message: str
) -> None:
    result = planner(*args)
    assert result.returncode == 1
    *text, last = result.stderr.splitlines()
    assert any(message in line for line in text), result.stderr
    error = json.loads(last)
    assert (error["type"], error["exit_code"]) == ("Error", 1)
    assert error["message"].startswith(message) or message in error["message"]
    assert planner(*[a for a in args if a not in ("-o", "json", "--output=json")]).stderr.count("{") == 0


def _documents(text: str) -> list[dict]:  # type: ignore[type-arg]
    return [doc for doc in YAML(typ="safe").load_all(text) if doc]


def test_render_masks_secret_values_and_hashes_by_default() -> None:
    result = planner("render", "plans/web-stack.yaml")
    assert result.returncode == 0, result.stderr
    encoded = base64.b64encode(DB_PASSWORD.encode()).decode()
    assert DB_PASSWORD not in result.stdout and encoded not in result.stdout
    secret = next(d for d in _documents(result.stdout) if d["kind"] == "Secret")
    assert secret["data"] == {"password": "***", "username": "***"}
    assert secret["metadata"]["annotations"]["planner.dev/hash"] == "***"


def test_render_show_secrets_reveals_the_resolved_file_value_without_its_newline() -> None:
    result = planner("render", "plans/web-stack.yaml", "--show-secrets")
    assert result.returncode == 0, result.stderr
    secret = next(d for d in _documents(result.stdout) if d["kind"] == "Secret")
    assert base64.b64decode(secret["data"]["password"]).decode() == DB_PASSWORD
    assert len(secret["metadata"]["annotations"]["planner.dev/hash"]) == 64


def test_render_json_is_a_kubectl_list_of_every_object() -> None:
    result = planner("render", "plans/web-stack.yaml", "-o", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    names = sorted((item["kind"], item["metadata"]["name"]) for item in document["items"])
    assert names == [
        ("ConfigMap", "web-config"),
        ("Deployment", "web"),
        ("Job", "migrate"),
        ("Secret", "db-credentials"),
        ("Service", "web-svc"),
    ]
    assert {item["metadata"]["namespace"] for item in document["items"]} == {"shop"}


def test_render_namespace_flag_places_a_plan_without_namespace(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: p}\nworkloads:\n  - {name: web, image: nginx:1}\n"
    )
    result = planner("render", "p.yaml", "-n", "team-a", "-o", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (deployment,) = json.loads(result.stdout)["items"]
    assert deployment["metadata"]["namespace"] == "team-a"
    assert deployment["metadata"]["annotations"]["planner.dev/runtime-id"] == "k8s-team-a|deployment|web"


def test_render_without_namespace_or_kubeconfig_uses_default(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: p}\nworkloads:\n  - {name: web, image: nginx:1}\n"
    )
    result = planner("render", "p.yaml", "-o", "json", cwd=tmp_path)
    assert json.loads(result.stdout)["items"][0]["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(
    "args",
    [("render",), ("validate", "--bogus", "plans/"), ("nonsense",), ("render", "plans/", "-o", "xml")],
    ids=["a missing argument", "an unknown flag", "an unknown command", "an unknown output format"],
)
def test_usage_errors_exit_1_not_2(args: tuple[str, ...]) -> None:
    result = planner(*args)
    assert result.returncode == 1
    assert "Error" in result.stderr


def test_schema_prints_the_shipped_schema() -> None:
    result = planner("schema")
    assert json.loads(result.stdout) == json.loads((REPO / "schemas" / "plan.schema.json").read_text())


def test_version_and_help() -> None:
    assert planner("version").stdout == "planner 0.1.0\n"
    assert json.loads(planner("version", "-o", "json").stdout) == {"version": "0.1.0"}
    help_result = planner("render", "--help")
    assert help_result.returncode == 0 and "--show-secrets" in help_result.stdout


def test_the_distribution_is_kube_planner_and_installs_the_planner_command() -> None:
    """`pip install planner` gets an unrelated package; ours is published as kube-planner."""
    dist = distribution("kube-planner")
    [script] = [entry for entry in dist.entry_points if entry.group == "console_scripts"]
    assert (script.name, script.value) == ("planner", "planner.cli:main")
    assert planner("version").stdout == f"planner {dist.version}\n"

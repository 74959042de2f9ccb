"""The loader turns valid plans into the model: example plans, defaults, normalisation, warnings."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

import planner.plan
from planner.errors import PlanError
from planner.plan import LoadResult, Plan, Position, Volume, load_plans
from planner.plan.durations import parse_duration
from planner.plan.secrets import secret_files
from planner.workloads.job import JobSpec
from tests.paths import PLANS

SANDBOX = "    image: x\n    rootfs: {size: 1Gi}\n    workspace: {size: 1Gi}\n"


def _only(result: LoadResult) -> Plan:
    assert len(result.plans) == 1
    return result.plans[0]


def test_the_example_plans_load_without_errors_or_warnings() -> None:
    result = load_plans([PLANS])
    # file order: plans/envs/ (the two environments over one base) sorts first
    assert [plan.name for plan in result.plans] == [
        "shop-production",
        "shop-staging",
        "fidelity",
        "devboxes",
        "notes",
        "shop",
    ]
    assert result.warnings == ()


def test_web_stack_spot_checks() -> None:
    shop = _only(load_plans([PLANS / "web-stack.yaml"]))
    migrate, web = shop.workloads
    assert (migrate.kind, migrate.spec, migrate.timeout_seconds) == (
        "job",
        JobSpec(backoff_limit=2, active_deadline_seconds=600, ttl_seconds_after_finished=3600),
        300.0,
    )
    assert (web.kind, web.replicas, web.cpu, web.user, web.timeout_seconds) == (
        "deployment",
        2,
        "0.5",
        "1000:1000",
        180.0,
    )
    assert web.depends_on == ("migrate",)
    assert web.volumes[0] == Volume(
        name="cm-web-config", source="configMap", ref="web-config", mount_path="/etc/web", read_only=True
    )
    assert dict(shop.secrets[0].data) == {"username": "shop", "password": "correct-horse-battery-staple"}
    assert (shop.runtime, shop.namespace) == ("k8s", "shop")


def test_sandboxes_spot_checks() -> None:
    devboxes = _only(load_plans([PLANS / "sandboxes.yaml"]))
    alice, bob, experiment, carol = devboxes.sandboxes
    assert (alice.state, alice.cpu, alice.runtime_class_name, alice.idle_timeout_seconds) == (
        "running",
        "2",
        "kata-qemu",
        1800.0,
    )
    assert (bob.state, experiment.fork_from, carol.rootfs.generation, carol.rootfs.storage_class) == (
        "paused",
        "alice",
        2,
        "wait",
    )
    assert alice.rootfs.generation == 1
    assert devboxes.warm_pools[0].template.idle_timeout_seconds == 900.0


def test_pod_fidelity_spot_checks() -> None:
    api = _only(load_plans([PLANS / "pod-fidelity.yaml"])).workloads[0]
    assert [c.name for c in api.init_containers] == ["init-schema", "warm-cache"]
    assert api.sidecars[0].volumes[0].name == "logs"
    assert api.readiness_probe is not None and api.readiness_probe.handler == "httpGet"
    assert api.liveness_probe is not None and api.liveness_probe.command == ("cat", "/tmp/alive")
    assert api.volumes[2].name == "secret-api-token"


def test_a_non_numeric_user_is_a_warning_and_the_load_succeeds(write_plan: Callable[..., Path]) -> None:
    path = write_plan("workloads:\n  - name: web\n    image: x\n    user: alice\n")
    result = load_plans([path])
    assert [str(warning) for warning in result.warnings] == [
        f'{path}:8:11: workloads[0].user: warning: user "alice" is not "uid" or "uid:gid" (digits): it is '
        f"kept "
        "but not mapped to runAsUser"
    ]
    assert _only(result).workloads[0].user == "alice"


DEFAULTS = [
    (
        "an empty kind is a deployment",
        'workloads:\n  - {name: web, image: x, kind: ""}\n',
        "workloads[0].kind",
        "deployment",
    ),
    (
        "a missing kind is a deployment",
        "workloads:\n  - {name: web, image: x}\n",
        "workloads[0].kind",
        "deployment",
    ),
    ("a missing runtime is k8s", "", "runtime", "k8s"),
    ("a missing namespace stays unset", "", "namespace", None),
    (
        "a numeric cpu keeps its written form",
        "workloads:\n  - {name: web, image: x, cpu: 0.50}\n",
        "workloads[0].cpu",
        "0.50",
    ),
    (
        "an integer memory becomes its string form",
        "workloads:\n  - {name: web, image: x, memory: 1024}\n",
        "workloads[0].memory",
        "1024",
    ),
    (
        "a numeric user becomes a string",
        "workloads:\n  - {name: web, image: x, user: 1000}\n",
        "workloads[0].user",
        "1000",
    ),
    ("a sandbox runs by default", "sandboxes:\n  - name: dev\n" + SANDBOX, "sandboxes[0].state", "running"),
    (
        "a sandbox uses kata-qemu by default",
        "sandboxes:\n  - name: dev\n" + SANDBOX,
        "sandboxes[0].runtime_class_name",
        "kata-qemu",
    ),
    (
        "a rootfs starts at generation 1",
        "sandboxes:\n  - name: dev\n" + SANDBOX,
        "sandboxes[0].rootfs.generation",
        1,
    ),
    (
        "a numeric size keeps its written form",
        "sandboxes:\n  - name: dev\n    image: x\n    rootfs: {size: 1e9}\n    workspace: {size: 2}\n",
        "sandboxes[0].rootfs.size",
        "1e9",
    ),
    (
        "a duration with hours and minutes",
        "workloads:\n  - {name: web, image: x, timeout: 1h30m}\n",
        "workloads[0].timeout_seconds",
        5400.0,
    ),
]


@pytest.mark.parametrize(
    ("body", "attribute", "expected"), [c[1:] for c in DEFAULTS], ids=[c[0] for c in DEFAULTS]
)
def test_defaults_and_normalisation(
    write_plan: Callable[..., Path], body: str, attribute: str, expected: object
) -> None:
    plan = _only(load_plans([write_plan(body)]))
    assert _attribute(plan, attribute) == expected


def _attribute(value: object, dotted: str) -> object:
    for part in dotted.split("."):
        name, _, index = part.partition("[")
        value = getattr(value, name)
        if index:
            value = value[int(index.rstrip("]"))]  # type: ignore[index]
    return value


def _sha10(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]


LONG_CONFIG = "d" * 63
VOLUME_NAMES = [
    ("a named volume keeps its name", "{name: data, emptyDir: {}, mountPath: /data}", "data"),
    ("a configMap volume is cm-<name>", "{configMap: web-config, mountPath: /etc/web}", "cm-web-config"),
    ("a secret volume is secret-<name>", "{secret: db, mountPath: /etc/db}", "secret-db"),
    (
        "a hostPath volume is host-<hash of the path>",
        "{hostPath: /var/log, mountPath: /logs}",
        "host-" + _sha10("/var/log"),
    ),
    (
        "an emptyDir volume is empty-<hash of the mount path>",
        "{emptyDir: {}, mountPath: /cache}",
        "empty-" + _sha10("/cache"),
    ),
    (
        "a derived name over 63 characters is cut to 52 and hashed",
        f"{{configMap: {LONG_CONFIG}, mountPath: /c}}",
        f"cm-{LONG_CONFIG}"[:52] + "-" + _sha10(f"cm-{LONG_CONFIG}"),
    ),
]


@pytest.mark.parametrize(
    ("volume", "expected"), [c[1:] for c in VOLUME_NAMES], ids=[c[0] for c in VOLUME_NAMES]
)
def test_volume_names(write_plan: Callable[..., Path], volume: str, expected: str) -> None:
    plan = _only(
        load_plans([write_plan(f"workloads:\n  - name: web\n    image: x\n    volumes: [{volume}]\n")])
    )
    assert plan.workloads[0].volumes[0].name == expected
    assert len(expected) <= 63


SECRET_FILES = [
    ("one trailing newline is stripped", b"s3cret\n", "s3cret"),
    ("one trailing CRLF is stripped", b"s3cret\r\n", "s3cret"),
    ("only one trailing newline is stripped", b"s3cret\n\n", "s3cret\n"),
    ("content without a newline is verbatim", b"  s3cret ", "  s3cret "),
    ("inner newlines are kept", b"line1\nline2\n", "line1\nline2"),
]


@pytest.mark.parametrize(
    ("content", "expected"), [c[1:] for c in SECRET_FILES], ids=[c[0] for c in SECRET_FILES]
)
def test_secret_file_values(write_plan: Callable[..., Path], content: bytes, expected: str) -> None:
    path = write_plan("secrets:\n  - name: db\n    data: {password: {valueFrom: {file: keys/db}}}\n")
    (path.parent / "keys").mkdir()
    (path.parent / "keys" / "db").write_bytes(content)
    assert dict(_only(load_plans([path])).secrets[0].data) == {"password": expected}


def test_secret_values_from_the_environment_reach_sandboxes_and_pools(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan(
        "sandboxes:\n  - name: dev\n" + SANDBOX + "    secretEnv: {TOKEN: {valueFrom: {env: TOKEN}}}\n"
        "warmPools:\n  - name: pool\n    size: 1\n"
        "    template: {image: x, rootfs: {size: 1Gi}, workspace: {size: 1Gi}, secretEnv: {T: {valueFrom: "
        "{env: TOKEN}}}}\n"
    )
    plan = _only(load_plans([path], environ={"TOKEN": "from-env"}))
    assert dict(plan.sandboxes[0].secret_env) == {"TOKEN": "from-env"}
    assert dict(plan.warm_pools[0].template.secret_env) == {"T": "from-env"}


def test_the_secret_files_a_plan_reads_are_named_as_written_inside_its_directory(
    write_plan: Callable[..., Path],
) -> None:
    path = write_plan(
        "secrets:\n  - name: db\n    data:\n"
        "      password: {valueFrom: {file: keys/db}}\n"
        "      again: {valueFrom: {file: keys/db}}\n"
        "      user: admin\n"
        "      escape: {valueFrom: {file: ../elsewhere}}\n"
        "      env: {valueFrom: {env: HOME}}\n"
        "sandboxes:\n  - name: dev\n" + SANDBOX + "    secretEnv: {TOKEN: {valueFrom: {file: keys/token}}}\n"
        "warmPools:\n  - name: pool\n    size: 1\n"
        "    template: {image: x, rootfs: {size: 1Gi}, workspace: {size: 1Gi}, secretEnv: {T: {valueFrom: "
        "{file: pool/t}}}}\n"
    )
    # Whether they exist does not matter: a missing one is watched for until it appears.
    assert secret_files(path) == (
        path.parent / "keys/db",
        path.parent / "keys/token",
        path.parent / "pool/t",
    )


def test_a_plan_that_is_not_yaml_reads_no_secret_files(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("secrets: [\n")
    assert secret_files(path) == ()


def test_a_directory_means_its_yaml_and_yml_files_sorted(write_plan: Callable[..., Path]) -> None:
    write_plan("", name="b.yml").write_text("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: bee}\n")
    write_plan("", name="a.yaml")
    write_plan("", name="notes.txt").write_text("not a plan")
    plans = load_plans([write_plan("", name="a.yaml").parent]).plans
    assert [plan.name for plan in plans] == ["shop", "bee"]


def test_a_directory_is_walked_recursively_in_path_order_for_files_that_say_they_are_plans(
    tmp_path: Path,
) -> None:
    def plan(path: Path, name: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: {name}}}\n")

    plan(tmp_path / "plans" / "b.yaml", "bee")
    plan(tmp_path / "plans" / "a" / "z.yml", "zed")
    plan(tmp_path / "plans" / ".git" / "old.yaml", "hidden")  # a dot-directory is never walked
    (tmp_path / "plans" / "a" / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    (tmp_path / "plans" / "values.yaml").write_text("replicas: 3\n")

    plans = load_plans([tmp_path / "plans"]).plans

    assert [p.name for p in plans] == ["zed", "bee"]  # a/z.yml before b.yaml: component by component
    assert [p.source.file for p in plans] == [
        str(tmp_path / "plans" / "a" / "z.yml"),
        str(tmp_path / "plans" / "b.yaml"),
    ]


def test_a_plan_with_a_misspelt_kind_in_a_directory_is_found_and_reported(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "web.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: plan\nmetadata: {name: web}\n"
    )

    with pytest.raises(PlanError) as raised:
        load_plans([tmp_path])

    assert [(d.file, d.line, d.path) for d in raised.value.diagnostics] == [
        (str(tmp_path / "sub" / "web.yaml"), 2, "kind")
    ]


def test_a_directory_without_plan_files_is_an_error_naming_the_rule(tmp_path: Path) -> None:
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")

    with pytest.raises(PlanError) as raised:
        load_plans([tmp_path])

    assert [(d.file, d.message) for d in raised.value.diagnostics] == [
        (str(tmp_path), "no plan files (*.yaml, *.yml declaring kind: Plan) under this directory")
    ]


def test_the_source_records_positions_by_path(write_plan: Callable[..., Path]) -> None:
    path = write_plan("workloads:\n  - name: web\n    image: x\n")
    source = _only(load_plans([path])).source
    assert source.file == str(path)
    assert source.positions["workloads[0]"] == Position(line=6, column=5)
    assert source.positions["workloads[0].image"] == Position(line=7, column=5)
    assert source.position("workloads[0].image.nothing") == Position(line=7, column=5)


DURATIONS = [
    ("90s", 90.0),
    ("5m", 300.0),
    ("1h30m", 5400.0),
    ("1.5h", 5400.0),
    ("500ms", 0.5),
    ("1m30s", 90.0),
]


@pytest.mark.parametrize(
    ("text", "seconds"), DURATIONS, ids=[f"{text} is {seconds} seconds" for text, seconds in DURATIONS]
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "5", "5 m", "-5m", "1d", "m5"], ids=lambda text: f"{text!r} is not a duration"
)
def test_not_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="expected a Go duration like 90s, 5m, 1h30m"):
        parse_duration(text)


def test_the_package_exports_exactly_its_public_names() -> None:
    assert sorted(planner.plan.__all__) == sorted(
        [
            "Claim",
            "ConfigMap",
            "Container",
            "LoadResult",
            "Plan",
            "Position",
            "Probe",
            "Rootfs",
            "Sandbox",
            "SandboxTemplate",
            "Scheduling",
            "Secret",
            "Source",
            "Volume",
            "WarmPool",
            "Workload",
            "load_plans",
        ]
    )


def test_yaml_1_2_plain_scalars_that_libyaml_refuses_still_load(tmp_path: Path) -> None:
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: p}\n"
        "workloads:\n  - {name: w, kind: job, image: busybox, command: [--db, postgres://db:5432/x]}\n"
    )
    (loaded,) = load_plans([plan]).plans
    assert loaded.workloads[0].command == ("--db", "postgres://db:5432/x")


def test_a_yaml_1_1_directive_does_not_turn_yes_into_a_boolean_with_either_parser(tmp_path: Path) -> None:
    header = "%YAML 1.1\n---\napiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: p}\n"
    job = "workloads:\n  - {name: w, kind: job, image: busybox, command: [echo, yes, 'on']}\n"
    libyaml_reads = tmp_path / "libyaml.yaml"
    libyaml_reads.write_text(header + job)
    only_yaml_1_2_reads = tmp_path / "ruamel.yaml"  # libyaml refuses `[x:1]`: ruamel's parser composes it
    only_yaml_1_2_reads.write_text(header.replace("name: p", "name: q") + job.replace("[echo", "[x:1, echo"))
    first, second = load_plans([libyaml_reads, only_yaml_1_2_reads]).plans
    assert first.workloads[0].command == ("echo", "yes", "on")
    assert second.workloads[0].command == ("x:1", "echo", "yes", "on")

"""A plan with imports (#42) end to end: `planner validate` reports a bad inherited value in the file
that set it, and `planner plan`/`apply` of an environment file importing a base put the merged objects
in the embedded cluster, checked through kubectl."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.e2e.conftest import Runner, write_plan

BASE = """\
configMaps:
  - name: web-config
    data: {LOG_LEVEL: info, DEBUG: "1"}
workloads:
  - name: web
    image: nginx:1.27
    replicas: 1
  - name: worker
    image: busybox:1.36
    command: [sleep, "3600"]
"""


def environment(namespace: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "imports: [../base.yaml]\n"
        "configMaps:\n  - name: web-config\n    data:\n      LOG_LEVEL: warn\n      DEBUG: !remove\n"
        "workloads:\n  - {name: web, replicas: 3}\n  - !remove {name: worker}\n"
    )


def repository(tmp_path: Path, base: str) -> Path:
    (tmp_path / ".git").mkdir()
    write_plan(tmp_path, base, name="base.yaml")
    (tmp_path / "environments").mkdir()
    return tmp_path / "environments"


def test_validate_names_the_imported_file_that_set_a_bad_value(planner: Runner, tmp_path: Path) -> None:
    directory = repository(tmp_path, BASE.replace("replicas: 1", "replicas: one"))
    plan = write_plan(directory, environment("shop"), name="prod.yaml")
    result = planner("validate", str(plan))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f'{tmp_path}/base.yaml:7:15: workloads[0].replicas: expected an integer, found string "one"' in (
        result.stdout + result.stderr
    )


def test_plan_and_apply_put_the_merged_environment_in_the_cluster(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(repository(tmp_path, BASE), environment(namespace), name="prod.yaml")
    validated = planner("validate", str(plan))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    planned = planner("plan", str(plan), "--detailed-exitcode")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert f"  + create deployment/{namespace}/web" in planned.stdout.splitlines()
    assert f"deployment/{namespace}/worker" not in planned.stdout
    applied = planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    web = kubectl(
        "get", "deployment", "web", "-n", namespace, "-o",
        "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image}",
    )  # fmt: skip
    assert web.stdout == "3 nginx:1.27", web.stdout + web.stderr
    config = kubectl("get", "configmap", "web-config", "-n", namespace, "-o", "jsonpath={.data}")
    assert config.stdout == '{"LOG_LEVEL":"warn"}', config.stdout + config.stderr
    deployments = kubectl("get", "deployments", "-n", namespace, "-o", "name")
    assert deployments.stdout.split() == ["deployment.apps/web"], deployments.stdout + deployments.stderr


def test_a_generation_records_every_input_file_and_diff_generations_names_the_one_that_changed(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(repository(tmp_path, BASE), environment(namespace), name="prod.yaml")
    first = planner("apply", str(plan), "--no-wait")
    assert first.returncode == 0, first.stdout + first.stderr
    (tmp_path / "base.yaml").write_text(BASE.replace("nginx:1.27", "nginx:1.28"))  # only the fragment
    second = planner("apply", str(plan), "--no-wait")
    assert second.returncode == 0, second.stdout + second.stderr
    shown = planner("history", str(plan), "--show", "2", "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert sorted(json.loads(shown.stdout)["inputs"]) == sorted([str(plan), str(tmp_path / "base.yaml")])
    compared = planner("diff-generations", str(plan), "1", "2")
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert compared.stdout.splitlines()[1] == f"  input changed: {tmp_path / 'base.yaml'}", compared.stdout


def test_the_example_environments_applied_side_by_side_differ_exactly_as_written(
    planner: Runner, kubectl: Runner
) -> None:
    """plans/envs/ (#42 item 4): staging and production over one base, applied together, differ in the
    cluster in exactly what each file sets (namespace, images, replicas, ingress host, autoscaler
    bounds, Secret, a ConfigMap value) and agree on what they inherit."""
    for namespace in ("shop-staging", "shop-production"):
        created = kubectl("create", "namespace", namespace)
        assert created.returncode == 0 or "AlreadyExists" in created.stderr, created.stderr
    applied = planner("apply", "plans/envs/", "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    def get(kind: str, name: str, namespace: str, jsonpath: str) -> str:
        got = kubectl("get", kind, name, "-n", namespace, "-o", f"jsonpath={jsonpath}")
        assert got.returncode == 0, got.stderr
        return got.stdout

    image = "{.spec.template.spec.containers[0].image}"
    seen = {
        namespace: (
            get("deployment", "web", namespace, image),
            get("deployment", "worker", namespace, f"{image} {{.spec.replicas}}"),
            get("ingress", "web", namespace, "{.spec.rules[0].host} {.spec.tls[*].secretName}"),
            get("hpa", "web", namespace, "{.spec.minReplicas} {.spec.maxReplicas}"),
            get("hpa", "web", namespace, "{.spec.metrics[0].resource.target.averageUtilization}"),
            get("configmap", "app-config", namespace, "{.data}"),
            get("secret", "app-credentials", namespace, "{.data.api-key}"),
        )
        for namespace in ("shop-staging", "shop-production")
    }
    assert seen["shop-staging"] == (
        "ghcr.io/acme/shop-web:1.5.0-rc.1",
        "ghcr.io/acme/shop-worker:1.5.0-rc.1 1",
        "staging.shop.example.com ",
        "1 2",
        "80",
        '{"FEATURE_CHECKOUT":"enabled","LOG_LEVEL":"debug"}',
        "c3RhZ2luZy1kZW1vLWtleQ==",  # staging-demo-key
    )
    assert seen["shop-production"] == (
        "ghcr.io/acme/shop-web:1.4.2",
        "ghcr.io/acme/shop-worker:1.4.2 3",
        "shop.example.com shop-tls",
        "3 10",
        "70",
        '{"FEATURE_CHECKOUT":"enabled","LOG_LEVEL":"info"}',
        "cHJvZHVjdGlvbi1kZW1vLWtleQ==",  # production-demo-key
    )


def test_a_base_change_shows_in_every_environment_of_one_markdown_plan_with_the_file_that_set_it(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """The pull-request flow of docs/gitops.md (#42 items 3-4): a change to the base is one
    `plan -o markdown` comment with a section per environment, and each changed value names the file,
    line and column that set it — the base for what both inherit, the environment for its own."""
    envs = tmp_path / "envs"
    shutil.copytree("plans/envs", envs)
    (tmp_path / ".git").mkdir()
    for env in ("staging", "production"):
        text = (envs / f"{env}.yaml").read_text().replace(f"shop-{env}", f"{namespace}-{env}")
        (envs / f"{env}.yaml").write_text(text)
    applied = planner("apply", str(envs), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    base = envs / "base" / "app.yaml"
    base.write_text(base.read_text().replace("memory: 64Mi", "memory: 96Mi"))
    staging = envs / "staging.yaml"
    staging.write_text(staging.read_text().replace("{min: 1, max: 2}", "{min: 1, max: 4}"))

    comment = planner("plan", str(envs), "-o", "markdown")
    assert comment.returncode == 0, comment.stdout + comment.stderr
    memory = '.spec.template.spec.containers[name=worker].resources.limits.memory: "64Mi" → "96Mi"'
    for env in ("staging", "production"):
        section = comment.stdout.split(f"{namespace}-{env}", 1)[1]
        assert f"{memory} (from {base}:35:5)" in section, comment.stdout
    assert f".spec.maxReplicas: 2 → 4 (from {staging}:22:25)" in comment.stdout, comment.stdout
    assert comment.stdout.count("→ 4 (from") == 1, comment.stdout

    planned = planner("plan", str(staging), "-o", "json")
    records = [json.loads(line) for line in planned.stdout.splitlines()]
    fields = [f for record in records if record["type"] == "Planned" for f in record.get("fields", ())]
    assert {"path": ".spec.maxReplicas", "before": 2, "after": 4, "origin": f"{staging}:22:25"} in fields


def test_a_manifest_file_is_an_input_of_the_generation_and_diff_generations_names_it(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """Nix's closure (#42 item 6) holds every file read, the manifest files too: a change to one alone
    is named as the input that changed, and a change to a Secret value in one is not (its hash would
    let the value be guessed; the generation's changes still say the Secret changed)."""
    directory = repository(tmp_path, BASE + "manifestFiles: [extra.yaml]\n")
    extra = tmp_path / "extra.yaml"
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: '1'}\n"
    secret = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: hunter2}\n"
    extra.write_text(config + secret)
    plan = write_plan(directory, environment(namespace), name="prod.yaml")
    for text in (
        config + secret,
        config.replace("'1'", "'2'") + secret,
        config.replace("'1'", "'2'") + secret.replace("hunter2", "hunter3"),
    ):
        extra.write_text(text)
        applied = planner("apply", str(plan), "--no-wait")
        assert applied.returncode == 0, applied.stdout + applied.stderr
    shown = planner("history", str(plan), "--show", "3", "-o", "json")
    assert sorted(json.loads(shown.stdout)["inputs"]) == sorted(
        [str(plan), str(tmp_path / "base.yaml"), str(extra)]
    )
    assert "hunter" not in shown.stdout
    compared = planner("diff-generations", str(plan), "1", "2")
    assert f"  input changed: {extra}" in compared.stdout.splitlines(), compared.stdout
    secret_only = planner("diff-generations", str(plan), "2", "3")
    assert "input changed" not in secret_only.stdout, secret_only.stdout
    assert "secret/" in secret_only.stdout.lower() and "hunter" not in secret_only.stdout, secret_only.stdout

"""Helm charts end to end on the embedded cluster: the hand-made chart tests/data/charts/web (a CRD and a
custom resource of it, a Deployment with a values-driven replica count, a Service, a ConfigMap that
prints `.Capabilities.KubeVersion`, a pre-install Job hook and a test hook) planned, applied in hook
order, upgraded to a new chart version that drops the Service (pruned), and rolled back to the first
version. Everything is checked through kubectl.
"""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan
from tests.paths import REPO

CHART = Path(__file__).parent.parent / "data" / "charts" / "web"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:  # Deployments ready, Jobs complete
        yield handle


def plan_text(namespace: str, version: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: charted, namespace: {namespace}}}\n"
        "allowClusterScoped: true\n"
        "charts:\n"
        f"  - {{name: web, chart: charts/web, version: {version}, values: {{replicaCount: 2}}, skipTests: true}}\n"
        "workloads:\n"
        "  - {name: client, image: 'busybox:1.36', dependsOn: [chart/web]}\n"
    )


def get_json(kubectl: Runner, *args: str) -> dict[str, object]:
    result = kubectl("get", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def upgrade_chart(chart: Path) -> None:
    """Version 1.1.0: another greeting, and no Service."""
    (chart / "Chart.yaml").write_text(
        (chart / "Chart.yaml").read_text().replace("version: 1.0.0", "version: 1.1.0")
    )
    (chart / "values.yaml").write_text((chart / "values.yaml").read_text().replace("hello", "bonjour"))
    (chart / "templates" / "service.yaml").unlink()


def test_a_chart_applies_in_hook_order_upgrades_prunes_and_rolls_back(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_chart_lifecycle(planner, kubectl, namespace, tmp_path)


def check_chart_lifecycle(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> None:
    """Plan, apply, a second plan with nothing to do, an upgrade that prunes, history and rollback (the
    real tier runs it too)."""
    shutil.copytree(CHART, tmp_path / "charts" / "web")
    plan = write_plan(tmp_path, plan_text(namespace, "1.0.0"))

    graph = planner("plan", str(plan), "--graph")
    assert graph.returncode == 0, graph.stdout + graph.stderr
    tasks = [line.split(" <- ")[0].split(" [")[0].strip() for line in graph.stdout.splitlines()]
    assert tasks.index(f"wait-ready job/{namespace}/web-migrate") < tasks.index(
        f"create deployment/{namespace}/web"
    )
    assert tasks.index(f"wait-ready deployment/{namespace}/web") < tasks.index(
        f"create deployment/{namespace}/client"
    )
    assert "web-test-connection" not in graph.stdout  # the test hook is never run

    applied = planner("apply", str(plan), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert get_json(kubectl, "deployment", "web", "-n", namespace)["spec"]["replicas"] == 2  # type: ignore[index]
    settings = get_json(kubectl, "configmap", "web-settings", "-n", namespace)["data"]
    version = json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert settings == {"greeting": "hello", "kubeVersion": version}  # .Capabilities from the cluster
    assert get_json(kubectl, "gizmo", "web", "-n", namespace)["spec"] == {"size": 2}
    job = get_json(kubectl, "job", "web-migrate", "-n", namespace)
    assert job["status"]["succeeded"] == 1  # type: ignore[index]
    assert kubectl("get", "pod", "web-test-connection", "-n", namespace).returncode != 0

    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    upgrade_chart(tmp_path / "charts" / "web")
    stale = planner("plan", str(plan))
    assert stale.returncode == 1
    assert (
        f"{plan}:6:" in stale.stderr
        and "is web 1.1.0, not the version 1.0.0 the plan expects" in stale.stderr
    )
    write_plan(tmp_path, plan_text(namespace, "1.1.0"))
    shown = planner("plan", str(plan))  # what the new chart version does, object by object
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert f"~ update configmap/{namespace}/web-settings" in shown.stdout
    assert f"- delete service/{namespace}/web" in shown.stdout
    assert '.data.greeting: "hello" → "bonjour"' in shown.stdout
    assert '.metadata.labels["helm.sh/chart"]: "web-1.0.0" → "web-1.1.0"' in shown.stdout
    upgraded = planner("apply", str(plan), "--timeout", "90s")
    assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
    assert get_json(kubectl, "configmap", "web-settings", "-n", namespace)["data"]["greeting"] == "bonjour"  # type: ignore[index]
    gone = kubectl("get", "service", "web", "-n", namespace)
    assert gone.returncode != 0 and "NotFound" in gone.stderr

    # History names each generation's chart version; rollback applies the first version's objects again.
    listed = planner("history", "charted", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    charts = [g["charts"] for g in json.loads(listed.stdout)["generations"]]
    assert charts == [{"web": "web-1.0.0"}, {"web": "web-1.1.0"}]
    table = planner("history", "charted", "-n", namespace)
    assert table.stdout.splitlines()[0].split()[-1] == "CHARTS" and "web=web-1.1.0" in table.stdout

    back = planner("rollback", "charted", "-n", namespace, "--to", "1", "--timeout", "90s")
    assert back.returncode == 0, back.stdout + back.stderr
    assert get_json(kubectl, "service", "web", "-n", namespace)["spec"]["ports"][0]["port"] == 80  # type: ignore[index]
    assert get_json(kubectl, "configmap", "web-settings", "-n", namespace)["data"]["greeting"] == "hello"  # type: ignore[index]
    after = json.loads(planner("history", "charted", "-n", namespace, "-o", "json").stdout)["generations"][-1]
    assert (after["rolledBackFrom"], after["charts"]) == (1, {"web": "web-1.0.0"})


def test_a_hook_job_deleted_on_success_is_gone_after_apply_and_not_created_again(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    chart = tmp_path / "charts" / "web"
    shutil.copytree(CHART, chart)
    job = chart / "templates" / "migrate-job.yaml"
    job.write_text(job.read_text().replace("before-hook-creation", "before-hook-creation,hook-succeeded"))
    shutil.rmtree(chart / "crds")  # the lifecycle test's plan owns the (cluster-scoped) CRD
    (chart / "templates" / "gizmo.yaml").unlink()
    plan = write_plan(tmp_path, plan_text(namespace, "1.0.0"))

    graph = planner("plan", str(plan), "--graph")
    assert graph.returncode == 0, graph.stdout + graph.stderr
    assert (
        f"delete-hook job/{namespace}/web-migrate <- wait-ready job/{namespace}/web-migrate" in graph.stdout
    )

    applied = planner("apply", str(plan), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    gone = kubectl("get", "job", "web-migrate", "-n", namespace)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    assert get_json(kubectl, "deployment", "web", "-n", namespace)["spec"]["replicas"] == 2  # type: ignore[index]
    assert get_json(kubectl, "configmap", "web-settings", "-n", namespace)["data"]["greeting"] == "hello"  # type: ignore[index]

    again = planner("plan", str(plan), "--detailed-exitcode")  # its run is recorded: no drift to re-create
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already ran" in again.stdout


def test_another_hook_deleted_on_success_is_gone_after_its_phases_job_ran_and_comes_back_with_a_new_run(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_other_hook_deleted(planner, kubectl, namespace, tmp_path)


def check_other_hook_deleted(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> None:
    """A pre-install ServiceAccount hook with `hook-succeeded`, which the phase's Job runs as: gone once
    the Job ran, not created again by a plan with nothing new, created (and deleted) again when the Job
    runs again; a ConfigMap hook with `hook-failed` only is kept (the real tier runs it too)."""
    chart = tmp_path / "charts" / "web"
    shutil.copytree(CHART, chart)
    shutil.rmtree(chart / "crds")  # the lifecycle test's plan owns the (cluster-scoped) CRD
    (chart / "templates" / "gizmo.yaml").unlink()
    (chart / "templates" / "migrator.yaml").write_text(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: migrator\n  annotations:\n"
        '    "helm.sh/hook": pre-install,pre-upgrade\n    "helm.sh/hook-weight": "-5"\n'
        '    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded\n'
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: migration-notes\n  annotations:\n"
        '    "helm.sh/hook": pre-install\n    "helm.sh/hook-delete-policy": hook-failed\n'
        "data: {kept: 'yes'}\n"
    )
    job = chart / "templates" / "migrate-job.yaml"
    job.write_text(
        job.read_text().replace(
            "      restartPolicy: Never", "      serviceAccountName: migrator\n      restartPolicy: Never"
        )
    )
    plan = write_plan(tmp_path, plan_text(namespace, "1.0.0"))

    graph = planner("plan", str(plan), "--graph")
    assert graph.returncode == 0, graph.stdout + graph.stderr
    assert (
        f"delete-hook serviceaccount/{namespace}/migrator <- record-run serviceaccount/{namespace}/migrator, "
        f"wait-ready job/{namespace}/web-migrate" in graph.stdout
    )

    applied = planner("apply", str(plan), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    gone = kubectl("get", "serviceaccount", "migrator", "-n", namespace)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    ran = get_json(kubectl, "job", "web-migrate", "-n", namespace)
    assert ran["spec"]["template"]["spec"]["serviceAccountName"] == "migrator"  # type: ignore[index]
    assert get_json(kubectl, "configmap", "migration-notes", "-n", namespace)["data"] == {"kept": "yes"}

    again = planner("plan", str(plan), "--detailed-exitcode")  # its run is recorded: nothing to re-create
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already ran" in again.stdout

    # The phase's Job changes, so it runs again, and the account it runs as is created (and deleted) again.
    job.write_text(job.read_text().replace("busybox:1.36", "busybox:1.37"))
    rerun = planner("apply", str(plan), "--timeout", "90s")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"serviceaccount/{namespace}/migrator: created" in rerun.stdout
    assert (
        f"serviceaccount/{namespace}/migrator: hook deleted (helm.sh/hook-delete-policy hook-succeeded)"
        in (rerun.stdout)
    )
    assert kubectl("get", "serviceaccount", "migrator", "-n", namespace).returncode != 0
    image = get_json(kubectl, "job", "web-migrate", "-n", namespace)["spec"]["template"]["spec"][
        "containers"
    ][0]  # type: ignore[index]
    assert image["image"] == "busybox:1.37"  # type: ignore[index]


def test_a_charts_secret_values_reach_the_chart_but_no_output_or_recorded_plan(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    chart = tmp_path / "charts" / "vault"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vault\nversion: 0.1.0\n")
    (chart / "templates" / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: {{ .Release.Name }}-auth}\n"
        "stringData: {password: {{ .Values.auth.password | quote }}, token: {{ .Values.auth.token | quote }}}\n"
    )
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: vaulted, namespace: {namespace}}}\n"
        "charts:\n"
        "  - name: db\n"
        "    chart: charts/vault\n"
        "    values: {auth: {user: app}}\n"
        "    secretValues:\n"
        "      auth: {password: literal-pw-1234, token: {valueFrom: {env: DB_TOKEN}}}\n",
    )
    env = {"DB_TOKEN": "env-token-5678"}
    outputs = [
        planner("plan", str(plan), env=env),
        planner("apply", str(plan), "--timeout", "60s", env=env),
        planner("history", "vaulted", "-n", namespace, "--show", "1"),
        planner("history", "vaulted", "-n", namespace, "--show", "1", "-o", "json"),
        planner("history", "vaulted", "-n", namespace, "-o", "json"),
    ]
    for result in outputs:
        assert result.returncode == 0, result.stdout + result.stderr
        for secret in ("literal-pw-1234", "env-token-5678"):
            assert secret not in result.stdout + result.stderr
    assert 'password: "***"' in outputs[2].stdout and "{valueFrom: {env: DB_TOKEN}}" in outputs[2].stdout
    data = get_json(kubectl, "secret", "db-auth", "-n", namespace)["data"]
    decoded = {key: base64.b64decode(value).decode() for key, value in data.items()}  # type: ignore[union-attr]
    assert decoded == {"password": "literal-pw-1234", "token": "env-token-5678"}


ENVIRONMENT_BASE = """\
charts:
  - name: web
    chart: ../charts/web
    version: 1.0.0
    skipTests: true
    valuesFiles: [../values/web.yaml]
    values: {replicaCount: 1}
"""


RENDERED_WITHOUT_CRD = [
    ("configmap", "web-settings"),
    ("deployment", "web"),
    ("job", "web-migrate"),
    ("service", "web"),
]


def copy_without_crd(destination: Path) -> None:
    """The web chart without its CRD and custom resource: a cluster-scoped CRD is one per cluster, and
    other tests of the module's cluster apply it from plans of their own."""
    shutil.copytree(CHART, destination)
    shutil.rmtree(destination / "crds")
    (destination / "templates" / "gizmo.yaml").unlink()


def environment_plan(namespace: str, replicas: int) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: valued, namespace: {namespace}}}\n"
        "imports: [base.yaml]\n"
        "charts:\n"
        "  - name: web\n"
        "    values:\n"
        f"      replicaCount: {replicas}\n"
        "    secretValues:\n"
        "      auth: {password: {valueFrom: {env: WEB_PASSWORD}}}\n"
    )


def recorded_generation(kubectl: Runner, namespace: str, name: str) -> dict[str, Any]:
    """A generation record as the cluster holds it, decoded by hand (base64 of gzip of JSON)."""
    record = get_json(kubectl, "secret", name, "-n", namespace)
    encoded = record["data"]["generation"]  # type: ignore[index]
    document: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(encoded)))
    return document


def test_a_chart_value_changed_in_an_environment_file_shows_in_plan_with_its_origin_and_objects(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_chart_values(planner, kubectl, namespace, tmp_path)


def check_chart_values(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path) -> None:
    """Apply, then change a value in an environment file, one in a values file and a secret value: `plan`
    in its three formats shows each with its origin (the secret only as changed) and the chart's changed
    objects (the real tier runs it too)."""
    (tmp_path / ".git").mkdir()
    copy_without_crd(tmp_path / "charts" / "web")
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "web.yaml").write_text("greeting: hello\n")
    (tmp_path / "envs").mkdir()
    write_plan(tmp_path / "envs", ENVIRONMENT_BASE, name="base.yaml")
    write_plan(tmp_path / "envs", environment_plan(namespace, 1), name="prod.yaml")
    first = {"WEB_PASSWORD": "first-pw-1234"}
    applied = planner("apply", "envs/prod.yaml", "--timeout", "60s", cwd=tmp_path, env=first)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    record = recorded_generation(kubectl, namespace, "planner.valued.g1")
    assert record["chartInputs"]["web"]["version"] == "1.0.0"
    assert record["chartInputs"]["web"]["values"] == {"greeting": "hello", "replicaCount": 1}
    assert list(record["chartInputs"]["web"]["secretDigests"]) == [".auth.password"]
    assert "first-pw-1234" not in json.dumps(record)
    shown = planner("history", "valued", "-n", namespace, "--show", "1", "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert json.loads(shown.stdout)["chartInputs"]["web"] == {
        "version": "1.0.0",
        "values": {"greeting": "hello", "replicaCount": 1},
        "objects": [f"{kind}/{namespace}/{name}" for kind, name in RENDERED_WITHOUT_CRD],
    }  # the digests stay in the record: printed, they could only end up in a log

    write_plan(tmp_path / "envs", environment_plan(namespace, 3), name="prod.yaml")
    (tmp_path / "values" / "web.yaml").write_text("greeting: salut\n")
    second = {"WEB_PASSWORD": "second-pw-5678"}
    text, markdown, lines = (
        planner("plan", "envs/prod.yaml", *output, cwd=tmp_path, env=second)
        for output in ((), ("-o", "markdown"), ("-o", "json"))
    )
    for result in (text, markdown, lines):
        assert result.returncode == 0, result.stdout + result.stderr
        assert "first-pw-1234" not in result.stdout + result.stderr
        assert "second-pw-5678" not in result.stdout + result.stderr
    greeting = 'values .greeting: "hello" → "salut" (from values/web.yaml:1:11)'
    replicas = "values .replicaCount: 1 → 3 (from envs/prod.yaml:8:21)"
    secret = "secretValues .auth.password: changed (value not shown)"
    changed = [f"configmap/{namespace}/web-settings", f"deployment/{namespace}/web"]
    assert (
        "  chart/web: values changed\n"
        f"      {greeting}\n      {replicas}\n      {secret}\n"
        "      changes 2 objects:\n" + "".join(f"        ~ {ref}\n" for ref in changed)
    ) in text.stdout
    assert (
        f"- `chart/web: values changed`; changes 2 objects: {', '.join(f'`{ref}`' for ref in changed)}\n"
        f"  - `{greeting}`\n  - `{replicas}`\n  - `{secret}`\n"
    ) in markdown.stdout
    schema = json.loads((REPO / "schemas" / "plan-output.schema.json").read_text())
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    for each in records:
        jsonschema.validate(each, schema)
    (chart,) = records[-1]["charts"]
    assert chart["values"] == [
        {"path": ".greeting", "before": "hello", "after": "salut", "origin": "values/web.yaml:1:11"},
        {"path": ".replicaCount", "before": 1, "after": 3, "origin": "envs/prod.yaml:8:21"},
        {"path": ".auth.password", "before": "***", "after": "***", "secret": True},
    ]
    assert chart["objects"] == changed
    deployment = get_json(kubectl, "deployment", "web", "-n", namespace)
    assert deployment["spec"]["replicas"] == 1  # type: ignore[index]  # plan wrote nothing


def applied_chart_plan(planner: Runner, namespace: str, tmp_path: Path) -> Path:
    """The chart (its CRD left out) at 1.0.0 in a plan file, applied."""
    copy_without_crd(tmp_path / "charts" / "web")
    plan = write_plan(tmp_path, plan_text(namespace, "1.0.0"))
    applied = planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    return plan


def test_a_generation_recorded_without_chart_values_still_shows_the_version_change_and_its_objects(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = applied_chart_plan(planner, namespace, tmp_path)
    # As an earlier planner recorded it: no `chartInputs` (written back through kubectl, by hand).
    record = get_json(kubectl, "secret", "planner.charted.g1", "-n", namespace)
    document = recorded_generation(kubectl, namespace, "planner.charted.g1")
    del document["chartInputs"]
    packed = gzip.compress(json.dumps(document).encode(), mtime=0)
    record["data"] = {"generation": base64.b64encode(packed).decode()}
    replaced = kubectl("replace", "-f", "-", stdin=json.dumps(record))
    assert replaced.returncode == 0, replaced.stderr

    upgrade_chart(tmp_path / "charts" / "web")
    write_plan(tmp_path, plan_text(namespace, "1.1.0"))
    text = planner("plan", str(plan))
    assert text.returncode == 0, text.stdout + text.stderr
    lines = text.stdout.splitlines()
    at = lines.index("  chart/web: version 1.0.0 → 1.1.0")
    assert lines[at + 1 : at + 5] == [
        "      values of the applied generation not recorded",
        "      changes 2 objects:",
        f"        ~ configmap/{namespace}/web-settings",
        f"        ~ deployment/{namespace}/web",
    ]  # the Service it prunes is not known as the chart's: that generation recorded no chart objects
    assert f"  - delete service/{namespace}/web (no longer in the plan)" in lines


def test_a_chart_removed_from_the_plan_shows_as_removed_with_the_objects_it_deletes(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = applied_chart_plan(planner, namespace, tmp_path)
    write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: charted, namespace: {namespace}}}\n"
        "workloads:\n  - {name: client, image: 'busybox:1.36'}\n",
    )
    shown = planner("plan", str(plan))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    gone = [f"{kind}/{namespace}/{name}" for kind, name in RENDERED_WITHOUT_CRD]
    assert (
        "  chart/web: removed (was version 1.0.0)\n"
        f"      deletes {len(gone)} objects:\n" + "".join(f"        - {ref}\n" for ref in gone)
    ) in shown.stdout
    assert get_json(kubectl, "deployment", "web", "-n", namespace)  # plan wrote nothing

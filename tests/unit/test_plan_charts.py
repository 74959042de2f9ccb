"""Helm charts in a plan: Helm's engine renders three public charts exactly as the real `helm template`
did (tests/data/charts/public, with their licences), and the hand-made chart tests/data/charts/web
loads into raw manifests with hooks as dependency edges, values from the plan and values files,
`.Capabilities` as given, its release namespace, and every bad entry a plan error at the plan file's
line and column. Expected values are written by hand."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.errors import PlanError
from planner.objects import ANNOTATION_RUN_KEY
from planner.plan import Plan, load_plans
from planner.plan.charted import split_rendered
from planner.plan.helm_engine import Capabilities, RenderedChart, render_chart
from planner.plan.load import input_files, load_plan_object
from planner.plan.model import ChartRelease
from planner.plan.oci_registry import Reference, parse_reference
from planner.plan.raw_manifests import DEPENDS_ON

DATA = Path(__file__).parent.parent / "data" / "charts"
HEAD = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\nallowClusterScoped: true\n"
HELM_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(DATA / "web", tmp_path / "charts" / "web")
    return tmp_path


def load(directory: Path, text: str, capabilities: Capabilities | None = None) -> Plan:
    (directory / "plan.yaml").write_text(HEAD + text)
    found = load_plans([directory / "plan.yaml"], capabilities=lambda: capabilities or Capabilities())
    return found.plans[0]


def errors(directory: Path, text: str) -> list[str]:
    with pytest.raises(PlanError) as raised:
        load(directory, text)
    return [str(d).replace(f"{directory}/", "") for d in raised.value.diagnostics]


def annotations(plan: Plan, handle: str) -> dict[str, Any]:
    found: dict[str, Any] = plan.manifests_by_handle[handle].object["metadata"].get("annotations") or {}
    return found


# --- fidelity: Helm's engine against the real `helm template` -------------------------------------------


def helm_template_documents(text: str) -> list[tuple[str, str]]:
    """(file, document) of `helm template` output: its `# Source:` line and the document after it; a
    document of comments only (no object) is left out, as it is no object to apply."""
    found = []
    for piece in HELM_SEPARATOR.split(text):
        source, _, document = piece.partition("\n")
        if piece.strip() and YAML(typ="safe").load(document) is not None:
            found.append((source.removeprefix("# Source: "), document.strip()))
    return sorted(found)


@pytest.mark.parametrize(
    ("chart", "values"),
    [("ingress-nginx", {}), ("cert-manager", {"crds": {"enabled": True}}), ("kube-state-metrics", {})],
    ids=["a chart with hooks", "a chart with CRDs", "a plain chart with helpers"],
)
def test_helms_engine_renders_public_charts_byte_for_byte_as_helm_template_did(
    chart: str, values: dict[str, Any]
) -> None:
    public = DATA / "public"
    rendered = render_chart(
        public / chart,
        release="fidelity",
        namespace="fidelity",
        values=values,
        capabilities=Capabilities(kube_version="v1.28.7"),
    )
    assert isinstance(rendered, RenderedChart), rendered
    ours = sorted((source, document) for source, document, _ in split_rendered(rendered, include_crds=True))
    assert ours == helm_template_documents((public / f"{chart}.helm-template.yaml").read_text())


def test_capabilities_are_the_clusters_as_helm_template_kube_version_and_api_versions_give_them(
    tmp_path: Path,
) -> None:
    chart = tmp_path / "probe"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: probe\nversion: 0.1.0\n")
    (chart / "templates" / "caps.yaml").write_text(
        "kind: ConfigMap\napiVersion: v1\nmetadata: {name: caps}\n"
        'data: {kube: "{{ .Capabilities.KubeVersion.Version }}", '
        'widget: "{{ .Capabilities.APIVersions.Has "example.com/v1/Widget" }}"}\n'
    )
    given = Capabilities(kube_version="v1.28.7", api_versions=("example.com/v1", "example.com/v1/Widget"))
    rendered = render_chart(chart, release="r", namespace="n", values={}, capabilities=given)
    assert isinstance(rendered, RenderedChart)
    [(_, _, caps)] = split_rendered(rendered, include_crds=True)
    assert caps["data"] == {"kube": "v1.28.7", "widget": "true"}


# --- a chart in a plan -------------------------------------------------------------------------------------


def test_a_charts_objects_join_the_plan_with_hooks_as_edges_and_its_tests_left_out(repo: Path) -> None:
    plan = load(
        repo,
        "charts:\n  - {name: web, chart: charts/web, version: 1.0.0, values: {replicaCount: 3}, skipTests: true}\n",
        Capabilities(kube_version="v1.28.7"),
    )
    assert [raw.handle for raw in plan.manifests] == [
        "CustomResourceDefinition/gizmos.charts.example.com",
        "ConfigMap/web-settings",
        "Deployment/web",
        "Gizmo/web",
        "Job/web-migrate",
        "Service/web",
    ]
    assert {raw.origin for raw in plan.manifests} == {"chart/web"}
    assert plan.charts == (ChartRelease(name="web", chart="charts/web", chart_name="web", version="1.0.0"),)
    # The pre-install Job goes before the chart's other objects; the crds/ CRD before the hooks too.
    for handle in ("ConfigMap/web-settings", "Deployment/web", "Gizmo/web", "Service/web"):
        assert annotations(plan, handle)[DEPENDS_ON] == "Job/web-migrate"
    assert DEPENDS_ON not in annotations(plan, "Job/web-migrate")
    assert DEPENDS_ON not in annotations(plan, "CustomResourceDefinition/gizmos.charts.example.com")
    assert plan.manifests_by_handle["Deployment/web"].object["spec"]["replicas"] == 3
    data = plan.manifests_by_handle["ConfigMap/web-settings"].object["data"]
    assert data == {"greeting": "hello", "kubeVersion": "v1.28.7"}
    assert plan.manifests[0].file == "charts/web (chart web: Helm's output)"


def test_post_hooks_follow_every_other_object_and_weights_order_hooks_of_a_phase(repo: Path) -> None:
    templates = repo / "charts" / "web" / "templates"
    (templates / "tests").joinpath("connection.yaml").unlink()
    for name, hook, weight in (("first", "pre-install", -5), ("notify", "post-install,post-upgrade", 0)):
        (templates / f"{name}.yaml").write_text(
            f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n"
            f'    "helm.sh/hook": {hook}\n    "helm.sh/hook-weight": "{weight}"\n'
        )
    plan = load(repo, "charts:\n  - {name: web, chart: charts/web}\n")
    assert annotations(plan, "Job/web-migrate")[DEPENDS_ON] == "ConfigMap/first"  # weight -5 before -1
    assert annotations(plan, "Service/web")[DEPENDS_ON] == "ConfigMap/first,Job/web-migrate"
    assert annotations(plan, "ConfigMap/notify")[DEPENDS_ON] == (
        "ConfigMap/first,Job/web-migrate,ConfigMap/web-settings,Deployment/web,Gizmo/web,Service/web"
    )


def test_test_hooks_are_left_out_with_a_warning_unless_skip_tests(repo: Path) -> None:
    (repo / "plan.yaml").write_text(HEAD + "charts:\n  - {name: web, chart: charts/web}\n")
    loaded = load_plans([repo / "plan.yaml"])
    assert "Pod/web-test-connection" not in loaded.plans[0].manifests_by_handle
    assert [str(w).replace(f"{repo}/", "") for w in loaded.warnings] == [
        "plan.yaml:6:12: charts[0].name: warning: chart 'web': its test hooks (Pod/web-test-connection) are "
        "left out: planner never runs them (`helm test` does); `skipTests: true` says so quietly"
    ]


def test_values_files_merge_in_order_under_the_plans_values_and_a_tgz_chart_loads(repo: Path) -> None:
    (repo / "values").mkdir()
    (repo / "values" / "base.yaml").write_text("greeting: hi\nreplicaCount: 4\n")
    (repo / "values" / "prod.yaml").write_text("greeting: salut\n")
    with tarfile.open(repo / "charts" / "web-1.0.0.tgz", "w:gz") as archive:
        archive.add(repo / "charts" / "web", arcname="web")
    plan = load(
        repo,
        "charts:\n  - name: web\n    chart: charts/web-1.0.0.tgz\n    skipTests: true\n"
        "    valuesFiles: [values/base.yaml, values/prod.yaml]\n    values: {replicaCount: 5}\n",
    )
    assert plan.manifests_by_handle["ConfigMap/web-settings"].object["data"]["greeting"] == "salut"
    assert plan.manifests_by_handle["Deployment/web"].object["spec"]["replicas"] == 5
    names = [str(path.relative_to(repo)) for path in input_files(repo / "plan.yaml")]
    assert names == ["charts/web-1.0.0.tgz", "values/base.yaml", "values/prod.yaml"]


def test_an_environment_merging_its_chart_over_the_bases_reads_each_path_beside_the_file_that_wrote_it(
    repo: Path,
) -> None:
    """The base names the chart (relative to the base), the environment in a folder of its own adds a
    values file (relative to itself) and its values: each path is read beside the file it is written in."""
    (repo / "base.yaml").write_text("charts:\n  - name: web\n    chart: charts/web\n    skipTests: true\n")
    (repo / "envs").mkdir()
    (repo / "envs" / "prod-values.yaml").write_text("greeting: salut\n")
    (repo / "envs" / "prod.yaml").write_text(
        HEAD + "imports: [../base.yaml]\ncharts:\n  - name: web\n    valuesFiles: [prod-values.yaml]\n"
        "    values: {replicaCount: 2}\n"
    )
    plan = load_plans([repo / "envs" / "prod.yaml"], capabilities=Capabilities).plans[0]
    assert plan.manifests_by_handle["Deployment/web"].object["spec"]["replicas"] == 2
    assert plan.manifests_by_handle["ConfigMap/web-settings"].object["data"]["greeting"] == "salut"
    names = [str(path.relative_to(repo)) for path in input_files(repo / "envs" / "prod.yaml")]
    assert "envs/prod-values.yaml" in names and "charts/web/Chart.yaml" in names


def test_a_release_namespace_places_the_charts_namespaced_objects_only(repo: Path) -> None:
    plan = load(repo, "charts:\n  - {name: web, chart: charts/web, namespace: edge, skipTests: true}\n")
    namespaces = {raw.handle: raw.namespace for raw in plan.manifests}
    assert namespaces == {
        "CustomResourceDefinition/gizmos.charts.example.com": None,
        "ConfigMap/web-settings": "edge",
        "Deployment/web": "edge",
        "Gizmo/web": "edge",  # the chart's own CRD says it is namespaced
        "Job/web-migrate": "edge",
        "Service/web": "edge",
    }


def test_a_chart_in_a_plan_without_a_namespace_must_name_its_own(repo: Path) -> None:
    (repo / "plan.yaml").write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\nallowClusterScoped: true\n"
        "charts:\n  - {name: web, chart: charts/web, skipTests: true}\n"
        "  - {name: api, chart: charts/web, skipTests: true, namespace: api}\n"
    )
    with pytest.raises(PlanError) as raised:
        load_plans([repo / "plan.yaml"])
    assert [str(d).replace(f"{repo}/", "") for d in raised.value.diagnostics] == [
        "plan.yaml:6:12: charts[0].name: chart 'web' needs a namespace (its .Release.Namespace): set "
        "`namespace` on it, or the plan's metadata.namespace"
    ]


def test_a_workload_may_depend_on_a_chart_but_not_on_one_the_plan_lacks(repo: Path) -> None:
    chart = "charts:\n  - {name: web, chart: charts/web, skipTests: true}\n"
    plan = load(
        repo, chart + "workloads:\n  - {name: client, image: 'busybox:1.36', dependsOn: [chart/web]}\n"
    )
    assert plan.workloads[0].depends_on == ("chart/web",)
    found = errors(
        repo, chart + "workloads:\n  - {name: client, image: 'busybox:1.36', dependsOn: [chart/api]}\n"
    )
    assert len(found) == 1 and found[0].startswith(
        'plan.yaml:8:55: workloads[0].dependsOn[0]: unknown dependsOn target "chart/api"'
    )


def test_a_chart_that_fails_to_render_is_an_error_at_its_entry_with_helms_message(repo: Path) -> None:
    template = repo / "charts" / "web" / "templates" / "deployment.yaml"
    template.write_text(
        template.read_text().replace(
            "{{ .Values.image }}", '{{ required "image is required" .Values.image }}'
        )
    )
    found = errors(repo, "charts:\n  - name: web\n    chart: charts/web\n    values: {image: null}\n")
    assert found == [
        "plan.yaml:7:12: charts[0].chart: Helm could not render chart 'web': execution error at "
        "(web/templates/deployment.yaml:19:20): image is required"
    ]


def test_bad_chart_entries_are_errors_at_their_fields(repo: Path) -> None:
    found = errors(
        repo,
        "charts:\n"
        "  - {name: a, chart: charts/web, version: 2.0.0}\n"
        "  - {name: b, chart: ../elsewhere}\n"
        "  - {name: c, chart: charts/none}\n"
        "  - {name: d, chart: web, repo: 'https://charts.example.com'}\n"
        "  - {name: e, chart: charts/web, valuesFiles: [missing.yaml]}\n"
        "  - {name: e, chart: charts/web}\n",
    )
    assert found == [
        "plan.yaml:6:43: charts[0].version: chart 'a' is web 1.0.0, not the version 2.0.0 the plan expects: "
        "change `version` to upgrade (or downgrade) it",
        f"plan.yaml:7:22: charts[1].chart: '../elsewhere' leads outside the repository {repo} (the nearest "
        "directory above the plan file that holds .git): refused; move what it names inside that directory",
        "plan.yaml:8:22: charts[2].chart: no such chart: 'charts/none' (relative to the plan file's directory)",
        "plan.yaml:9:5: charts[3]: a chart from a repository needs its `version`: pin the one to apply",
        "plan.yaml:10:48: charts[4].valuesFiles[0]: no such values file: 'missing.yaml' (relative to the "
        "plan file's directory)",
        "plan.yaml:11:12: charts[5].name: a second chart named 'e': release names are unique in a plan",
    ]


@pytest.mark.parametrize(
    ("annotations_text", "message"),
    [
        (
            '"helm.sh/hook": pre-delete',
            "ConfigMap/extra is a pre-delete hook, which planner cannot run: it runs only the "
            "pre/post-install and pre/post-upgrade hooks, as part of an apply",
        ),
        (
            '"helm.sh/hook": post-install\n    "helm.sh/hook-delete-policy": hook-never',
            "ConfigMap/extra has helm.sh/hook-delete-policy hook-never, which planner does not know: it "
            "honours before-hook-creation, hook-failed, hook-succeeded",
        ),
    ],
    ids=["a delete hook", "a delete policy Helm does not have"],
)
def test_what_planner_cannot_honour_of_a_hook_is_a_plan_error_naming_it(
    repo: Path, annotations_text: str, message: str
) -> None:
    (repo / "charts" / "web" / "templates" / "extra.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  annotations:\n    {annotations_text}\n"
    )
    assert errors(repo, "charts:\n  - {name: web, chart: charts/web}\n") == [
        f"plan.yaml:6:24: charts[0].chart: chart 'web': {message}"
    ]


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ("metadata: oops\n", "metadata"),
        ("metadata:\n  name: odd\n  annotations: [a, b]\n", "annotations"),
        ("metadata:\n  name: odd\n  labels: oops\n", "labels"),
    ],
)
def test_a_rendered_object_whose_metadata_is_no_mapping_is_a_plan_error_not_a_crash(
    repo: Path, metadata: str, field: str
) -> None:
    """The chart's hooks put edges and run-keys in every object's annotations: one that cannot hold them
    is named, before anything is written."""
    (repo / "charts" / "web" / "templates" / "odd.yaml").write_text(
        f"apiVersion: v1\nkind: ConfigMap\n{metadata}"
    )
    assert errors(repo, "charts:\n  - {name: web, chart: charts/web}\n") == [
        f"plan.yaml:6:24: charts[0].chart: chart 'web': web/templates/odd.yaml renders a ConfigMap whose "
        f"{field} is not a mapping"
    ]


def test_a_plan_object_cannot_name_charts() -> None:
    obj = {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": "shop", "namespace": "shop"},
        "charts": [{"name": "web", "chart": "charts/web"}],
    }
    with pytest.raises(PlanError) as raised:
        load_plan_object(obj, secret_refs=lambda *_: "")
    assert [d.message for d in raised.value.diagnostics] == [
        "a Plan object cannot name charts (the cluster has no repository to read them from): "
        "render them into `manifests` instead"
    ]


def test_a_pod_hook_deleted_after_its_run_is_a_plan_error_naming_it(repo: Path) -> None:
    (repo / "charts" / "web" / "templates" / "probe.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: probe\n  annotations:\n"
        '    "helm.sh/hook": pre-install\n    "helm.sh/hook-delete-policy": hook-succeeded\n'
        "spec: {containers: [{name: probe, image: 'busybox:1.36'}]}\n"
    )
    assert errors(repo, "charts:\n  - {name: web, chart: charts/web, skipTests: true}\n") == [
        "plan.yaml:6:24: charts[0].chart: chart 'web': Pod/probe has helm.sh/hook-delete-policy "
        "hook-succeeded, which planner cannot honour on a Pod (its run would have to be waited for and "
        "recorded, as a Job's is, so that the deleted Pod is not created again): make the hook a Job"
    ]


def test_a_hook_job_carries_a_run_key_of_its_whole_rendered_object(repo: Path) -> None:
    entry = "charts:\n  - {name: web, chart: charts/web, skipTests: true}\n"
    first = annotations(load(repo, entry), "Job/web-migrate")[ANNOTATION_RUN_KEY]
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert ANNOTATION_RUN_KEY not in annotations(load(repo, entry), "Deployment/web")  # not a hook
    again = annotations(load(repo, entry), "Job/web-migrate")[ANNOTATION_RUN_KEY]
    assert again == first  # the same rendering, the same run: it does not run again
    job = repo / "charts" / "web" / "templates" / "migrate-job.yaml"
    job.write_text(job.read_text().replace('"-1"', '"-2"'))  # only an annotation of the Job changes
    assert annotations(load(repo, entry), "Job/web-migrate")[ANNOTATION_RUN_KEY] != first


def test_another_hook_deleted_on_success_runs_once_per_rendering_of_itself_and_its_phases_jobs(
    repo: Path,
) -> None:
    templates = repo / "charts" / "web" / "templates"
    (templates / "hook-account.yaml").write_text(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: migrator\n  annotations:\n"
        '    "helm.sh/hook": pre-install\n    "helm.sh/hook-weight": "-5"\n'
        '    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded\n'
    )
    (templates / "hook-kept.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations:\n"
        '    "helm.sh/hook": post-install\n    "helm.sh/hook-delete-policy": hook-failed\n'
    )
    entry = "charts:\n  - {name: web, chart: charts/web, skipTests: true}\n"
    first = load(repo, entry)
    account = annotations(first, "ServiceAccount/migrator")[ANNOTATION_RUN_KEY]
    assert re.fullmatch(r"[0-9a-f]{64}", account)
    assert ANNOTATION_RUN_KEY not in annotations(first, "ConfigMap/kept")  # hook-failed: never deleted

    job = templates / "migrate-job.yaml"
    job.write_text(job.read_text().replace("busybox:1.36", "busybox:1.37"))  # the phase's Job runs again
    second = load(repo, entry)
    assert annotations(second, "ServiceAccount/migrator")[ANNOTATION_RUN_KEY] != account

    account_file = templates / "hook-account.yaml"
    account_file.write_text(account_file.read_text() + "automountServiceAccountToken: false\n")
    third = load(repo, entry)
    assert annotations(third, "ServiceAccount/migrator")[ANNOTATION_RUN_KEY] not in (
        account,
        annotations(second, "ServiceAccount/migrator")[ANNOTATION_RUN_KEY],
    )
    job_key = annotations(second, "Job/web-migrate")[ANNOTATION_RUN_KEY]
    assert annotations(third, "Job/web-migrate")[ANNOTATION_RUN_KEY] == job_key  # only the account changed


@pytest.mark.parametrize("chart", ["ingress-nginx", "cert-manager"])
def test_public_charts_with_hooks_deleted_after_their_run_load_with_default_values(
    repo: Path, chart: str
) -> None:
    shutil.copytree(DATA / "public" / chart, repo / "charts" / chart)
    plan = load(
        repo,
        f"charts:\n  - {{name: fidelity, chart: charts/{chart}}}\n",
        Capabilities(kube_version="v1.28.7"),
    )
    hooks = {
        raw.handle: annotations(plan, raw.handle)
        for raw in plan.manifests
        if raw.kind == "Job" and "helm.sh/hook" in annotations(plan, raw.handle)
    }
    expected = {
        "ingress-nginx": {
            "Job/fidelity-ingress-nginx-admission-create",
            "Job/fidelity-ingress-nginx-admission-patch",
        },
        "cert-manager": {"Job/fidelity-cert-manager-startupapicheck"},
    }[chart]
    assert set(hooks) == expected
    for found in hooks.values():
        assert "hook-succeeded" in found["helm.sh/hook-delete-policy"]
        assert re.fullmatch(r"[0-9a-f]{64}", found[ANNOTATION_RUN_KEY])


def test_secret_values_merge_over_values_from_the_environment_or_literally_and_are_masked_in_the_kept_text(
    repo: Path,
) -> None:
    (repo / "plan.yaml").write_text(
        HEAD
        + "charts:\n"
        + "  - name: web\n"
        + "    chart: charts/web\n"
        + "    skipTests: true\n"
        + "    values: {greeting: shown, extra: {user: app}}\n"
        + "    secretValues:\n"
        + "      greeting: {valueFrom: {env: GREETING}}\n"
        + "      extra: {password: hunter2-literal}\n"
    )
    found = load_plans([repo / "plan.yaml"], environ={"GREETING": "s3cret-from-env"})
    plan = found.plans[0]
    data = plan.manifests_by_handle["ConfigMap/web-settings"].object["data"]
    assert data["greeting"] == "s3cret-from-env"  # secretValues over values
    (kept,) = plan.source.inputs.values()
    assert "hunter2-literal" not in kept and "s3cret-from-env" not in kept
    assert 'extra: {password: "***"}' in kept and "greeting: {valueFrom: {env: GREETING}}" in kept
    assert "hunter2-literal" not in str(plan.source.scalars)


def test_a_secret_value_that_does_not_resolve_is_an_error_at_its_valuefrom(repo: Path) -> None:
    text = "charts:\n  - name: web\n    chart: charts/web\n    secretValues: {greeting: {valueFrom: {env: UNSET_VAR}}}\n"
    (repo / "plan.yaml").write_text(HEAD + text)
    with pytest.raises(PlanError) as raised:
        load_plans([repo / "plan.yaml"], environ={})
    assert [str(d).replace(f"{repo}/", "") for d in raised.value.diagnostics] == [
        "plan.yaml:8:48: charts[0].secretValues.greeting.valueFrom.env: environment variable UNSET_VAR is not set"
    ]


def test_a_secret_value_reference_of_no_known_form_is_an_error(repo: Path) -> None:
    text = "charts:\n  - name: web\n    chart: charts/web\n    secretValues: {greeting: {valueFrom: {vault: x}}}\n"
    assert errors(repo, text) == [
        "plan.yaml:8:31: charts[0].secretValues.greeting.valueFrom: expected exactly one of env, file or "
        "secretKeyRef {name, key}"
    ]


def test_chart_credentials_need_a_repository_one_form_and_no_password_in_the_url(repo: Path) -> None:
    url = "http://127.0.0.1:1/charts"  # never reached: each entry is refused before a fetch
    assert errors(
        repo,
        "charts:\n"
        "  - {name: web, chart: charts/web, credentials: {username: a, password: b}}\n"
        f"  - {{name: api, chart: web, version: 1.0.0, repo: '{url}', credentials: {{username: a}}}}\n"
        "  - {name: db, chart: web, version: 1.0.0, repo: 'http://u:hunter2@127.0.0.1:1/charts'}\n",
    ) == [
        "plan.yaml:6:36: charts[0].credentials: `credentials` are for a chart repository or an OCI registry: "
        "set `repo`, or an oci:// `chart`",
        "plan.yaml:7:80: charts[1].credentials: expected exactly one of username with password, secretRef, "
        "found username",
        "plan.yaml:8:50: charts[2].repo: a repository URL must not hold credentials (user:password@): give "
        "them in `credentials`",
    ]


def test_oci_chart_entries_are_checked_before_any_fetch_and_an_unreachable_registry_is_a_plan_error(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANNER_CACHE_DIR", str(tmp_path / "cache"))
    registry = "oci://127.0.0.1:1/charts"  # nothing listens on port 1: a fetch is refused at once
    found = errors(
        repo,
        "charts:\n"
        f"  - {{name: a, chart: '{registry}/web'}}\n"
        f"  - {{name: b, chart: '{registry}/web', version: 1.0.0, repo: 'https://charts.example.com'}}\n"
        f"  - {{name: c, chart: '{registry}/web:1.0.0', version: 1.0.0}}\n"
        "  - {name: d, chart: 'oci://u:hunter2@127.0.0.1:1/charts/web', version: 1.0.0}\n"
        f"  - {{name: e, chart: '{registry}/Web', version: 1.0.0}}\n"
        f"  - {{name: f, chart: '{registry}/web', version: 1.0.0+build.1}}\n",
    )
    assert found == [
        "plan.yaml:6:5: charts[0]: a chart from an OCI registry needs its `version`: pin the one to apply",
        "plan.yaml:7:76: charts[1].repo: an oci:// chart names its registry itself: leave out `repo`",
        f"plan.yaml:8:22: charts[2].chart: '{registry}/web:1.0.0' names a tag or digest: the chart's "
        "version goes in `version`",
        "plan.yaml:9:22: charts[3].chart: an oci:// reference must not hold credentials (user:password@): "
        "give them in `credentials`",
        f"plan.yaml:10:22: charts[4].chart: '{registry}/Web': 'charts/Web' is no repository name "
        "(lowercase path components)",
        f"plan.yaml:11:22: charts[5].chart: cannot read the manifest of {registry}/web 1.0.0+build.1: "
        "http://127.0.0.1:1/v2/charts/web/manifests/1.0.0_build.1: [Errno 111] Connection refused",
    ]


@pytest.mark.parametrize(
    ("chart", "registry", "repository"),
    [
        ("oci://ghcr.io/org/charts/web", "https://ghcr.io", "org/charts/web"),
        ("oci://registry.example.com:5443/web/", "https://registry.example.com:5443", "web"),
        ("oci://localhost:5000/a/b-c_d.e", "http://localhost:5000", "a/b-c_d.e"),
        ("oci://127.0.0.2:5000/web", "http://127.0.0.2:5000", "web"),
        ("oci://[::1]:5000/web", "http://[::1]:5000", "web"),
    ],
)
def test_an_oci_reference_names_its_registry_over_https_except_on_a_loopback_host(
    chart: str, registry: str, repository: str
) -> None:
    assert parse_reference(chart) == Reference(registry, repository)

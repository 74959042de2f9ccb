"""Charts from an OCI registry, a real one: Debian's docker-registry (the CNCF distribution registry,
which .ci/run installs when missing), the chart pushed as `helm push` pushes it (tests/registries.py).
A plan naming `oci://…` at a pinned version plans and applies on the embedded cluster (checked through
kubectl), the chart cached by its layer's digest; the same tag pushed again with other content is
refused with nothing written; a tag the registry lacks is a plan error. Behind htpasswd basic auth: no
credentials is a plan error naming the 401, wrong ones are refused, right ones from the environment
apply, and the password shows in no output, saved plan or object. In token mode (the registry trusting
the JWTs of a token service in the test, tests/registries.py): a public chart is pulled with a token
asked for anonymously, and a realm on another origin never gets the credentials; behind one origin
(lighttpd proxying the registry and the token service) it gets them, and a private chart renders. A
Plan object from Git reads the registry's credentials from a Secret (`secretRef`) and the controller
applies the chart.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner
from tests.e2e.test_chart_repository import (
    applied_with_credentials,
    never_shown,
    reconciled_from_git,
    render,
)
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import install_crd
from tests.gitservers import free_port
from tests.registries import Registry, oci_registry, same_origin_proxy, token_service

__all__ = ["controllers"]  # the fixture, shared with test_controller

CHART = Path(__file__).parent.parent / "data" / "charts" / "web"
PASSWORD = "s3cret-Oq7-registry"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:  # Deployments ready, Jobs complete
        yield handle


def packaged(tmp_path: Path, greeting: str, *, crds: bool = True) -> bytes:
    """tests/data/charts/web as `helm package` makes it (web-1.0.0.tgz), its greeting `greeting`;
    without its CRD and custom resource unless `crds` (two plans on one cluster cannot both own it)."""
    source = tmp_path / f"source-{greeting}" / "web"
    shutil.copytree(CHART, source)
    if not crds:
        shutil.rmtree(source / "crds")
        (source / "templates" / "gizmo.yaml").unlink()
    (source / "values.yaml").write_text((source / "values.yaml").read_text().replace("hello", greeting))
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as archive:
        archive.add(source, arcname="web")
    return packed.getvalue()


def write_plan(path: Path, namespace: str, registry: Registry, version: str, extra: str = "") -> None:
    path.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: oci, namespace: {namespace}}}\nallowClusterScoped: true\ncharts:\n"
        f"  - name: web\n    chart: {registry.reference('charts/web')}\n    version: {version}\n"
        f"    skipTests: true\n{extra}"
    )


def written_in(kubectl: Runner, namespace: str) -> list[tuple[str, str]]:
    """Each object in `namespace` of the kinds the plan writes (and its parent Secret) with its
    resourceVersion: unchanged when nothing was written there."""
    listed = kubectl("get", "configmaps,secrets,deployments,services,jobs", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)["items"]
    found = [(f"{i['kind']}/{i['metadata']['name']}", i["metadata"]["resourceVersion"]) for i in items]
    return sorted(found)


def settings(kubectl: Runner, namespace: str) -> dict[str, str]:
    found = json.loads(kubectl("get", "configmap", "web-settings", "-n", namespace, "-o", "json").stdout)
    data: dict[str, str] = found["data"]
    return data


def test_a_chart_in_a_registry_applies_cached_by_digest_and_a_tag_pushed_again_is_refused(
    tmp_path: Path, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    environment = {"PLANNER_CACHE_DIR": str(tmp_path / "cache")}
    plan = tmp_path / "plan.yaml"
    with oci_registry(tmp_path / "registry") as registry:
        archive = packaged(tmp_path, "hello")
        registry.push_chart("charts/web", "1.0.0", archive)
        write_plan(plan, namespace, registry, "1.0.0")
        applied = planner("apply", str(plan), "--timeout", "90s", env=environment)
        assert applied.returncode == 0, applied.stderr
        assert settings(kubectl, namespace)["greeting"] == "hello"
        layer = hashlib.sha256(archive).hexdigest()
        assert (tmp_path / "cache" / "charts" / f"sha256-{layer}.tgz").read_bytes() == archive

        write_plan(plan, namespace, registry, "2.0.0")
        missing = planner("plan", str(plan), env=environment)
        assert missing.returncode == 1
        assert missing.stderr.splitlines()[-1] == (
            f"{plan}:7:12: charts[0].chart: cannot read the manifest of {registry.reference('charts/web')} "
            f"2.0.0: http://{registry.host}/v2/charts/web/manifests/2.0.0: HTTP 404 Not Found (no such "
            "repository or tag in the registry)"
        )

        write_plan(plan, namespace, registry, "1.0.0")
        before_digest = registry.push_chart("charts/web", "1.0.0", archive)  # the same manifest again
        changed = registry.push_chart("charts/web", "1.0.0", packaged(tmp_path, "bonjour"))
        before = written_in(kubectl, namespace)
        refused = planner("apply", str(plan), "--timeout", "90s", env=environment)
        assert refused.returncode == 1
        assert f"{plan}:7:12: charts[0].chart: " in refused.stderr
        assert f"now has digest {changed}, but had {before_digest} before" in refused.stderr
        assert written_in(kubectl, namespace) == before  # nothing written
    assert settings(kubectl, namespace)["greeting"] == "hello"


def test_a_registry_behind_basic_auth_needs_credentials_and_never_shows_them(
    tmp_path: Path, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    environment = {"PLANNER_CACHE_DIR": str(tmp_path / "cache")}
    plan = tmp_path / "plan.yaml"
    with oci_registry(tmp_path / "registry", user=("charts", PASSWORD)) as registry:
        registry.push_chart("charts/web", "1.0.0", packaged(tmp_path, "hello", crds=False))
        write_plan(plan, namespace, registry, "1.0.0")
        before = written_in(kubectl, namespace)
        refused = planner("apply", str(plan), "--timeout", "90s", env=environment)
        assert refused.returncode == 1
        assert refused.stderr.splitlines()[-1] == (
            f"{plan}:7:12: charts[0].chart: cannot read the manifest of {registry.reference('charts/web')} "
            f"1.0.0: http://{registry.host}/v2/charts/web/manifests/1.0.0: HTTP 401 Unauthorized (the "
            "registry requires authentication: give its `credentials`)"
        )
        assert written_in(kubectl, namespace) == before  # nothing written

        credentials = (
            "    credentials:\n      username: {valueFrom: {env: CHARTS_USERNAME}}\n"
            "      password: {valueFrom: {env: CHARTS_PASSWORD}}\n"
        )
        write_plan(plan, namespace, registry, "1.0.0", credentials)
        outputs, saved = applied_with_credentials(planner, plan, environment, PASSWORD, "registry")
    assert settings(kubectl, namespace)["greeting"] == "hello"
    never_shown(
        PASSWORD, kubectl, [*(o.stdout + o.stderr for o in outputs), saved.read_text(errors="replace")]
    )


def test_a_token_service_on_another_origin_serves_public_charts_and_is_never_sent_the_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHARTS_USERNAME", "charts")
    monkeypatch.setenv("CHARTS_PASSWORD", PASSWORD)
    plan, cache = tmp_path / "plan.yaml", tmp_path / "cache"
    with (
        token_service(tmp_path / "tokens", user=("charts", PASSWORD)) as tokens,
        oci_registry(tmp_path / "registry", tokens=tokens) as registry,
    ):
        archive = packaged(tmp_path, "hello", crds=False)
        registry.push_chart("public/web", "1.0.0", archive)
        registry.push_chart("private/web", "1.0.0", archive)

        write_plan(plan, "shop", registry, "1.0.0")
        plan.write_text(plan.read_text().replace("charts/web", "public/web"))
        public = render(plan, cache)
        assert public.returncode == 0, public.stderr
        assert "greeting: hello" in public.stdout
        assert tokens.authorizations == [None]  # one token, asked for anonymously, for every request

        credentials = (
            "    credentials:\n      username: {valueFrom: {env: CHARTS_USERNAME}}\n"
            "      password: {valueFrom: {env: CHARTS_PASSWORD}}\n"
        )
        write_plan(plan, "shop", registry, "1.0.0", credentials)
        plan.write_text(plan.read_text().replace("charts/web", "private/web"))
        private = render(plan, cache)
    assert private.returncode == 1
    assert private.stderr.splitlines()[-1] == (
        f"{plan}:7:12: charts[0].chart: cannot read the manifest of {registry.reference('private/web')} 1.0.0: "
        f"{tokens.realm}: HTTP 401 Unauthorized (its token service {tokens.realm} is not on the registry's "
        "own origin, so the credentials were not sent to it)"
    )
    assert tokens.authorizations == [None, None]
    assert PASSWORD not in private.stdout + private.stderr


def test_a_token_service_on_the_registrys_origin_is_sent_the_credentials_for_a_private_chart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHARTS_USERNAME", "charts")
    plan, cache, port = tmp_path / "plan.yaml", tmp_path / "cache", free_port()
    with (
        token_service(tmp_path / "tokens", user=("charts", PASSWORD)) as tokens,
        oci_registry(
            tmp_path / "registry", tokens=tokens, realm=f"http://127.0.0.1:{port}/token"
        ) as registry,
        same_origin_proxy(tmp_path / "proxy", {"/v2/": registry.port, "/token": tokens.port}, port) as origin,
    ):
        registry.push_chart("private/web", "1.0.0", packaged(tmp_path, "hello", crds=False))
        credentials = (
            "    credentials:\n      username: {valueFrom: {env: CHARTS_USERNAME}}\n"
            "      password: {valueFrom: {env: CHARTS_PASSWORD}}\n"
        )
        write_plan(plan, "shop", registry, "1.0.0", credentials)
        plan.write_text(plan.read_text().replace(f"{registry.host}/charts/web", f"{origin}/private/web"))

        monkeypatch.setenv("CHARTS_PASSWORD", "not-it")
        wrong = render(plan, cache)
        assert wrong.returncode == 1
        assert wrong.stderr.splitlines()[-1] == (
            f"{plan}:7:12: charts[0].chart: cannot read the manifest of oci://{origin}/private/web 1.0.0: "
            f"http://{origin}/token: HTTP 401 Unauthorized (the registry refused the `credentials` given)"
        )

        monkeypatch.setenv("CHARTS_PASSWORD", PASSWORD)
        private = render(plan, cache)
        assert private.returncode == 0, private.stderr
        assert "greeting: hello" in private.stdout
    basic = "Basic " + base64.b64encode(f"charts:{PASSWORD}".encode()).decode()
    assert tokens.authorizations[-1] == basic  # the token service on the registry's origin got them
    assert PASSWORD not in wrong.stderr + private.stdout + private.stderr


def test_a_plan_object_from_git_reads_the_registry_credentials_from_its_secret(
    tmp_path: Path, planner: Runner, kubectl: Runner, namespace: str, controllers: Start
) -> None:
    install_crd(planner, kubectl)
    with oci_registry(tmp_path / "registry", user=("charts", PASSWORD)) as registry:
        registry.push_chart("charts/web", "1.0.0", packaged(tmp_path, "hello", crds=False))
        entry = (
            f"{{name: web, chart: '{registry.reference('charts/web')}', version: 1.0.0, "
            f"namespace: {namespace}, skipTests: true}}"
        )
        reconciled_from_git(tmp_path, kubectl, controllers, namespace, entry, PASSWORD)
    assert settings(kubectl, namespace)["greeting"] == "hello"

"""Charts from an OCI registry, a real one: Debian's docker-registry (the CNCF distribution registry,
which .ci/run installs when missing), the chart pushed as `helm push` pushes it (tests/registries.py).
A plan naming `oci://…` at a pinned version plans and applies on the embedded cluster (checked through
kubectl), the chart cached by its layer's digest; the same tag pushed again with other content is
refused with nothing written; a tag the registry lacks is a plan error. Behind htpasswd basic auth: no
credentials is a plan error naming the 401, wrong ones are refused, right ones from the environment
apply, and the password shows in no output, saved plan or object.
"""

from __future__ import annotations

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
from tests.e2e.test_chart_repository import applied_with_credentials, never_shown
from tests.registries import Registry, oci_registry

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

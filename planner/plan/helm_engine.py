"""Helm's own template engine, the one seam to it: a chart directory or `.tgz`, values and the cluster's
capabilities in; the chart's rendered templates and its `crds/` files out, or Helm's message.

planner never evaluates Go templates itself. The engine is Helm v4 compiled as a library
(`helm-python-sdk`, the optional `charts` extra, loaded on first use): docs/architecture.md ("Helm in a
plan") says why it was chosen over a `helm` binary and how its output was checked against `helm
template`. Rendering is that of `helm template`: an install (`.Release.IsInstall`, revision 1), no
cluster contacted (`lookup` finds nothing), `.Capabilities` as `--kube-version`/`--api-versions` give
them. The package's Python wrapper does not pass those two options on; its native library takes them in
the same render options (`kube_version`, `api_versions`), so they go through its `_native` call, pinned by
the version range in pyproject.toml and checked by test_plan_charts.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENGINE_MISSING = (
    "charts need Helm's engine, the `charts` extra: pip install 'planner[charts]' (helm-python-sdk)"
)
NOTES = "NOTES.txt"


@dataclass(frozen=True)
class Capabilities:
    """What `.Capabilities` says: the cluster's version (`v1.28.7`) and the API versions it serves
    (`apps/v1` and `apps/v1/Deployment` alike, as Helm lists them). None of either: Helm's defaults."""

    kube_version: str | None = None
    api_versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderedChart:
    name: str
    version: str
    crds: tuple[tuple[str, str], ...]  # (file under crds/, text), in file order
    templates: tuple[tuple[str, str], ...]  # (template path, rendered text), in path order, no NOTES.txt


@dataclass(frozen=True)
class ChartFailure:
    message: str


def render_chart(
    path: Path, *, release: str, namespace: str, values: dict[str, Any], capabilities: Capabilities
) -> RenderedChart | ChartFailure:
    """The chart at `path` rendered as release `release` in `namespace`, or Helm's message."""
    try:
        import helm_python
        from helm_python import _native
    except ImportError:
        return ChartFailure(ENGINE_MISSING)
    options: dict[str, Any] = {"name": release, "namespace": namespace, "revision": 1, "is_install": True}
    if capabilities.kube_version:
        options["kube_version"] = capabilities.kube_version
    if capabilities.api_versions:
        options["api_versions"] = list(capabilities.api_versions)
    try:
        with helm_python.Chart.load(path) as chart:
            rendered = json.loads(
                _native.call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options))
            )
            crds = tuple((str(crd["filename"]), str(crd["data"])) for crd in chart.crds)
            metadata = chart.metadata
    except helm_python.HelmError as error:
        return ChartFailure(_one_line(error.detail or str(error)))
    templates = tuple(
        (name, str(rendered[name])) for name in sorted(rendered) if not name.endswith(f"/{NOTES}")
    )
    return RenderedChart(
        name=str(metadata.get("name", "")),
        version=str(metadata.get("version", "")),
        crds=crds,
        templates=templates,
    )


def _one_line(message: str) -> str:
    return re.sub(r"\s*\n\s*", " ", message.strip())

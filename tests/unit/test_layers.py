"""The import-linter layers name every module of planner, so a new or renamed module cannot slip out of
the layering unchecked (import-linter itself fails on a listed module that does not exist)."""

from __future__ import annotations

import pkgutil
import tomllib

import planner
from tests.paths import REPO


def test_the_pipeline_layers_list_every_top_level_module_of_planner() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    pipeline = config["tool"]["importlinter"]["contracts"][0]
    listed = {name.strip() for layer in pipeline["layers"] for name in layer.split("|")}
    modules = {f"planner.{module.name}" for module in pkgutil.iter_modules(planner.__path__)}
    assert listed == modules

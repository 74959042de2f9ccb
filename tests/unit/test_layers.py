"""The import-linter layers name every module of planner, so a new or renamed module cannot slip out of
the layering unchecked (import-linter itself fails on a listed module that does not exist)."""

from __future__ import annotations

import pkgutil
import tomllib

import planner
from tests.paths import REPO


def test_the_pipeline_layers_list_every_top_level_module_of_planner() -> None:
    """Each folder is one layer, as each top-level module is: none is listed module by module around
    other stages (a module that belongs to another stage lives there)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    pipeline = config["tool"]["importlinter"]["contracts"][0]
    listed = {name.strip() for layer in pipeline["layers"] for name in layer.split("|")}
    modules = {f"planner.{module.name}" for module in pkgutil.iter_modules(planner.__path__)}
    assert listed == modules


def test_the_documented_layer_list_is_the_one_import_linter_checks() -> None:
    """docs/architecture.md's "Layering" line names the pipeline's layers in pyproject's order, so the
    document a maintainer learns the order from is the one `make test` enforces."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    checked = [
        {name.strip().removeprefix("planner.") for name in layer.split("|")}
        for layer in config["tool"]["importlinter"]["contracts"][0]["layers"]
    ]
    text = (REPO / "docs" / "architecture.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith("`__main__ > cli > "))
    documented = [
        {name.strip() for name in layer.strip().strip("()").split("|")}
        for layer in line.strip("`").split(" > ")
    ]
    assert documented == checked


def test_no_file_name_stands_twice_in_planner() -> None:
    """Searching a file name finds one file; only a package's `__init__.py` and `__main__.py` repeat."""
    names: dict[str, list[str]] = {}
    for path in sorted((REPO / "planner").rglob("*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    repeated = {name: paths for name, paths in names.items() if len(paths) > 1}
    assert set(repeated) <= {"__init__.py", "__main__.py"}, repeated

"""The command line only parses and delegates: what its modules import, how big they are, and that the
defaults `--help` shows are the application's own."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import click
import pytest

from planner import app, controller, generations
from planner.cli import options
from planner.cli.root import COMMANDS, cli
from planner.plan.durations import parse_duration
from planner.state import runlock
from tests.paths import REPO

CLI = REPO / "planner" / "cli"
ALLOWED = {"planner", "planner.app", "planner.output", "planner.controller", "planner.errors"}


def _planner_imports(path: Path) -> set[str]:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {f"{node.module}.{alias.name}" for alias in node.names}
            imported |= {node.module} if node.module != "planner" else names
    return {name for name in imported if name == "planner" or name.startswith("planner.")}


def test_cli_modules_import_only_the_app_output_and_controller_facades_errors_and_each_other() -> None:
    for path in sorted(CLI.glob("*.py")):
        allowed = ALLOWED | {"planner.slim"} if path.name == "cluster_commands.py" else ALLOWED
        stray = {
            name
            for name in _planner_imports(path)
            if name not in allowed and not name.startswith("planner.cli") and name != "planner.__version__"
        }
        assert stray == set(), f"{path.name} imports {sorted(stray)}"


def _command_lines(path: Path) -> list[int]:
    """Each command's size: its decorators, signature and body, without its help text (the docstring)."""
    sizes = []
    for node in ast.parse(path.read_text()).body:
        decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", [])]
        if not isinstance(node, ast.FunctionDef) or not any(
            "command" in d or "group" in d for d in decorators
        ):
            continue
        first = node.body[0]
        is_doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        help_lines = (first.end_lineno or first.lineno) - first.lineno + 1 if is_doc else 0
        start = min(d.lineno for d in node.decorator_list)
        sizes.append((node.end_lineno or node.lineno) - start + 1 - help_lines)
    return sizes


def test_no_cli_module_exceeds_300_lines_and_a_command_averages_at_most_15() -> None:
    sizes = {path.name: len(path.read_text().splitlines()) for path in CLI.glob("*.py")}
    assert max(sizes.values()) <= 300, sizes
    commands = [size for path in CLI.glob("*.py") for size in _command_lines(path)]
    assert len(commands) >= 20
    assert sum(commands) / len(commands) <= 15, commands


def test_every_listed_command_resolves() -> None:
    context = click.Context(cli)
    assert [name for name in COMMANDS if cli.get_command(context, name) is None] == []


def test_the_defaults_help_shows_are_the_applications() -> None:
    assert options.HISTORY_MAX == generations.DEFAULT_HISTORY_MAX
    assert parse_duration(options.LOCK_DURATION) == runlock.DEFAULT_DURATION


def test_version_and_help_import_no_stage() -> None:
    probe = (
        "import sys\n"
        "from planner.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('planner.', 'kubernetes', 'rich', 'ruamel')))\n"
        "print(' '.join(loaded), file=sys.stderr)\n"
    )
    for args in (["version"], ["--help"]):
        result = subprocess.run(
            [sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True
        )
        loaded = set(result.stderr.split())
        stages = {
            m
            for m in loaded
            if m != "planner.controller"  # the facade alone, none of its modules
            and not m.startswith(
                ("planner.cli", "planner.lazy", "planner.app", "planner.output", "planner.errors")
            )
        }
        assert stages == set(), (args, sorted(stages))
        assert loaded & {"planner.app.planning", "planner.output.event_lines"} == set(), args


def test_validate_imports_neither_the_kubernetes_client_nor_rich(tmp_path: Path) -> None:
    """`validate` asks no cluster and prints plain lines: a plan with resource quantities (valued by the
    client's quantity module, loaded alone) is checked without the client package or rich."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\nworkloads:\n"
        "  - {name: web, image: 'nginx:1.27', cpu: 500m, memory: 1Gi}\n"
    )
    probe = (
        "import sys\n"
        "from planner.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as stop:\n"
        "    assert not stop.code, stop.code\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "validate", str(plan)], capture_output=True, text=True, check=True
    )
    assert "plan shop is valid" in result.stdout
    loaded = result.stderr.split()
    roots = {name.split(".")[0] for name in loaded}
    # `planner.kube` registers the bare `kubernetes` package (none of its code runs): no module of it
    assert [name for name in loaded if name.startswith("kubernetes.")] == []
    assert roots & {"rich", "urllib3"} == set()
    assert {"ruamel", "jsonschema_rs"} <= roots  # what validating does use
    # jsonschema words the errors of an invalid plan only; a plan with dependencies imports networkx
    assert roots & {"jsonschema", "networkx"} == set()


@pytest.mark.parametrize("facade", [app, controller], ids=["app", "controller"])
def test_every_name_a_facade_exports_is_no_module_once_every_module_is_imported(
    facade: types.ModuleType,
) -> None:
    """A submodule named like an export would shadow it once imported (the import binds the name)."""
    for found in pkgutil.iter_modules(facade.__path__):
        importlib.import_module(f"{facade.__name__}.{found.name}")
    assert [name for name in facade.__all__ if isinstance(getattr(facade, name), types.ModuleType)] == []

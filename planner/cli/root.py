"""The `planner` group: every command, each imported from its family's module only when it is needed."""

from __future__ import annotations

import importlib

import click

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command name -> the module of its family that defines it, as `module:attribute`
COMMANDS = {
    "validate": "plans:validate",
    "render": "plans:render",
    "plan": "plans:plan_command",
    "apply": "plans:apply_command",
    "reconcile": "plans:reconcile_command",
    "history": "history:history_command",
    "diff-generations": "history:diff_generations_command",
    "rollback": "history:rollback_command",
    "unlock": "lock:unlock_command",
    "monitor": "runtime:monitor_command",
    "status": "runtime:status_command",
    "start": "runtime:start_command",
    "stop": "runtime:stop_command",
    "pause": "runtime:pause_command",
    "resume": "runtime:resume_command",
    "delete": "runtime:delete_command",
    "logs": "runtime:logs_command",
    "inspect": "runtime:inspect_command",
    "sandbox": "sandboxes:sandbox_group",
    "controller": "controller:controller_command",
    "cluster": "cluster:cluster_group",
    "schema": "info:schema",
    "crd": "info:crd",
    "version": "info:version",
}


class LazyGroup(click.Group):
    """A group whose commands are imported when run, or when `--help` lists them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, attribute = where.split(":")
        command = getattr(importlib.import_module(f"planner.cli.{module}"), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(
    None, "--version", package_name="kube-planner", prog_name="planner", message="%(prog)s %(version)s"
)
@click.option("--no-color", is_flag=True, help="No colour in any output (as does NO_COLOR set to anything).")
def cli(no_color: bool) -> None:
    """planner: a Nix-style declarative reconciler for Kubernetes.

    Plan files declare workloads and sandboxes; planner renders them, diffs them against the live
    cluster and applies the difference along a dependency graph.
    """

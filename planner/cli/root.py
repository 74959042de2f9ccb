"""The `planner` group: every command, each imported from its family's module only when it is needed."""

from __future__ import annotations

import importlib

import click

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# command name -> the module of its family that defines it, as `module:attribute`
COMMANDS = {
    "validate": "plan_commands:validate",
    "render": "plan_commands:render",
    "build": "plan_commands:build",
    "plan": "plan_commands:plan_command",
    "apply": "plan_commands:apply_command",
    "reconcile": "plan_commands:reconcile_command",
    "history": "history_commands:history_command",
    "diff-generations": "history_commands:diff_generations_command",
    "rollback": "history_commands:rollback_command",
    "unlock": "lock_commands:unlock_command",
    "monitor": "runtime_commands:monitor_command",
    "status": "runtime_commands:status_command",
    "start": "runtime_commands:start_command",
    "stop": "runtime_commands:stop_command",
    "pause": "runtime_commands:pause_command",
    "resume": "runtime_commands:resume_command",
    "delete": "runtime_commands:delete_command",
    "logs": "runtime_commands:logs_command",
    "inspect": "runtime_commands:inspect_command",
    "sandbox": "sandbox_commands:sandbox_group",
    "controller": "controller_commands:controller_command",
    "cluster": "cluster_commands:cluster_group",
    "schema": "info_commands:schema",
    "crd": "info_commands:crd",
    "version": "info_commands:version",
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

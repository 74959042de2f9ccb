"""The command line: click parses, `planner.app` does the work, `planner.output` prints.

One module per command family: `plans` (validate, render, plan, apply, reconcile), `history` (history,
diff-generations, rollback), `lock` (unlock), `runtime` (monitor, status, the lifecycle commands, logs,
inspect), `sandboxes`, `controller`, `cluster` (the embedded cluster) and `info` (schema, version).
`options` declares the options several commands share, once; `running` is the one place that picks
exit codes and handles signals; `root` is the `planner` group, which imports a family only when one
of its commands runs or `--help` lists them. Every command parses its arguments and delegates to
`planner.app` (option objects and the checks between flags included) and to a printer of
`planner.output`: both are imported lazily, so `planner version` loads nothing of the application.
"""

from planner.cli.running import main

__all__ = ["main"]

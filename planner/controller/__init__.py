"""`planner controller`, the long-running half: keeps plans reconciled, warm pools full and idle
sandboxes paused, until SIGTERM (docs/controller.md). One module per concern: `manager` wires the parts
and runs them; docs/architecture.md lists the rest.

It builds on `planner.app` (a plan's reconcile, as `planner reconcile` does it) and `planner.output`
(the graphs its web view draws), so it sits above both. This package exports what the CLI calls, each
name imported from its module on first use (so `planner --help` imports none of them).
"""

from typing import TYPE_CHECKING

from planner.lazy import exports

if TYPE_CHECKING:
    from planner.controller.manager import Controller
    from planner.controller.reconcile_now import request_reconcile
    from planner.controller.settings import ControllerOptions, controller_options

_MODULES = {
    "planner.controller.manager": ["Controller"],
    "planner.controller.reconcile_now": ["request_reconcile"],
    "planner.controller.settings": ["ControllerOptions", "controller_options"],
}

__getattr__ = exports(__name__, {name: module for module, names in _MODULES.items() for name in names})

__all__ = ["Controller", "ControllerOptions", "controller_options", "request_reconcile"]

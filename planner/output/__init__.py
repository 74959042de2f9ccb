"""Printers: everything planner shows a person or a program is formatted here, and only here.

Secret masking lives here too, so no stage can leak a value by printing: stages hand over data and the
printer decides what a reader may see (Secret values and Secret hashes are `***` unless the user asks
with `--show-secrets`). This package exports what the command line calls, each name imported from its
module on first use.
"""

from typing import TYPE_CHECKING

from planner.lazy import exports

if TYPE_CHECKING:
    from planner.output import results
    from planner.output.error_report import report_error, report_failure
    from planner.output.event_lines import MonitorPrinter, apply_printer
    from planner.output.reconcile import ReconcilePrinter, write_metrics
    from planner.output.validation_report import validated
    from planner.output.workload_table import print_inspection, print_outcome, print_status

_MODULES = {
    "planner.output.error_report": ["report_error", "report_failure"],
    "planner.output.event_lines": ["MonitorPrinter", "apply_printer"],
    "planner.output.reconcile": ["ReconcilePrinter", "write_metrics"],
    "planner.output.validation_report": ["validated"],
    "planner.output.workload_table": ["print_inspection", "print_outcome", "print_status"],
}

__getattr__ = exports(
    __name__, {name: module for module, names in _MODULES.items() for name in names}, submodules=["results"]
)

__all__ = [
    "MonitorPrinter",
    "ReconcilePrinter",
    "apply_printer",
    "print_inspection",
    "print_outcome",
    "print_status",
    "report_error",
    "report_failure",
    "results",
    "validated",
    "write_metrics",
]

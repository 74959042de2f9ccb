"""Printers for `validate`: a line (or a `Validated` JSON record) per valid plan with what it declares,
and the loader's warnings, which go to stderr whatever the format."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from planner.errors import Diagnostic, PlanError
from planner.output.error_report import print_diagnostics
from planner.output.lines import LinePrinter, now_rfc3339
from planner.plan import LoadResult, Plan


def print_warnings(warnings: Sequence[Diagnostic], stream: TextIO | None = None) -> None:
    printer = LinePrinter("text", stream or sys.stderr)
    for warning in warnings:
        printer.write_line(str(warning))


def _counts(plan: Plan) -> dict[str, int]:
    """What the plan declares, by field; `manifests` counts the objects of `manifests`, `manifestFiles`
    and `kustomize`, and `charts` the charts (not the objects they render)."""
    return {
        "workloads": len(plan.workloads),
        "sandboxes": len(plan.sandboxes),
        "warmPools": len(plan.warm_pools),
        "configMaps": len(plan.config_maps),
        "secrets": len(plan.secrets),
        "volumeClaims": len(plan.volume_claims),
        "manifests": sum(1 for raw in plan.manifests if not raw.origin),
        "charts": len(plan.charts),
    }


def print_validated(plans: Sequence[Plan], output: str, stream: TextIO | None = None) -> None:
    """`shop.yaml: plan shop is valid (2 workloads, 1 configMaps)`, or its JSON record."""
    printer = LinePrinter(output, stream)
    for plan in plans:
        counts = _counts(plan)
        if output == "json":
            record = {"time": now_rfc3339(), "type": "Validated", "file": plan.source.file, "plan": plan.name}
            printer.write_json(record | counts | {"message": f"plan {plan.name} is valid"})
        else:
            summary = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
            printer.write_line(f"{plan.source.file}: plan {plan.name} is valid ({summary or 'empty'})")


def validated(load: Callable[[], LoadResult], output: str) -> None:
    """`validate`: each plan's line, the warnings on stderr, and with `-o json` every problem and
    warning as a `Diagnostic` line on stdout too."""
    try:
        loaded = load()
    except PlanError as invalid:
        if output == "json":
            print_diagnostics(invalid.diagnostics)
        raise
    print_warnings(loaded.warnings)
    if output == "json":
        print_diagnostics(loaded.warnings)
    print_validated(loaded.plans, output)

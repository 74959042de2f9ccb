"""How a failure reads: the text every command prints on stderr — one line per plan problem
(`file:LINE:COL: path: message`), else `error: …` — and, when the command was given `-o json`, one JSON
line after it (`{"time", "type": "Error", "message", "exit_code"}`, with a plan's `diagnostics`), so a
program reading the JSON stream learns why the command ended without parsing text."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from planner.errors import Diagnostic, PlanError, PlannerError
from planner.output.lines import LinePrinter, now_rfc3339


def diagnostic_record(diagnostic: Diagnostic) -> dict[str, Any]:
    """A plan problem as JSON: `validate -o json`'s `Diagnostic` line, and an item of an error's list."""
    return {
        "time": now_rfc3339(),
        "type": "Diagnostic",
        "file": diagnostic.file,
        "line": diagnostic.line,
        "column": diagnostic.column,
        "path": diagnostic.path,
        "message": diagnostic.message,
        "severity": diagnostic.severity,
    }


def print_diagnostics(diagnostics: Sequence[Diagnostic], stream: TextIO | None = None) -> None:
    """One `Diagnostic` JSON line each (on stdout unless told otherwise)."""
    printer = LinePrinter("json", stream)
    for diagnostic in diagnostics:
        printer.write_json(diagnostic_record(diagnostic))


def report_error(error: PlannerError, output: str, stream: TextIO | None = None) -> int:
    """Print `error` on stderr as text, then as a JSON line when `output` is json; return its exit code."""
    diagnostics = error.diagnostics if isinstance(error, PlanError) else []
    lines = [str(d) for d in diagnostics] or [f"error: {error}"]
    report_failure(lines, str(error), error.exit_code, output, stream, diagnostics=diagnostics)
    return error.exit_code


def report_failure(
    lines: Sequence[str],
    message: str,
    exit_code: int,
    output: str,
    stream: TextIO | None = None,
    *,
    diagnostics: Sequence[Diagnostic] = (),
) -> None:
    """Text `lines` (already printed elsewhere when empty), then with `-o json` the `Error` record."""
    printer = LinePrinter(output, stream or sys.stderr)
    for line in lines:
        printer.write_line(line)
    if output == "json":
        record: dict[str, Any] = {"time": now_rfc3339(), "type": "Error", "message": message}
        if diagnostics:
            record["diagnostics"] = [diagnostic_record(d) for d in diagnostics]
        printer.write_json(record | {"exit_code": exit_code})

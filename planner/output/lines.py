"""Whole lines to a stream, for the printers that report as things happen.

Events arrive from several threads (the executor's pool, the informers), so a `LinePrinter` writes each
line whole under a lock and flushes it: lines never interleave, and a pipe sees each as it happens.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TextIO


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as kubectl prints tables: every column but the last padded to its widest cell, three spaces
    apart; the last (a free-form message) unpadded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)] if rows else []
    return [
        "   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "   " + row[-1]
        for row in rows
    ]


def now_rfc3339(now: datetime | None = None) -> str:
    """`2026-11-29T10:30:42Z`: the time of a JSON record that reports no event time of its own."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


class LinePrinter:
    """Text lines, or JSON records one per line (`output` is the `-o` format the command was given)."""

    def __init__(self, output: str, stream: TextIO | None = None) -> None:
        self.output = output
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def write_line(self, text: str) -> None:
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()

    def write_json(self, record: Mapping[str, object]) -> None:
        self.write_line(json.dumps(record))

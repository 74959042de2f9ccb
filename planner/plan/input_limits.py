"""What a plan file may be before planner builds anything from it: hostile YAML is refused, not read.

YAML can ask for more work than its size suggests, and each stage after the parser trusts the parser's
output. So a plan file is checked in two cheap passes before a node graph is composed: its bytes
(size, encoding, control characters), then the parser's flat event stream (nesting depth, alias counts
and self-referencing aliases).

The rest, and why: docs/architecture.md ("Module notes", plan/input_limits.py).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    ScalarEvent,
)

from planner.errors import Diagnostic

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIAS_EXPANSIONS = 1000
MIN_COPY_BUDGET = 100_000

# What YAML 1.2 allows in a stream (ruamel's reader rule), less a byte-order mark after the start, which
# libyaml refuses.
_FORBIDDEN = re.compile(r"[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def read_text(path: Path, *, what: str = "plan file") -> str | Diagnostic:
    """The file's text, or the diagnostic that says why it is not read: too large, unreadable, not a
    regular file, not UTF-8, or holding a control character. `what` names the file in messages."""
    name = str(path)
    try:
        size, data = read_capped(path)
    except OSError as error:
        return Diagnostic(name, 1, 1, "", f"cannot read {what}: {error.strerror or error}")
    if size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
        return Diagnostic(
            name,
            1,
            1,
            "",
            f"{what} is {max(size, len(data)):,} bytes ({_mebibytes(max(size, len(data)))}), over the limit of "
            f"{MAX_FILE_BYTES:,} bytes ({_mebibytes(MAX_FILE_BYTES)}) per {what}: split it into several {'plans' if what == 'plan file' else 'files'}",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return _not_utf8(name, data, error)
    if text.startswith("\ufeff"):
        text = text[1:]
    forbidden = _FORBIDDEN.search(text)
    if forbidden is not None:
        line, column = _position_of(text, forbidden.start())
        code = ord(forbidden.group())
        return Diagnostic(
            name,
            line,
            column,
            "",
            f"control character U+{code:04X} is not allowed in YAML (quote it as an escape, e.g. "
            f'"\\u{code:04x}")',
        )
    return text


_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_capped(path: Path, limit: int = MAX_FILE_BYTES) -> tuple[int, bytes]:
    """(the size the file says it has, at most `limit` + 1 of its bytes) of the regular file at
    `path`, following symlinks (a ConfigMap volume's files are links). Anything else is an OSError with
    a sentence: a FIFO is never opened for blocking reads, a device never read, a symlink loop is
    ELOOP, and however large the file or whatever it claims (`/proc`), no more than `limit` + 1 bytes
    are ever held."""
    _regular(os.stat(path).st_mode)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        _regular(info.st_mode)  # it may have been swapped since the stat
        chunks, wanted = [], limit + 1
        while wanted > 0:
            chunk = os.read(descriptor, min(wanted, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            wanted -= len(chunk)
        return info.st_size, b"".join(chunks)
    finally:
        os.close(descriptor)


def _regular(mode: int) -> None:
    for test, what in _NOT_REGULAR:
        if test(mode):
            raise OSError(errno.EINVAL, f"{what}, not a regular file")


def _mebibytes(size: int) -> str:
    mebibytes = size / (1024 * 1024)
    return f"{mebibytes:.0f} MiB" if mebibytes == int(mebibytes) else f"{mebibytes:.1f} MiB"


def _not_utf8(name: str, data: bytes, error: UnicodeDecodeError) -> Diagnostic:
    line_start = data.rfind(b"\n", 0, error.start) + 1
    line = data.count(b"\n", 0, error.start) + 1
    column = len(data[line_start : error.start].decode("utf-8", errors="replace")) + 1
    return Diagnostic(
        name,
        line,
        column,
        "",
        f"not UTF-8: byte 0x{data[error.start]:02X} cannot be decoded (save the file as UTF-8)",
    )


def _position_of(text: str, index: int) -> tuple[int, int]:
    """1-based (line, column) of the character at `index`."""
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


@dataclass(frozen=True)
class _Anchored:
    """What copying an anchored node costs: alias expansions, nodes, and levels of nesting."""

    expansions: int
    nodes: int
    height: int


@dataclass
class _Open:
    """A collection whose end event has not come yet."""

    anchor: str | None
    depth: int
    expansions_before: int
    nodes_before: int
    deepest: int


class _Budget:
    """Running counts over one file's events; `see` returns the first problem found."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.expansions = 0
        self.nodes = 0
        self.copied = 0
        self.anchors: dict[str, _Anchored] = {}
        self.open: list[_Open] = []
        self.copies: list[tuple[int, Any]] = []  # (nodes copied so far, alias mark), one per alias

    def see(self, event: Any) -> Diagnostic | None:
        if isinstance(event, DocumentStartEvent):
            self.anchors = {}  # anchors are per document
        elif isinstance(event, CollectionStartEvent):
            return self._start(event)
        elif isinstance(event, CollectionEndEvent):
            self._end()
        elif isinstance(event, ScalarEvent):
            self.nodes += 1
            if event.anchor is not None:
                self.anchors[event.anchor] = _Anchored(0, 1, 0)
        elif isinstance(event, AliasEvent):
            return self._alias(event)
        return None

    def _start(self, event: Any) -> Diagnostic | None:
        depth = len(self.open) + 1
        if depth > MAX_DEPTH:
            return self._at(
                event.start_mark,
                f"nested more than {MAX_DEPTH} levels deep: planner reads plans nested at most {MAX_DEPTH} "
                "levels (is a bracket left open?)",
            )
        self.open.append(_Open(event.anchor, depth, self.expansions, self.nodes, depth))
        self.nodes += 1
        return None

    def _end(self) -> None:
        closed = self.open.pop()
        if closed.anchor is not None:
            self.anchors[closed.anchor] = _Anchored(
                expansions=self.expansions - closed.expansions_before,
                nodes=self.nodes - closed.nodes_before,
                height=closed.deepest - closed.depth + 1,
            )
        if self.open:
            self.open[-1].deepest = max(self.open[-1].deepest, closed.deepest)

    def _alias(self, event: Any) -> Diagnostic | None:
        name = event.anchor
        enclosing = next((item for item in reversed(self.open) if item.anchor == name), None)
        if enclosing is not None:
            return self._at(
                event.start_mark,
                f'alias "*{name}" refers to the node that contains it: a plan cannot contain itself',
            )
        target = self.anchors.get(name)
        if target is None:
            return None  # an undefined alias: the composer reports it
        self.expansions += 1 + target.expansions
        if self.expansions > MAX_ALIAS_EXPANSIONS:
            return self._at(
                event.start_mark,
                f"more than {MAX_ALIAS_EXPANSIONS:,} alias expansions in one file (an alias inside an "
                "anchored node counts each time that node is copied): write the repeated part out or "
                "use fewer aliases",
            )
        if len(self.open) + target.height > MAX_DEPTH:
            return self._at(
                event.start_mark,
                f'alias "*{name}" nests more than {MAX_DEPTH} levels deep: planner reads plans nested at '
                f"most {MAX_DEPTH} levels",
            )
        if self.open:
            self.open[-1].deepest = max(self.open[-1].deepest, len(self.open) + target.height)
        self.nodes += target.nodes
        self.copied += target.nodes
        self.copies.append((self.copied, event.start_mark))
        return None

    def finish(self) -> Diagnostic | None:
        written = self.nodes - self.copied
        budget = max(written, MIN_COPY_BUDGET)
        for copied, mark in self.copies:
            if copied > budget:
                return self._at(
                    mark,
                    f"aliases copy {self.copied:,} nodes, more than the {written:,} the file writes itself: "
                    f"planner lets aliases copy at most as many nodes as a file writes (or "
                    f"{MIN_COPY_BUDGET:,})",
                )
        return None

    def _at(self, mark: Any, message: str) -> Diagnostic:
        return Diagnostic(self.name, mark.line + 1, mark.column + 1, "", message)


def event_problem(name: str, events: Iterable[Any]) -> Diagnostic | None:
    """The first limit the YAML event stream breaks (nesting, alias expansions, an alias inside its
    own anchor, nodes copied by aliases), or None. Reads events lazily and stops at the first problem."""
    budget = _Budget(name)
    for event in events:
        problem = budget.see(event)
        if problem is not None:
            return problem
    return budget.finish()

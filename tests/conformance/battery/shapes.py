"""A battery step, its result, and the checks of an output's shape after normalising it."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

NAMESPACE = "battery"
# A check returns what is wrong with an output (empty: nothing).
Check = Callable[["Output"], list[str]]


@dataclass(frozen=True)
class Output:
    code: int
    stdout: str  # normalised
    stderr: str  # normalised
    raw: str  # stdout as printed


@dataclass(frozen=True)
class Step:
    name: str
    args: tuple[str, ...]
    checks: tuple[Check, ...] = ()
    code: int = 0
    stdin: str | None = None
    needs: tuple[str, ...] = ()  # "group/version resource" the server must serve (else skipped)
    editor: str | None = None  # a sed script run on the file `kubectl edit` opens


@dataclass
class Result:
    step: Step
    problems: list[str] = field(default_factory=list)
    skipped: str = ""
    seconds: float = 0.0


# --- normalising -------------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NORMALISE = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b"), "<time>"),
    (re.compile(r"\b(web|api|solo)-[b-df-hj-np-tv-z2-9]{8,10}-[b-df-hj-np-tv-z2-9]{5}\b"), r"\1-<rs>-<pod>"),
    (re.compile(r"\b(web|api)-[b-df-hj-np-tv-z2-9]{8,10}\b"), r"\1-<rs>"),
    (re.compile(r"\b(once)-[b-df-hj-np-tv-z2-9]{5}\b"), r"\1-<pod>"),
    (re.compile(r"\b10\.(96|97|98|99|1\d\d)\.\d+\.\d+\b"), "<cluster-ip>"),
    (re.compile(r"\b10\.244\.\d+\.\d+\b"), "<pod-ip>"),
    (re.compile(r"\b127\.0\.0\.1:\d+\b"), "<server>"),
    (re.compile(r"(?<![\w.:/-])(\d+d)?(\d+h)?(\d+m)?(\d+(\.\d+)?s)?(?![\w.:/-])"), None),
]


def _age(match: re.Match[str]) -> str:
    return "<age>" if any(match.group(i) for i in (1, 2, 3, 4)) else match.group(0)


def normalise(text: str) -> str:
    text = ANSI.sub("", text)
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement if replacement is not None else _age, text)
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)


# --- checks ------------------------------------------------------------------------------------------


def exactly(expected: str) -> Check:
    """The whole normalised stdout."""
    wanted = normalise(textwrap.dedent(expected))
    return lambda out: [] if out.stdout == wanted else [f"stdout is\n{out.stdout}\nwanted\n{wanted}"]


def has(*patterns: str, stream: str = "stdout") -> Check:
    """Each pattern is found in the normalised stream (multi-line regular expressions)."""

    def check(out: Output) -> list[str]:
        text = getattr(out, stream)
        return [f"{stream} lacks /{p}/:\n{text}" for p in patterns if not re.search(p, text, re.M)]

    return check


def document(predicate: Callable[[Any], bool], what: str) -> Check:
    """The raw stdout parsed (JSON or YAML) satisfies `predicate`."""

    def check(out: Output) -> list[str]:
        try:
            parsed = YAML(typ="safe", pure=True).load(out.raw)
            ok = predicate(parsed)
        except (YAMLError, KeyError, IndexError, TypeError) as exc:
            return [f"{what}: {exc!r}\n{out.raw[:2000]}"]
        return [] if ok else [f"{what}:\n{out.raw[:2000]}"]

    return check


def is_json(out: Output) -> list[str]:
    try:
        json.loads(out.raw)
    except ValueError as exc:
        return [f"not JSON: {exc}"]
    return []

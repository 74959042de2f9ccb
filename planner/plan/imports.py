"""Imports: a plan file's `imports` read, recursively, and merged into it (merge.py has the rules).

Each import is a path relative to the file naming it. Like `manifestFiles`, it may not lead outside a
root, here the repository: the nearest directory above the top-level plan file (symlinks followed)
that holds `.git`, else that file's directory, so `environments/prod/plan.yaml` may import
`../../base.yaml` within its repository and a plan outside any repository imports only from beside it.
Absolute paths are refused. Each fragment is read under the plan file's limits, checked against the
plan schema with nothing required (`fragment_schema`), and may import others; a file importing itself,
directly or not, is refused with the chain (`a.yaml → b.yaml → a.yaml`). At most `MAX_IMPORTED_FILES`
files are read for one plan.

A plan with neither `imports` nor a `!default`/`!remove` tag is returned as it was read. Otherwise the
result is one ParsedFile named as the top-level file, whose positions say which file set each value
(`Position.file`, "" for the top-level file) and whose `texts` hold the fragments' lines, so every later
check reports a bad value in the file that set it. `imported` holds each fragment's text with its literal
secret values masked: with the top-level file's they are the plan's inputs, which a generation records
and whoever watches a plan file watches (`load.input_files`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from planner.errors import Diagnostic
from planner.plan.merge import Located, flatten, join, located, override, without
from planner.plan.raw_manifests import leaves
from planner.plan.schema_check import check_schema
from planner.plan.sealed import unseal
from planner.plan.source import ParsedFile, child_path, read_plan_file

MAX_IMPORTED_FILES = 100
IMPORTS = "imports"


def resolve_imports(parsed: ParsedFile) -> ParsedFile | list[Diagnostic]:
    """`parsed` with its imports merged in, or every problem found on the way."""
    return imports_and_files(parsed)[0]


def imports_and_files(parsed: ParsedFile) -> tuple[ParsedFile | list[Diagnostic], tuple[Path, ...]]:
    """`resolve_imports`, and every file the imports name, read or not: one that does not load, or does
    not exist yet, is one whose change may make the plan load (whoever watches the plan watches it).
    Each file's `sops` metadata is taken off as it is read (`sealed.unseal`): it is no plan data."""
    parsed = unseal(parsed)
    if not _imports_anything(parsed):
        return parsed, ()
    problems = _entry_problems(parsed, fragment=False)
    if problems:
        return problems, ()
    top = Path(parsed.file)
    reader = _Reader(root=repository_root(top))
    tree = reader.resolve(parsed, "", chain=((Path(os.path.realpath(top)), parsed.file),))
    named = tuple(dict.fromkeys(reader.named))
    if reader.problems:  # the merge names the top-level file "" in positions
        return [d if d.file else replace(d, file=parsed.file) for d in reader.problems], named
    data, keys, values = flatten(tree)
    merged = replace(
        parsed,
        data=data,
        keys=keys,
        values=values,
        tags={},
        texts=reader.texts,
        imported=reader.shown,
        sealed=(*parsed.sealed, *reader.sealed),
    )
    return merged, named


def repository_root(plan_file: Path) -> Path:
    """The directory imports stay in: the nearest one above `plan_file` (resolved) holding `.git`, else
    the plan file's own directory."""
    directory = Path(os.path.realpath(plan_file)).parent
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return directory


def outside_repository(written: str, root: Path, *, where: str = "") -> str:
    """Why `written` (a path a plan names; `where`: ` (in DIR)` for one a file it reads names) is refused
    for leading outside `root` (`repository_root`), saying what the root is and how to bring it in."""
    if (root / ".git").exists():
        return (
            f"{written!r}{where} leads outside the repository {root} (the nearest directory above the plan file "
            "that holds .git): refused; move what it names inside that directory"
        )
    return (
        f"{written!r}{where} leads outside {root}: refused; no directory above the plan file holds .git, so the "
        "plan file's own directory is the repository root: make the plan's files one git checkout "
        "(`git init` where they all are) or move what it names beside the plan file"
    )


def _imports_anything(parsed: ParsedFile) -> bool:
    return (isinstance(parsed.data, dict) and IMPORTS in parsed.data) or bool(parsed.tags)


def _entry_problems(parsed: ParsedFile, *, fragment: bool) -> list[Diagnostic]:
    """Schema problems of a file about to be merged: a fragment against the fragment schema; the
    top-level file only in its `imports` (everything else is checked once merged)."""
    report = check_schema(parsed, fragment=True)
    if fragment:  # what a `!remove` marks is no value (`DEBUG: !remove` is null): the merge reads it
        removed = [path for path, tag in parsed.tags.items() if tag == "remove"]
        return [d for d in report.diagnostics if not any(_within(d.path, path) for path in removed)]
    return [d for d in report.diagnostics if d.path == IMPORTS or d.path.startswith(f"{IMPORTS}[")]


def _within(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith((f"{ancestor}.", f"{ancestor}["))


@dataclass
class _Reader:
    root: Path
    problems: list[Diagnostic] = field(default_factory=list)
    texts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)  # each fragment's text, secret values masked
    named: list[Path] = field(default_factory=list)  # every file an import names, inside the root
    sealed: list[ParsedFile] = field(default_factory=list)  # fragments with SOPS metadata, as read
    read: int = 0

    def resolve(self, parsed: ParsedFile, name: str, *, chain: tuple[tuple[Path, str], ...]) -> Located:
        """`parsed` (named `name` in positions) over its imports, merged."""
        own = located(parsed, name)
        known = len(self.problems)
        imported = [
            tree
            for path, relative in _import_entries(parsed)
            if (tree := self._fragment(parsed, path, relative, chain)) is not None
        ]
        # An import that did not load (or whose own imports did not) leaves the merge without what it
        # declares: a `!remove` of it would read as removing nothing, so the merge's problems are moot.
        problems = self.problems if len(self.problems) == known else []
        own = without(own, IMPORTS)
        if not imported:
            return override(None, own, "", problems)
        base = imported[0]
        for later in imported[1:]:
            base = join(base, later, own, "", problems)
        return override(base, own, "", problems)

    def _fragment(
        self, parsed: ParsedFile, path: str, relative: str, chain: tuple[tuple[Path, str], ...]
    ) -> Located | None:
        target = self._target(parsed, path, relative)
        if target is None:
            return None
        real = Path(os.path.realpath(target))
        if any(real == earlier for earlier, _ in chain):
            names = " → ".join([*(shown for _, shown in chain), str(target)])
            self.problems.append(parsed.diagnostic(path, f"import cycle: {names}"))
            return None
        self.read += 1
        if self.read > MAX_IMPORTED_FILES:
            self.problems.append(
                parsed.diagnostic(path, f"more than {MAX_IMPORTED_FILES} imported files: refused")
            )
            return None
        fragment = read_plan_file(target)
        if isinstance(fragment, Diagnostic):
            self.problems.append(fragment)
            return None
        fragment = unseal(fragment)
        self.sealed += fragment.sealed
        problems = _entry_problems(fragment, fragment=True)
        if problems:
            self.problems.extend(problems)
            return None
        self.texts[fragment.file] = fragment.lines
        self.shown[fragment.file] = fragment.shown
        return self.resolve(fragment, fragment.file, chain=(*chain, (real, fragment.file)))

    def _target(self, parsed: ParsedFile, path: str, relative: str) -> Path | None:
        """The file `relative` names, or None with the problem told."""
        target = Path(os.path.normpath(Path(parsed.file).parent / relative))  # `a/../b.yaml` as `b.yaml`
        if os.path.isabs(relative):
            problem = f"{relative!r} is absolute: imports are named relative to the importing file"
        elif leaves(target, self.root):
            problem = outside_repository(relative, self.root)
        else:
            self.named.append(target)
            if os.path.lexists(target):
                return target
            problem = f"no such file: {relative!r} (relative to the importing file)"
        self.problems.append(parsed.diagnostic(path, problem))
        return None


def _import_entries(parsed: ParsedFile) -> list[tuple[str, str]]:
    """(path, relative file name) of each import of `parsed` (already schema-checked: strings)."""
    entries: Any = parsed.data.get(IMPORTS) if isinstance(parsed.data, dict) else None
    if not isinstance(entries, list):
        return []
    return [
        (child_path(IMPORTS, index), entry) for index, entry in enumerate(entries) if isinstance(entry, str)
    ]

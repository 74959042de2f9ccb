"""Kustomize directories (`kustomize: [{path}]`): the objects Kustomize renders from a directory beside
the plan, read as the documents of a manifest file are, so they join the plan as `manifestFiles`
objects do (checks, ApplySet membership, diff, ordering, wait, prune, generations).

Kustomize renders, never planner: `kustomize build DIR` when a `kustomize` binary is on PATH, else
`kubectl kustomize DIR` (every machine with kubectl has it). `build` is the one seam to that process.
It runs while the plan loads, so a directory that does not render is a plan error at the entry's
`path` (the plan file's line and column) with Kustomize's own message, before any API call.

Confinement follows `manifestFiles` and `imports`: the path is relative to the file naming it,
absolute paths are refused, and the directory (symlinks followed) may not leave the repository
(`imports.repository_root`). Kustomize itself refuses a file outside a kustomization's directory
(its default load restrictor), but follows `resources`/`bases`/`components` into other directories
and fetches remote ones, so before it runs those references are walked: each must stay in the
repository, and a remote base (a URL, `github.com/...`) is refused — a plan's objects come from its
repository alone. The files of every directory walked are inputs of the plan (`kustomize_files`), so
a controller watching the plan file sees an overlay's change.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from planner.errors import Diagnostic
from planner.plan.imports import outside_repository, repository_root
from planner.plan.input_limits import MAX_FILE_BYTES, read_text
from planner.plan.raw import Node, root
from planner.plan.raw_manifests import leaves
from planner.plan.source import ParsedFile, parse_documents

KUSTOMIZE = "kustomize"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
REFERENCE_FIELDS = ("resources", "bases", "components")
MAX_DIRECTORIES = 200
BUILD_TIMEOUT_SECONDS = 120
_REMOTE = re.compile(
    r"^([a-z][a-z0-9+.-]*://|git::|git@|(github|gitlab|bitbucket)\.(com|org)/)", re.IGNORECASE
)
_KUBECTL_ERROR = re.compile(r'err="(?P<message>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Rendered:
    text: str


@dataclass(frozen=True)
class BuildFailure:
    message: str


def build(directory: Path) -> Rendered | BuildFailure:
    """Kustomize's output for `directory` (multi-document YAML), or its error message."""
    command = [KUSTOMIZE, "build"] if shutil.which(KUSTOMIZE) else ["kubectl", "kustomize"]
    try:
        done = subprocess.run(
            [*command, str(directory)],
            capture_output=True,
            timeout=BUILD_TIMEOUT_SECONDS,
            check=False,
            env={**os.environ, "KUBECONFIG": os.devnull},  # rendering needs no cluster
        )
    except FileNotFoundError:
        return BuildFailure("neither `kustomize` nor `kubectl` is on PATH: install one to render Kustomize")
    except subprocess.TimeoutExpired:
        return BuildFailure(f"`{' '.join(command)}` took over {BUILD_TIMEOUT_SECONDS} s: stopped")
    if done.returncode != 0:
        return BuildFailure(_message(done.stderr.decode("utf-8", "replace")))
    if len(done.stdout) > MAX_FILE_BYTES:
        return BuildFailure(
            f"Kustomize rendered {len(done.stdout):,} bytes, over the limit of {MAX_FILE_BYTES:,}"
        )
    return Rendered(done.stdout.decode("utf-8", "replace"))


def _message(stderr: str) -> str:
    """Kustomize's own words: kubectl wraps them in a log line (`... "command failed" err="..."`)."""
    found = _KUBECTL_ERROR.search(stderr)
    if found is not None:
        return found.group("message").encode().decode("unicode_escape")
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return (lines[-1].removeprefix("Error: ") if lines else "failed with no message").strip()


# --- the plan's entries ------------------------------------------------------------------------------


def kustomized_documents(parsed: ParsedFile, plan: Node, problems: list[Diagnostic]) -> Iterator[ParsedFile]:
    """The rendered documents of each `kustomize` entry, in order; a problem (a path that leaves the
    repository, a remote base, a failed render) goes to `problems` at the entry's `path`."""
    for item, directory in _directories(parsed, plan, problems):
        rendered = build(directory)
        where = item.at("path")
        if isinstance(rendered, BuildFailure):
            problems.append(
                parsed.diagnostic(
                    where, f"Kustomize could not render {item.text('path')!r}: {rendered.message}"
                )
            )
            continue
        documents = parse_documents(f"{directory} (kustomize output)", rendered.text)
        if isinstance(documents, Diagnostic):
            problems.append(
                parsed.diagnostic(where, f"Kustomize rendered unreadable YAML: {documents.message}")
            )
            continue
        yield documents


def kustomize_files_in(parsed: ParsedFile) -> tuple[Path, ...]:
    """The regular files of every directory the Kustomize entries of a parsed plan read: those whose
    change may change what they render."""
    plan = root(parsed.data)
    if plan is None:
        return ()
    real_root = Path(os.path.realpath(repository_root(Path(parsed.file))))
    files: list[Path] = []
    for _, directory in _directories(parsed, plan, []):
        for walked in _walk(directory, real_root, [])[0]:
            files += sorted(file for file in walked.iterdir() if file.is_file())
    return tuple(files)


def _directories(parsed: ParsedFile, plan: Node, problems: list[Diagnostic]) -> Iterator[tuple[Node, Path]]:
    root = Path(os.path.realpath(repository_root(Path(parsed.file))))
    for item in plan.items(KUSTOMIZE):
        path = item.text("path")
        if path is None:
            continue  # the schema check reports it
        base = Path(parsed.file_of(parsed.position(item.path))).parent  # an imported fragment's: its own
        problem = _confined(base / path, path, root)
        if problem is None:
            problem = _walk(base / path, root, [])[1]
        if problem is not None:
            problems.append(parsed.diagnostic(item.at("path"), problem))
            continue
        yield item, base / path


def _confined(directory: Path, written: str, root: Path) -> str | None:
    if _REMOTE.match(written):
        return _remote(written, "")
    if os.path.isabs(written):
        return (
            f"{written!r} is absolute: a Kustomize directory is named relative to the plan file's directory"
        )
    if leaves(directory, root):
        return outside_repository(written, root)
    if not directory.is_dir():
        return f"no such directory: {written!r} (relative to the plan file's directory)"
    if _kustomization(directory) is None:
        return f"{written!r} holds no {' / '.join(KUSTOMIZATION_FILES)}: not a Kustomize directory"
    return None


def _walk(directory: Path, root: Path, seen: list[Path]) -> tuple[list[Path], str | None]:
    """Every directory a kustomization reads through `resources`/`bases`/`components`, itself first,
    or the first problem: a remote reference, or one leading out of the repository."""
    real = Path(os.path.realpath(directory))
    if real in seen:
        return seen, None
    seen.append(real)
    if len(seen) > MAX_DIRECTORIES:
        return seen, f"more than {MAX_DIRECTORIES} Kustomize directories: refused"
    for reference in _references(directory):
        if _REMOTE.match(reference):
            return seen, _remote(reference, f" (in {directory})")
        target = directory / reference
        if leaves(target, root):
            return seen, outside_repository(reference, root, where=f" (in {directory})")
        if target.is_dir():
            _, problem = _walk(target, root, seen)
            if problem is not None:
                return seen, problem
    return seen, None


def _remote(reference: str, where: str) -> str:
    return f"{reference!r}{where} is a remote base: planner renders only what the repository holds"


def _references(directory: Path) -> list[str]:
    """The strings of a kustomization's `resources`, `bases` and `components` (none when it cannot be
    read: Kustomize then says why)."""
    file = _kustomization(directory)
    text = read_text(file, what="kustomization file") if file is not None else None
    if not isinstance(text, str):
        return []
    try:
        data = YAML(typ="safe").load(text)
    except YAMLError:
        return []
    if not isinstance(data, dict):
        return []
    values = [data.get(key) for key in REFERENCE_FIELDS]
    return [item for value in values if isinstance(value, list) for item in value if isinstance(item, str)]


def _kustomization(directory: Path) -> Path | None:
    return next((directory / name for name in KUSTOMIZATION_FILES if (directory / name).is_file()), None)

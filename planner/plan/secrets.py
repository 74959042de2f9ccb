"""Resolving secret values: plain strings, `{valueFrom: {env: VAR}}`, `{valueFrom: {file: PATH}}` and
`{valueFrom: {secretKeyRef: {name, key}}}`; and a chart repository's `credentials.secretRef` (the
`username` and `password` keys of one Secret, read the same way).

Values are read once, at load, so every later stage (render, diff, saved plans) works from the same
bytes. A file path is relative to the plan file's directory and must stay inside it after symlinks are
followed: a plan from a shared repository must not be able to read `~/.ssh` or `/etc`. A file's content
is used verbatim except for one trailing line break ("\\n" or "\\r\\n"), which editors add and which a
password almost never means. A `secretKeyRef` is read from the cluster by the `SecretRefs` the caller
gives (none: it is an error); a Plan object (`local=False`) may use only that form, since the
controller reading it must not hand out its own files or environment. No message ever contains a
secret value, only names and paths.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from planner.errors import Diagnostic
from planner.plan.raw import Node, root
from planner.plan.redact import SECRET_VALUE_MAPS, SECRET_VALUE_TREES
from planner.plan.sealed import Unsealed
from planner.plan.source import ParsedFile, read_plan_file
from planner.sops.plaintext import is_encrypted

# `(namespace, name, key)` -> the value of `key` of the Secret `name` in `namespace` (None: the plan's
# default namespace); raises LookupError saying what is missing (the Secret, the key), never the value.
SecretRefs = Callable[[str | None, str, str], str]
CHART_CREDENTIALS = ("charts", "*", "credentials")
SECRET_REF = "secretRef"
SECRET_REF_KEYS = ("username", "password")  # the keys of the Secret a chart's `credentials.secretRef` names


def unread_secrets(namespace: str | None, name: str, key: str) -> str:
    """`SecretRefs` for a check that asks no cluster (`validate`): every referenced value is empty."""
    return ""


@dataclass(frozen=True)
class _Sources:
    base: Path
    environ: Mapping[str, str]
    refs: SecretRefs | None
    namespace: str | None
    local: bool


def resolve_secrets(
    parsed: ParsedFile,
    environ: Mapping[str, str],
    *,
    refs: SecretRefs | None = None,
    local: bool = True,
    unsealed: Unsealed | None = None,
) -> tuple[dict[str, str], list[Diagnostic]]:
    """Every secret value of the plan by its path (`secrets[0].data.password`), and the problems found.
    `local=False` (a Plan object) refuses `env` and `file`; a SOPS-encrypted value is taken from
    `unsealed` (`sealed.decrypt_sealed`)."""
    resolved: dict[str, str] = {}
    problems: list[Diagnostic] = []
    metadata = parsed.data.get("metadata") if isinstance(parsed.data, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    sources = _Sources(
        Path(parsed.file).parent, environ, refs, namespace if isinstance(namespace, str) else None, local
    )
    for path, value in _secret_values(parsed.data):
        if is_encrypted(value):
            decrypted = (unsealed or Unsealed()).value_at(parsed, path)
            if isinstance(decrypted, Diagnostic):
                problems.append(decrypted)
            elif decrypted is not None:
                resolved[path] = decrypted
            continue
        here = Path(parsed.file_of(parsed.position(path))).parent  # an imported fragment's: its own
        outcome = _resolve(value, replace(sources, base=here))
        if isinstance(outcome, _Problem):
            problems.append(parsed.diagnostic(outcome.path_in(path), outcome.message))
        elif outcome is not None:
            resolved[path] = outcome
        elif isinstance(value, dict):  # a chart's secretValues leaf the schema cannot tell from a tree
            message = "expected exactly one of env, file or secretKeyRef {name, key}"
            problems.append(parsed.diagnostic(f"{path}.valueFrom", message))
    problems += _credentials_from_secrets(parsed, sources, resolved)
    return resolved, problems


def _credentials_from_secrets(
    parsed: ParsedFile, sources: _Sources, resolved: dict[str, str]
) -> list[Diagnostic]:
    """Each chart's `credentials.secretRef` (Flux's form): the `username` and `password` keys of the
    Secret it names, put where written credentials would be (`charts[0].credentials.password`)."""
    problems = []
    for credentials in _maps_at(root(parsed.data), CHART_CREDENTIALS):
        reference = credentials.child(SECRET_REF)
        name = reference.text("name") if reference is not None else None
        if reference is None or name is None:
            continue  # none, or the schema check reports it
        for key in SECRET_REF_KEYS:
            outcome = _from_secret(name, key, sources)
            if isinstance(outcome, _Problem):
                problems.append(parsed.diagnostic(reference.at("name"), outcome.message))
                break
            resolved[credentials.at(key)] = outcome
    return problems


@dataclass(frozen=True)
class _Problem:
    message: str
    suffix: str  # "env", "file" or "secretKeyRef": the valueFrom field the problem is in

    def path_in(self, path: str) -> str:
        return f"{path}.valueFrom.{self.suffix}"


def literal_secret_paths(data: object) -> list[str]:
    """The path of every secret value written literally (not `valueFrom`, not SOPS-encrypted) in a
    plan's data, inline Secret manifests' included."""
    literal = [
        path
        for path, value in _secret_values(data)
        if not isinstance(value, dict) and not is_encrypted(value)
    ]
    return literal + list(_inline_manifest_secret_paths(data))


def _secret_values(data: object) -> Iterator[tuple[str, object]]:
    plan = root(data)
    for location in SECRET_VALUE_MAPS:
        for values in _maps_at(plan, location):
            for key, value in values.data.items():
                if location == CHART_CREDENTIALS and key == SECRET_REF:
                    continue  # names a Secret, not a value: `_credentials_from_secrets`
                yield values.at(key), value
    for location in SECRET_VALUE_TREES:
        for tree in _maps_at(plan, location):
            yield from _tree_values(tree)


def _tree_values(tree: Node) -> Iterator[tuple[str, object]]:
    """The leaves of a tree of secret values (a chart's `secretValues`): every value that is not a
    mapping, or is a `valueFrom` reference."""
    for key, value in tree.data.items():
        if isinstance(value, dict) and "valueFrom" not in value:
            yield from _tree_values(Node(tree.at(key), value))
        else:
            yield tree.at(key), value


def _inline_manifest_secret_paths(data: object) -> Iterator[str]:
    """The values of each inline Secret manifest's `data` and `stringData`, which hold secrets too."""
    plan = root(data)
    for manifest in plan.items("manifests") if plan is not None else ():
        if manifest.data.get("kind") == "Secret":
            for values in filter(None, (manifest.child("data"), manifest.child("stringData"))):
                yield from map(values.at, values.data)


def _maps_at(node: Node | None, location: tuple[str, ...]) -> Iterator[Node]:
    if node is None:
        return
    if not location:
        yield node
        return
    key, *rest = location
    if rest and rest[0] == "*":
        for item in node.items(key):
            yield from _maps_at(item, tuple(rest[1:]))
    else:
        yield from _maps_at(node.child(key), tuple(rest))


def _resolve(value: object, sources: _Sources) -> str | _Problem | None:
    if isinstance(value, str):
        return value
    source = value.get("valueFrom") if isinstance(value, dict) else None
    if not isinstance(source, dict) or len(source) != 1:
        return None  # the schema check reports it
    (form,) = source
    if form in ("env", "file") and not sources.local:
        return _Problem(
            f"valueFrom.{form} cannot be used in a Plan object: the controller reads neither its own "
            "files nor its environment for a plan; use valueFrom.secretKeyRef (a Secret in the plan's "
            "namespace)",
            form,
        )
    if isinstance(source.get("env"), str):
        return _from_env(source["env"], sources.environ)
    if isinstance(source.get("file"), str):
        return _from_file(source["file"], sources.base)
    reference = source.get("secretKeyRef")
    if isinstance(reference, dict) and isinstance(reference.get("name"), str):
        return _from_secret(str(reference["name"]), str(reference.get("key", "")), sources)
    return None


def _from_secret(name: str, key: str, sources: _Sources) -> str | _Problem:
    if sources.refs is None:
        return _Problem(
            f'Secret "{name}" is read from the cluster, and this command reads none', "secretKeyRef"
        )
    try:
        return sources.refs(sources.namespace, name, key)
    except LookupError as missing:
        return _Problem(str(missing.args[0] if missing.args else missing), "secretKeyRef")


def _from_env(variable: str, environ: Mapping[str, str]) -> str | _Problem:
    if variable not in environ:
        return _Problem(f"environment variable {variable} is not set", "env")
    return environ[variable]


def secret_files(path: Path) -> tuple[Path, ...]:
    """The files the plan file at `path` reads secret values from (`valueFrom.file`), as it names them
    under its directory (so a read follows a symlink swapped since, as a mounted Secret volume's are);
    those that would leave the directory are left out, as the loader refuses them, and there are none
    when the file cannot be read as YAML (its problem is the loader's to tell). Whoever watches a plan
    file for changes watches these too (`load.input_files`, which also reads its imports)."""
    parsed = read_plan_file(path)
    return () if isinstance(parsed, Diagnostic) else secret_files_in(parsed)


def secret_files_in(parsed: ParsedFile) -> tuple[Path, ...]:
    """`secret_files` of a parsed plan: one merged from imports names each file beside the fragment
    that set the value."""
    found: dict[Path, None] = {}
    for path, value in _secret_values(parsed.data):
        source = value.get("valueFrom") if isinstance(value, dict) else None
        relative = source.get("file") if isinstance(source, dict) else None
        base = Path(parsed.file_of(parsed.position(path))).parent
        if isinstance(relative, str) and not isinstance(_contained(relative, base), _Problem):
            found[base / relative] = None
    return tuple(found)


def _contained(relative: str, base: Path) -> Path | _Problem:
    """Where `relative` leads once symlinks are followed, if that is inside `base`."""
    directory = Path(os.path.realpath(base))  # realpath, not resolve: a symlink loop is no traceback
    target = Path(os.path.realpath(base / relative))
    if not target.is_relative_to(directory):
        written = Path(os.path.normpath(directory / relative))
        how = "resolves (through a symlink) to a path" if written.is_relative_to(directory) else "is"
        return _Problem(f'secret file "{relative}" {how} outside the plan file\'s directory', "file")
    return target


def _from_file(relative: str, base: Path) -> str | _Problem:
    target = _contained(relative, base)
    if isinstance(target, _Problem):
        return target
    if not target.exists():
        return _Problem(
            f'secret file "{relative}" does not exist (relative to the plan file\'s directory)', "file"
        )
    if not target.is_file():
        return _Problem(f'secret file "{relative}" is not a regular file', "file")
    try:
        content = target.read_bytes().decode("utf-8")  # bytes first: keep "\r\n" as written
    except UnicodeDecodeError:
        return _Problem(f'secret file "{relative}" is not UTF-8 text', "file")
    except OSError as error:
        return _Problem(f'cannot read secret file "{relative}": {error.strerror}', "file")
    return _strip_one_line_break(content)


def _strip_one_line_break(content: str) -> str:
    if content.endswith("\r\n"):
        return content[:-2]
    return content[:-1] if content.endswith("\n") else content

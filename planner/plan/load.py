"""Loading plans: files or directories in, checked and normalised `Plan`s out, or every problem at once.

Each file goes through the same steps: parse (YAML syntax, one document), imports merged in
(`imports.py`; a problem there stops the file), schema check, semantic checks,
secret resolution; only a file with no errors is built into the model. Problems from all files are
collected and raised together as one PlanError, sorted in file order, so a user fixes a plan in one
pass. Warnings (a `user` that cannot be mapped) never fail a load; they come back with the plans.

Which files, in which order — one rule for every command that takes plan paths (`find_plan_files`):
a file named is taken as it is. A directory is walked recursively, skipping directories whose names
start with `.` (`.git`, a ConfigMap volume's `..data`) and not following symlinked directories, for
`*.yaml`/`*.yml` files that say they are plans: a top-level `kind: Plan` or `apiVersion: planner.dev/…`
line. Other YAML (Kubernetes manifests, CI configuration, Helm values) is left alone, while a plan with
a misspelt `kind` is still found and reported. Files are taken in path order, component by component
(`a/z.yaml` before `b.yaml`), each once however often it is named. A `*.yaml` that is no readable
regular file (a symlink loop, a FIFO, a device, no permission) is kept, so loading reports it — one
diagnostic with its path — while the others load; no file is read past the size limit plus one byte.

A Plan object from the API (`load_plan_object`) is written out as YAML — its plan fields, `metadata`
cut to name and namespace, no `status` — and goes through the same steps as a file named
`plan/NAME -n NS`, its secrets only from Secrets in its namespace. The plan of a Plan object with a Git
source (`load_checkout_plan`) is a file of the fetched tree, loaded as a file is — imports and
manifest files inside the repository — but with the object's name and namespace and, as any Plan
object, secrets only from its namespace's Secrets; it is named in diagnostics by its path in the
repository.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from planner.errors import Diagnostic, PlanError
from planner.plan.build import build_plan
from planner.plan.charted import CHARTS, chart_documents, chart_files_in
from planner.plan.git_source import SOURCE, SOURCE_IN_FILE
from planner.plan.helm_engine import Capabilities
from planner.plan.imports import IMPORTS, imports_and_files, resolve_imports
from planner.plan.input_limits import read_capped
from planner.plan.kustomized import KUSTOMIZE, kustomize_files_in, kustomized_documents
from planner.plan.model import ChartRelease, Plan
from planner.plan.raw import Node
from planner.plan.raw_manifests import (
    manifest_diagnostics,
    manifest_files_in,
    raw_manifests,
    read_manifests,
)
from planner.plan.schema_check import check_schema
from planner.plan.sealed import decrypt_sealed
from planner.plan.secrets import SecretRefs, resolve_secrets, secret_files_in
from planner.plan.source import ParsedFile, parse_plan_text, plan_yaml, read_plan_file
from planner.plan.validate import semantic_diagnostics
from planner.sops.keys import KeySource, SopsKeys, environment_keys

PLAN_SUFFIXES = (".yaml", ".yml")
SAYS_IT_IS_A_PLAN = re.compile(
    r"^(kind:\s*[\"']?Plan[\"']?|apiVersion:\s*[\"']?planner\.dev/\S*)\s*(#.*)?$", re.MULTILINE
)


NO_IMPORTS_IN_OBJECTS = (
    "a Plan object cannot import files (the cluster has no repository to read them from): "
    "write the merged plan into the object instead"
)
NO_KUSTOMIZE_IN_OBJECTS = (
    "a Plan object cannot name Kustomize directories (the cluster has no repository to read them from): "
    "render them into `manifests` instead"
)
NO_CHARTS_IN_OBJECTS = (
    "a Plan object cannot name charts (the cluster has no repository to read them from): "
    "render them into `manifests` instead"
)


def no_object_keys() -> SopsKeys:
    """A Plan object without `decryption`: no keys, and how to give them."""
    return SopsKeys(
        (),
        ("the Plan's decryption (none)",),
        hint="name a Secret of the Plan's namespace holding the age key (a key ending in .agekey) in "
        "decryption: {provider: sops, secretRef: {name: SECRET}}",
        pgp_hint="name a Secret of the Plan's namespace holding the armored PGP secret key (a key ending "
        "in .asc) in decryption: {provider: sops, secretRef: {name: SECRET}}",
    )


@dataclass(frozen=True)
class LoadResult:
    plans: tuple[Plan, ...]
    warnings: tuple[Diagnostic, ...] = ()


def load_plans(
    paths: Sequence[str | Path],
    *,
    environ: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    secret_refs: SecretRefs | None = None,
    sops_keys: KeySource | None = None,
    capabilities: Callable[[], Capabilities] = Capabilities,
) -> LoadResult:
    """Load every plan in `paths` (files, or directories meaning the plan files under them, as
    `find_plan_files` finds them).

    `environ` is where `{valueFrom: {env: VAR}}` secrets are looked up (default: os.environ),
    `secret_refs` reads `{valueFrom: {secretKeyRef: ...}}` (none: such a value is an error);
    `sops_keys` opens SOPS-encrypted files (default: the age keys where sops looks for them, in
    `environ`, and the gpg keyring; `unread_keys` for a check that reads no secret values);
    `capabilities` says what the target cluster serves, for Helm's `.Capabilities` (asked only when a
    plan has charts; the default: Helm's own defaults, as `helm template` without a cluster);
    `progress(done, total)` hears of each file loaded. Raises PlanError with every error diagnostic
    when any file has one.
    """
    files, problems = _plan_files(paths)
    given = os.environ if environ is None else environ
    keys = environment_keys(given) if sops_keys is None else sops_keys
    plans: list[tuple[Plan, ParsedFile]] = []
    warnings: list[Diagnostic] = []
    for loaded, file in enumerate(files):
        if progress is not None:
            progress(loaded, len(files))
        parsed = read_plan_file(file)
        plan, found = _load_parsed(parsed, given, secret_refs, keys, capabilities=capabilities)
        problems.extend(found_error for found_error in found if found_error.severity == "error")
        warnings.extend(found_warning for found_warning in found if found_warning.severity == "warning")
        if plan is not None:
            plans.append(plan)
    problems.extend(_same_plan_names(plans))
    if problems:
        raise PlanError(problems)
    return LoadResult(plans=tuple(plan for plan, _ in plans), warnings=tuple(sorted(warnings)))


def input_files(path: Path) -> tuple[Path, ...]:
    """Every file besides itself that the plan file at `path` reads: the fragments it imports (also one
    that does not load or does not exist yet: its change may make the plan load), then the secret and
    manifest files, the files of the Kustomize directories and the charts and values files of the
    merged plan (of the file alone when
    its imports do not merge). Whoever watches a plan file for changes watches these too; none when the
    file cannot be read."""
    parsed = read_plan_file(path)
    if isinstance(parsed, Diagnostic):
        return ()
    merged, fragments = imports_and_files(parsed)
    read = merged if isinstance(merged, ParsedFile) else parsed
    inputs = (
        *fragments,
        *secret_files_in(read),
        *manifest_files_in(read),
        *kustomize_files_in(read),
        *chart_files_in(read),
    )
    return tuple(dict.fromkeys(inputs))


def find_plan_files(paths: Sequence[str | Path]) -> list[Path]:
    """Every plan file under `paths`, by the rule in the module docstring. A path that does not exist is
    passed on as it is (loading it says so)."""
    return _once_each(file for given in paths for file in _plan_files_at(Path(given)))


def _plan_files(paths: Sequence[str | Path]) -> tuple[list[Path], list[Diagnostic]]:
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for path in map(Path, paths):
        found = _plan_files_at(path)
        if not os.path.lexists(path):  # a symlink loop exists; reading it says what it is
            problems.append(Diagnostic(str(path), 1, 1, "", "no such file or directory"))
        elif not found:
            problems.append(
                Diagnostic(
                    str(path),
                    1,
                    1,
                    "",
                    "no plan files (*.yaml, *.yml declaring kind: Plan) under this directory",
                )
            )
        else:
            files.extend(found)
    return _once_each(files), problems


def _plan_files_at(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    files = []
    for root, directories, names in os.walk(path):
        directories[:] = [d for d in directories if not d.startswith(".")]
        files += [Path(root) / name for name in names if Path(name).suffix in PLAN_SUFFIXES]
    return sorted((f for f in files if _says_it_is_a_plan(f)), key=lambda f: f.relative_to(path).parts)


def _says_it_is_a_plan(file: Path) -> bool:
    try:
        _, head = read_capped(file)
    except OSError:
        return True  # unreadable, a symlink loop, a FIFO or a device: loading it says which, once
    return SAYS_IT_IS_A_PLAN.search(head.decode(errors="replace")) is not None


def _once_each(files: Iterable[Path]) -> list[Path]:
    """Each file once, the first mention kept, even when named twice (`plans/ plans/web.yaml`)."""
    found: dict[Path, Path] = {}
    for file in files:
        found.setdefault(Path(os.path.realpath(file)), file)  # a symlink loop is no error here
    return list(found.values())


def plan_object_source(namespace: str, name: str) -> str:
    """How diagnostics and records name a Plan object: `plan/NAME -n NS`, as kubectl would address it."""
    return f"plan/{name} -n {namespace}"


def plan_object_text(obj: Mapping[str, object]) -> str:
    """A Plan object as the plan file it stands for: its fields but `status`, `metadata` cut to name and
    namespace, written out as YAML by libyaml's emitter (ruamel's own took a twelfth of a controller's
    CPU at 1,000 Plans, three times libyaml's)."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    document: dict[str, object] = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {key: metadata[key] for key in ("name", "namespace") if key in metadata},
    }
    document.update((key, value) for key, value in obj.items() if key not in (*document, "status"))
    yaml = plan_yaml(pure=False)
    yaml.default_flow_style = False
    text = io.StringIO()
    yaml.dump(document, text)
    return text.getvalue()


def load_plan_object(
    obj: Mapping[str, object], *, secret_refs: SecretRefs, sops_keys: KeySource | None = None
) -> LoadResult:
    """A Plan object from the API, checked and built as a file is (`secret_refs` reads its secretKeyRefs
    in its namespace, `sops_keys` gives the keys its `decryption` names; `env` and `file` values are
    refused). Raises PlanError with every problem."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    name = plan_object_source(str(metadata.get("namespace", "")), str(metadata.get("name", "")))
    parsed = parse_plan_text(name, plan_object_text(obj))
    keys = no_object_keys if sops_keys is None else sops_keys
    plan, found = _load_parsed(parsed, {}, secret_refs, keys, local=False)
    problems = [each for each in found if each.severity == "error"]
    if problems or plan is None:
        raise PlanError(problems)
    warnings = tuple(sorted(each for each in found if each.severity == "warning"))
    return LoadResult(plans=(plan[0],), warnings=warnings)


def load_checkout_plan(
    root: Path,
    path: str,
    *,
    name: str,
    namespace: str,
    service_account: str | None,
    secret_refs: SecretRefs,
    sops_keys: KeySource = no_object_keys,
    capabilities: Callable[[], Capabilities] = Capabilities,
) -> LoadResult:
    """The plan file at `path` in a fetched Git source's tree `root`, as the Plan object `name` in
    `namespace` reconciled as `service_account` (the object's say, not the file's): its secretKeyRefs
    read by `secret_refs`, its SOPS-encrypted files opened with `sops_keys` (their MACs checked: they
    are files as sops wrote them), `env` and `file` values refused; its charts rendered with the
    `.Capabilities` that `capabilities` gives (asked only when it has charts), as `load_plans`'s.
    Raises PlanError with every problem, each file named by its path in the repository."""
    parsed = read_plan_file(root / path)
    plan, found = _load_parsed(
        parsed, {}, secret_refs, sops_keys, local=False, checkout=True, capabilities=capabilities
    )
    prefix = f"{root}/"

    def in_repository(found: Diagnostic) -> Diagnostic:  # the checkout's place is the controller's own
        message = found.message.replace(prefix, "").replace(str(root), "<repository>")
        return replace(found, file=found.file.removeprefix(prefix), message=message)

    problems = [in_repository(d) for d in found if d.severity == "error"]
    if problems or plan is None:
        raise PlanError(problems)
    loaded, _ = plan
    source = loaded.source
    renamed = replace(
        source,
        file=source.file.removeprefix(prefix),
        imported={file.removeprefix(prefix): text for file, text in source.imported.items()},
    )
    warnings = tuple(sorted(in_repository(d) for d in found if d.severity == "warning"))
    return LoadResult(
        plans=(
            replace(
                loaded, name=name, namespace=namespace, service_account_name=service_account, source=renamed
            ),
        ),
        warnings=warnings,
    )


def _load_parsed(
    parsed: ParsedFile | Diagnostic,
    environ: Mapping[str, str],
    secret_refs: SecretRefs | None,
    sops_keys: KeySource,
    *,
    local: bool = True,
    capabilities: Callable[[], Capabilities] = Capabilities,
    checkout: bool = False,
) -> tuple[tuple[Plan, ParsedFile] | None, list[Diagnostic]]:
    if isinstance(parsed, Diagnostic):
        return None, [parsed]
    if not local and not checkout and isinstance(parsed.data, dict):
        refused = (
            (IMPORTS, NO_IMPORTS_IN_OBJECTS),
            (KUSTOMIZE, NO_KUSTOMIZE_IN_OBJECTS),
            (CHARTS, NO_CHARTS_IN_OBJECTS),
        )
        found = [parsed.diagnostic(key, why, at_value=False) for key, why in refused if key in parsed.data]
        if found:
            return None, found
    if (local or checkout) and isinstance(parsed.data, dict) and SOURCE in parsed.data:
        return None, [parsed.diagnostic(SOURCE, SOURCE_IN_FILE, at_value=False)]
    merged = resolve_imports(parsed)
    if isinstance(merged, list):
        return None, merged
    parsed = merged
    schema = check_schema(parsed)
    found, broken = list(schema.diagnostics), schema.broken
    found += [item for item in semantic_diagnostics(parsed) if not _inside(item.path, broken)]
    # A file's MAC covers it as sops wrote it; a Plan object's fields come back in the API server's order.
    unsealed, sealed_problems = decrypt_sealed(parsed, sops_keys, check_mac=local or checkout)
    if sealed_problems:  # nothing is read from the cluster for a plan that cannot be decrypted
        return None, found + sealed_problems
    secrets, secret_problems = resolve_secrets(
        parsed, environ, refs=secret_refs, local=local, unsealed=unsealed
    )
    found += [item for item in secret_problems if not _inside(item.path, broken)]
    charts: list[ChartRelease] = []

    def rendered(
        parsed: ParsedFile, plan: Node, problems: list[Diagnostic]
    ) -> Iterator[tuple[ParsedFile, str]]:
        yield from ((documents, "") for documents in kustomized_documents(parsed, plan, problems))
        if plan.data.get(CHARTS):
            output = chart_documents(parsed, plan, problems, capabilities(), secrets)
            charts.extend(output.releases)
            yield from output.documents

    entries, manifest_problems = read_manifests(parsed, rendered)
    found += manifest_problems
    found += [item for item in manifest_diagnostics(parsed, entries) if not _inside(item.path, broken)]
    if any(diagnostic.severity == "error" for diagnostic in found):
        return None, found
    built = build_plan(parsed, secrets, manifests=raw_manifests(entries), charts=tuple(charts))
    return (built, parsed), found


def _inside(path: str, broken: frozenset[str]) -> bool:
    """Whether `path` is, or is under, a node the schema check already reported."""
    return any(path == bad or path.startswith((f"{bad}.", f"{bad}[")) for bad in broken if bad)


def _same_plan_names(plans: list[tuple[Plan, ParsedFile]]) -> Iterator[Diagnostic]:
    first: dict[str, ParsedFile] = {}
    for plan, parsed in plans:
        earlier = first.setdefault(plan.name, parsed)
        if earlier is not parsed:
            where = earlier.position("metadata.name")
            yield parsed.diagnostic(
                "metadata.name",
                f'plan "{plan.name}" is also defined in {earlier.file_of(where)}:{where.line}:{where.column}: '
                "a plan name owns one ApplySet, so each plan file needs its own name",
            )

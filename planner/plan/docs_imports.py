"""The "Imports and merging" section of docs/plan-format.md: how `imports` and the merge behave
(planner/plan/imports.py, planner/plan/merge.py), written beside the generator (docs.py), which puts it
after the intro. Its examples are loaded by tests/unit/test_plan_imports.py's doc test."""

from __future__ import annotations

IMPORTS_SECTION = """\
## Imports and merging

A plan may import plan fragments: files with the plan's shape in which nothing is required, merged into
it before anything is checked. One base and a small file per environment is the usual use:

```yaml
# base.yaml: a fragment (no apiVersion, kind or metadata needed)
workloads:
  - name: web
    image: nginx:1.27
    replicas: 1
    env: {LOG: info, DEBUG: "1"}
  - name: worker
    image: busybox:1.36
```

```yaml
# environments/prod.yaml: the plan
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: shop-prod}
imports: [../base.yaml]
workloads:
  - name: web
    replicas: 3          # wins over base.yaml's 1
    env:
      DEBUG: !remove     # base.yaml's DEBUG is not inherited
  - !remove {name: worker}
```

The merged plan has one workload, `web`, with image `nginx:1.27` (from base.yaml), 3 replicas and
`env: {LOG: info}`. This example needs a git checkout: `../base.yaml` is above the plan file, which is
inside the repository only when a directory above both holds `.git` (below). Outside one the import is
refused (`'../base.yaml' leads outside …/environments: refused; no directory above the plan file holds
.git, …`): `git init` where both files are, or keep the base beside the plan.

- **Where imports are read from**: paths relative to the importing file, never absolute, and never
  leading (symlinks followed) outside the repository: the nearest directory above the plan file holding
  `.git`, else the plan file's own directory (so outside a git checkout a plan imports only files beside
  or below it; `manifestFiles`, `kustomize` and chart directories stay inside the same root). A fragment may import others; a file that comes to import
  itself is refused with the chain (`plan.yaml → a.yaml → b.yaml → a.yaml`). At most 100 files are read
  for one plan. A fragment's own `manifestFiles` and `valueFrom.file` are relative to the fragment.
- **Mappings** merge key by key (`env`, `labels`, `metadata`, a workload itself).
- **Lists of named things** merge entry by entry: `workloads`, `sandboxes`, `warmPools`, `configMaps`,
  `secrets`, `volumeClaims`, `charts` (a chart's `values` merge key by key, as an environment sets its
  own over a base) and a workload's `sidecars` and `initContainers` by `name`; `manifests` by
  apiVersion, kind, `metadata.namespace` and `metadata.name`. Inherited entries keep their order; new
  ones follow them. **Every other list** (`command`, `volumes`, `dependsOn`, `imports`…) **and every
  scalar is replaced** as a whole.
- **The importing file wins** over everything it imports, at any depth.
- **Two imports of one file that set a value differently are an error** naming both places, unless
  exactly one of them marks its value `!default` (a `!default` on a mapping or list marks everything
  under it), or the importing file sets that value itself. A value one import overrides and the other
  merely inherits from a file both import (a shared base) is no disagreement: the override stands.

  ```
  environments/b.yaml:4:15: workloads[0].replicas: 4 conflicts with 2 set at environments/a.yaml:4:15 (both imported by one file): set it in the importing file, or mark one of them !default
  ```

- **Removing** an inherited entry or key: `!remove` on a named entry (`- !remove {name: worker}`, a
  manifest by its apiVersion, kind and metadata) or on a mapping value (`DEBUG: !remove`, in flow style
  `{DEBUG: !remove ~}`). Removing what no import declares is an error.
- **Errors name the file that set the value**: the merged plan is checked as one plan file is, and a bad
  value inherited from a fragment is reported at that fragment's line and column. Each fragment is first
  checked on its own against the schema with nothing required.
- **Every imported file is an input** of the plan, as the plan file is: a generation records each one's
  text (secret values masked) and sha256 (`inputs`, history.md), `diff-generations` names the input file
  that changed, the revision is `-dirty` when any of them differs from git's HEAD, and the controller's
  `--plans` reads a plan again when a file it imports changes (or one it names comes to exist).
- A **Plan object** cannot import (the cluster has no repository to read from): its `imports` is refused
  in its status; apply the merged plan instead: `planner build FILE | kubectl apply -f -` (cli.md).
- Directories are walked for plan files by their `kind: Plan` or `apiVersion: planner.dev/…` line, so a
  fragment without those lines is never loaded as a plan of its own.
"""

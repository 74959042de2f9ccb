# planner: the two commands a fresh machine needs are `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Two workers per CPU: most tests wait on an embedded cluster or a subprocess, so one per CPU leaves the
# machine half idle (on 2 CPUs: 12 min with 2 workers, 6.5 min with 4).
PYTEST_WORKERS ?= $(shell $(PY) -c "import os; print(2 * (os.cpu_count() or 1))")
# worksteal: a worker that runs out takes queued tests from a busy one, so a few slow e2e tests left
# at the end of one worker's queue do not run alone (the suite took 10 min with `load`, 5 with this).
PYTEST_XDIST = -n $(PYTEST_WORKERS) --dist worksteal

.PHONY: test demo lint typecheck layers unit e2e conformance real docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,charts]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check planner tests bench scripts
	$(BIN)/ruff format --check planner tests bench scripts

typecheck: $(STAMP)
	$(BIN)/mypy --strict planner

layers: $(STAMP)
	$(BIN)/lint-imports

test: lint typecheck layers
	$(BIN)/python -m pytest $(PYTEST_XDIST) -q

# The folder says the speed: tests/unit (pure, well under a minute), tests/e2e (embedded clusters),
# tests/conformance (real kubectl against an embedded cluster), tests/real (a real kube-apiserver
# v1.28.7 control plane from ../shared/k8s-bin, one for the whole run; `make test` runs it when that
# folder exists and skips it, saying why, when not).
unit: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_XDIST) -q tests/unit

e2e: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_XDIST) -q tests/e2e

conformance: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_XDIST) -q tests/conformance

real: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_XDIST) -q tests/real

docs: $(STAMP)
	$(BIN)/python -m planner.plan.docs > docs/plan-format.md
	$(BIN)/planner crd > deploy/crd.yaml

# The demo: an embedded cluster (state in memory, files under .planner/demo), then plan, apply and a
# second plan that must find nothing to do, kubectl's view of the result, and the cluster stopped again
# whatever happened. Exits non-zero when any step failed.
DEMO_DATA := .planner/demo
DEMO_ENV := KUBECONFIG=$(CURDIR)/$(DEMO_DATA)/kubeconfig
DEMO_NAMESPACES := fidelity notes sandboxes shop shop-staging shop-production
# The example plans, and the two environments over one base side by side (plans/envs/).
DEMO_PLANS := plans/*.yaml plans/envs/

demo: $(STAMP)
	$(BIN)/planner validate plans/
	$(BIN)/planner cluster reset --data $(DEMO_DATA)
	$(BIN)/planner cluster up --memory --data $(DEMO_DATA)
	@status=0; \
	$(DEMO_ENV) $(BIN)/planner plan $(DEMO_PLANS) || status=1; \
	[ $$status -ne 0 ] || $(DEMO_ENV) $(BIN)/planner apply $(DEMO_PLANS) || status=1; \
	[ $$status -ne 0 ] || $(DEMO_ENV) $(BIN)/planner plan --detailed-exitcode $(DEMO_PLANS) || status=1; \
	if command -v kubectl >/dev/null; then \
	  for ns in $(DEMO_NAMESPACES); do \
	    echo "--- kubectl get -n $$ns"; \
	    $(DEMO_ENV) kubectl get deployments,statefulsets,jobs,cronjobs,pods,services,ingresses,hpa,pdb,persistentvolumeclaims -n $$ns || status=1; \
	  done; \
	else echo "kubectl not found: skipping kubectl get"; fi; \
	$(BIN)/planner cluster down --data $(DEMO_DATA); \
	exit $$status

# Mermaid's own renderer, for the test that renders `plan --graph -o mermaid` in a real browser: the
# package's self-contained bundle only (one tarball, not its dependency tree).
MERMAID_VERSION := 11.12.0
.cache/mermaid.min.js:
	mkdir -p .cache/npm
	cd .cache/npm && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null
	tar -xzf .cache/npm/mermaid-$(MERMAID_VERSION).tgz -C .cache/npm package/dist/mermaid.min.js
	mv .cache/npm/package/dist/mermaid.min.js $@
	rm -rf .cache/npm

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist

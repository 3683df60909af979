# dpkit — two commands: `make run` and `make test`. `make help` lists all targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.dpkit-installed
RESULTS := results
LOCK   := requirements.lock
export MPLBACKEND := Agg
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.DEFAULT_GOAL := help
.PHONY: help venv lock run test test-fast docs docs-quick lab bench bench-quick smoke reproduce tables leaderboard leaderboard-aim board-publish board-refresh checks-publish board board-add status false-alarms collect data-list clean distclean

help: ## list targets, then the switches they take (make TARGET NAME=value)
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "switches (make TARGET NAME=value; the lines '#: NAME' of the Makefile):"
	@grep -hE '^#: [A-Z_]+' $(MAKEFILE_LIST) | sed -E 's/^#: ([A-Z_]+)[[:space:]]+/\1\t/' | awk -F'\t' '{printf "  %-20s %s\n", $$1, $$2}'

# The venv is installed from the lock (every package pinned, with hashes), then dpkit itself without dependencies.
$(STAMP): $(LOCK) pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r $(LOCK)
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -c "import dpkit, papermill, ipykernel, scipy, sklearn, diffprivlib, mbi, dp_accounting"
	@python3 tools/notebook_clean.py --install-git-filter
	@touch $(STAMP)

venv: $(STAMP) ## create .venv from requirements.lock (dpkit with notebook, test, baseline and marginal extras); notebooks staged without outputs (git filter)
	@python3 tools/notebook_clean.py --install-git-filter

# `make lock` keeps the current pins where pyproject.toml still allows them; `make lock UPGRADE=1` takes the newest.
# uv runs from its own small venv (.venv-lock), never from .venv.
#: UPGRADE     lock: UPGRADE=1 takes the newest versions pyproject.toml allows (default: keep the current pins)
UV_VERSION := 0.13.9
LOCK_VENV  := .venv-lock
lock: ## regenerate requirements.lock from pyproject.toml's `all` extra (uv; Linux x86-64, Python 3.11; UPGRADE=1)
	@test -x $(LOCK_VENV)/bin/uv || { $(PYTHON) -m venv $(LOCK_VENV) && $(LOCK_VENV)/bin/python -m pip install -q "uv==$(UV_VERSION)"; }
	$(LOCK_VENV)/bin/uv pip compile pyproject.toml --extra all --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
		--generate-hashes -o $(LOCK)$(if $(filter 1,$(UPGRADE)), --upgrade,)

run: $(STAMP) ## run the main job: notebooks/00_quickstart.ipynb headless on WDBC -> results/quickstart/
	$(BIN)/python -m dpkit.batch notebook notebooks/00_quickstart.ipynb --output $(RESULTS)/quickstart --replace
	@echo "executed notebook, metrics.json and figures in $(RESULTS)/quickstart/"

test: $(STAMP) ## lint (ruff), the doctests and the whole test suite (statistical, notebooks in QUICK mode, the quick docs build with -W)
	$(BIN)/ruff check dpkit tests benchmarks tools docs
	$(BIN)/python -m pytest -n 2 -q --durations=15 --doctest-modules dpkit tests --ignore-glob="*/__main__.py"

test-fast: $(STAMP) ## unit tests only (skip notebook executions)
	$(BIN)/python -m pytest -n 2 -q -m "not notebook"

# The documentation site (docs/build.py stages docs/ with the generated pages and runs sphinx -W): `make docs` runs
# every notebook in QUICK mode first (docs/_build/notebooks/) and renders the runs; `make docs BATCH=results/batch/full`
# renders a batch folder's runs instead; `make docs-quick` executes no notebook (the build tests/test_docs.py checks).
# BOARD=records.parquet, TABLES=assembled folder, CHECKS=checks summary .md: other result files than the defaults.
#: BATCH       docs: render a batch folder's runs instead of executing the notebooks (BATCH=results/batch/full, or a name under results/batch/); collect: the batch to merge (full, smoke, tables)
#: TABLES      docs, docs-quick: another assembled Tables 3.2/3.3 folder (default data/tables/, the published results)
#: CHECKS      docs, docs-quick: another checks summary .md (default results/batch/full/checks_summary.md, from make reproduce)
DOCS_OUT := docs/_build
DOCS_ARGS = $(if $(BOARD),--board $(BOARD),) $(if $(TABLES),--tables $(TABLES),) $(if $(CHECKS),--checks $(CHECKS),)
DOCS_BATCH = $(if $(filter command line environment,$(origin BATCH)),$(if $(findstring /,$(BATCH)),$(BATCH),$(RESULTS)/batch/$(BATCH)),)
docs: $(STAMP) ## the documentation site -> docs/_build/html, notebooks executed in QUICK mode (BATCH=results/batch/full: a batch's runs)
	$(BIN)/python docs/build.py --out $(DOCS_OUT) $(if $(DOCS_BATCH),--notebooks $(DOCS_BATCH),--execute) $(DOCS_ARGS)
	@echo "the site: $(DOCS_OUT)/html/index.html"

docs-quick: $(STAMP) ## the documentation site without executing notebooks (their pages say so; what make test builds)
	$(BIN)/python docs/build.py --out $(DOCS_OUT) $(DOCS_ARGS)
	@echo "the site: $(DOCS_OUT)/html/index.html"

#: PORT        lab: the port of JupyterLab (default 8888)
#: NO_BROWSER  lab: NO_BROWSER=1 opens no browser (print the URL only)
PORT ?= 8888
NO_BROWSER ?= 0
# make lab: the notebooks' figures inline (the Agg backend exported above is for headless runs: it is not passed to
# the kernels), and every save (by hand or autosave) writes the notebook without outputs (tools/jupyter/: a pre-save
# hook added to the user's own Jupyter configuration through JUPYTER_CONFIG_PATH)
LAB_ENV = env -u MPLBACKEND JUPYTER_CONFIG_PATH=$(CURDIR)/tools/jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH),)
lab: $(STAMP) ## JupyterLab with working widgets and inline figures, notebooks saved without outputs (make lab PORT=8899 NO_BROWSER=1; --allow-root when run as root)
	@python3 tools/notebook_clean.py --install-git-filter
	$(LAB_ENV) $(BIN)/jupyter lab notebooks/ --port=$(PORT) $(if $(filter 1,$(NO_BROWSER)),--no-browser,) \
		$(if $(filter 0,$(shell id -u)),--allow-root,)

bench: $(STAMP) ## full benchmarks -> results/bench.{json,md}; truth stage + projected full-table time -> results/bench_truth.json; class supremum vs workload evaluation -> results/bench_supremum.json; its certified upper bound on real releases (cost vs a board repetition, upper/sup_abs) -> results/bench_supremum_upper.json; Tables 3.2/3.3 repetitions on 1 vs 2 Dask workers -> results/bench_dask.json
	$(BIN)/python -m benchmarks.bench --out $(RESULTS)
	$(BIN)/python -m benchmarks.bench_truth --datasets CSN CRM CTG PKS WDBC --tables --out $(RESULTS)/bench_truth.json
	$(BIN)/python -m benchmarks.supremum --json $(RESULTS)/bench_supremum.json
	$(BIN)/python -m benchmarks.supremum_upper --json $(RESULTS)/bench_supremum_upper.json
	$(BIN)/python -m benchmarks.dask_scaling --json $(RESULTS)/bench_dask.json

bench-quick: $(STAMP) ## a benchmark subset in about a minute -> results/bench.json
	$(BIN)/python -m benchmarks.bench --quick --out $(RESULTS)

smoke: $(STAMP) ## every notebook once in QUICK mode through the batch runner (a few minutes); then the checks table
	@status=0; \
	$(BIN)/python -m dpkit.batch run notebooks/manifests/smoke.yaml --output $(RESULTS)/batch/smoke $(STALE_ARG) || status=$$?; \
	$(BIN)/python -m dpkit.batch.checks $(RESULTS)/batch/smoke --out $(RESULTS)/batch/smoke/checks_summary || status=$$?; \
	exit $$status

reproduce: $(STAMP) ## the thesis's tables and figures and every check at full size (full.yaml; the leaderboard is make leaderboard) on a local Dask cluster; resumable; fails if any run or check failed (REQUIRE_DATA=1: or a data set is unavailable)
	@status=0; \
	$(BIN)/python -m dpkit.batch run $(FULL_MANIFEST) --output $(RESULTS)/batch/full $(STALE_ARG) $(DATA_ARG) || status=$$?; \
	$(BIN)/python -m dpkit.batch collect $(RESULTS)/batch/full || status=$$?; \
	$(BIN)/python -m dpkit.batch.checks $(RESULTS)/batch/full --out $(RESULTS)/batch/full/checks_summary || status=$$?; \
	if [ $$status -eq 0 ]; then $(BIN)/python -m dpkit.batch.assemble tables $(RESULTS)/batch/full --paper-figures || status=$$?; \
	else echo "reproduce: failed runs or checks (listed above): tables not assembled; fix and re-run (finished runs are kept)"; fi; \
	if [ $$status -eq 0 ]; then echo "reproduce: make checks-publish publishes the checks to data/checks/ (the docs render them)"; fi; \
	exit $$status

# checks-publish: the checks of make reproduce's batch (results/batch/full) as data/checks/checks.csv with its
# provenance.json, which the docs render without running anything; refused (nothing written) when a run failed or ran
# in QUICK mode; unexpected verdicts are published as they are and the command exits 1; REPLACE=1 replaces them
checks-publish: $(STAMP) ## publish the checks of make reproduce's batch (results/batch/full) to data/checks/ for the docs [REPLACE=1]
	$(BIN)/python -m dpkit.batch.checks $(RESULTS)/batch/full --publish $(if $(filter 1,$(REPLACE)),--replace,)

# Finished runs of a notebook that changed since they ran stop a batch (named); STALE=rerun moves them to
# OUTPUT/.superseded/ and runs them again, STALE=keep keeps them: make reproduce STALE=rerun. STALE=verify continues
# an unfinished long run from repetitions kept by older code, if those computed again are equal to the bit (else
# the run fails naming the difference): make leaderboard STALE=verify; VERIFY_REPS=N computes N kept repetitions
# again instead of the lowest and the highest (evenly spread between them)
#: STALE       smoke, reproduce, tables, leaderboard, board: finished runs of a changed notebook: rerun (move aside, run again), keep, or verify (continue from kept repetitions computed again equal to the bit)
#: VERIFY_REPS with STALE=verify: how many kept repetitions are computed again (default the lowest and the highest)
STALE_ARG := $(if $(STALE),--stale $(STALE),) $(if $(VERIFY_REPS),--verify-reps $(VERIFY_REPS),)
# A data set documented as possibly unavailable offline (data/registry.yaml `unavailable_offline`, e.g. PAM) that is
# not on this machine makes its runs `unavailable`: recorded with the reason, listed, no rows, not a failure.
# REQUIRE_DATA=1 makes them fail the batch: make reproduce REQUIRE_DATA=1
#: REQUIRE_DATA reproduce, tables: REQUIRE_DATA=1 fails the batch when a data set is unavailable (default: recorded as unavailable, no rows)
DATA_ARG := $(if $(filter 1,$(REQUIRE_DATA)),--require-data,)
# the manifests of make reproduce and make tables (another one, e.g. a small test manifest: FULL_MANIFEST=...)
#: FULL_MANIFEST reproduce: another manifest than notebooks/manifests/full.yaml
#: TABLES_MANIFEST tables: another manifest than notebooks/manifests/tables.yaml
FULL_MANIFEST ?= notebooks/manifests/full.yaml
TABLES_MANIFEST ?= notebooks/manifests/tables.yaml

BATCH ?= full
collect: $(STAMP) ## merge a batch's runs into one table: make collect BATCH=full|smoke|tables (lists failed runs, exit 1)
	$(BIN)/python -m dpkit.batch collect $(RESULTS)/batch/$(BATCH)

tables: $(STAMP) ## Tables 3.2/3.3 at full size on a local Dask cluster, assembled (+ figures/); REQUIRE_DATA=1: fail if a data set is unavailable
	$(BIN)/python -m dpkit.batch run $(TABLES_MANIFEST) --output $(RESULTS)/batch/tables $(STALE_ARG) $(DATA_ARG)
	$(BIN)/python -m dpkit.batch.assemble tables $(RESULTS)/batch/tables --paper-figures

# one leaderboard run computes a whole data set in one cell, its repetitions as Dask tasks on every worker (CRM and CSN
# take about 2 h each on one core); a run keeps every finished repetition, so an interrupted `make leaderboard`
# resumes where it stopped. The per-cell timeout counts the wait for the repetitions queued before a run's own
#: LEADERBOARD_TIMEOUT leaderboard, leaderboard-aim: seconds a run's notebook cell may take (default 28800)
LEADERBOARD_TIMEOUT ?= 28800
# AIM's repetitions are Dask tasks like every leaderboard run's (REP_BACKEND auto): one per worker, two at once on
# two cores (a CRM repetition holds several GB)
AIM_BATCH :=
leaderboard: $(STAMP) ## the leaderboard at full size (every method, AIM included, 5 data sets x 5 sigma x 30 reps), assembled (+ figures/); STALE=verify: go on from repetitions kept by older code if those computed again are equal to the bit
	$(BIN)/python -m dpkit.batch run notebooks/manifests/leaderboard.yaml --timeout $(LEADERBOARD_TIMEOUT) $(STALE_ARG)
	$(BIN)/python -m dpkit.batch run notebooks/manifests/leaderboard_aim.yaml $(AIM_BATCH) --timeout $(LEADERBOARD_TIMEOUT) $(STALE_ARG)
	$(BIN)/python -m dpkit.batch.assemble leaderboard $(RESULTS)/batch/leaderboard --paper-figures

leaderboard-aim: $(STAMP) ## only AIM's runs of the full-size leaderboard (its own manifest), into the leaderboard's folder, assembled
	$(BIN)/python -m dpkit.batch run notebooks/manifests/leaderboard_aim.yaml $(AIM_BATCH) --timeout $(LEADERBOARD_TIMEOUT) $(STALE_ARG)
	$(BIN)/python -m dpkit.batch.assemble leaderboard $(RESULTS)/batch/leaderboard --paper-figures

# board-publish: the assembled board's records.parquet and provenance.json (results/batch/leaderboard/assembled, from
# make leaderboard) copied to data/leaderboard/ for committing, and the README's board block rewritten from them; an
# existing published board is replaced only with REPLACE=1 (otherwise exit 2 before anything is written)
board-publish: $(STAMP) ## publish the assembled leaderboard's records to data/leaderboard/ and rewrite the README's board block [REPLACE=1]
	$(BIN)/python -m dpkit.batch.assemble leaderboard $(RESULTS)/batch/leaderboard --publish $(if $(filter 1,$(REPLACE)),--replace,)
	$(BIN)/python docs/readme_board.py

comma := ,
# board-refresh: after a change to some methods only, those run again with the current code on every cell of the
# published board (BOARD=... for another) with its seeds, while every other method is computed again on the first and
# last repetition of every data set and must equal its records to the bit (else nothing is written: regenerate the
# whole board); the refreshed board, its provenance (the refresh appended) and its assembled tables and figures go to
# results/board-refresh/ (figures/ too). PUBLISH=1 also publishes it to data/leaderboard/ (REPLACE=1 to replace the
# published board) and rewrites the README's board block
#: METHODS     board-refresh: the registered methods on the board to run again (comma- or space-separated)
#: PUBLISH     board-refresh: PUBLISH=1 publishes the refreshed board (with REPLACE=1) and rewrites the README's block
board-refresh: $(STAMP) ## run some methods of the published board again with the current code, the others verified to the bit: make board-refresh METHODS=a,b [REP_WORKERS=N] [PUBLISH=1 REPLACE=1]
	@test -n "$(METHODS)" || { echo "board-refresh: name the methods, e.g. make board-refresh METHODS=mwem-gaussian" >&2; exit 2; }
	$(BIN)/python -m dpkit.batch board-refresh $(subst $(comma), ,$(METHODS)) --out $(RESULTS)/board-refresh --paper-figures \
		$(if $(BOARD),--board '$(BOARD)',) $(if $(REP_WORKERS),--workers $(REP_WORKERS),) \
		$(if $(filter 1,$(REPLACE)),--replace,) $(if $(filter 1,$(PUBLISH)),--publish,)
	$(if $(filter 1,$(PUBLISH)),$(BIN)/python docs/readme_board.py,)

# board: a board of its own on your data set (docs/guide/own-data.md): DATA is a spec file, an entry-point name (group
# dpkit.datasets) or a registry code; every board method (AIM with AIM=1), 5 sigma x 30 repetitions, the board's
# statistics and provenance, into results/board-<name>/ (never the published board); QUICK=1: one sigma, 4 repetitions;
# SIGMAS=2,4: other widths; REPLACE=1: a folder holding runs of other data is moved aside. Then:
# make board-add METHOD=... BOARD=results/board-<name>/records.parquet
#: DATA        board: your data set (a spec file, an entry-point name of group dpkit.datasets, or a registry code)
#: AIM         board: AIM=1 runs AIM too (hours on a large data set)
#: SIGMAS      board: other kernel widths, comma-separated (SIGMAS=2,4; default the thesis's five)
#: QUICK       board, board-add: QUICK=1: one sigma and 4 repetitions (board-add: one data set too)
#: REPLACE     board-add: overwrite results/board/; board-refresh: overwrite results/board-refresh/ (and, with PUBLISH=1, the published board); board: move a folder of another data set's runs aside; board-publish: replace the published board; checks-publish: replace the published checks
board: $(STAMP) ## a board of its own on your data set: make board DATA=spec.yaml [AIM=1] [QUICK=1] [SIGMAS=2,4] [REPLACE=1] [STALE=rerun|keep|verify]
	@test -n "$(DATA)" || { echo "board: name the data set, e.g. make board DATA=data/examples/diabetes.yaml" >&2; exit 2; }
	$(BIN)/python -m dpkit.batch board '$(DATA)' $(if $(filter 1,$(AIM)),--aim,) $(if $(filter 1,$(QUICK)),--quick,) \
		$(if $(SIGMAS),--sigmas '$(SIGMAS)',) $(if $(filter 1,$(REPLACE)),--replace,) --timeout $(LEADERBOARD_TIMEOUT) $(STALE_ARG)

# board-add: only the entrant runs, on every cell of the stored board (data/leaderboard/records.parquet, or BOARD=...)
# with its seeds, so on the same workloads; the updated board is a copy in results/board/ (the published file is never
# written). METHOD: package.module:NAME, an entry-point name (group dpkit.methods) or a registered name not on the board.
# QUICK=1: one data set, one sigma, 4 repetitions (dpkit.board.add.QUICK_REPS); GATE=0: without the audit gate (the
# entrant's ledgers are still checked against the board's budget); REPLACE=1: overwrite results/board/; REP_WORKERS=N:
# repetitions computed at once
#: METHOD      board-add: the entrant, package.module:NAME, an entry-point name (group dpkit.methods) or a registered name
#: GATE        board-add: GATE=0 skips the audit gate (never the budget check of the entrant's ledgers)
#: BOARD       board-add: the stored board to join; docs, docs-quick: the board rendered (default data/leaderboard/records.parquet)
#: REP_WORKERS board-add, board-refresh: repetitions computed at once
board-add: $(STAMP) ## run one entrant on the stored leaderboard and rank it: make board-add METHOD=package.module:NAME [QUICK=1] [GATE=0] [REPLACE=1] [BOARD=records.parquet] [REP_WORKERS=N]
	@test -n "$(METHOD)" || { echo "board-add: name the entrant, e.g. make board-add METHOD=package.module:NAME" >&2; exit 2; }
	$(BIN)/python -m dpkit.batch board-add '$(METHOD)' --out $(RESULTS)/board $(if $(BOARD),--board '$(BOARD)',) \
		$(if $(filter 1,$(QUICK)),--quick,) $(if $(filter 0,$(GATE)),--no-gate,) $(if $(filter 1,$(REPLACE)),--replace,) \
		$(if $(REP_WORKERS),--workers $(REP_WORKERS),)

#: MANIFEST    status: the manifest of notebooks/manifests/ whose batch is shown (default leaderboard)
status: $(STAMP) ## where a batch stands (MANIFEST=leaderboard by default): runs finished, failed, running; repetitions kept, running (Dask tasks) and in all
	$(BIN)/python -m dpkit.batch status notebooks/manifests/$(or $(MANIFEST),leaderboard).yaml

#: SEEDS       false-alarms: how many seeds (default 200)
false-alarms: $(STAMP) ## the statistical notebooks' QUICK checks over many seeds (SEEDS=200) vs their false-alarm budget
	$(BIN)/python -m tools.false_alarms --seeds $(or $(SEEDS),200) --out $(RESULTS)/false_alarms

data-list: $(STAMP) ## where each data set was found, checksums and shapes vs the thesis; your own too: make data-list DATA=spec.yaml
	$(BIN)/python -m dpkit.data list $(DATA)

clean: ## remove run outputs (results/) and the documentation build (docs/_build)
	rm -rf $(RESULTS) .pytest_cache $(DOCS_OUT)

distclean: clean ## also remove the virtual environments (.venv, .venv-lock)
	rm -rf $(VENV) $(LOCK_VENV)

# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-cpu test-js demo-js bench lint clean reproduce

# The TypeScript device SDK (clients/js): its pinned dependencies from the lockfile, then built.
JS := clients/js
JS_STAMP := $(JS)/node_modules/.installed
$(JS_STAMP): $(JS)/package.json $(JS)/package-lock.json
	cd $(JS) && npm ci --no-audit --no-fund --loglevel=error
	touch $(JS_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench,torch,serve,ray]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/dprec compare --dataset ml-100k --seeds 5 --configs configs/ml-100k
	$(BIN)/dprec compare --task rating --dataset ml-100k --seeds 1 --folds 5

# Every seed's table and figure analogue that fits this machine (ML-100K and synthetic data,
# about 60 min on 2 cores): small summaries under docs/results/<seed>/<step>/, each with its
# command and date; docs/results/reproduce.json has every step's status and wall time.
# ONLY="step ..." runs some steps (`make reproduce ONLY=dpals-ml20m`; `--list` names them).
reproduce: $(STAMP)
	$(BIN)/python scripts/reproduce.py $(if $(ONLY),--only $(ONLY))

# Every test, the `slow` and `browser` ones too (as CI runs them), on every core (pytest-xdist:
# each test keeps its own tmp_path, ports come from the OS, Ray starts its own local cluster),
# then the golden tests again on other CPU kernels. TEST_WORKERS=0 runs them in one process.
# Bytecode is written (__pycache__, git-ignored) even where the environment turns it off: each
# worker and each service process then compiles a module once, not once per process.
TEST_WORKERS ?= auto
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -p no:cacheprovider \
	-n $(TEST_WORKERS)
test: $(STAMP) $(JS_STAMP)
	$(MAKE) --no-print-directory test-js demo-js
	$(PYTEST)
	$(MAKE) --no-print-directory test-cpu

# The TypeScript SDK's own tests under Node (`npm test`: type-check, build, node --test).
test-js: $(JS_STAMP)
	cd $(JS) && npm test --silent

# The browser demo's one script (`dprec serve demo`, tests/clients/test_demo_browser.py):
# clients/js/demo type-checked, then bundled by esbuild into clients/js/dist/demo/demo.js.
demo-js: $(JS_STAMP)
	cd $(JS) && node_modules/.bin/tsc -p demo/tsconfig.json && node_modules/.bin/esbuild \
		demo/main.ts --bundle --format=esm --minify --target=es2022 --log-level=warning \
		--outfile=dist/demo/demo.js

# The development loop: every test but the `slow` end-to-end checks (services as processes, kill
# and restart, inproc == http, Ray, fresh interpreters) and the browser one, on every core
# (pytest-xdist), stopping at the first failure. `make test` (and CI) still runs them all.
test-fast: $(STAMP)
	$(PYTEST) -m "not slow and not browser" -x

# The same seed gives the same numbers on every CPU: on x86-64, the golden and tie-rule tests
# again with numpy's AVX-512 kernels off, OpenBLAS's Haswell kernels and numba for Haswell.
test-cpu: $(STAMP)
	if [ "$$(uname -m)" = x86_64 ]; then \
		NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Haswell \
		NUMBA_CPU_NAME=haswell $(PYTEST) tests/test_golden.py tests/test_selection.py; fi

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks experiments scripts

# Each ratio in benchmarks/results/summary.json is a median of 3 paired runs: the DPLCF,
# MF-NP and BPR benchmarks pair 3 runs themselves; FMF-LDP runs 3 times (one pair each).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_dplcf_server.py
	$(BIN)/python benchmarks/bench_mf_np.py
	$(BIN)/python benchmarks/bench_fmf_ldp.py
	rm -rf benchmarks/results/fmf_ldp_runs
	for run in 2 3; do $(BIN)/python benchmarks/bench_fmf_ldp.py --no-phases \
		--out benchmarks/results/fmf_ldp_runs/$$run || exit 1; done
	$(BIN)/python benchmarks/bench_bpr.py
	$(BIN)/python benchmarks/bench_ray.py overhead
	$(BIN)/python benchmarks/summary.py
	$(BIN)/python benchmarks/bench_rating.py
	$(BIN)/python benchmarks/bench_pnbm.py
	$(BIN)/python benchmarks/bench_scaling.py
	$(BIN)/python benchmarks/bench_services.py
	$(BIN)/python benchmarks/bench_dpals.py

clean:
	rm -rf $(VENV) results benchmarks/results $(JS)/node_modules $(JS)/dist

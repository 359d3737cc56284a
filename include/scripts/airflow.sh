#!/usr/bin/env bash
# Local Airflow (API server with the UI, and a scheduler) on loopback, wired to this project's
# dags/, plugins/, pipeline file and local services: `make airflow-ui` and `make demo` start it.
#
#   include/scripts/airflow.sh start    start it (idempotent), wait until the API answers, print URL and login
#   include/scripts/airflow.sh stop     stop the scheduler, then the API server (SIGTERM, then SIGKILL)
#   include/scripts/airflow.sh status   exit 0 when both run and the API answers
#   include/scripts/airflow.sh env      print `export` lines for a shell whose `airflow` commands use this
#                                       Airflow (home, database, DAGs, connections): eval "$(include/scripts/airflow.sh env)"
#
# Environment:
#   TICDC_LAKE_HOME                   local state; Airflow's home is <home>/airflow   (default <repo>/run)
#   TICDC_LAKE_CONFIG                 the pipeline file                                (default include/pipelines.yaml)
#   TICDC_LAKE_AIRFLOW_PORT           port of the API server and UI                    (default 18080)
#   TICDC_LAKE_AIRFLOW_START_TIMEOUT  seconds to wait for the API to answer            (default 180)
#   TICDC_LAKE_KAFKA_BOOTSTRAP        Kafka brokers (default: what kafka.sh recorded under <home>/kafka)
#   TICDC_LAKE_SCHEMA_REGISTRY_URL    schema registry (default: what registry.sh recorded, if it ran)
#   TICDC_LAKE_PYTHON                 python of the project's environment              (default <repo>/.venv/bin/python)
#
# What runs: `airflow db migrate` (first start only), `airflow dags reserialize` (every start:
# a changed pipeline file or DAG shows after a stop and start), `airflow pools set` for each pool
# a catalog's maintenance.pool names that does not exist yet, then `airflow api-server` and
# `airflow scheduler` with the environment of ticdc_lake/cli/airflow_service.py: SQLite metadata
# database, LocalExecutor running one task at a time, connections kafka_default, spark_default
# (local[2]) and schema_registry_default from the local services, and ticdc_spark_service when the
# local Spark run service's token file <home>/spark-service.token exists (spark_service.sh start). The scheduler runs what is
# triggered (the UI's Trigger button, the REST API, backfills); it creates no scheduled runs.
# Login: user admin, password generated on the first start into
# <home>/airflow/simple_auth_manager_passwords.json.generated (printed by start and status).
#
# Files under <home>/airflow/service: api-server.pid, scheduler.pid, api-server.log,
# scheduler.log, setup.log (migrate, reserialize, pools), port, and `url` (one line, the UI's URL,
# present only while Airflow is up). Task logs are under <home>/airflow/logs.
set -euo pipefail

SERVICE_NAME=airflow.sh
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TICDC_LAKE_HOME="$(realpath -m "${TICDC_LAKE_HOME:-$REPO/run}")"
export TICDC_LAKE_HOME
AIRFLOW_DIR="$TICDC_LAKE_HOME/airflow"
STATE_DIR="$AIRFLOW_DIR/service"
PORT="${TICDC_LAKE_AIRFLOW_PORT:-18080}"
START_TIMEOUT="${TICDC_LAKE_AIRFLOW_START_TIMEOUT:-180}"
PYTHON="${TICDC_LAKE_PYTHON:-$REPO/.venv/bin/python}"
AIRFLOW="$(dirname "$PYTHON")/airflow"
START_POLL_SECONDS=1

API_PID_FILE="$STATE_DIR/api-server.pid"
SCHEDULER_PID_FILE="$STATE_DIR/scheduler.pid"
API_LOG="$STATE_DIR/api-server.log"
SCHEDULER_LOG="$STATE_DIR/scheduler.log"
SETUP_LOG="$STATE_DIR/setup.log"
PORT_FILE="$STATE_DIR/port"
URL_FILE="$STATE_DIR/url"
PASSWORDS_FILE="$AIRFLOW_DIR/simple_auth_manager_passwords.json.generated"

base_url() { # port
    echo "http://$HOST:$1"
}

# The API server renames its process "airflow api_server -- host:..." (setproctitle).
api_pid() { daemon_pid "$API_PID_FILE" 'airflow api[-_]server'; }
scheduler_pid() { daemon_pid "$SCHEDULER_PID_FILE" 'airflow scheduler'; }

healthy() { # base_url
    [[ "$(http_status "$1/api/v2/monitor/health")" == 200 ]]
}

configured_port() {
    cat "$PORT_FILE" 2>/dev/null || true
}

login_line() { # url
    local password
    password="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["admin"])' "$PASSWORDS_FILE" 2>/dev/null)" ||
        password="(not generated yet: see $PASSWORDS_FILE)"
    echo "Airflow UI ready on $1 (login: admin / $password)"
}

# The API server and the scheduler each lead their own process group (launch_daemon's setsid):
# SIGTERM to the group reaches their workers and task processes too; SIGKILL after the grace.
terminate_group() { # pid
    kill -TERM -- "-$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_GRACE_SECONDS))
    while alive "$1"; do
        if ((SECONDS >= deadline)); then
            say "process $1 still running after ${STOP_GRACE_SECONDS}s; sending SIGKILL"
            kill -KILL -- "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.25
    done
    kill -KILL -- "-$1" 2>/dev/null || true # what the leader left behind
}

LOG_OFFSET=0
STARTING_LOG="$API_LOG"

died_during_start() {
    rm -f "$URL_FILE"
    {
        echo "airflow.sh: error: ${STARTING_LOG##*/} died during start. Last 30 lines of $STARTING_LOG:"
        print_log_tail "$STARTING_LOG" "$LOG_OFFSET" "  (it wrote no log)"
        echo "Fix the cause above and run include/scripts/airflow.sh start again."
    } >&2
    exit 1
}

setup_step() { # what command...
    local what="$1" offset
    shift
    offset="$(log_size "$SETUP_LOG")"
    if ! "$@" >>"$SETUP_LOG" 2>&1; then
        echo "airflow.sh: error: $what failed. Last 30 lines of $SETUP_LOG:" >&2
        print_log_tail "$SETUP_LOG" "$offset" "  (no output)" >&2
        exit 1
    fi
}

create_pools() { # the pools the pipeline file's maintenance.pool names, when missing (docs/maintenance.md)
    local pools pool
    pools="$("$PYTHON" -m ticdc_lake.cli.airflow_service pools)" || fail "could not read the pools of $TICDC_LAKE_CONFIG (above)"
    for pool in $pools; do
        if ! "$AIRFLOW" pools get "$pool" >>"$SETUP_LOG" 2>&1; then
            say "creating the Airflow pool $pool (maintenance.pool of $TICDC_LAKE_CONFIG; 1 slot)"
            setup_step "airflow pools set $pool" "$AIRFLOW" pools set "$pool" 1 "TiCDC lake table maintenance"
        fi
    done
}

start() {
    local api scheduler url
    url="$(base_url "$PORT")"
    api="$(api_pid)"
    scheduler="$(scheduler_pid)"
    if [[ -n "$api" && -n "$scheduler" ]]; then
        local port
        port="$(configured_port)"
        if [[ -n "$port" && "$port" != "$PORT" ]]; then
            fail "the Airflow of $AIRFLOW_DIR is already running on $HOST:$port (pids $api, $scheduler), not on" \
                "$HOST:$PORT. Use TICDC_LAKE_AIRFLOW_PORT=$port, or run include/scripts/airflow.sh stop first."
        fi
        if healthy "$url"; then
            echo "$url" >"$URL_FILE"
            say "already running (api-server pid $api, scheduler pid $scheduler)"
            login_line "$url"
            return 0
        fi
    fi
    for pid in $scheduler $api; do # half running or not answering: start afresh
        say "stopping the unhealthy leftover (pid $pid)"
        terminate_group "$pid"
    done
    rm -f "$URL_FILE" "$API_PID_FILE" "$SCHEDULER_PID_FILE"
    [[ -x "$AIRFLOW" ]] || fail "the airflow command is missing ($AIRFLOW): run make install"
    check_port_free "$PORT" TICDC_LAKE_AIRFLOW_PORT
    local exports
    exports="$("$PYTHON" -m ticdc_lake.cli.airflow_service env "$PORT")" || fail "could not build Airflow's environment (above)"
    exports+=$'\n'"$(spark_service_exports)"
    eval "$exports"
    if [[ ! -f "$AIRFLOW_DIR/.migrated" ]]; then
        say "creating Airflow's database in $AIRFLOW_DIR (first start only)"
        setup_step "airflow db migrate" "$AIRFLOW" db migrate
        echo ok >"$AIRFLOW_DIR/.migrated"
    fi
    say "serializing the DAGs of $REPO/dags (pipeline file $TICDC_LAKE_CONFIG)"
    setup_step "airflow dags reserialize" "$AIRFLOW" dags reserialize
    create_pools
    say "starting the API server on $url and the scheduler (logs in $STATE_DIR)"
    LOG_OFFSET="$(log_size "$API_LOG")"
    launch_daemon "" "$API_PID_FILE" "$API_LOG" "$AIRFLOW" api-server --host "$HOST" -p "$PORT"
    echo "$PORT" >"$PORT_FILE"
    api="$(<"$API_PID_FILE")"
    local late="the API server (pid $api) did not answer on $url within ${START_TIMEOUT}s; it is still running:"
    late+=" look at $API_LOG, then run include/scripts/airflow.sh stop (or raise TICDC_LAKE_AIRFLOW_START_TIMEOUT)."
    await_ready "$api" $((SECONDS + START_TIMEOUT)) "$late" healthy "$url"
    STARTING_LOG="$SCHEDULER_LOG"
    LOG_OFFSET="$(log_size "$SCHEDULER_LOG")"
    launch_daemon "" "$SCHEDULER_PID_FILE" "$SCHEDULER_LOG" "$AIRFLOW" scheduler --skip-serve-logs
    sleep 2
    alive "$(<"$SCHEDULER_PID_FILE")" || died_during_start
    echo "$url" >"$URL_FILE"
    login_line "$url"
}

stop() {
    local api scheduler
    api="$(api_pid)"
    scheduler="$(scheduler_pid)"
    rm -f "$URL_FILE"
    if [[ -z "$api" && -z "$scheduler" ]]; then
        say "not running"
        return 0
    fi
    if [[ -n "$scheduler" ]]; then
        say "stopping the scheduler (pid $scheduler)"
        terminate_group "$scheduler"
    fi
    if [[ -n "$api" ]]; then
        say "stopping the API server (pid $api)"
        terminate_group "$api"
    fi
    rm -f "$API_PID_FILE" "$SCHEDULER_PID_FILE"
    wait_port_released "$(configured_port)"
    say "stopped"
}

status() {
    local api scheduler port url
    api="$(api_pid)"
    scheduler="$(scheduler_pid)"
    port="$(configured_port)"
    url="$(base_url "${port:-$PORT}")"
    if [[ -z "$api" && -z "$scheduler" ]]; then
        say "not running"
        return 1
    fi
    [[ -n "$scheduler" ]] || {
        say "the API server runs (pid $api) but the scheduler does not: see $SCHEDULER_LOG"
        return 1
    }
    report_status "$api" "$url" "the API server" "$API_LOG" healthy "$url" || return 1
    login_line "$url"
}

# The connection ticdc_spark_service of the local Spark run service (include/scripts/spark_service.sh),
# once its token file exists: a pipeline with `spark_service: ticdc_spark_service` then reaches it.
spark_service_exports() {
    local token_file="$TICDC_LAKE_HOME/spark-service.token" port
    [[ -f "$token_file" ]] || return 0
    port="$(cat "$TICDC_LAKE_HOME/spark-service/port" 2>/dev/null || echo "${TICDC_LAKE_SPARK_SERVICE_PORT:-18090}")"
    "$PYTHON" - "$token_file" "$port" <<'EOF' || fail "could not read the Spark run service's token file $token_file"
import json
import shlex
import sys
from pathlib import Path

token = Path(sys.argv[1]).read_text().strip()
connection = {"conn_type": "generic", "host": "127.0.0.1", "port": int(sys.argv[2]), "password": token}
print("export AIRFLOW_CONN_TICDC_SPARK_SERVICE=" + shlex.quote(json.dumps(connection)))
EOF
}

# `env`: the export lines `start` uses, for the port this Airflow runs (or will run) on.
print_env() {
    local port
    port="$(configured_port)"
    "$PYTHON" -m ticdc_lake.cli.airflow_service env "${port:-$PORT}" || fail "could not build Airflow's environment (above)"
    spark_service_exports
}

if [[ "${1:-}" == env ]]; then
    print_env
    exit 0
fi
service_main "${1:-}" TICDC_LAKE_AIRFLOW_PORT "$PORT"

#!/usr/bin/env bash
# Local Spark run service (docs/spark-service.md): one long-lived Spark driver that runs the
# transform of every pipeline whose `spark_service` names it, on loopback, with a bearer token.
#
#   include/scripts/spark_service.sh start     start it (idempotent), wait until GET /health answers
#   include/scripts/spark_service.sh stop      stop it (SIGTERM: it ends the current run first; SIGKILL after 30 s)
#   include/scripts/spark_service.sh restart   stop, then start (after an upgrade or a changed pipeline file)
#   include/scripts/spark_service.sh status    exit 0 when it runs and /health answers
#
# Environment:
#   TICDC_LAKE_HOME                     local state                                   (default <repo>/run)
#   TICDC_LAKE_CONFIG                   the pipeline file the service reads           (default include/pipelines.yaml)
#   TICDC_LAKE_SPARK_SERVICE_PORT       port on 127.0.0.1                             (default 18090)
#   TICDC_LAKE_SPARK_SERVICE_MASTER     Spark master of its application              (default local[*])
#   TICDC_LAKE_SPARK_SERVICE_TIMEOUT    seconds to wait for /health at start          (default 180)
#   TICDC_LAKE_PYTHON                   python of the project's environment           (default <repo>/.venv/bin/python)
#
# Files: <home>/spark-service.token (the bearer token, mode 0600, made on the first start; the
# Airflow connection's password: include/scripts/airflow.sh env exports AIRFLOW_CONN_TICDC_SPARK_SERVICE
# from it), and under <home>/spark-service: service.pid, service.log (the service's own log and
# Spark's), port.
set -euo pipefail

SERVICE_NAME=spark_service.sh
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LAKE_HOME="$(realpath -m "${TICDC_LAKE_HOME:-$REPO/run}")"
STATE_DIR="$LAKE_HOME/spark-service"
CONFIG="$(realpath -m "${TICDC_LAKE_CONFIG:-$REPO/include/pipelines.yaml}")"
PORT="${TICDC_LAKE_SPARK_SERVICE_PORT:-18090}"
MASTER="${TICDC_LAKE_SPARK_SERVICE_MASTER:-local[*]}"
START_TIMEOUT="${TICDC_LAKE_SPARK_SERVICE_TIMEOUT:-180}"
PYTHON="${TICDC_LAKE_PYTHON:-$REPO/.venv/bin/python}"
START_POLL_SECONDS=1

TOKEN_FILE="$LAKE_HOME/spark-service.token"
PID_FILE="$STATE_DIR/service.pid"
LOG="$STATE_DIR/service.log"
PORT_FILE="$STATE_DIR/port"
LOG_OFFSET=0

service_pid() { daemon_pid "$PID_FILE" 'spark_jobs/service\.py'; }

configured_port() {
    cat "$PORT_FILE" 2>/dev/null || echo "$PORT"
}

# Whether the service on port answers GET /health with this token (its own client says so).
healthy() { # port
    [[ -f "$TOKEN_FILE" ]] || return 1
    PYTHONPATH="$REPO/include" "$PYTHON" - "$1" "$TOKEN_FILE" >/dev/null 2>&1 <<'EOF'
import sys
from pathlib import Path

from ticdc_lake.spark_service_client import SparkServiceClient

SparkServiceClient("127.0.0.1", int(sys.argv[1]), Path(sys.argv[2]).read_text().strip(), connect_timeout_s=3).health()
EOF
}

died_during_start() {
    {
        echo "spark_service.sh: error: the Spark run service died during start. Last 30 lines of $LOG:"
        print_log_tail "$LOG" "$LOG_OFFSET" "  (it wrote no log)"
        echo "Fix the cause above and run include/scripts/spark_service.sh start again."
    } >&2
    rm -f "$PID_FILE"
    exit 1
}

start() {
    local pid
    pid="$(service_pid)"
    if [[ -n "$pid" ]]; then
        local running
        running="$(configured_port)"
        if healthy "$running"; then
            say "already running (pid $pid) on $HOST:$running"
            return 0
        fi
        say "stopping the unhealthy leftover (pid $pid)"
        terminate "$pid"
        rm -f "$PID_FILE"
    fi
    [[ -x "$PYTHON" ]] || fail "$PYTHON not found: run make install (or set TICDC_LAKE_PYTHON)"
    [[ -f "$CONFIG" ]] || fail "pipeline file $CONFIG not found: set TICDC_LAKE_CONFIG"
    require_java
    check_port_free "$PORT" TICDC_LAKE_SPARK_SERVICE_PORT
    mkdir -p "$STATE_DIR"
    LOG_OFFSET="$(log_size "$LOG")"
    say "starting the Spark run service on $HOST:$PORT for $CONFIG (master $MASTER, log $LOG)"
    launch_daemon "$REPO" "$PID_FILE" "$LOG" env PYTHONPATH="$REPO/include:$REPO/plugins" \
        TICDC_LAKE_HOME="$LAKE_HOME" "$PYTHON" spark_jobs/service.py --config "$CONFIG" --host "$HOST" \
        --port "$PORT" --token-file "$TOKEN_FILE" --master "$MASTER"
    echo "$PORT" >"$PORT_FILE"
    pid="$(<"$PID_FILE")"
    local late="the Spark run service (pid $pid) did not answer on $HOST:$PORT within ${START_TIMEOUT}s; it is"
    late+=" still running: look at $LOG, then run include/scripts/spark_service.sh stop"
    late+=" (or raise TICDC_LAKE_SPARK_SERVICE_TIMEOUT)."
    # The token file appears once the service read its configuration; /health answers after Spark started.
    await_ready "$pid" $((SECONDS + START_TIMEOUT)) "$late" healthy "$PORT"
    say "ready on $HOST:$PORT (pid $pid); token in $TOKEN_FILE; pipelines use it with spark_service: ticdc_spark_service"
}

stop() {
    local pid
    pid="$(service_pid)"
    local port
    port="$(configured_port)"
    stop_service "Spark run service" "$pid" "$PID_FILE" "$port"
}

status() {
    local pid port
    pid="$(service_pid)"
    port="$(configured_port)"
    report_status "$pid" "$HOST:$port" "its /health" "$LOG" healthy "$port"
}

case "${1:-}" in
start | stop | status) ;;
restart)
    bash "${BASH_SOURCE[0]}" stop
    exec bash "${BASH_SOURCE[0]}" start
    ;;
*)
    echo "usage: $0 start|stop|restart|status" >&2
    exit 2
    ;;
esac
service_main "${1:-}" TICDC_LAKE_SPARK_SERVICE_PORT "$PORT"

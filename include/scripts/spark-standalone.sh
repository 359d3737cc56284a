#!/usr/bin/env bash
# Local Spark standalone cluster (one master, one worker) from the installed PySpark, on loopback:
# the scale-out path of docs/scale-out.md on one machine.
#
#   include/scripts/spark-standalone.sh start    start it (idempotent), wait until the worker is ALIVE
#   include/scripts/spark-standalone.sh stop     stop the worker, then the master (SIGTERM, then SIGKILL)
#   include/scripts/spark-standalone.sh status   exit 0 when the master answers and lists an ALIVE worker
#
# Environment:
#   TICDC_LAKE_HOME           local state; the cluster uses <home>/spark   (default <repo>/run)
#   SPARK_MASTER_PORT         master RPC port (spark://127.0.0.1:<port>)    (default 17077)
#   SPARK_MASTER_WEBUI_PORT   master web UI, JSON at /json                   (default 17080)
#   SPARK_WORKER_PORT         worker RPC port                                (default 17078)
#   SPARK_WORKER_WEBUI_PORT   worker web UI                                  (default 17081)
#   SPARK_WORKER_CORES        cores the worker offers                        (default 2)
#   SPARK_WORKER_MEMORY       memory the worker offers to executors          (default 2g)
#   SPARK_START_TIMEOUT       seconds to wait for an ALIVE worker            (default 90)
#   TICDC_LAKE_PYTHON         python with PySpark installed                  (default <repo>/.venv/bin/python)
#
# Files under <home>/spark: master.pid, worker.pid, master.log, worker.log (JVM output, Spark's
# log4j2 console logging), work/ (the worker's work dir: one folder per application with each
# executor's stdout/stderr), and `master` (one line, spark://host:port) and `master-ui` (one
# line, http://host:port) present only while the cluster is up.
set -euo pipefail

SERVICE_NAME=spark-standalone.sh
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${TICDC_LAKE_HOME:-$REPO/run}/spark"
MASTER_PORT="${SPARK_MASTER_PORT:-17077}"
MASTER_UI_PORT="${SPARK_MASTER_WEBUI_PORT:-17080}"
WORKER_PORT="${SPARK_WORKER_PORT:-17078}"
WORKER_UI_PORT="${SPARK_WORKER_WEBUI_PORT:-17081}"
WORKER_CORES="${SPARK_WORKER_CORES:-2}"
WORKER_MEMORY="${SPARK_WORKER_MEMORY:-2g}"
START_TIMEOUT="${SPARK_START_TIMEOUT:-90}"
PYTHON="${TICDC_LAKE_PYTHON:-$REPO/.venv/bin/python}"

MASTER_PID_FILE="$STATE_DIR/master.pid"
WORKER_PID_FILE="$STATE_DIR/worker.pid"
MASTER_LOG="$STATE_DIR/master.log"
WORKER_LOG="$STATE_DIR/worker.log"
WORK_DIR="$STATE_DIR/work"
MASTER_FILE="$STATE_DIR/master"
MASTER_UI_FILE="$STATE_DIR/master-ui"
MASTER_URL="spark://$HOST:$MASTER_PORT"
MASTER_UI="http://$HOST:$MASTER_UI_PORT"

master_pid() { daemon_pid "$MASTER_PID_FILE" 'org\.apache\.spark\.deploy\.master\.Master'; }
worker_pid() { daemon_pid "$WORKER_PID_FILE" 'org\.apache\.spark\.deploy\.worker\.Worker'; }

# The master's view as "<alive workers> <status>" from its JSON endpoint, or nothing.
master_view() {
    "$PYTHON" - "$MASTER_UI/json/" 2>/dev/null <<'EOF' || true
import json
import sys
import urllib.request

with urllib.request.urlopen(sys.argv[1], timeout=3) as response:
    state = json.load(response)
alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
print(len(alive), state.get("status", "?"))
EOF
}

cluster_ready() {
    local view
    view="$(master_view)"
    [[ -n "$view" && "${view%% *}" -ge 1 && "$view" == *ALIVE* ]]
}

spark_home() {
    [[ -x "$PYTHON" ]] || fail "$PYTHON not found: the cluster runs the PySpark of the project venv (run make install," \
        "or set TICDC_LAKE_PYTHON to a python with pyspark)"
    "$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null ||
        fail "pyspark is not installed in $PYTHON: run make install"
}

died_during_start() { # what log
    rm -f "$MASTER_FILE" "$MASTER_UI_FILE"
    {
        echo "spark-standalone.sh: error: the Spark $1 died during start. Last 30 lines of $2:"
        tail -n 30 "$2" 2>/dev/null || echo "  (no log)"
        echo "Fix the cause above, run include/scripts/spark-standalone.sh stop, then start again."
    } >&2
    exit 1
}

launch() { # class log pid_file args...
    local class="$1" log="$2" pid_file="$3"
    shift 3
    # spark-class execs java, so the pid is the JVM itself.
    launch_daemon "" "$pid_file" "$log" env SPARK_HOME="$SPARK_HOME" SPARK_LOCAL_IP="$HOST" \
        SPARK_LOCAL_HOSTNAME="$HOST" SPARK_DAEMON_MEMORY=512m SPARK_LOG_DIR="$STATE_DIR" \
        SPARK_WORKER_DIR="$WORK_DIR" "$SPARK_HOME/bin/spark-class" "$class" "$@"
}

start() {
    local mpid wpid
    mpid="$(master_pid)"
    wpid="$(worker_pid)"
    if [[ -n "$mpid" && -n "$wpid" ]] && cluster_ready; then
        say "already running (master pid $mpid, worker pid $wpid) with an ALIVE worker"
        echo "$MASTER_URL" >"$MASTER_FILE"
        echo "$MASTER_UI" >"$MASTER_UI_FILE"
        echo "Spark standalone master ready at $MASTER_URL (UI $MASTER_UI)"
        return 0
    fi
    command -v java >/dev/null || fail "java not found on PATH: install a Java 17+ runtime"
    SPARK_HOME="$(spark_home)"
    [[ -x "$SPARK_HOME/bin/spark-class" ]] || fail "$SPARK_HOME/bin/spark-class is missing: reinstall pyspark (make install)"
    [[ "$WORKER_CORES" =~ ^[1-9][0-9]*$ ]] || fail "SPARK_WORKER_CORES=$WORKER_CORES is not a positive number"
    [[ "$WORKER_MEMORY" =~ ^[1-9][0-9]*[mMgG]$ ]] || fail "SPARK_WORKER_MEMORY=$WORKER_MEMORY is not like 512m or 2g"
    mkdir -p "$WORK_DIR"
    rm -f "$MASTER_FILE" "$MASTER_UI_FILE"
    if [[ -z "$mpid" ]]; then
        check_port_free "$MASTER_PORT" SPARK_MASTER_PORT
        check_port_free "$MASTER_UI_PORT" SPARK_MASTER_WEBUI_PORT
        say "starting the master on $MASTER_URL (UI $MASTER_UI, log $MASTER_LOG)"
        launch org.apache.spark.deploy.master.Master "$MASTER_LOG" "$MASTER_PID_FILE" \
            --host "$HOST" --port "$MASTER_PORT" --webui-port "$MASTER_UI_PORT"
        mpid="$(cat "$MASTER_PID_FILE")"
    fi
    if [[ -z "$wpid" ]]; then
        check_port_free "$WORKER_PORT" SPARK_WORKER_PORT
        check_port_free "$WORKER_UI_PORT" SPARK_WORKER_WEBUI_PORT
        say "starting a worker ($WORKER_CORES cores, $WORKER_MEMORY) on $HOST:$WORKER_PORT (log $WORKER_LOG)"
        launch org.apache.spark.deploy.worker.Worker "$WORKER_LOG" "$WORKER_PID_FILE" \
            --host "$HOST" --port "$WORKER_PORT" --webui-port "$WORKER_UI_PORT" \
            --cores "$WORKER_CORES" --memory "$WORKER_MEMORY" --work-dir "$WORK_DIR" "$MASTER_URL"
        wpid="$(cat "$WORKER_PID_FILE")"
    fi

    local deadline=$((SECONDS + START_TIMEOUT))
    until cluster_ready; do
        alive "$mpid" || died_during_start master "$MASTER_LOG"
        alive "$wpid" || died_during_start worker "$WORKER_LOG"
        if ((SECONDS >= deadline)); then
            fail "the master at $MASTER_UI/json lists no ALIVE worker after ${START_TIMEOUT}s (master pid $mpid," \
                "worker pid $wpid, both still running): look at $MASTER_LOG and $WORKER_LOG, then run" \
                "include/scripts/spark-standalone.sh stop (or raise SPARK_START_TIMEOUT)."
        fi
        sleep 1
    done
    echo "$MASTER_URL" >"$MASTER_FILE"
    echo "$MASTER_UI" >"$MASTER_UI_FILE"
    echo "Spark standalone master ready at $MASTER_URL (UI $MASTER_UI)"
}

stop_daemon() { # name pid
    [[ -n "$2" ]] || return 0
    say "stopping the $1 (pid $2)"
    terminate "$2" "the $1 is "
}

stop() {
    local mpid wpid
    mpid="$(master_pid)"
    wpid="$(worker_pid)"
    rm -f "$MASTER_FILE" "$MASTER_UI_FILE"
    if [[ -z "$mpid" && -z "$wpid" ]]; then
        say "not running"
        return 0
    fi
    stop_daemon worker "$wpid"
    stop_daemon master "$mpid"
    rm -f "$MASTER_PID_FILE" "$WORKER_PID_FILE"
    say "stopped"
}

status() {
    local mpid wpid
    mpid="$(master_pid)"
    wpid="$(worker_pid)"
    if [[ -z "$mpid" ]]; then
        say "not running${wpid:+ (a worker, pid $wpid, runs without its master: run stop)}"
        return 1
    fi
    if cluster_ready; then
        say "running: master $MASTER_URL (pid $mpid, UI $MASTER_UI), worker ${wpid:+pid $wpid }ALIVE"
        return 0
    fi
    say "master process $mpid is running but $MASTER_UI/json lists no ALIVE worker; see $MASTER_LOG and $WORKER_LOG"
    return 1
}

service_main "${1:-}" SPARK_MASTER_PORT "$MASTER_PORT" SPARK_MASTER_WEBUI_PORT "$MASTER_UI_PORT" \
    SPARK_WORKER_PORT "$WORKER_PORT" SPARK_WORKER_WEBUI_PORT "$WORKER_UI_PORT"

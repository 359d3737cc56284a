#!/usr/bin/env bash
# Local Confluent-compatible schema registry (Apicurio Registry, its /apis/ccompat/v7 API) on
# loopback, for `make demo` and the tests. docs/schema-registry.md says which server and why.
#
#   include/scripts/registry.sh start    start it (idempotent), wait until the API answers
#   include/scripts/registry.sh stop     stop it gracefully (SIGTERM, then SIGKILL after a grace period)
#   include/scripts/registry.sh status   exit 0 when the registry is running and answers
#
# Environment:
#   TICDC_LAKE_JARS                    folder that holds registry/ (default <repo>/.jars, `make install`)
#   TICDC_LAKE_HOME                    local state; the registry uses <home>/registry (default <repo>/run)
#   TICDC_LAKE_REGISTRY_PORT           HTTP port                                  (default 18081)
#   TICDC_LAKE_REGISTRY_START_TIMEOUT  seconds to wait for the API to answer      (default 60)
#   TICDC_LAKE_REGISTRY_HEAP           maximum JVM heap                           (default 256m)
#
# Files under <home>/registry: config/application.properties (generated on every start; Quarkus
# reads it from the working directory), data/ (the H2 database: schemas and their ids survive
# restarts, like the broker's topics), registry.pid, registry.log (everything the JVM prints,
# including the HTTP access log), and `url` (one line, the base URL of the Confluent-compatible
# API, present only while the registry is up) for the other tools.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Absolute: the registry runs in its state folder, and the H2 URL names a file.
JARS_DIR="$(realpath -m "${TICDC_LAKE_JARS:-$REPO/.jars}/registry")"
STATE_DIR="$(realpath -m "${TICDC_LAKE_HOME:-$REPO/run}/registry")"
PORT="${TICDC_LAKE_REGISTRY_PORT:-18081}"
START_TIMEOUT="${TICDC_LAKE_REGISTRY_START_TIMEOUT:-60}"
HEAP="${TICDC_LAKE_REGISTRY_HEAP:-256m}"
HOST=127.0.0.1
API_PATH=/apis/ccompat/v7

CONFIG_DIR="$STATE_DIR/config"
CONFIG="$CONFIG_DIR/application.properties"
DATA_DIR="$STATE_DIR/data"
PID_FILE="$STATE_DIR/registry.pid"
LOG="$STATE_DIR/registry.log"
URL_FILE="$STATE_DIR/url"
LOCK_FILE="$STATE_DIR/.lock"
STOP_GRACE_SECONDS=30

say() { echo "registry.sh: $*"; }
fail() {
    echo "registry.sh: error: $*" >&2
    exit 1
}

check_port_number() { # name value
    [[ "$2" =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 65535)) ||
        fail "$1=$2 is not a TCP port number (1-65535)"
}

base_url() { # port
    echo "http://$HOST:$1$API_PATH"
}

# Whether a process is alive (a zombie waiting for a parent that never reaps it is not).
alive() { # pid
    kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]]
}

# The pid of our registry when it is alive, else nothing. A pid file whose process is gone or is
# no longer the registry (pid reused) is stale and removed.
registry_pid() {
    [[ -f "$PID_FILE" ]] || return 0
    local pid
    pid="$(tr -dc '0-9' <"$PID_FILE")"
    if [[ -n "$pid" ]] && alive "$pid" &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'apicurio-registry-app-.*-runner\.jar'; then
        echo "$pid"
    else
        rm -f "$PID_FILE"
    fi
}

# The runner jar of the unpacked Apicurio distribution; fails when it is not there.
runner_jar() {
    local jars=("$JARS_DIR"/apicurio-registry-app-*-runner.jar)
    [[ -f "${jars[0]}" ]] ||
        fail "schema registry jars not found in $JARS_DIR: run make install (or set TICDC_LAKE_JARS)"
    ((${#jars[@]} == 1)) ||
        fail "several Apicurio Registry versions in $JARS_DIR (${jars[*]##*/}): delete $JARS_DIR and run make install"
    echo "${jars[0]}"
}

# The HTTP status of a GET, or 000 when nothing answers. Never through an HTTP proxy.
http_status() { # url
    if command -v curl >/dev/null; then
        curl -s -o /dev/null -w '%{http_code}' --max-time 3 --noproxy '*' "$1" 2>/dev/null || true
    else
        python3 - "$1" 2>/dev/null <<'EOF' || echo 000
import sys
import urllib.error
import urllib.request

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1], timeout=3) as response:
        print(response.status)
except urllib.error.HTTPError as error:
    print(error.code)
EOF
    fi
}

# A real request against the Confluent-compatible API: the subject list answers 200.
healthy() { # base_url
    [[ "$(http_status "$1/subjects")" == 200 ]]
}

# Whether something accepts TCP connections on 127.0.0.1:port.
port_in_use() { # port
    timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null
}

port_owner() { # port
    command -v ss >/dev/null || return 0
    ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -1 || true
}

check_port_free() { # port
    if port_in_use "$1"; then
        local owner
        owner="$(port_owner "$1")"
        fail "port $1 on $HOST is already taken by another process${owner:+ ($owner)}." \
            "Stop that process or choose another port, e.g." \
            "TICDC_LAKE_REGISTRY_PORT=$(($1 + 100)) include/scripts/registry.sh start" \
            "(and use the same TICDC_LAKE_REGISTRY_PORT for every later command)."
    fi
}

write_config() {
    mkdir -p "$CONFIG_DIR" "$DATA_DIR"
    cat >"$CONFIG" <<EOF
# Generated by include/scripts/registry.sh on every start; edit the script, not this file.
# Overrides the defaults built into Apicurio Registry (application.properties in its runner jar).
quarkus.http.host=$HOST
quarkus.http.port=$PORT
# Storage: H2 in a file under data/, so that schema ids stay valid for the messages Kafka keeps.
# WRITE_DELAY=0: a registered schema is on disk before its id is returned, even if the JVM is killed.
apicurio.storage.kind=sql
apicurio.storage.sql.kind=h2
apicurio.datasource.url=jdbc:h2:file:$DATA_DIR/registry;WRITE_DELAY=0
apicurio.datasource.username=sa
apicurio.datasource.password=sa
apicurio.datasource.jdbc.initial-size=1
apicurio.datasource.jdbc.min-size=1
apicurio.datasource.jdbc.max-size=8
# Like Confluent's registry: the same schema written differently (whitespace, key order) is the
# same schema, with the same id.
apicurio.ccompat.use-canonical-hash=true
# The built-in pattern prints dates like 2026-11+00-21.
quarkus.log.console.format=%d{yyyy-MM-dd HH:mm:ss,SSS} %-5p [%c{3.}] (%t) %s%e%n
EOF
}

# Size of registry.log before this start, so that a failure shows this start's lines only.
LOG_OFFSET=0

died_during_start() {
    rm -f "$PID_FILE" "$URL_FILE"
    {
        echo "registry.sh: error: the schema registry died during start. Last 30 lines of $LOG:"
        if [[ -s "$LOG" ]] && (($(stat -c %s "$LOG") > LOG_OFFSET)); then
            tail -c "+$((LOG_OFFSET + 1))" "$LOG" | tail -n 30
        else
            echo "  (the registry wrote no log)"
        fi
        echo "Fix the cause above and run include/scripts/registry.sh start again; if the database is" \
            "corrupt, delete $DATA_DIR (make clean-run) to start from scratch."
    } >&2
    exit 1
}

start() {
    local pid url
    url="$(base_url "$PORT")"
    pid="$(registry_pid)"
    if [[ -n "$pid" ]]; then
        local port
        port="$(sed -n 's/^quarkus\.http\.port=//p' "$CONFIG" 2>/dev/null)"
        if [[ -n "$port" && "$port" != "$PORT" ]]; then
            fail "a schema registry from $STATE_DIR is already running on $HOST:$port (pid $pid), not on" \
                "$HOST:$PORT. Use TICDC_LAKE_REGISTRY_PORT=$port, or run include/scripts/registry.sh stop" \
                "first to change ports."
        fi
        if healthy "$url"; then
            echo "$url" >"$URL_FILE"
            say "already running (pid $pid) and healthy"
            echo "Schema registry ready on $url"
            return 0
        fi
        say "registry process $pid exists but does not answer yet; waiting for it"
    else
        command -v java >/dev/null || fail "java not found on PATH: install a Java 17+ runtime" \
            "(e.g. apt-get install openjdk-17-jre-headless)"
        local jar
        jar="$(runner_jar)"
        check_port_free "$PORT"
        rm -f "$URL_FILE"
        write_config
        LOG_OFFSET="$(stat -c %s "$LOG" 2>/dev/null || echo 0)"
        say "starting the schema registry (${jar##*/}) on $HOST:$PORT (logs in $LOG)"
        # setsid: the registry outlives the calling shell and does not get its Ctrl-C; 9>&-: it
        # must not inherit the lock. The working directory is the state folder: Quarkus reads
        # config/application.properties from there.
        (cd "$STATE_DIR" && exec setsid java "-Xmx$HEAP" -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
            -Djava.awt.headless=true -jar "$jar" >>"$LOG" 2>&1 </dev/null 9>&-) &
        pid=$!
        echo "$pid" >"$PID_FILE"
    fi

    local deadline=$((SECONDS + START_TIMEOUT))
    until healthy "$url"; do
        alive "$pid" || died_during_start
        if ((SECONDS >= deadline)); then
            fail "the schema registry (pid $pid) did not answer on $url within ${START_TIMEOUT}s;" \
                "it is still running: look at $LOG, then run include/scripts/registry.sh stop" \
                "(or raise TICDC_LAKE_REGISTRY_START_TIMEOUT)."
        fi
        sleep 0.25
    done
    echo "$url" >"$URL_FILE"
    echo "Schema registry ready on $url"
}

stop() {
    local pid
    pid="$(registry_pid)"
    rm -f "$URL_FILE"
    if [[ -z "$pid" ]]; then
        say "not running"
        return 0
    fi
    say "stopping the schema registry (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_GRACE_SECONDS))
    while alive "$pid"; do
        if ((SECONDS >= deadline)); then
            say "still running after ${STOP_GRACE_SECONDS}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.25
    done
    rm -f "$PID_FILE"
    # The main thread turns zombie before the other threads have exited and closed the socket:
    # wait until the port is free, so that an immediate start finds it free.
    local port
    port="$(sed -n 's/^quarkus\.http\.port=//p' "$CONFIG" 2>/dev/null)"
    deadline=$((SECONDS + 5))
    while [[ -n "$port" ]] && port_in_use "$port" && ((SECONDS < deadline)); do
        sleep 0.1
    done
    say "stopped"
}

status() {
    local pid url port
    pid="$(registry_pid)"
    if [[ -z "$pid" ]]; then
        say "not running"
        return 1
    fi
    port="$(sed -n 's/^quarkus\.http\.port=//p' "$CONFIG" 2>/dev/null)"
    url="$(base_url "${port:-$PORT}")"
    if healthy "$url"; then
        say "running (pid $pid) and healthy on $url"
        return 0
    fi
    say "process $pid is running but the registry does not answer on $url; see $LOG"
    return 1
}

main() {
    local command="${1:-}"
    case "$command" in
    start | stop | status) ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
    esac
    check_port_number TICDC_LAKE_REGISTRY_PORT "$PORT"
    if [[ "$command" != start && ! -d "$STATE_DIR" ]]; then
        say "not running"
        [[ "$command" == stop ]] && exit 0 || exit 1
    fi
    mkdir -p "$STATE_DIR"
    # One start/stop at a time (parallel `make` targets, several shells).
    exec 9>"$LOCK_FILE"
    flock -w 120 9 || fail "another registry.sh holds $LOCK_FILE for more than 120s"
    "$command"
}

main "$@"

#!/usr/bin/env bash
# Local S3 API server (S3Proxy with its filesystem blob store) on loopback, for the tests of the
# S3 path and for trying it by hand. docs/object-storage.md says how the product is pointed at it.
#
#   include/scripts/s3.sh start    start it (idempotent), wait until the S3 API answers
#   include/scripts/s3.sh stop     stop it gracefully (SIGTERM, then SIGKILL after a grace period)
#   include/scripts/s3.sh status   exit 0 when the server is running and answers
#
# Environment:
#   TICDC_LAKE_JARS              folder that holds s3/*.jar                  (default <repo>/.jars, `make jars`)
#   TICDC_LAKE_HOME              local state; the server uses <home>/s3      (default <repo>/run)
#   TICDC_LAKE_S3_PORT           HTTP port                                   (default 19900)
#   TICDC_LAKE_S3_START_TIMEOUT  seconds to wait for the API to answer       (default 60)
#   TICDC_LAKE_S3_HEAP           maximum JVM heap                            (default 256m)
#   TICDC_LAKE_S3_ACCESS_KEY     the one access key the server accepts       (default ticdc-lake)
#   TICDC_LAKE_S3_SECRET_KEY     its secret key                              (default ticdc-lake-secret)
#
# Requests must be signed (AWS signature v2 or v4) with that key pair: clients use the standard
# AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. The key pair is a local test credential, not a secret.
#
# Files under <home>/s3: s3proxy.conf (generated on every start, mode 600), data/ (one folder per
# bucket: objects survive restarts), s3.pid, s3.log (everything the JVM prints), and `endpoint`
# (one line, the endpoint URL, present only while the server is up) for the other tools.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JARS_DIR="$(realpath -m "${TICDC_LAKE_JARS:-$REPO/.jars}/s3")"
STATE_DIR="$(realpath -m "${TICDC_LAKE_HOME:-$REPO/run}/s3")"
PORT="${TICDC_LAKE_S3_PORT:-19900}"
START_TIMEOUT="${TICDC_LAKE_S3_START_TIMEOUT:-60}"
HEAP="${TICDC_LAKE_S3_HEAP:-256m}"
ACCESS_KEY="${TICDC_LAKE_S3_ACCESS_KEY:-ticdc-lake}"
SECRET_KEY="${TICDC_LAKE_S3_SECRET_KEY:-ticdc-lake-secret}"
HOST=127.0.0.1

CONFIG="$STATE_DIR/s3proxy.conf"
DATA_DIR="$STATE_DIR/data"
PID_FILE="$STATE_DIR/s3.pid"
LOG="$STATE_DIR/s3.log"
ENDPOINT_FILE="$STATE_DIR/endpoint"
LOCK_FILE="$STATE_DIR/.lock"
STOP_GRACE_SECONDS=30

say() { echo "s3.sh: $*"; }
fail() {
    echo "s3.sh: error: $*" >&2
    exit 1
}

check_port_number() { # name value
    [[ "$2" =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 65535)) ||
        fail "$1=$2 is not a TCP port number (1-65535)"
}

endpoint_url() { # port
    echo "http://$HOST:$1"
}

# Whether a process is alive (a zombie waiting for a parent that never reaps it is not).
alive() { # pid
    kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]]
}

# The pid of our server when it is alive, else nothing. A pid file whose process is gone or is
# no longer S3Proxy (pid reused) is stale and removed.
server_pid() {
    [[ -f "$PID_FILE" ]] || return 0
    local pid
    pid="$(tr -dc '0-9' <"$PID_FILE")"
    if [[ -n "$pid" ]] && alive "$pid" &&
        tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 's3proxy-.*-jar-with-dependencies\.jar'; then
        echo "$pid"
    else
        rm -f "$PID_FILE"
    fi
}

# The S3Proxy jar; fails when it is not there.
server_jar() {
    local jars=("$JARS_DIR"/s3proxy-*-jar-with-dependencies.jar)
    [[ -f "${jars[0]}" ]] ||
        fail "S3Proxy jar not found in $JARS_DIR: run make jars (or set TICDC_LAKE_JARS)"
    ((${#jars[@]} == 1)) ||
        fail "several S3Proxy versions in $JARS_DIR (${jars[*]##*/}): delete $JARS_DIR and run make jars"
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

# An unsigned ListBuckets request: an S3 server with authentication answers 403 AccessDenied.
healthy() { # endpoint
    [[ "$(http_status "$1/")" == 403 ]]
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
            "TICDC_LAKE_S3_PORT=$(($1 + 100)) include/scripts/s3.sh start" \
            "(and use the same TICDC_LAKE_S3_PORT for every later command)."
    fi
}

write_config() {
    mkdir -p "$DATA_DIR"
    (
        umask 077
        cat >"$CONFIG" <<EOF
# Generated by include/scripts/s3.sh on every start; edit the script, not this file.
s3proxy.endpoint=$(endpoint_url "$PORT")
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$ACCESS_KEY
s3proxy.credential=$SECRET_KEY
jclouds.provider=filesystem
jclouds.filesystem.basedir=$DATA_DIR
EOF
    )
}

# Size of s3.log before this start, so that a failure shows this start's lines only.
LOG_OFFSET=0

died_during_start() {
    rm -f "$PID_FILE" "$ENDPOINT_FILE"
    {
        echo "s3.sh: error: the S3 server died during start. Last 30 lines of $LOG:"
        if [[ -s "$LOG" ]] && (($(stat -c %s "$LOG") > LOG_OFFSET)); then
            tail -c "+$((LOG_OFFSET + 1))" "$LOG" | tail -n 30
        else
            echo "  (the server wrote no log)"
        fi
        echo "Fix the cause above and run include/scripts/s3.sh start again."
    } >&2
    exit 1
}

configured_port() {
    sed -n 's#^s3proxy\.endpoint=http://[^:]*:##p' "$CONFIG" 2>/dev/null
}

start() {
    local pid url
    url="$(endpoint_url "$PORT")"
    pid="$(server_pid)"
    if [[ -n "$pid" ]]; then
        local port
        port="$(configured_port)"
        if [[ -n "$port" && "$port" != "$PORT" ]]; then
            fail "an S3 server from $STATE_DIR is already running on $HOST:$port (pid $pid), not on" \
                "$HOST:$PORT. Use TICDC_LAKE_S3_PORT=$port, or run include/scripts/s3.sh stop first to" \
                "change ports."
        fi
        if healthy "$url"; then
            echo "$url" >"$ENDPOINT_FILE"
            say "already running (pid $pid) and healthy"
            echo "S3 API ready on $url"
            return 0
        fi
        say "server process $pid exists but does not answer yet; waiting for it"
    else
        command -v java >/dev/null || fail "java not found on PATH: install a Java 17+ runtime" \
            "(e.g. apt-get install openjdk-17-jre-headless)"
        local jar
        jar="$(server_jar)"
        check_port_free "$PORT"
        rm -f "$ENDPOINT_FILE"
        write_config
        LOG_OFFSET="$(stat -c %s "$LOG" 2>/dev/null || echo 0)"
        say "starting the S3 server (${jar##*/}) on $HOST:$PORT (data in $DATA_DIR, logs in $LOG)"
        # setsid: the server outlives the calling shell and does not get its Ctrl-C; 9>&-: it
        # must not inherit the lock.
        setsid java "-Xmx$HEAP" -Xss512k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
            -jar "$jar" --properties "$CONFIG" >>"$LOG" 2>&1 </dev/null 9>&- &
        pid=$!
        echo "$pid" >"$PID_FILE"
    fi

    local deadline=$((SECONDS + START_TIMEOUT))
    until healthy "$url"; do
        alive "$pid" || died_during_start
        if ((SECONDS >= deadline)); then
            fail "the S3 server (pid $pid) did not answer on $url within ${START_TIMEOUT}s;" \
                "it is still running: look at $LOG, then run include/scripts/s3.sh stop" \
                "(or raise TICDC_LAKE_S3_START_TIMEOUT)."
        fi
        sleep 0.25
    done
    echo "$url" >"$ENDPOINT_FILE"
    echo "S3 API ready on $url"
}

stop() {
    local pid
    pid="$(server_pid)"
    rm -f "$ENDPOINT_FILE"
    if [[ -z "$pid" ]]; then
        say "not running"
        return 0
    fi
    say "stopping the S3 server (pid $pid)"
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
    # Wait until the port is free, so that an immediate start finds it free.
    local port
    port="$(configured_port)"
    deadline=$((SECONDS + 5))
    while [[ -n "$port" ]] && port_in_use "$port" && ((SECONDS < deadline)); do
        sleep 0.1
    done
    say "stopped"
}

status() {
    local pid url port
    pid="$(server_pid)"
    if [[ -z "$pid" ]]; then
        say "not running"
        return 1
    fi
    port="$(configured_port)"
    url="$(endpoint_url "${port:-$PORT}")"
    if healthy "$url"; then
        say "running (pid $pid) and healthy on $url"
        return 0
    fi
    say "process $pid is running but the S3 API does not answer on $url; see $LOG"
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
    check_port_number TICDC_LAKE_S3_PORT "$PORT"
    if [[ "$command" != start && ! -d "$STATE_DIR" ]]; then
        say "not running"
        [[ "$command" == stop ]] && exit 0 || exit 1
    fi
    mkdir -p "$STATE_DIR"
    # One start/stop at a time (parallel `make` targets, several shells).
    exec 9>"$LOCK_FILE"
    flock -w 120 9 || fail "another s3.sh holds $LOCK_FILE for more than 120s"
    "$command"
}

main "$@"

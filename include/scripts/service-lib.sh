# shellcheck shell=bash
# The plumbing the local-service scripts of this folder share (kafka.sh, registry.sh, s3.sh,
# spark-standalone.sh): messages, port and process checks, launching a daemon, waiting for it,
# the graceful stop, status and the start/stop lock. Sourced, never run: it only sets HOST and
# STOP_GRACE_SECONDS and defines functions, so what is specific to a service (its settings, files,
# health check and messages) stays in its script, and one fix here fixes all four.
#
#   SERVICE_NAME="kafka.sh"
#   source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"
#
# Variables it reads from the sourcing script:
#   SERVICE_NAME        the script's name, the prefix of every message         (set before sourcing)
#   STATE_DIR           the service's state folder; the lock is STATE_DIR/.lock (used by service_main)
#   START_POLL_SECONDS  pause between health checks in await_ready          (default 0.25)
# and await_ready calls the script's own died_during_start when the daemon dies while starting.

HOST=127.0.0.1 # every service listens on loopback only
STOP_GRACE_SECONDS=30

say() { echo "$SERVICE_NAME: $*"; }
fail() {
    echo "$SERVICE_NAME: error: $*" >&2
    exit 1
}

check_port_number() { # name value
    [[ "$2" =~ ^[0-9]+$ ]] && ((10#$2 >= 1 && 10#$2 <= 65535)) ||
        fail "$1=$2 is not a TCP port number (1-65535)"
}

# Whether a process is alive (a zombie waiting for a parent that never reaps it is not).
alive() { # pid
    kill -0 "$1" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]]
}

# The pid in pid_file when that process is alive and its command line matches the pattern (grep
# regex), else nothing. A pid file whose process is gone or runs something else (pid reused) is
# stale and removed.
daemon_pid() { # pid_file cmdline_pattern
    [[ -f "$1" ]] || return 0
    local pid
    pid="$(tr -dc '0-9' <"$1")"
    if [[ -n "$pid" ]] && alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$2"; then
        echo "$pid"
    else
        rm -f "$1"
    fi
}

# Whether something accepts TCP connections on 127.0.0.1:port.
port_in_use() { # port
    timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null
}

port_owner() { # port
    command -v ss >/dev/null || return 0
    ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -1 || true
}

# Fails, naming the owner and the setting that moves the service, when the port is taken.
check_port_free() { # port variable
    if port_in_use "$1"; then
        local owner
        owner="$(port_owner "$1")"
        fail "port $1 on $HOST is already taken by another process${owner:+ ($owner)}." \
            "Stop that process or choose another port, e.g. $2=$(($1 + 100)) include/scripts/$SERVICE_NAME start" \
            "(and use the same $2 for every later command)."
    fi
}

# A stopped JVM's other threads close its sockets a little after its main thread exits: waits
# (at most 5 s) until the port is free, so that an immediate start finds it free.
wait_port_released() { # port (nothing: no wait)
    local deadline=$((SECONDS + 5))
    while [[ -n "$1" ]] && port_in_use "$1" && ((SECONDS < deadline)); do
        sleep 0.1
    done
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

require_java() {
    command -v java >/dev/null || fail "java not found on PATH: install a Java 17+ runtime" \
        "(e.g. apt-get install openjdk-17-jre-headless)"
}

# The one jar in dir that matches the glob; fails when there is none or several (two versions
# unpacked side by side would make the choice arbitrary).
single_jar() { # dir glob missing_text product make_target
    local jars
    # shellcheck disable=SC2206 # the glob must expand
    jars=("$1"/$2)
    [[ -f "${jars[0]}" ]] || fail "$3 in $1: run make $5 (or set TICDC_LAKE_JARS)"
    ((${#jars[@]} == 1)) || fail "several $4 versions in $1 (${jars[*]##*/}): delete $1 and run make $5"
    echo "${jars[0]}"
}

# The size of a log now, so that a failed start shows only the lines that start wrote.
log_size() { # file
    stat -c %s "$1" 2>/dev/null || echo 0
}

# The last 30 lines a log got after offset bytes, or the placeholder when it got none.
print_log_tail() { # log offset placeholder
    if [[ -s "$1" ]] && (($(stat -c %s "$1") > $2)); then
        tail -c "+$(($2 + 1))" "$1" | tail -n 30
    else
        echo "$3"
    fi
}

# Runs command in the background as a daemon and writes its pid to pid_file. setsid: it outlives
# the calling shell and does not get its Ctrl-C; 9>&-: it must not inherit the lock. With no
# fork in between (exec; setsid only forks for a process group leader), the pid is the daemon's.
launch_daemon() { # workdir (empty: this one) pid_file log command...
    local workdir="${1:-.}" pid_file="$2" log="$3"
    shift 3
    (cd "$workdir" && exec setsid "$@" >>"$log" 2>&1 </dev/null 9>&-) &
    echo $! >"$pid_file"
}

# Runs check until it succeeds, every START_POLL_SECONDS; calls the script's died_during_start
# when the daemon dies meanwhile, fails with message once SECONDS reaches deadline.
await_ready() { # pid deadline message check...
    local pid="$1" deadline="$2" message="$3"
    shift 3
    until "$@"; do
        alive "$pid" || died_during_start
        if ((SECONDS >= deadline)); then
            fail "$message"
        fi
        sleep "${START_POLL_SECONDS:-0.25}"
    done
}

# The graceful stop of one process: SIGTERM, then SIGKILL after STOP_GRACE_SECONDS.
terminate() { # pid [subject of the SIGKILL message, e.g. "the worker is "]
    kill -TERM "$1" 2>/dev/null || true
    local deadline=$((SECONDS + STOP_GRACE_SECONDS))
    while alive "$1"; do
        if ((SECONDS >= deadline)); then
            say "${2:-}still running after ${STOP_GRACE_SECONDS}s; sending SIGKILL"
            kill -KILL "$1" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.25
    done
}

# stop of a one-process service (the caller has removed the files that say it is up).
stop_service() { # what pid pid_file [port to wait for]
    if [[ -z "$2" ]]; then
        say "not running"
        return 0
    fi
    say "stopping the $1 (pid $2)"
    terminate "$2"
    rm -f "$3"
    wait_port_released "${4:-}"
    say "stopped"
}

# status of a one-process service: exit 0 when its pid is alive and check succeeds.
report_status() { # pid address what log check...
    local pid="$1" address="$2" what="$3" log="$4"
    shift 4
    if [[ -z "$pid" ]]; then
        say "not running"
        return 1
    fi
    if "$@"; then
        say "running (pid $pid) and healthy on $address"
        return 0
    fi
    say "process $pid is running but $what does not answer on $address; see $log"
    return 1
}

# The scripts' entry point: checks the command and the port settings, then runs the script's
# start, stop or status function holding STATE_DIR/.lock (one start/stop at a time: parallel
# `make` targets, several shells). stop and status of a service that never ran need no state.
service_main() { # command [port_variable value]...
    local command="$1"
    shift
    case "$command" in
    start | stop | status) ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
    esac
    while (($# >= 2)); do
        check_port_number "$1" "$2"
        shift 2
    done
    if [[ "$command" != start && ! -d "$STATE_DIR" ]]; then
        say "not running"
        [[ "$command" == stop ]] && exit 0 || exit 1
    fi
    mkdir -p "$STATE_DIR"
    exec 9>"$STATE_DIR/.lock"
    flock -w 120 9 || fail "another $SERVICE_NAME holds $STATE_DIR/.lock for more than 120s"
    "$command"
}

#!/usr/bin/env bash
# Local single-node Apache Kafka broker (KRaft, broker + controller in one JVM) on loopback,
# for `make demo` and the tests.
#
#   include/scripts/kafka.sh start    start it (idempotent), wait until it answers metadata requests
#   include/scripts/kafka.sh stop     stop it gracefully (SIGTERM, then SIGKILL after a grace period)
#   include/scripts/kafka.sh status   exit 0 when the broker is running and answers
#
# Environment:
#   TICDC_LAKE_JARS        folder that holds kafka/*.jar            (default <repo>/.jars, `make jars`)
#   TICDC_LAKE_HOME        local state; the broker uses <home>/kafka (default <repo>/run)
#   KAFKA_PORT             client (PLAINTEXT) port                   (default 19092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port                     (default 19093)
#   KAFKA_SASL_PORT        SASL_PLAINTEXT listener, mechanism PLAIN   (default 19094)
#   KAFKA_SSL_PORT         SASL_SSL listener: PLAIN over TLS          (default 19095)
#   KAFKA_START_TIMEOUT    seconds to wait for the broker to answer  (default 60)
#   TICDC_LAKE_PYTHON      python with confluent-kafka for the health check (default <repo>/.venv/bin/python)
#
# Files under <home>/kafka: server.properties, log4j.properties and log4j2.properties, data/
# (log.dirs), broker.pid, broker.log (INFO), console.log (JVM stdout/stderr), cluster.id, and
# `bootstrap` (one line, host:port, present only while the broker is up) for the other tools.
#
# Security listeners (docs/security.md): besides PLAINTEXT, the broker listens with SASL/PLAIN on
# KAFKA_SASL_PORT (SASL_PLAINTEXT) and KAFKA_SSL_PORT (SASL_SSL: a certificate for 127.0.0.1
# signed by a local CA that openssl makes on first start, in <home>/kafka/tls/, ca.pem for
# clients). One user, `ticdc`, with a random password made on first start (sasl.password, mode
# 600). security.json (mode 600, present only while the broker is up) tells tools and tests the
# listeners, user, password and CA file. Everything else keeps using PLAINTEXT.
set -euo pipefail

SERVICE_NAME=kafka.sh
# shellcheck source=service-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JARS_DIR="${TICDC_LAKE_JARS:-$REPO/.jars}/kafka"
STATE_DIR="${TICDC_LAKE_HOME:-$REPO/run}/kafka"
PORT="${KAFKA_PORT:-19092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
SASL_PORT="${KAFKA_SASL_PORT:-19094}"
SSL_PORT="${KAFKA_SSL_PORT:-19095}"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-60}"
PYTHON="${TICDC_LAKE_PYTHON:-$REPO/.venv/bin/python}"
START_POLL_SECONDS=1 # each health check starts a Python process

DATA_DIR="$STATE_DIR/data"
PROPS="$STATE_DIR/server.properties"
LOG4J="$STATE_DIR/log4j.properties"
LOG4J2="$STATE_DIR/log4j2.properties"
PID_FILE="$STATE_DIR/broker.pid"
BROKER_LOG="$STATE_DIR/broker.log"
CONSOLE_LOG="$STATE_DIR/console.log"
CLUSTER_ID_FILE="$STATE_DIR/cluster.id"
BOOTSTRAP_FILE="$STATE_DIR/bootstrap"
TLS_DIR="$STATE_DIR/tls"
SASL_USER=ticdc
SASL_PASSWORD_FILE="$STATE_DIR/sasl.password"
SECURITY_FILE="$STATE_DIR/security.json"

broker_pid() { daemon_pid "$PID_FILE" 'kafka\.Kafka'; }

# A real metadata request against host:port; succeeds when the broker answers with at least one
# broker and, when given, the expected cluster id.
healthy() { # bootstrap [cluster_id [librdkafka settings as JSON]]
    [[ -x "$PYTHON" ]] || fail "$PYTHON not found: the health check needs the project venv (run make install," \
        "or set TICDC_LAKE_PYTHON to a python with confluent-kafka)"
    # Settings (with the password) go through the environment, not the command line that ps shows.
    KAFKA_SH_CLIENT_SETTINGS="${3:-"{}"}" "$PYTHON" - "$1" "${2:-}" 2>/dev/null <<'EOF'
import json
import os
import sys

from confluent_kafka.admin import AdminClient

bootstrap, expected_cluster = sys.argv[1], sys.argv[2]
security = json.loads(os.environ["KAFKA_SH_CLIENT_SETTINGS"])
client = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 0, **security})
try:
    metadata = client.list_topics(timeout=3)
except Exception:  # noqa: BLE001 - any failure means "not healthy yet"
    sys.exit(1)
if not metadata.brokers or (expected_cluster and metadata.cluster_id != expected_cluster):
    sys.exit(1)
EOF
}

# The SASL user's password: random on first start, then kept (clients may have stored it).
sasl_password() {
    if [[ ! -s "$SASL_PASSWORD_FILE" ]]; then
        (umask 077 && head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$SASL_PASSWORD_FILE")
    fi
    cat "$SASL_PASSWORD_FILE"
}

# A local CA and a broker certificate for 127.0.0.1 signed by it (once; kept across restarts so
# clients can keep trusting ca.pem). The keystore is PKCS12 with a random password.
make_tls_once() {
    [[ -s "$TLS_DIR/broker.p12" && -s "$TLS_DIR/ca.pem" && -s "$TLS_DIR/keystore.password" ]] && return 0
    command -v openssl >/dev/null || fail "openssl not found on PATH: the SASL_SSL listener needs it" \
        "(apt-get install openssl)"
    rm -rf "$TLS_DIR"
    (umask 077 && mkdir -p "$TLS_DIR")
    local log="$STATE_DIR/tls.log"
    (
        set -e
        cd "$TLS_DIR"
        umask 077
        head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >keystore.password
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=ticdc-lake local CA" \
            -keyout ca.key -out ca.pem
        openssl req -newkey rsa:2048 -nodes -subj "/CN=$HOST" -keyout broker.key -out broker.csr
        printf 'subjectAltName=IP:%s,DNS:localhost\nbasicConstraints=CA:FALSE\n' "$HOST" >broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
            -extfile broker.ext -out broker.pem
        openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
            -passout "file:keystore.password" -out broker.p12
        chmod 644 ca.pem
    ) >"$log" 2>&1 || fail "making the broker's TLS certificate failed; see $log"
}

write_config() {
    mkdir -p "$DATA_DIR"
    make_tls_once
    local password keystore_password jaas
    password="$(sasl_password)"
    keystore_password="$(<"$TLS_DIR/keystore.password")"
    jaas="org.apache.kafka.common.security.plain.PlainLoginModule required user_$SASL_USER=\"$password\";"
    # It holds the SASL password and the keystore password: readable by this user only.
    (umask 077 && : >"$PROPS")
    cat >"$PROPS" <<EOF
# Generated by include/scripts/kafka.sh on every start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SASL_SSL://$HOST:$SSL_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT,SASL_PLAINTEXT://$HOST:$SASL_PORT,SASL_SSL://$HOST:$SSL_PORT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas
listener.name.sasl_ssl.plain.sasl.jaas.config=$jaas
ssl.keystore.type=PKCS12
ssl.keystore.location=$TLS_DIR/broker.p12
ssl.keystore.password=$keystore_password
ssl.key.password=$keystore_password
log.dirs=$DATA_DIR
num.partitions=3
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    cat >"$LOG4J" <<EOF
# log4j 1 (reload4j) configuration of the local broker: INFO to broker.log.
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$BROKER_LOG
log4j.appender.file.MaxFileSize=50MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.raft=INFO
log4j.logger.state.change.logger=INFO
EOF
    # Kafka also touches the log4j 2 API (dynamic log levels); without a configuration it
    # complains on every start. Whatever goes through it lands in console.log.
    cat >"$LOG4J2" <<EOF
status=warn
appender.console.type=Console
appender.console.name=console
appender.console.layout.type=PatternLayout
appender.console.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=warn
rootLogger.appenderRef.console.ref=console
EOF
}

JAVA_OPTS=(-Xmx512m -Xms512m -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$LOG4J" "-Dlog4j2.configurationFile=$LOG4J2" -cp "$JARS_DIR/*")

format_storage_once() {
    [[ -f "$DATA_DIR/meta.properties" ]] && return 0
    local cluster_id
    if [[ -s "$CLUSTER_ID_FILE" ]]; then
        cluster_id="$(<"$CLUSTER_ID_FILE")"
    else
        cluster_id="$(java "${JAVA_OPTS[@]}" kafka.tools.StorageTool random-uuid 2>>"$CONSOLE_LOG" | tail -1)" || true
        [[ -n "$cluster_id" ]] || fail "kafka.tools.StorageTool random-uuid printed nothing; see $CONSOLE_LOG"
        echo "$cluster_id" >"$CLUSTER_ID_FILE"
    fi
    say "formatting broker storage in $DATA_DIR (cluster id $cluster_id)"
    java "${JAVA_OPTS[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$PROPS" >>"$CONSOLE_LOG" 2>&1 ||
        fail "formatting the broker storage failed; last lines of $CONSOLE_LOG:"$'\n'"$(tail -n 30 "$CONSOLE_LOG")"
}

cluster_id() {
    # meta.properties is the truth once formatted; cluster.id is what format was given.
    if [[ -f "$DATA_DIR/meta.properties" ]]; then
        sed -n 's/^cluster\.id=//p' "$DATA_DIR/meta.properties"
    elif [[ -s "$CLUSTER_ID_FILE" ]]; then
        cat "$CLUSTER_ID_FILE"
    fi
}

# librdkafka settings for a security listener (JSON), for the health check and security.json.
sasl_client_settings() { # SASL_PLAINTEXT|SASL_SSL
    local extra=""
    [[ "$1" == SASL_SSL ]] && extra=", \"ssl.ca.location\": \"$TLS_DIR/ca.pem\""
    printf '{"security.protocol": "%s", "sasl.mechanism": "PLAIN", "sasl.username": "%s", "sasl.password": "%s"%s}' \
        "$1" "$SASL_USER" "$(sasl_password)" "$extra"
}

# Whether the running broker has the security listeners of this script (a broker started by an
# older kafka.sh has not: restart it to get them).
has_security_listeners() {
    grep -q "^listeners=.*SASL_PLAINTEXT://$HOST:$SASL_PORT" "$PROPS" 2>/dev/null &&
        grep -q "^listeners=.*SASL_SSL://$HOST:$SSL_PORT" "$PROPS" 2>/dev/null
}

# Whether the broker answers on both security listeners with the local user's credentials.
security_healthy() {
    healthy "$HOST:$SASL_PORT" "$(cluster_id)" "$(sasl_client_settings SASL_PLAINTEXT)" &&
        healthy "$HOST:$SSL_PORT" "$(cluster_id)" "$(sasl_client_settings SASL_SSL)"
}

# What tools and tests need to reach the security listeners (mode 600: it holds the password).
write_security_file() {
    (
        umask 077
        cat >"$SECURITY_FILE.tmp" <<EOF
{
  "plaintext": "$HOST:$PORT",
  "sasl_plaintext": "$HOST:$SASL_PORT",
  "sasl_ssl": "$HOST:$SSL_PORT",
  "sasl_mechanism": "PLAIN",
  "username": "$SASL_USER",
  "password": "$(sasl_password)",
  "ssl_ca_location": "$TLS_DIR/ca.pem"
}
EOF
    )
    mv "$SECURITY_FILE.tmp" "$SECURITY_FILE"
}

# Size of broker.log before this start, so that a failure shows this start's lines only.
LOG_OFFSET=0

died_during_start() {
    rm -f "$PID_FILE" "$BOOTSTRAP_FILE"
    {
        echo "kafka.sh: error: the Kafka broker died during start. Last 30 lines of $BROKER_LOG:"
        print_log_tail "$BROKER_LOG" "$LOG_OFFSET" "  (the broker wrote no log)"
        if [[ -s "$CONSOLE_LOG" ]]; then
            echo "--- last 10 lines of $CONSOLE_LOG (JVM output):"
            tail -n 10 "$CONSOLE_LOG"
        fi
        echo "Fix the cause above and run include/scripts/kafka.sh start again; if the storage is" \
            "corrupt, delete $STATE_DIR (make clean-run) to start from scratch."
    } >&2
    exit 1
}

running_bootstrap() {
    if [[ -s "$BOOTSTRAP_FILE" ]]; then head -1 "$BOOTSTRAP_FILE"; else echo "$HOST:$PORT"; fi
}

start() {
    local pid
    pid="$(broker_pid)"
    if [[ -n "$pid" ]]; then
        local address
        address="$(sed -n 's#^advertised.listeners=PLAINTEXT://\([^,]*\).*#\1#p' "$PROPS" 2>/dev/null)"
        address="${address:-$(running_bootstrap)}"
        if [[ "$address" != "$HOST:$PORT" ]]; then
            fail "a broker from $STATE_DIR is already running on $address (pid $pid), not on $HOST:$PORT." \
                "Use KAFKA_PORT=${address##*:}, or run include/scripts/kafka.sh stop first to change ports."
        fi
        if healthy "$address" "$(cluster_id)"; then
            echo "$address" >"$BOOTSTRAP_FILE"
            if has_security_listeners && security_healthy; then
                write_security_file
            else
                rm -f "$SECURITY_FILE"
                say "note: this broker has no SASL listeners on $HOST:$SASL_PORT/$SSL_PORT (started by an" \
                    "older kafka.sh or with other ports); run include/scripts/kafka.sh stop, then start, to add them"
            fi
            say "already running (pid $pid) and healthy"
            echo "Kafka broker ready on $address"
            return 0
        fi
        say "broker process $pid exists but does not answer yet; waiting for it"
    else
        require_java
        compgen -G "$JARS_DIR/kafka_2.13-*.jar" >/dev/null ||
            fail "Kafka jars not found in $JARS_DIR: run make jars (or set TICDC_LAKE_JARS)"
        [[ "$(printf '%s\n' "$PORT" "$CONTROLLER_PORT" "$SASL_PORT" "$SSL_PORT" | sort -u | wc -l)" == 4 ]] ||
            fail "KAFKA_PORT ($PORT), KAFKA_CONTROLLER_PORT ($CONTROLLER_PORT), KAFKA_SASL_PORT ($SASL_PORT)" \
                "and KAFKA_SSL_PORT ($SSL_PORT) must be four different ports"
        check_port_free "$PORT" KAFKA_PORT
        check_port_free "$CONTROLLER_PORT" KAFKA_CONTROLLER_PORT
        check_port_free "$SASL_PORT" KAFKA_SASL_PORT
        check_port_free "$SSL_PORT" KAFKA_SSL_PORT
        rm -f "$BOOTSTRAP_FILE" "$SECURITY_FILE"
        write_config
        format_storage_once
        LOG_OFFSET="$(log_size "$BROKER_LOG")"
        say "starting the Kafka broker on $HOST:$PORT (controller $HOST:$CONTROLLER_PORT, logs in $BROKER_LOG)"
        launch_daemon "" "$PID_FILE" "$CONSOLE_LOG" java "${JAVA_OPTS[@]}" kafka.Kafka "$PROPS"
        pid="$(<"$PID_FILE")"
    fi

    local deadline=$((SECONDS + START_TIMEOUT)) late
    late="the Kafka broker (pid $pid) did not answer on $HOST:$PORT within ${START_TIMEOUT}s; it is still running:"
    late+=" look at $BROKER_LOG, then run include/scripts/kafka.sh stop (or raise KAFKA_START_TIMEOUT)."
    await_ready "$pid" "$deadline" "$late" healthy "$HOST:$PORT" "$(cluster_id)"
    # (A broker that an older kafka.sh started, still starting up now, has no SASL listeners.)
    if has_security_listeners; then
        late="the Kafka broker (pid $pid) answers on $HOST:$PORT but not on its SASL listeners $HOST:$SASL_PORT"
        late+=" (SASL_PLAINTEXT) and $HOST:$SSL_PORT (SASL_SSL) within ${START_TIMEOUT}s; look at $BROKER_LOG"
        late+=" (authentication and SSL errors), then run include/scripts/kafka.sh stop."
        await_ready "$pid" "$deadline" "$late" security_healthy
        write_security_file
    fi
    echo "$HOST:$PORT" >"$BOOTSTRAP_FILE"
    echo "Kafka broker ready on $HOST:$PORT (SASL_PLAINTEXT $HOST:$SASL_PORT, SASL_SSL $HOST:$SSL_PORT)"
}

stop() {
    local pid
    pid="$(broker_pid)"
    rm -f "$BOOTSTRAP_FILE" "$SECURITY_FILE"
    stop_service "Kafka broker" "$pid" "$PID_FILE"
}

status() {
    local address
    address="$(running_bootstrap)"
    report_status "$(broker_pid)" "$address" "the broker" "$BROKER_LOG" healthy "$address" "$(cluster_id)"
}

service_main "${1:-}" KAFKA_PORT "$PORT" KAFKA_CONTROLLER_PORT "$CONTROLLER_PORT" KAFKA_SASL_PORT "$SASL_PORT" \
    KAFKA_SSL_PORT "$SSL_PORT"

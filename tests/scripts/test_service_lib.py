"""include/scripts/service-lib.sh, the plumbing the four service scripts share, and the error paths
of each script that need no JVM (cheap: bash only; the real starts are in test_kafka_sh.py and
test_registry_sh.py)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "include" / "scripts"
LIB = SCRIPTS / "service-lib.sh"
#: script -> (its main port variable, its state folder under TICDC_LAKE_HOME)
SERVICES = {
    "kafka.sh": ("KAFKA_PORT", "kafka"),
    "registry.sh": ("TICDC_LAKE_REGISTRY_PORT", "registry"),
    "s3.sh": ("TICDC_LAKE_S3_PORT", "s3"),
    "spark-standalone.sh": ("SPARK_MASTER_PORT", "spark"),
}


def _lib(snippet: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs snippet in a bash that sourced the library as the script `test.sh`."""
    program = f'set -euo pipefail\nSERVICE_NAME=test.sh\nsource "{LIB}"\n{snippet}'
    return subprocess.run(["bash", "-c", program], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def _script(name: str, command: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TICDC_LAKE_HOME": str(home), **env}
    return subprocess.run(
        [str(SCRIPTS / name), command], env=environment, capture_output=True, text=True, timeout=60, check=False
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --- the scripts use the library instead of copies of it ---------------------------------------


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_script_parses_and_sources_the_library_without_copying_it(name: str) -> None:
    text = (SCRIPTS / name).read_text()
    assert subprocess.run(["bash", "-n", str(SCRIPTS / name)], capture_output=True, check=False).returncode == 0
    assert f"SERVICE_NAME={name}\n" in text
    assert 'source "$(dirname "${BASH_SOURCE[0]}")/service-lib.sh"\n' in text
    shared = set(re.findall(r"^([a-z_]+)\(\) \{", LIB.read_text(), re.MULTILINE))
    redefined = shared & set(re.findall(r"^([a-z_]+)\(\) \{", text, re.MULTILINE))
    assert not redefined, f"{name} redefines {sorted(redefined)} of service-lib.sh"


# --- every script: usage, port settings, stop/status of a service that never ran ------------------


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_usage_bad_port_and_never_started(name: str, tmp_path: Path) -> None:
    variable, _ = SERVICES[name]
    usage = _script(name, "restart", tmp_path)
    assert (usage.returncode, usage.stdout, usage.stderr) == (2, "", f"usage: {SCRIPTS / name} start|stop|status\n")
    for bad in ("0", "65536", "http", "1e3"):
        result = _script(name, "status", tmp_path, **{variable: bad})
        assert (result.returncode, result.stderr) == (
            1,
            f"{name}: error: {variable}={bad} is not a TCP port number (1-65535)\n",
        )
    stopped = _script(name, "stop", tmp_path)
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (0, f"{name}: not running\n", "")
    status = _script(name, "status", tmp_path)
    assert (status.returncode, status.stdout, status.stderr) == (1, f"{name}: not running\n", "")


@pytest.mark.parametrize("name", ["s3.sh", "spark-standalone.sh"])
def test_port_taken_names_the_port_and_the_way_out(name: str, tmp_path: Path) -> None:
    variable, state = SERVICES[name]
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        # s3.sh checks its jar before the port: an empty file passes that check.
        (tmp_path / "jars" / "s3").mkdir(parents=True)
        (tmp_path / "jars" / "s3" / "s3proxy-0-jar-with-dependencies.jar").write_text("")
        result = _script(name, "start", tmp_path, TICDC_LAKE_JARS=str(tmp_path / "jars"), **{variable: str(port)})
    assert result.returncode == 1
    assert result.stderr.startswith(f"{name}: error: port {port} on 127.0.0.1 is already taken by another process")
    assert result.stderr.endswith(
        f"Stop that process or choose another port, e.g. {variable}={port + 100} include/scripts/{name} start"
        f" (and use the same {variable} for every later command).\n"
    )
    assert not [p for p in (tmp_path / state).glob("*.pid")]


def test_s3_jar_missing_or_ambiguous(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    env = {"TICDC_LAKE_JARS": str(jars), "TICDC_LAKE_S3_PORT": str(_free_port())}
    missing = _script("s3.sh", "start", tmp_path, **env)
    assert (missing.returncode, missing.stderr) == (
        1,
        f"s3.sh: error: S3Proxy jar not found in {jars}/s3: run make jars (or set TICDC_LAKE_JARS)\n",
    )
    (jars / "s3").mkdir(parents=True)
    for version in ("1", "2"):
        (jars / "s3" / f"s3proxy-{version}-jar-with-dependencies.jar").write_text("")
    several = _script("s3.sh", "start", tmp_path, **env)
    assert (several.returncode, several.stderr) == (
        1,
        f"s3.sh: error: several S3Proxy versions in {jars}/s3 (s3proxy-1-jar-with-dependencies.jar"
        f" s3proxy-2-jar-with-dependencies.jar): delete {jars}/s3 and run make jars\n",
    )


# --- the library's own rules ------------------------------------------------------------------------


def test_daemon_pid_keeps_a_live_match_and_removes_a_stale_file(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        (tmp_path / "match.pid").write_text(f"{sleeper.pid}\n")
        (tmp_path / "other.pid").write_text(f"{sleeper.pid}\n")  # alive, but not the daemon asked for
        (tmp_path / "gone.pid").write_text("2147483646\n")
        result = _lib(
            "daemon_pid match.pid '^sleep 300'; echo \"[$(daemon_pid other.pid 'kafka\\.Kafka')]\";"
            ' echo "[$(daemon_pid gone.pid sleep)]"; echo "[$(daemon_pid absent.pid sleep)]"',
            tmp_path,
        )
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{sleeper.pid}\n[]\n[]\n[]\n", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.pid"]


def test_print_log_tail_shows_only_what_this_start_wrote(tmp_path: Path) -> None:
    (tmp_path / "service.log").write_text("".join(f"old {i}\n" for i in range(3)))
    (tmp_path / "empty.log").write_text("")
    result = _lib(
        'offset="$(log_size service.log)"; print_log_tail service.log "$offset" "  (none)";'
        ' for i in $(seq 1 40); do echo "new $i" >>service.log; done;'
        ' print_log_tail service.log "$offset" "  (none)" | sed -n "1p;\\$p";'
        ' print_log_tail empty.log 0 "  (empty)"; print_log_tail absent.log "$(log_size absent.log)" "  (absent)"',
        tmp_path,
    )
    expected = "  (none)\nnew 11\nnew 40\n  (empty)\n  (absent)\n"
    assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


def test_terminate_escalates_to_sigkill_after_the_grace_period(tmp_path: Path) -> None:
    # The child says "ready" once its trap is set: a SIGTERM sent before that (a loaded machine
    # can delay bash's start past terminate's kill) would end it without any escalation.
    stubborn = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert stubborn.stdout is not None
        assert stubborn.stdout.readline() == "ready\n"
        result = _lib(f'STOP_GRACE_SECONDS=1; terminate {stubborn.pid} "the worker is "', tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (
            0,
            "test.sh: the worker is still running after 1s; sending SIGKILL\n",
            "",
        )
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
    finally:
        stubborn.kill()
        stubborn.wait()


def test_stop_service_and_report_status_messages(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        (tmp_path / "s.pid").write_text(f"{sleeper.pid}\n")
        result = _lib(
            f"report_status {sleeper.pid} 127.0.0.1:1 'the thing' s.log true || echo rc=$?;"
            f" report_status {sleeper.pid} 127.0.0.1:1 'the thing' s.log false || echo rc=$?;"
            " report_status '' 127.0.0.1:1 'the thing' s.log true || echo rc=$?;"
            f" stop_service thing {sleeper.pid} s.pid; stop_service thing '' s.pid",
            tmp_path,
        )
        assert sleeper.wait(timeout=10) == -signal.SIGTERM
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        f"test.sh: running (pid {sleeper.pid}) and healthy on 127.0.0.1:1\n"
        f"test.sh: process {sleeper.pid} is running but the thing does not answer on 127.0.0.1:1; see s.log\n"
        "rc=1\n"
        "test.sh: not running\n"
        "rc=1\n"
        f"test.sh: stopping the thing (pid {sleeper.pid})\n"
        "test.sh: stopped\n"
        "test.sh: not running\n"
    )
    assert not (tmp_path / "s.pid").exists()

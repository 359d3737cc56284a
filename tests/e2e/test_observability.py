"""Observability through Airflow: StatsD metrics, asset events, OpenLineage events, then `ticdc-lake status` on a lag.

One ``airflow dags test`` run with Airflow's StatsD client pointed at a UDP socket of this test
and OpenLineage writing to a file; then new messages are produced without running the DAG and
the status command must show exactly them as landing lag.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Pipeline, ledger_rows

from ticdc_lake.cli.main import main
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

PREFIX = "airflow"


@contextmanager
def statsd_listener() -> Iterator[tuple[int, list[str]]]:
    """A UDP socket on 127.0.0.1 collecting StatsD lines until the block ends."""
    received: list[str] = []
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            try:
                data = sock.recv(65535)
            except TimeoutError:
                continue
            received.extend(data.decode("utf-8").splitlines())

    thread = threading.Thread(target=collect, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1], received
    finally:
        stop.set()
        thread.join(timeout=2)
        sock.close()


def _metrics(lines: list[str], pipeline_id: str) -> dict[tuple[str, str], float]:
    """``(name without prefix, type) -> value`` of this pipeline's metrics (counters summed)."""
    found: dict[tuple[str, str], float] = {}
    head = f"{PREFIX}.ticdc_lake.{pipeline_id}."
    for line in lines:
        name, _, rest = line.partition(":")
        if not name.startswith(head):
            continue
        value, _, kind = rest.partition("|")
        key = (name.removeprefix(f"{PREFIX}."), kind.split("|")[0])
        found[key] = found.get(key, 0) + float(value) if kind.startswith("c") else float(value)
    return found


def _asset_events(airflow_home: Path) -> list[tuple[str, dict[str, Any], str]]:
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        rows = db.execute(
            "SELECT a.uri, e.extra, e.source_task_id FROM asset_event e JOIN asset a ON a.id = e.asset_id ORDER BY e.id"
        ).fetchall()
    return [(uri, json.loads(extra) if isinstance(extra, str) else extra, task) for uri, extra, task in rows]


def test_metrics_assets_lineage_and_status_on_a_lagging_pipeline(
    e2e_pipeline: Callable[..., Pipeline],
    kafka_bootstrap: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pipeline = e2e_pipeline()
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    sim = TicdcSimulator(seed=61, topic=pipeline.topic, partitions=2, workload=WorkloadConfig(tables=2, databases=1))
    sim.setup()
    sim.run_transactions(40)
    sim.flush_watermark()
    first = sim.take()
    produce(kafka_bootstrap, first)
    lineage_file = tmp_path / "openlineage.jsonl"

    with statsd_listener() as (port, received):
        pipeline.runner.extra_env.update(
            {
                "AIRFLOW__METRICS__STATSD_ON": "True",
                "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
                "AIRFLOW__METRICS__STATSD_PORT": str(port),
                "AIRFLOW__METRICS__STATSD_PREFIX": PREFIX,
                "AIRFLOW__OPENLINEAGE__NAMESPACE": "ticdc-e2e",
                "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
                    {"type": "file", "log_file_path": str(lineage_file), "append": True}
                ),
            }
        )
        run = pipeline.run(datetime(2026, 11, 21, 10, tzinfo=UTC))
        (tmp_path / "dags_test.log").write_text(run.output, encoding="utf-8")  # for a person debugging
        assert run.succeeded, run.output[-6000:]
    lines = received

    ledger = ledger_rows(pipeline)
    run_ids = {r["run_id"] for r in ledger}
    assert len(run_ids) == 1, run_ids
    decode = next(r for r in ledger if r["stage"] == "decode" and r["table"] is None)
    apply = next(r for r in ledger if r["stage"] == "apply" and r["table"] is None)
    tables = [r for r in ledger if r["stage"] == "apply" and r["table"] is not None]
    changed = [r for r in tables if r["status"] == "APPLIED"]
    assert {(r["database"], r["table"]) for r in changed} == set(sim.model.tables())

    # The task log ends with the per-table summary.
    assert f"run summary: pipeline {pipeline.id!r}" in run.output
    for r in changed:
        assert f"lake.{r['database']}.{r['table']}" in run.output

    # Metrics through Airflow's StatsD client, equal to what the run recorded.
    metrics = _metrics(lines, pipeline.id)
    p = f"ticdc_lake.{pipeline.id}"
    assert metrics[(f"{p}.land.messages", "c")] == len(first)
    assert metrics[(f"{p}.land.partitions", "g")] == 2
    assert metrics[(f"{p}.land.bytes", "c")] > 0
    assert metrics[(f"{p}.decode.messages", "c")] == len(first)
    assert metrics[(f"{p}.decode.events", "c")] == decode["events_in"]
    assert metrics[(f"{p}.decode.quarantined", "c")] == 0
    for what in ("inserted", "updated", "deleted"):
        assert metrics[(f"{p}.apply.rows_{what}", "c")] == sum(r[f"rows_{what}"] or 0 for r in tables)
        for r in changed:
            assert metrics[(f"{p}.table.{r['database']}.{r['table']}.rows_{what}", "c")] == (r[f"rows_{what}"] or 0)
    assert metrics[(f"{p}.apply.tables_changed", "g")] == len(changed)
    assert metrics[(f"{p}.apply.watermark_lag_seconds", "g")] > 0

    # Asset events: the pipeline's, and one per changed table with its applied position.
    events = _asset_events(pipeline.runner.home)
    pipeline_events = [(extra, task) for uri, extra, task in events if uri == f"ticdc-lake://pipeline/{pipeline.id}"]
    assert [task for _, task in pipeline_events] == ["transform"]
    assert pipeline_events[0][0]["watermark"] == str(int(apply["watermark"]))
    table_events = {uri: extra for uri, extra, _ in events if uri.startswith("iceberg://")}
    assert set(table_events) == {f"iceberg://lake/{r['database']}/{r['table']}" for r in changed}
    for r in changed:
        extra = table_events[f"iceberg://lake/{r['database']}/{r['table']}"]
        assert extra["applied_ts"] == str(int(r["window_end"]))
        assert extra["snapshot_id"] == str(r["snapshot_id"])
        assert (extra["rows_inserted"], extra["rows_updated"], extra["rows_deleted"]) == (
            r["rows_inserted"] or 0,
            r["rows_updated"] or 0,
            r["rows_deleted"] or 0,
        )

    # OpenLineage: the land task reads the topic, the transform task writes the tables.
    lineage = [json.loads(line) for line in lineage_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    complete = {e["job"]["name"]: e for e in lineage if e.get("eventType") == "COMPLETE"}
    land = complete[f"{pipeline.dag_id}.land"]
    assert [(d["namespace"], d["name"]) for d in land["inputs"]] == [(f"kafka://{kafka_bootstrap}", pipeline.topic)]
    transform = complete[f"{pipeline.dag_id}.transform"]
    symlinks = {d["facets"]["symlinks"]["identifiers"][0]["name"] for d in transform["outputs"]}
    assert symlinks == {f"{r['database']}.{r['table']}" for r in changed}

    # New messages, no run: status shows exactly them as landing lag, and the ledger's applied TSOs.
    sim.run_transactions(12)
    sim.flush_watermark()
    second = sim.take()
    offsets = produce(kafka_bootstrap, second)
    capsys.readouterr()
    config = str(pipeline.config_path)
    assert main(["--config", config, "status", "--json", "--bootstrap-servers", kafka_bootstrap]) == 0
    (status,) = json.loads(capsys.readouterr().out)["pipelines"]
    behind = {p["partition"]: p["landing_behind"] for p in status["partitions"]}
    assert behind == {part: sum(1 for q, _ in offsets if q == part) for part in (0, 1)}
    assert sum(behind.values()) == len(second)
    assert all(p["decoding_behind"] == 0 and p["decoded_end"] == p["landed_end"] for p in status["partitions"])
    applied = {(t["namespace"], t["table"]): t["applied_ts"] for t in status["tables"]}
    assert applied == {(r["database"], r["table"]): int(r["window_end"]) for r in tables}
    assert status["watermark"] == int(apply["watermark"])
    assert all(t["pending"] == 0 and t["quarantined"] == 0 for t in status["tables"])

    assert main(["--config", config, "status", "--bootstrap-servers", kafka_bootstrap]) == 0
    human = capsys.readouterr().out
    for part in (0, 1):
        assert f"landing {behind[part]}, decoding 0" in human

"""``ticdc-lake status``, ``snapshots``, ``ledger`` and ``events`` on a catalog shared by two pipelines
(real broker, Spark and Iceberg): each command shows only its own pipeline's tables and counts."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.stage_runs import run_stages, simple_json_pipeline
from ticdc_lake.cli.main import main
from ticdc_lake.config import load_config
from ticdc_lake.spark.event_images import readable
from ticdc_lake.spark.record_images import history_layouts
from ticdc_lake.spark.schema_history_table import history_of
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _run_pipeline(
    spark: Any, lake_home: Path, kafka_bootstrap: str, home: Path, pid: str, seed: int
) -> tuple[TicdcSimulator, int, Path]:
    topic = pid.replace("_", "-")
    create_topic(kafka_bootstrap, topic, 1)
    sim = TicdcSimulator(seed=seed, topic=topic, partitions=1, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(12)
    watermark = sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    home.mkdir()
    config = simple_json_pipeline(home, lake_home, pid, topic)
    run_stages(spark, config, pid, kafka_bootstrap, f"{pid}-run-1")
    return sim, watermark, Path(config.source_path)


def _plain(image: Any) -> dict[str, Any] | None:
    return dict(image) if image is not None else None


def test_read_commands_scope_to_their_pipeline_in_a_shared_catalog(
    spark: Any,
    lake_home: Path,
    kafka_bootstrap: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_KAFKA_DEFAULT", raising=False)
    suffix = uuid.uuid4().hex[:8]
    ids = (f"scope_a_{suffix}", f"scope_b_{suffix}")
    runs = {
        pid: _run_pipeline(spark, lake_home, kafka_bootstrap, tmp_path / pid, pid, 70 + i) for i, pid in enumerate(ids)
    }
    # One file holding both pipelines, on the one catalog both wrote to.
    documents = [yaml.safe_load(path.read_text()) for _, _, path in runs.values()]
    combined = tmp_path / "pipelines.yaml"
    combined.write_text(
        yaml.safe_dump({"catalogs": documents[0]["catalogs"], "pipelines": [d["pipelines"][0] for d in documents]})
    )
    capsys.readouterr()

    assert main(["--config", str(combined), "status", "--json"]) == 0
    statuses = {d["pipeline"]: d for d in json.loads(capsys.readouterr().out)["pipelines"]}
    assert sorted(statuses) == sorted(ids)
    for pid, (sim, watermark, _) in runs.items():
        tables = statuses[pid]["tables"]
        expected = [(f"{pid}_{db}", table, f"{db}.{table}") for db, table in sim.model.tables()]
        assert [(t["namespace"], t["table"], t["upstream"]) for t in tables] == expected
        for t in tables:
            db, table = t["upstream"].split(".")
            assert t["snapshot_id"] is not None, t
            assert t["applied_ts"] == watermark, t
            assert (t["rows"], t["pending"], t["waiting_for_schema"], t["quarantined"]) == (
                len(sim.expected_iceberg_rows(db, table, watermark)),
                0,
                0,
                0,
            ), t
        assert statuses[pid]["watermark"] == watermark

    for pid, (sim, watermark, _) in runs.items():
        assert main(["--config", str(combined), "snapshots", "--pipeline", pid]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"pipeline {pid}: as of watermark {watermark} ("), out
        listed = [line.split()[0] for line in out.splitlines() if line.startswith("  lake.")]
        assert listed == [f"lake.{pid}_{db}.{table}" for db, table in sim.model.tables()], out
        other = next(i for i in ids if i != pid)
        assert other not in out

        assert main(["--config", str(combined), "ledger", "--pipeline", pid]) == 0
        out = capsys.readouterr().out
        assert f"pipeline {pid}: " in out
        assert other not in out
        assert f"{pid}-run-1" in out

        # ``events``: the table's row changes of this pipeline alone (both pipelines' simulators name
        # the same upstream tables), in commit and source order, the first --limit of them.
        db, table = sim.model.tables()[0]
        assert main(["--config", str(combined), "events", f"{db}.{table}", "--pipeline", pid, "--limit", "5"]) == 0
        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        loaded = load_config(str(combined))
        tables = SystemTables.of(loaded, loaded.pipeline(pid))
        # The images as text: rows with a typed record keep no map (test_event_images.py checks the
        # text made from a record; here, which rows are printed, in which order, with which images).
        layouts = history_layouts(history_of(spark, tables, loaded.pipeline(pid)))
        events = readable(spark.table(tables.change_events), layouts)
        want = (
            events.where(f"pipeline = '{pid}' AND kind = 'DML' AND `database` = '{db}' AND `table` = '{table}'")
            .orderBy("commit_ts", "topic", "partition", "offset", "idx")
            .limit(5)
            .collect()
        )
        assert len(want) == 5
        assert [(e["commit_ts"], e["op"], e["offset"], e["before"], e["after"]) for e in printed] == [
            (int(r["commit_ts"]), r["op"], r["offset"], _plain(r["before"]), _plain(r["after"])) for r in want
        ]
    # Two pipelines configured: which one must be said.
    assert main(["--config", str(combined), "events", "shop.orders"]) == 2
    assert "name the pipeline with --pipeline (configured: " in capsys.readouterr().err

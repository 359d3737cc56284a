"""Rebuild through Airflow: the DAG parameter ``rebuild`` via ``airflow dags test --conf`` (docs/rebuild.md).

Run 1 applies a stream of three tables. Then one table's rows are deleted and another Iceberg table
is dropped behind the pipeline's back. Run 2 (same Kafka content, nothing new) gets
``--conf '{"rebuild": [...]}'`` naming them by upstream and by Iceberg name: both equal the model
again, the third table keeps its snapshot, and the ledger records the rebuild.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from e2e_support import Pipeline, ledger_rows, watermark_of
from pyiceberg.expressions import AlwaysTrue

from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]


def test_rebuild_parameter_restores_damaged_and_dropped_tables_and_leaves_the_others(
    e2e_pipeline: Callable[..., Pipeline], kafka_bootstrap: str
) -> None:
    pipeline = e2e_pipeline()
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    sim = TicdcSimulator(seed=63, topic=pipeline.topic, partitions=2, workload=WorkloadConfig(tables=3))
    sim.setup()
    sim.run_transactions(60)
    sim.flush_watermark()
    produce(kafka_bootstrap, sim.take())
    watermark = watermark_of(sim)

    run1 = pipeline.run(datetime(2026, 11, 20, 10, tzinfo=UTC))
    assert run1.succeeded, run1.output[-5000:]
    pipeline.assert_equals_model(sim, watermark)

    (db, emptied), (_, dropped), (_, untouched) = sorted(sim.model.tables())
    catalog = pipeline.catalog()
    table = catalog.load_table((db, emptied))
    with warnings.catch_warnings():  # pyiceberg deletes copy-on-write (whole files here): expected
        warnings.filterwarnings("ignore", "Merge on read is not yet supported", UserWarning)
        table.delete(AlwaysTrue())
    catalog.drop_table((db, dropped))
    assert pipeline.table_rows(db, emptied) == []
    before = catalog.load_table((db, untouched)).current_snapshot()
    assert before is not None

    # Namespace = the database here ({database}): the Iceberg name of `dropped` is db.dropped as well.
    conf = {"rebuild": [f"{db}.{emptied}", f"lake.{db}.{dropped}"]}
    run2 = pipeline.runner.test_dag(pipeline.dag_id, datetime(2026, 11, 20, 11, tzinfo=UTC), conf=conf)
    assert run2.succeeded, run2.output[-5000:]
    assert "rebuild summary" in run2.output, run2.output[-5000:]
    pipeline.assert_equals_model(sim, watermark)
    after = pipeline.catalog().load_table((db, untouched)).current_snapshot()
    assert after is not None
    assert after.snapshot_id == before.snapshot_id

    ledger = ledger_rows(pipeline)
    assert len({r["run_id"] for r in ledger if r["stage"] == "rebuild"}) == 1
    rows = {r["table"]: r for r in ledger if r["stage"] == "rebuild"}
    assert set(rows) == {emptied, dropped, None}
    for name in (emptied, dropped):
        expected = len(sim.expected_iceberg_rows(db, name, watermark))
        assert (rows[name]["status"], rows[name]["rows_inserted"]) == ("REBUILT", expected), rows[name]
        assert rows[name]["window_end"] == watermark
    assert rows[None]["status"] == "OK"

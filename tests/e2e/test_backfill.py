"""`airflow backfill create` with a real scheduler: exact interval offsets, out-of-order runs, reprocessing.

Three hours of TiCDC messages are produced with Kafka timestamps inside three past hourly
intervals. A backfill over them runs backwards (newest interval first), created without
``--max-active-runs`` (so Airflow starts all three runs at once): the runs still execute one
after the other, in the backfill's order (the land task's pipeline turn), each lands exactly
its interval's offsets, the first two runs apply nothing (their data sits above a hole that the
oldest interval fills), and the last one brings every table to the model. Then `none` would
create no run and `completed` would run exactly the interval asked for again.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from airflow_services import AirflowServices
from e2e_support import Pipeline, ledger_rows, watermark_of

from ticdc_lake.landing.store import LandingStore
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark, pytest.mark.airflow]

HOURS = (1, 2, 3)
#: The pipeline's start: recent enough that the broker's retention (7 days, judged by the record
#: timestamps) keeps the records, and the three hourly intervals after it are all in the past.
BASE = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=5)


def _at(hour: int, minute: int = 0) -> datetime:
    return BASE + timedelta(hours=hour, minutes=minute)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.fixture
def services(e2e_pipeline: Callable[..., Pipeline]) -> Iterator[tuple[Pipeline, AirflowServices]]:
    pipeline = e2e_pipeline()
    document = yaml.safe_load(pipeline.config_path.read_text())
    document["pipelines"][0]["start_date"] = BASE.isoformat()
    pipeline.config_path.write_text(yaml.safe_dump(document, sort_keys=False))
    airflow = AirflowServices(pipeline.runner)
    try:
        yield pipeline, airflow
    finally:
        airflow.stop()


def _work_spans(airflow: AirflowServices, dag_id: str) -> dict[str, tuple[str, str]]:
    """Per run: from the start of the land try that took the turn (after its last reschedule) to the
    end of transform, from the metadata database."""
    with contextlib.closing(sqlite3.connect(airflow.runner.home / "airflow.db", timeout=30)) as db:
        rows = db.execute(
            "SELECT ti.run_id, ti.task_id, ti.start_date, ti.end_date, "
            "(SELECT max(r.end_date) FROM task_reschedule r WHERE r.ti_id = ti.id) "
            "FROM task_instance ti WHERE ti.dag_id = ?",
            (dag_id,),
        ).fetchall()
    land = {run: max(start, rescheduled or start) for run, task, start, _, rescheduled in rows if task == "land"}
    return {run: (land[run], end) for run, task, _, end, _ in rows if task == "transform"}


def test_backfill_run_backwards_lands_each_interval_exactly_and_applies_only_contiguous_data(
    services: tuple[Pipeline, AirflowServices], kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline, airflow = services
    monkeypatch.setenv("TICDC_LAKE_TURN_POLL_S", "10")  # the shortest look interval allowed (MIN_TURN_POLL_S)
    create_topic(kafka_bootstrap, pipeline.topic, 2)
    sim = TicdcSimulator(seed=61, topic=pipeline.topic, partitions=2, workload=WorkloadConfig(tables=2))
    sim.setup()
    expected: dict[int, list[tuple[int, int, int]]] = {}
    for hour in HOURS:
        sim.run_transactions(25)
        sim.flush_watermark()
        offsets = produce(kafka_bootstrap, sim.take(), timestamp_ms=_ms(_at(hour, 30)))
        expected[hour] = [
            (p, min(o for q, o in offsets if q == p), max(o for q, o in offsets if q == p) + 1)
            for p in sorted({q for q, _ in offsets})
        ]
    final_watermark = watermark_of(sim)

    airflow.prepare()
    airflow.airflow(
        "backfill", "create", "--dag-id", pipeline.dag_id, "--from-date", _at(1).isoformat(),
        "--to-date", _at(3).isoformat(), "--run-backwards",
    )  # fmt: skip
    airflow.start()
    runs = airflow.await_runs(pipeline.dag_id, len(HOURS))
    assert sorted(r["run_id"] for r in runs) == [f"backfill__{_at(h + 1).isoformat()}" for h in HOURS]

    # Airflow ran the three runs at once (backfill max_active_runs 10); their work never overlapped.
    spans = sorted(_work_spans(airflow, pipeline.dag_id).items(), key=lambda item: item[1])
    assert [run for run, _ in spans] == [f"backfill__{_at(h + 1).isoformat()}" for h in (3, 2, 1)], spans
    for (_, (_, end)), (_, (start, _)) in itertools.pairwise(spans):
        assert end <= start, spans

    # Landed in the order the runs executed (newest interval first), each exactly its interval.
    manifests = LandingStore(f"file://{pipeline.home}/landing", pipeline.id).manifests()
    assert [m.interval_start for m in manifests] == [_at(3), _at(2), _at(1)]
    for manifest in manifests:
        assert manifest.interval_start is not None
        hour = round((manifest.interval_start - BASE) / timedelta(hours=1))
        assert [(r.partition, r.start, r.end) for r in manifest.ranges] == expected[hour], hour

    # Apply advanced only over contiguous landed data: nothing until the oldest interval landed.
    applied = {r["run_id"]: r for r in ledger_rows(pipeline) if r["stage"] == "apply" and r["table"] is None}
    order = [f"backfill__{_at(h + 1).isoformat()}" for h in (3, 2, 1)]
    assert [applied[run]["watermark"] for run in order] == [None, None, final_watermark]
    pipeline.assert_equals_model(sim, final_watermark)

    # What each reprocess behaviour would run again (dry runs; a run that executes again finds its
    # manifest published and lands nothing, and apply has nothing above the tables' positions).
    def planned(behaviour: str, first: int, last: int) -> str:
        done = airflow.airflow(
            "backfill", "create", "--dag-id", pipeline.dag_id, "--from-date", _at(first).isoformat(),
            "--to-date", _at(last).isoformat(), "--reprocess-behavior", behaviour, "--dry-run",
        )  # fmt: skip
        return done.stdout.split("Runs to be attempted:")[-1]

    assert planned("none", 1, 3).strip() == ""  # every interval has a run already
    assert planned("failed", 1, 3).strip() == ""  # none of them failed
    again = planned("completed", 2, 2)
    assert _at(2).isoformat(sep=" ") in again, again
    assert _at(1).isoformat(sep=" ") not in again
    assert _at(3).isoformat(sep=" ") not in again

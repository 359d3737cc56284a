"""The decode tasks' side output: counts per partition, reports keyed by task, garbage collection settings."""

from __future__ import annotations

import gc
import pickle
from dataclasses import replace
from pathlib import Path

import pytest

from tests.stage_runs import stage_config
from tests.ticdc_lake.spark.test_decode_arrow import MAX_TSO, sample_events
from ticdc_lake.events import ChangeEvent, EventKind, RawMessage, SourcePosition
from ticdc_lake.landing.message_batch import MessageBatch
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.inference import schema_from_types
from ticdc_lake.spark.arrow_decode.avro_batch import AvroVectorDecoder
from ticdc_lake.spark.arrow_decode.image_records import CARRIER_COLUMNS
from ticdc_lake.spark.decode_worker import (
    GC_THRESHOLD,
    PartitionStats,
    ReportsParam,
    TaskReport,
    _count,
    _SliceDecoder,
    _start_schemas,
    fewer_collections,
)
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.model import DmlOp, RowChange


def test_counts_follow_the_decoded_batches_columns() -> None:
    events = sample_events()
    other = ChangeEvent(EventKind.WATERMARK, SourcePosition("tidb-orders", 5, 9), 42)
    report = TaskReport(3)
    _count([*events, other], "000000000002", report)
    assert report.stats == {
        ("000000000002", "tidb-orders", 2): PartitionStats(
            events=8, dml=4, ddl=2, watermarks=1, max_watermark=MAX_TSO, quarantined=0, pending=1
        ),
        ("000000000002", "tidb-orders", 5): PartitionStats(events=1, watermarks=1, max_watermark=42),
    }
    total = PartitionStats()
    for stats in report.stats.values():
        total.add(stats)
    assert (total.events, total.watermarks, total.max_watermark, total.pending) == (9, 2, MAX_TSO, 1)


def test_a_task_that_runs_again_replaces_its_report() -> None:
    param = ReportsParam()
    first, again, other = TaskReport(0, messages=5), TaskReport(0, messages=5), TaskReport(1, messages=7)
    merged = param.addInPlace(param.addInPlace(param.zero({}), {0: first}), {1: other})
    merged = param.addInPlace(merged, {0: again})
    assert merged == {0: again, 1: other}
    assert pickle.loads(pickle.dumps(merged)) == merged  # travels from the workers to the driver


def test_fewer_collections_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (GC_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before


def test_the_first_row_bound_to_a_start_schema_is_reported_per_table() -> None:
    start = schema_from_types("shop", "orders", {"id": "bigint"}, ("id",))
    lookup = MemorySchemaLookup([start])
    rows = []
    for offset, ts, version in ((4, 30, 0), (2, 20, 0), (3, 10, 7), (5, 20, None)):
        row = ChangeEvent(EventKind.DML, SourcePosition("t", 1, offset), ts, "shop", "orders", schema_version=version)
        rows.append(row)
    report = TaskReport(0)
    _start_schemas(rows, lookup, report)
    assert report.start_schemas == {("shop", "orders"): ((20, "t", 1, 2), start.to_json())}


def test_a_failing_vector_decoder_leaves_every_message_to_python(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the vector path costs speed, never a message or the task: the chunk it failed on is
    decoded by the Python decoder, with the same events and counts as without a vector decoder."""
    encoder = DebeziumEncoder("UTC")
    schema = schema_from_types("db", "t", {"id": "bigint", "note": "varchar"}, ("id",), None)
    schema = replace(schema, version=100)
    messages = []
    for n in range(5):
        change = RowChange(DmlOp.INSERT, "db", "t", None, {"id": n, "note": f"n{n}"})
        encoded = encoder.encode_row(change, schema, 200 + n, 1)
        messages.append(RawMessage("topic", 0, n, 0, encoded.key, encoded.value))
    config = stage_config(tmp_path, tmp_path, {"id": "p", "protocol": "debezium", "kafka": {"topics": ["topic"]}})
    pipeline = config.pipeline("p")
    lookup = MemorySchemaLookup([schema])

    class Failing:
        def decode(self, *args: object) -> None:
            raise RuntimeError("boom")

    def run(vector: bool, failing: bool) -> tuple[list[dict[str, object]], TaskReport]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec)
        task = _SliceDecoder(pipeline, "run-1", decoder, lookup, False, vector)
        if failing:
            task.vector = Failing()  # type: ignore[assignment]
        report = TaskReport(0)
        if vector:
            batches = task.decode_chunks("b1", iter([MessageBatch([(messages, 0, len(messages))])]), report)
        else:
            batches = task.decode("b1", iter(messages), report)
        rows = [row for batch in batches for row in batch.to_pylist()]
        return rows, report

    python_rows, python_report = run(vector=False, failing=False)
    vector_rows, vector_report = run(vector=True, failing=False)
    failed_rows, failed_report = run(vector=True, failing=True)
    assert (vector_report.vector_events, failed_report.vector_events) == (5, 0)
    assert vector_rows == python_rows
    assert failed_rows == python_rows
    assert failed_report.stats == python_report.stats
    assert failed_report.messages == python_report.messages == 5
    assert "the vector decoder failed on 5 message(s); decoding them in Python" in caplog.text


def test_the_avro_vector_decoder_gets_the_landed_writer_schemas(tmp_path: Path) -> None:
    """Without the writer schemas the Python decoder is given, the avro vector decoder takes nothing."""
    config = stage_config(tmp_path, tmp_path, {"id": "p", "protocol": "avro", "kafka": {"topics": ["topic"]}})
    pipeline = config.pipeline("p")
    resources = DecodeResources({7: '{"type": "record", "name": "t", "fields": []}'})
    decoder = decoder_for(pipeline.protocol, pipeline.codec, resources)
    task = _SliceDecoder(pipeline, "run-1", decoder, MemorySchemaLookup(), False, True)
    assert isinstance(task.vector, AvroVectorDecoder)
    assert task.vector.resources is resources


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_a_compressed_pipeline_decodes_in_the_vector_path(tmp_path: Path, compression: str) -> None:
    """The worker decompresses a chunk and hands it to the vector decoder; a message that does not
    decompress is left to the Python decoder, and the task's rows and counts are the Python loop's."""
    from tests.ticdc_lake.spark.arrow_decode.differential_support import compress
    from ticdc_lake.config import Compression

    packing = Compression(compression)
    encoder = DebeziumEncoder("UTC")
    schema = replace(schema_from_types("db", "t", {"id": "bigint", "note": "varchar"}, ("id",), None), version=100)
    messages = []
    for n in range(6):
        encoded = encoder.encode_row(
            RowChange(DmlOp.INSERT, "db", "t", None, {"id": n, "note": f"n{n}"}), schema, 200 + n, 1
        )
        value = encoded.value if n == 3 else compress(encoded.value, packing)  # 3: sent uncompressed
        messages.append(RawMessage("topic", 0, n, 0, compress(encoded.key, packing), value))
    config = stage_config(
        tmp_path,
        tmp_path,
        {"id": "p", "protocol": "debezium", "kafka": {"topics": ["topic"]}, "codec": {"compression": compression}},
    )
    pipeline = config.pipeline("p")

    def run(vector: bool) -> tuple[list[dict[str, object]], TaskReport]:
        decoder = decoder_for(pipeline.protocol, pipeline.codec)
        task = _SliceDecoder(pipeline, "run-1", decoder, MemorySchemaLookup([schema]), False, vector)
        report = TaskReport(0)
        if vector:
            batches = task.decode_chunks("b1", iter([MessageBatch([(messages, 0, len(messages))])]), report)
        else:
            batches = task.decode("b1", iter(messages), report)
        return [row for batch in batches for row in batch.to_pylist()], report

    python_rows, python_report = run(vector=False)
    vector_rows, vector_report = run(vector=True)
    assert vector_report.vector_events == 5
    assert sorted(vector_rows, key=lambda r: int(r["offset"])) == python_rows  # type: ignore[call-overload]
    assert vector_report.stats == python_report.stats
    assert [row["offset"] for row in python_rows] == [0, 1, 2, 4, 5]
    assert python_report.messages == vector_report.messages == 6


def test_a_failing_record_carrier_leaves_the_events_with_their_maps(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the typed record carrier costs apply its making from the maps, never an event or the task."""
    encoder = DebeziumEncoder("UTC")
    schema = replace(schema_from_types("db", "t", {"id": "bigint", "note": "varchar"}, ("id",), None), version=100)
    messages = []
    for n in range(3):
        encoded = encoder.encode_row(
            RowChange(DmlOp.INSERT, "db", "t", None, {"id": n, "note": f"n{n}"}), schema, 200, 1
        )
        messages.append(RawMessage("topic", 0, n, 0, encoded.key, encoded.value))
    config = stage_config(tmp_path, tmp_path, {"id": "p", "protocol": "debezium", "kafka": {"topics": ["topic"]}})
    pipeline = config.pipeline("p")

    class Failing:
        def add(self, batch: object) -> None:
            raise RuntimeError("boom")

    def run(failing: bool) -> list[dict[str, object]]:
        task = _SliceDecoder(
            pipeline, "run-1", decoder_for(pipeline.protocol, pipeline.codec), MemorySchemaLookup([schema]), False
        )
        if failing:
            task.records = Failing()  # type: ignore[assignment]
        return [row for batch in task.decode("b1", iter(messages), TaskReport(0)) for row in batch.to_pylist()]

    carried, failed = run(failing=False), run(failing=True)
    # With its carrier a row leaves its maps behind; without one it keeps them, and nothing else differs.
    assert [(r["after_record"] is not None, r["after"]) for r in carried] == [(True, None)] * 3
    assert [(r["after_record"], r["after"]) for r in failed] == [
        (None, [("id", str(n)), ("note", f"n{n}")]) for n in range(3)
    ]
    images = (*CARRIER_COLUMNS, "before", "after")
    assert [{k: v for k, v in r.items() if k not in images} for r in failed] == [
        {k: v for k, v in r.items() if k not in images} for r in carried
    ]
    assert "the typed record carrier of 3 event(s) failed; they keep only their maps" in caplog.text

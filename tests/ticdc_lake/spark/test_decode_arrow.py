"""Events as Arrow record batches hold exactly the values of the row tuples, in Python and in Spark."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage, SourcePosition
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.debezium import DebeziumDecoder
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA, events_to_arrow
from ticdc_lake.spark.event_rows import EVENTS_SCHEMA, event_row
from ticdc_lake.spark.system_tables import COLUMNS
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange

MAX_TSO = 2**64 - 1
SCHEMA = TableSchema(
    "shop",
    "orders",
    (ColumnSchema("id", "bigint", nullable=False), ColumnSchema("note", "text")),
    (IndexSchema("primary", ("id",), primary=True, unique=True),),
    table_id=7,
    version=MAX_TSO,
    source="simple-ddl",
)


def _position(offset: int, index: int = 0) -> SourcePosition:
    return SourcePosition("tidb-orders", 2, offset, index)


def _dml(offset: int, commit_ts: int, op: Op, index: int = 0) -> ChangeEvent:
    return ChangeEvent(EventKind.DML, _position(offset, index), commit_ts, "shop", "orders", 2**63 - 1, op)


def sample_events() -> list[ChangeEvent]:
    """One event of every kind and shape: NULL values, empty and missing images, extreme numbers."""
    inserted, updated, deleted = _dml(1, MAX_TSO, Op.INSERT), _dml(2, 10, Op.UPDATE, 3), _dml(3, 11, Op.DELETE)
    inserted.schema_version, inserted.after = 1, {"id": "1", "n": None}
    updated.schema_version, updated.before, updated.after = MAX_TSO, {"id": "1", "note": "Zürich ✓"}, {}
    updated.column_types = {"id": "bigint", "note": "text"}
    deleted.schema_version, deleted.before = 5, {"id": "2", "note": None}
    deleted.status, deleted.pending_payload = EventStatus.PENDING, "{}"
    return [
        inserted,
        updated,
        deleted,
        ChangeEvent(
            kind=EventKind.DML,
            position=_position(4),
            commit_ts=12,
            database="shop",
            table="orders",
            op=Op.INSERT,
            after={"id": "3"},
            handle_key_only=True,
            claim_check=True,
        ),
        ChangeEvent(
            kind=EventKind.DDL,
            position=_position(5),
            commit_ts=13,
            database="shop",
            table="orders",
            ddl_type="ALTER",
            ddl_query="ALTER TABLE orders ADD note text",
            table_schema=SCHEMA,
            pre_table_schema=SCHEMA,
        ),
        ChangeEvent(
            kind=EventKind.DDL,
            position=_position(5, 1),
            commit_ts=13,
            database="shop",
            table="orders",
            ddl_type="ALTER",
            ddl_query="ALTER TABLE orders FROB",
            schema_error="cannot read DDL 'ALTER TABLE orders FROB': ...",
        ),
        ChangeEvent(kind=EventKind.WATERMARK, position=_position(6), commit_ts=MAX_TSO),
        ChangeEvent(kind=EventKind.BOOTSTRAP, position=_position(7), commit_ts=0, table_schema=SCHEMA),
    ]


def _as_tuples(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    rows = []
    for row in batch.to_pylist():
        values = []
        for name in EVENTS_ARROW_SCHEMA.names:
            value = row[name]
            values.append(dict(value) if isinstance(value, list) else value)
        rows.append(tuple(values))
    return rows


def test_arrow_batch_equals_the_row_tuples_for_every_event_kind() -> None:
    events = sample_events()
    batch = events_to_arrow("orders", "000000000003", "run-1", events)
    assert batch.schema == EVENTS_ARROW_SCHEMA
    assert _as_tuples(batch) == [event_row("orders", "000000000003", "run-1", e) for e in events]
    assert batch.column("commit_ts")[0].as_py() == Decimal(MAX_TSO)


def test_arrow_batch_of_rows_without_any_image_or_types_has_null_maps() -> None:
    events = [e for e in sample_events() if e.kind in (EventKind.WATERMARK, EventKind.BOOTSTRAP)]
    batch = events_to_arrow("orders", "1", "r", events)
    for name in ("before", "after", "column_types"):
        assert batch.column(name).null_count == len(events)
    assert _as_tuples(batch) == [event_row("orders", "1", "r", e) for e in events]


def test_column_types_are_not_stored_for_dml_rows() -> None:
    """A Debezium row states its column types; decode uses them, the stored row leaves them NULL
    (nothing after decode reads them). A non-DML event keeps what it carries."""
    encoded = encoder_for("debezium", "UTC").encode_row(
        RowChange(DmlOp.INSERT, "shop", "orders", None, {"id": 1, "note": "a"}), SCHEMA, 100, 1
    )
    message = RawMessage("dbz", 0, 7, 0, encoded.key, encoded.value)
    (row,) = DebeziumDecoder(CodecOptions()).read(message, MemorySchemaLookup([SCHEMA]))
    assert (row.kind, row.column_types) == (EventKind.DML, {"id": "bigint", "note": "text"})
    ddl = ChangeEvent(EventKind.DDL, _position(8), 13, "shop", "orders", ddl_type="CREATE", ddl_query="CREATE ...")
    ddl.column_types = {"id": "bigint"}
    batch = events_to_arrow("orders", "1", "r", [row, ddl])
    assert batch.column("column_types").to_pylist() == [None, [("id", "bigint")]]
    assert batch.column("after").to_pylist()[0] == [("id", "1"), ("note", "a")]
    assert [event_row("orders", "1", "r", e)[15] for e in (row, ddl)] == [None, {"id": "bigint"}]


@pytest.mark.spark
def test_arrow_schema_is_the_change_events_columns(spark: Any) -> None:
    from pyspark.sql.pandas.types import from_arrow_schema

    spark_schema = spark.createDataFrame([], COLUMNS["change_events"]).schema
    assert from_arrow_schema(EVENTS_ARROW_SCHEMA) == spark_schema
    assert [f.nullable for f in spark_schema.fields] == [f.nullable for f in EVENTS_ARROW_SCHEMA]


@pytest.mark.spark
def test_spark_reads_the_arrow_batch_as_it_reads_the_row_tuples(spark: Any) -> None:
    events = sample_events()
    batch = events_to_arrow("orders", "000000000003", "run-1", events)

    def emit(inputs: Any) -> Any:
        for item in inputs:
            for _ in range(item.num_rows):
                yield batch

    through_arrow = spark.range(0, 1, 1, 1).mapInArrow(emit, EVENTS_SCHEMA).collect()
    through_rows = spark.createDataFrame(
        [event_row("orders", "000000000003", "run-1", e) for e in events], EVENTS_SCHEMA
    ).collect()
    assert through_arrow == through_rows
    assert through_arrow[0]["commit_ts"] == Decimal(MAX_TSO)
    assert through_arrow[0]["after"] == {"id": "1", "n": None}
    assert [r["schema_error"] for r in through_arrow if r["schema_error"]] == [
        "cannot read DDL 'ALTER TABLE orders FROB': ..."
    ]

"""The worker's typed record carrier of a ``change_events`` batch, row by row against ``record_columns``.

Each row's expected carrier is made on its own (one-row arrays of its image's texts, typed by the
specification's ``typed_column``), so the batch's grouping by table version and the scatter back
into row order are checked, not assumed; ``tests/ticdc_lake/spark/test_record_images.py`` checks
``record_columns`` itself against what apply makes of a map in Spark.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from ticdc_lake.events import EventKind, EventStatus
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark.arrow_decode.image_records import (
    CARRIER_COLUMNS,
    ImageLayout,
    ImageRecords,
    image_layout,
    layout_fingerprint,
)
from ticdc_lake.spark.arrow_decode.record_columns import record_columns
from ticdc_lake.spark.arrow_decode.typed_columns import typed_column
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA

PK = (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),)
ORDERS = TableSchema(
    "shop",
    "orders",
    (
        ColumnSchema("id", "bigint", nullable=False),
        ColumnSchema("price", "decimal", 12, 2),
        ColumnSchema("placed", "datetime", fsp=3),
        ColumnSchema("note", "varchar", length=20),
    ),
    PK,
    version=100,
)
#: A later version whose ``price`` an incompatible change made text (carried as string).
ORDERS_V2 = TableSchema(
    "shop",
    "orders",
    (
        ColumnSchema("id", "bigint", nullable=False),
        ColumnSchema("price", "double"),
        ColumnSchema("placed", "datetime", fsp=3),
        ColumnSchema("note", "varchar", length=20),
    ),
    PK,
    version=200,
)
LOG = TableSchema(
    "shop", "log", (ColumnSchema("line", "varchar", length=50), ColumnSchema("at", "date")), (), version=100
)


def _lookup() -> MemorySchemaLookup:
    lookup = MemorySchemaLookup([ORDERS, ORDERS_V2, LOG])
    lookup.carried[("shop", "orders", 200)] = ("long", "string", "timestamp", "string")
    return lookup


Image = dict[str, str | None] | None

PLACED: Image = {"id": "1", "price": "1.50", "placed": "2024-01-02 03:04:05.678", "note": "a"}
OLD: Image = {"id": "1", "price": "1e+10", "placed": None, "note": "a"}
NEW: Image = {"id": "1", "price": "2.5", "placed": None, "note": "b"}
#: (kind, status, database, table, version, op, before, after).
ROWS: list[tuple[str, str, str | None, str | None, int | None, str | None, Image, Image]] = [
    ("DML", "READY", "shop", "orders", 100, "I", None, PLACED),
    ("DML", "READY", "shop", "log", 100, "I", None, {"line": "x", "at": "2024-02-30"}),  # a date no type holds
    ("DDL", "READY", "shop", "orders", 200, None, None, None),
    ("DML", "READY", "shop", "orders", 200, "U", OLD, NEW),
    ("DML", "PENDING", "shop", "orders", None, "I", None, {"id": "2"}),
    ("DML", "READY", "shop", "orders", 100, "D", {"id": "3", "price": "-0.01"}, None),  # columns absent
    ("DML", "READY", "shop", "orders", 300, "I", None, {"id": "4"}),  # a version nobody knows
    ("DML", "READY", "shop", "orders", 100, "I", None, {"id": "5", "surprise": "?"}),  # a column the version lacks
    ("DML", "READY", "shop", "log", 100, "D", {"line": None, "at": "0000-00-00"}, None),
    ("WATERMARK", "READY", None, None, None, None, None, None),
]  # fmt: skip


def _batch() -> pa.RecordBatch:
    count = len(ROWS)
    columns: dict[str, pa.Array] = {
        name: pa.nulls(count, field.type)
        for name, field in zip(EVENTS_ARROW_SCHEMA.names, EVENTS_ARROW_SCHEMA, strict=True)
    }
    values: dict[str, list[Any]] = {
        "pipeline": ["p"] * count,
        "batch_id": ["b"] * count,
        "topic": ["t"] * count,
        "partition": [0] * count,
        "offset": list(range(count)),
        "idx": [0] * count,
        "kind": [r[0] for r in ROWS],
        "commit_ts": [Decimal(1)] * count,
        "status": [r[1] for r in ROWS],
        "run_id": ["r"] * count,
        "database": [r[2] for r in ROWS],
        "table": [r[3] for r in ROWS],
        "schema_version": [None if r[4] is None else Decimal(r[4]) for r in ROWS],
        "op": [r[5] for r in ROWS],
        "before": [None if r[6] is None else list(r[6].items()) for r in ROWS],
        "after": [None if r[7] is None else list(r[7].items()) for r in ROWS],
    }
    for name, column in values.items():
        columns[name] = pa.array(column, EVENTS_ARROW_SCHEMA.field(name).type)
    return pa.RecordBatch.from_arrays(list(columns.values()), schema=EVENTS_ARROW_SCHEMA)  # fmt: skip


def _expected(image: Image, layout: ImageLayout) -> tuple[Any, Any, Any]:
    """One image's (record, untyped entries, key texts), made alone."""
    texts = [pa.array([None if image is None else image.get(name)], pa.string()) for name in layout.names]
    typed = [typed_column(t, kind) for t, kind in zip(texts, layout.types, strict=True)]
    present = [np.array([image is not None and name in image]) for name in layout.names]
    made = record_columns(layout.names, texts, typed, np.array([image is not None]), layout.key, present)
    return made.records[0].as_py(), made.untyped[0].as_py(), made.keys[0].as_py()


def test_every_bound_ready_row_change_gets_the_carrier_of_its_own_version() -> None:
    records = ImageRecords(_lookup())
    batch = _batch()
    added = records.add(batch)
    assert added.schema == batch.schema
    for name in EVENTS_ARROW_SCHEMA.names:
        if name not in (*CARRIER_COLUMNS, "before", "after"):
            assert added[name].equals(batch[name]), name
    carried = {name: added[name].to_pylist() for name in CARRIER_COLUMNS}
    with_carrier = [n for n in range(len(ROWS)) if carried["before_record"][n] or carried["after_record"][n]]
    # Not the DDL, the PENDING row, the unknown version, the unknown column or the watermark.
    assert with_carrier == [0, 1, 3, 5, 8]
    # Those rows leave their maps behind; the others keep theirs.
    for side in ("before", "after"):
        kept = [None if n in with_carrier else image for n, image in enumerate(batch[side].to_pylist())]
        assert added[side].to_pylist() == kept, side
    for n in with_carrier:
        _, _, database, table, version, _, before, after = ROWS[n]
        assert database is not None
        assert table is not None
        assert version is not None
        layout = records.layout(database, table, version)
        assert layout is not None
        for side, image in (("before", before), ("after", after)):
            record, untyped, key = _expected(image, layout)
            assert carried[f"{side}_record"][n] == record, (n, side)
            assert carried[f"{side}_untyped"][n] == untyped, (n, side)
            assert carried[f"{side}_key"][n] == key, (n, side)
        assert carried["record_layout"][n] == layout.fingerprint, n
    for n in set(range(len(ROWS))) - set(with_carrier):
        assert all(carried[name][n] is None for name in CARRIER_COLUMNS), n


#: blake2b-64 of ``[1,["id","note"],["long","string"],["id"]]`` (RECORD_FORMAT 1), as first released.
PINNED = -1294898203453788870


def test_a_layout_fingerprint_is_pinned_and_tells_layouts_apart() -> None:
    # Records written by one release are read by the next: the fingerprint of a layout must not
    # change unless the layout or RECORD_FORMAT does (apply would hold every table).
    assert layout_fingerprint(("id", "note"), ("long", "string"), ("id",)) == PINNED
    others = [
        (("id", "note"), ("int", "string"), ("id",)),  # another carried type
        (("id", "memo"), ("long", "string"), ("id",)),  # another name
        (("note", "id"), ("string", "long"), ("id",)),  # another order
        (("id", "note"), ("long", "string"), ()),  # no key
        (("id", "note"), ("long", "string"), ("id", "note")),  # another key
    ]
    assert len({layout_fingerprint(*o) for o in others} | {PINNED}) == len(others) + 1


def test_the_carrier_holds_what_each_row_says() -> None:
    carried = ImageRecords(_lookup()).add(_batch())
    untyped, keys = carried["after_untyped"].to_pylist(), carried["after_key"].to_pylist()
    assert keys[0] == ["1"]
    assert keys[3] == ["1"]
    assert untyped[1] == [("at", "2024-02-30")]  # a text the date type cannot hold, kept as sent
    assert carried["before_untyped"][5].as_py() == [("placed", None), ("note", None)]  # absent columns
    assert carried["before_key"][8].as_py() is None  # a table without a key has no key texts
    # Version 200 carries price as text (its carried type, not its own DOUBLE): the record holds
    # the texts as sent, and nothing is untyped.
    assert b"1e+10" in carried["before_record"][3].as_py()
    assert b"2.5" in carried["after_record"][3].as_py()
    assert untyped[3] is None
    assert carried["before_untyped"][3].as_py() is None


def test_layouts_follow_the_carried_types_and_refuse_what_they_cannot_carry() -> None:
    assert image_layout(ORDERS, None) == ImageLayout(
        ("id", "price", "placed", "note"), ("long", "decimal(12,2)", "timestamp", "string"), (0,)
    )
    assert image_layout(ORDERS_V2, ("long", "string", "timestamp", "string")) == ImageLayout(
        ("id", "price", "placed", "note"), ("long", "string", "timestamp", "string"), (0,)
    )
    # Carried types of another width than the columns (a stale entry): the columns' own types.
    assert image_layout(ORDERS, ("long",)) == image_layout(ORDERS, None)
    keyless = image_layout(LOG, None)
    assert keyless is not None
    assert keyless.key == ()
    unknown_key = TableSchema(
        "shop",
        "x",
        (ColumnSchema("a", "int"),),
        (IndexSchema("PRIMARY", ("b",), primary=True, unique=True),),
        version=1,
    )
    assert image_layout(unknown_key, None) is None
    untyped = TableSchema("shop", "y", (ColumnSchema("a", "no-such-type"),), (), version=1)
    assert image_layout(untyped, None) is None


def test_a_batch_without_bound_ready_row_changes_is_returned_as_it_is() -> None:
    batch = _batch()

    def replaced(name: str, value: str) -> pa.RecordBatch:
        where = batch.schema.get_field_index(name)
        return batch.set_column(where, batch.schema.field(name), pa.array([value] * len(ROWS)))

    held, no_dml = replaced("status", EventStatus.PENDING.value), replaced("kind", EventKind.DDL.value)
    assert ImageRecords(_lookup()).add(held) is held
    assert ImageRecords(_lookup()).add(no_dml) is no_dml

"""The Open Protocol encoder against TiCDC's framing golden files and source (``pkg/sink/codec/open``,
``pkg/sink/codec/internal``): batch framing, key and value JSON, column flags and values."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

from tests import tiflow_vectors
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import TEMPLATES, column
from ticdc_sim.column_types import float32
from ticdc_sim.ddl_sql import create_database_sql, create_table_sql
from ticdc_sim.encoding import EncodedMessage
from ticdc_sim.model import DdlChange, DmlOp, Row, RowChange
from ticdc_sim.open_encoder import OpenEncoder, frame
from ticdc_sim.tidb_columns import column_flags

GOLDEN = tiflow_vectors.OPEN_DATA
ZONE = "Asia/Shanghai"


def _items(message: EncodedMessage) -> tuple[bytes, bytes]:
    """The single key JSON and value bytes of a batch of one, checking the framing."""
    key, value = message.key, message.value
    assert key is not None
    assert value is not None
    assert key[:8] == (1).to_bytes(8, "big")
    assert int.from_bytes(key[8:16], "big") == len(key) - 16
    assert int.from_bytes(value[:8], "big") == len(value) - 8
    return key[16:], value[8:]


@tiflow_vectors.needs_vectors
def test_resolved_event_equals_the_golden_file() -> None:
    message = OpenEncoder().encode_watermark(1, 0)
    assert message.key == (GOLDEN / "key" / "rts_key_0").read_bytes()
    assert message.value == (GOLDEN / "value" / "rts_value_0").read_bytes()


def test_frame_is_version_then_length_prefixed_items() -> None:
    message = frame(b'{"a":1}', b"xyz")
    assert message.key == bytes(7) + b"\x01" + bytes(7) + b"\x07" + b'{"a":1}'
    assert message.value == bytes(7) + b"\x03" + b"xyz"


def test_ddl_messages() -> None:
    orders = TEMPLATES[0].build("shop", "orders")
    encoder = OpenEncoder()
    key, value = _items(encoder.encode_ddl(DdlChange("QUERY", create_database_sql("shop"), "shop", None, None), 42, 1))
    assert (key, value) == (b'{"ts":42,"scm":"shop","t":2}', b'{"q":"CREATE DATABASE `shop`","t":1}')
    ddl = DdlChange("CREATE", create_table_sql(orders), "shop", "orders", orders)
    key, value = _items(encoder.encode_ddl(ddl, 43, 1))
    assert key == b'{"ts":43,"scm":"shop","tbl":"orders","t":2}'
    assert json.loads(value) == {"q": ddl.sql, "t": 3}


def test_insert_exact_bytes() -> None:
    orders = TEMPLATES[0].build("shop", "orders")
    row: Row = {
        "id": 7,
        "customer": "Zoë <b>",
        "city": None,
        "amount": Decimal("12.50"),
        "status": "paid",
        "created_at": datetime(2024, 1, 2, 3, 4, 5),
        "updated_at": datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "note": "hi\n",
    }
    key, value = _items(
        OpenEncoder(ZONE).encode_row(RowChange(DmlOp.INSERT, "shop", "orders", None, row), orders, 99, 1)
    )
    assert key == b'{"ts":99,"scm":"shop","tbl":"orders","rid":7,"t":1}'
    assert (
        value
        == (
            '{"u":{"amount":{"t":246,"f":1,"v":"12.50"},"city":{"t":15,"f":64,"v":null},'
            '"created_at":{"t":12,"f":1,"v":"2024-01-02 03:04:05"},'
            '"customer":{"t":15,"f":32,"v":"Zoë \\u003cb\\u003e"},"id":{"t":8,"h":true,"f":11,"v":7},'
            '"note":{"t":252,"f":64,"v":"aGkK"},"status":{"t":247,"f":0,"v":2},'
            '"updated_at":{"t":7,"f":65,"v":"2024-01-02 11:04:05.678"}}}'
        ).encode()
    )


def test_column_flags_follow_init_columns_flag() -> None:
    """Binary 1 (charset binary), handle 2, primary 8, unique 16, multiple 32, nullable 64, unsigned 128."""
    sensors = TEMPLATES[3].build("shop", "sensor_readings")
    flags = {c.name: column_flags(sensors, c) for c in sensors.columns}
    assert flags == {
        "device_id": 1 | 2 | 8 | 32 | 128,
        "reading_id": 1 | 2 | 8 | 32,
        "level": 1 | 64,
        "channel": 1 | 64 | 128,
        "offset_mv": 1 | 64,
        "model_year": 1 | 64 | 128,  # TiDB gives YEAR ZEROFILL, hence UNSIGNED
        "temperature": 1 | 64,
        "flags": 64,
        "mask": 1 | 64 | 128,  # TiDB gives BIT UNSIGNED
        "site": 64,
    }
    columns = (
        column("a", "int", nullable=False),
        column("u", "varchar", length=8, nullable=False),
        column("j", "json"),
    )
    indexes = (IndexSchema("uk", ("u",), unique=True), IndexSchema("PRIMARY", ("a",), primary=True, unique=True))
    table = TableSchema("d", "t", columns, indexes)
    assert [column_flags(table, c) for c in columns] == [1 | 2 | 8, 16, 1 | 64]


def test_values_of_each_kind() -> None:
    columns = (
        column("id", "bigint", unsigned=True, nullable=False),
        column("vb", "varbinary", length=32),
        column("bn", "binary", length=2),
        column("blob", "blob"),
        column("d", "double"),
        column("f", "float"),
        column("whole", "double"),
        column("st", "set", elements=("a", "b", "c")),
        column("bits", "bit", length=64),
        column("y", "year"),
        column("t", "time", fsp=2),
        column("j", "json"),
    )
    schema = TableSchema("d", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    row: Row = {
        "id": (1 << 64) - 1,
        "vb": b'\xff\xfe"\\\x00\x07\x7f \xc2\x85 \xe6\x9d\xb1',
        "bn": b"a\x00",
        "blob": b"\xff\x00",
        "d": 1e-7,
        "f": float32(1.5e21),
        "whole": 123.0,
        "st": "a,c",
        "bits": (1 << 64) - 1,
        "y": 1999,
        "t": "-100:00:00.50",
        "j": '{"k": "<v>"}',
    }
    _, value = _items(OpenEncoder().encode_row(RowChange(DmlOp.DELETE, "d", "t", row, None), schema, 1, 1))
    text = value.decode()
    # Go strconv.Quote of the bytes, then JSON-escaped: \xff\xfe\"\\\x00\a\x7f \u0085 東
    assert '"vb":{"t":15,"f":65,"v":"\\\\xff\\\\xfe\\\\\\"\\\\\\\\\\\\x00\\\\a\\\\x7f \\\\u0085 東"}' in text
    assert '"bn":{"t":254,"f":65,"v":"a\\\\x00"}' in text
    assert '"blob":{"t":252,"f":65,"v":"/wA="}' in text
    assert '"d":{"t":5,"f":65,"v":1e-7}' in text
    assert '"f":{"t":4,"f":65,"v":1.5e+21}' in text
    assert '"whole":{"t":5,"f":65,"v":123}' in text
    assert '"st":{"t":248,"f":64,"v":5}' in text
    assert '"bits":{"t":16,"f":193,"v":18446744073709551615}' in text
    assert '"y":{"t":13,"f":193,"v":1999}' in text
    assert '"t":{"t":11,"f":65,"v":"-100:00:00.50"}' in text
    assert '"j":{"t":245,"f":65,"v":"{\\"k\\": \\"\\u003cv\\u003e\\"}"}' in text
    assert text.startswith('{"d":{"bits":')
    assert '"id":{"t":8,"h":true,"f":139,"v":18446744073709551615}' in text


def _pair_table() -> TableSchema:
    columns = (column("k", "varchar", length=8, nullable=False), column("v", "int"))
    return TableSchema("d", "t", columns, (IndexSchema("PRIMARY", ("k",), primary=True, unique=True),))


def test_update_old_value_options() -> None:
    schema = _pair_table()
    change = RowChange(DmlOp.UPDATE, "d", "t", {"k": "a", "v": 1}, {"k": "a", "v": 2})
    _, value = _items(OpenEncoder().encode_row(change, schema, 5, 1))
    assert json.loads(value) == {
        "u": {"k": {"t": 15, "h": True, "f": 10, "v": "a"}, "v": {"t": 3, "f": 65, "v": 2}},
        "p": {"k": {"t": 15, "h": True, "f": 10, "v": "a"}, "v": {"t": 3, "f": 65, "v": 1}},
    }
    _, value = _items(OpenEncoder(output_old_value=False).encode_row(change, schema, 5, 1))
    assert list(json.loads(value)) == ["u"]
    _, value = _items(OpenEncoder(only_output_updated_columns=True).encode_row(change, schema, 5, 1))
    assert json.loads(value)["p"] == {"v": {"t": 3, "f": 65, "v": 1}}


def test_clustered_primary_keys_send_no_row_id() -> None:
    key, _ = _items(
        OpenEncoder().encode_row(RowChange(DmlOp.INSERT, "d", "t", None, {"k": "a", "v": 1}), _pair_table(), 5, 1)
    )
    assert key == b'{"ts":5,"scm":"d","tbl":"t","t":1}'


def test_tables_without_primary_key_get_tidb_rowids() -> None:
    columns = (column("code", "varchar", length=8, nullable=False), column("v", "int"))
    schema = TableSchema("d", "t", columns, (IndexSchema("uk_code", ("code",), unique=True),))
    encoder = OpenEncoder()

    def rid(change: RowChange) -> int | None:
        key, _ = _items(encoder.encode_row(change, schema, 5, 1))
        value = json.loads(key).get("rid")
        assert value is None or isinstance(value, int)
        return value

    a: Row = {"code": "a", "v": 1}
    b: Row = {"code": "b", "v": 2}
    a2: Row = {"code": "a2", "v": 1}
    b3: Row = {"code": "b", "v": 3}
    assert rid(RowChange(DmlOp.INSERT, "d", "t", None, a)) == 1
    assert rid(RowChange(DmlOp.INSERT, "d", "t", None, b)) == 2
    # A key-changing UPDATE split into DELETE + INSERT keeps TiDB's row handle.
    assert rid(RowChange(DmlOp.DELETE, "d", "t", a, None, split=True)) == 1
    assert rid(RowChange(DmlOp.INSERT, "d", "t", None, a2, split=True)) == 1
    assert rid(RowChange(DmlOp.UPDATE, "d", "t", b, b3)) == 2
    assert rid(RowChange(DmlOp.DELETE, "d", "t", b3, None)) == 2
    assert rid(RowChange(DmlOp.INSERT, "d", "t", None, b)) == 3


def test_row_id_of_an_unsigned_bigint_handle_is_the_int64_handle() -> None:
    """``RowID`` comes from ``kv.Handle.IntValue()``, an int64: BIGINT UNSIGNED keys ≥ 2^63 wrap."""
    columns = (column("id", "bigint", unsigned=True, nullable=False),)
    schema = TableSchema("d", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),))
    change = RowChange(DmlOp.INSERT, "d", "t", None, {"id": (1 << 64) - 1})
    key, _ = _items(OpenEncoder().encode_row(change, schema, 5, 1))
    assert key == b'{"ts":5,"scm":"d","tbl":"t","rid":-1,"t":1}'


def test_ddl_of_every_kind_sends_the_event_action() -> None:
    """``ddlEventToMsg``: ``scm``/``tbl`` of the event's table info (no ``tbl`` for database DDL),
    ``q`` the query as TiCDC rebuilt it, ``t`` the action (14 for each half of a multi-table RENAME)."""
    from tests.ticdc_lake.protocols.ddl_cases import CASES

    encoder = OpenEncoder()
    got = [
        (json.loads(k), json.loads(v)) for k, v in (_items(encoder.encode_ddl(c.ddl, c.commit_ts, 1)) for c in CASES)
    ]
    expected = []
    for c in CASES:
        key = {"ts": c.commit_ts, "scm": c.database, **({"tbl": c.table} if c.table else {}), "t": 2}
        expected.append((key, {"q": c.query, "t": c.action}))
    assert got == expected
    rename = next(c for c in CASES if c.name == "rename tables (second)")
    assert _items(encoder.encode_ddl(rename.ddl, 9, 1)) == (
        b'{"ts":9,"scm":"shop","tbl":"orders","t":2}',
        b'{"q":"RENAME TABLE `shop`.`orders_v2` TO `shop`.`orders`","t":14}',
    )

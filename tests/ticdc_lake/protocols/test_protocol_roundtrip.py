"""Simulator encoder → our decoder, for every protocol, against independent expectations.

* Property tests (hypothesis): a table with a column of every type the simulator supports (random
  lengths, precision/scale, fsp 0..6, BIT widths, ENUM/SET members) and rows of random values with
  NULLs and edge values (integer bounds, BIGINT UNSIGNED max, negative and > 24 h TIME, multi-byte
  UTF-8, bytes that are not UTF-8, tiny and huge floats, two-digit years). Each row goes through
  INSERT, UPDATE and DELETE; the decoded images must equal ``roundtrip_expectations``, which states
  each protocol's documented loss explicitly.
* Whole workloads: the same seeded simulator run through Debezium, Canal-JSON and Open must decode
  to the Simple JSON run's DMLs (commit TSO, table, op) with the images the model predicts, and
  watermarks and DDLs must come out as such.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ticdc_lake.protocols.roundtrip_expectations import PROTOCOLS, expected_image, time_text
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage
from ticdc_lake.protocols.base import Decoder, MemorySchemaLookup
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import SUPPORTED_TYPES, float32, normalize_value
from ticdc_sim.encoders import encoder_for
from ticdc_sim.encoding import ProtocolEncoder
from ticdc_sim.model import DmlOp, Row, RowChange
from ticdc_sim.random_values import is_ambiguous_wall_time, tidb_json_text
from ticdc_sim.simulator import MessageKind, TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

ZONE = "America/New_York"
_ZONE_INFO = ZoneInfo(ZONE)
_TIMESTAMP_LOW = datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
_TIMESTAMP_HIGH = datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC)
_MAX_TIME_S = 838 * 3600 + 59 * 60 + 59
_LOB_LIMITS = {"tiny": 255, "": 400, "medium": 400, "long": 400}
_MEMBER = st.text(alphabet="abxyzéü東🚀-_ ,", min_size=1, max_size=6).map(str.strip).filter(bool)


def _codec(protocol: str) -> tuple[ProtocolEncoder, Decoder]:
    options: dict[str, Any] = {"content_compatible": True} if protocol == "canal-json-cc" else {}
    protocol_id = "canal-json" if protocol == "canal-json-cc" else protocol
    encoder = encoder_for(protocol_id, ZONE, **options)
    return encoder, decoder_for(protocol_id, CodecOptions(server_time_zone=ZONE))


# ----------------------------------------------------------------------------------- strategies
@st.composite
def _column_of(draw: st.DrawFn, tp: str) -> ColumnSchema:
    name = f"c_{tp}"
    if tp == "decimal":
        # TiDB allows 65 digits; the model's Decimal arithmetic (default context) stops at 28.
        precision = draw(st.integers(1, 28))
        return column(name, tp, length=precision, scale=draw(st.integers(0, min(precision, 30))))
    if tp in ("datetime", "timestamp", "time"):
        return column(name, tp, fsp=draw(st.integers(0, 6)))
    if tp == "bit":
        return column(name, tp, length=draw(st.sampled_from((1, 2, 8, 9, 33, 64)) | st.integers(1, 64)))
    if tp in ("char", "binary"):
        return column(name, tp, length=draw(st.integers(1, 40)))
    if tp in ("varchar", "varbinary"):
        return column(name, tp, length=draw(st.integers(1, 300)))
    if tp in ("enum", "set"):
        member = _MEMBER.map(lambda m: m.replace(",", "").strip()).filter(bool) if tp == "set" else _MEMBER
        members = st.lists(member, min_size=1, max_size=6)
        return column(name, tp, elements=tuple(dict.fromkeys(draw(members))))
    if tp in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        return column(name, tp, unsigned=draw(st.booleans()))
    return column(name, tp)


def _defaulted_columns() -> tuple[ColumnSchema, ...]:
    """Nullable columns with a DEFAULT: Debezium writes the default where the row holds NULL."""
    return (
        column("d_int", "int", default="7"),
        column("d_varchar", "varchar", length=20, default="dflt"),
        column("d_decimal", "decimal", length=8, scale=2, default="1.50"),
        column("d_enum", "enum", elements=("lo", "hi"), default="hi"),
        column("d_date", "date", default="2020-01-02"),
    )


@st.composite
def _table(draw: st.DrawFn) -> TableSchema:
    columns = [column("id", "bigint", nullable=False)]
    columns += [draw(_column_of(tp)) for tp in sorted(SUPPORTED_TYPES)]
    columns += _defaulted_columns()
    primary = IndexSchema("PRIMARY", ("id",), primary=True, unique=True)
    return TableSchema("rt", "all_types", tuple(columns), (primary,), table_id=100, version=1000, source="simulator")


def _timestamps(fsp: int) -> st.SearchStrategy[datetime]:
    instants = st.datetimes(
        min_value=_TIMESTAMP_LOW.replace(tzinfo=None), max_value=_TIMESTAMP_HIGH.replace(tzinfo=None)
    ).map(lambda m: m.replace(microsecond=_truncate(m.microsecond, fsp), tzinfo=UTC))
    return instants.filter(lambda m: m >= _TIMESTAMP_LOW and not is_ambiguous_wall_time(m, _ZONE_INFO))


def _truncate(micros: int, fsp: int) -> int:
    step = int(10 ** (6 - fsp))
    return micros - micros % step


def _times(fsp: int) -> st.SearchStrategy[str]:
    step = int(10 ** (6 - fsp))
    limit = _MAX_TIME_S * 1_000_000
    edges = st.sampled_from((limit, -limit, 24 * 3600 * 1_000_000, -1_000_000 * 45296 - step))
    micros = st.integers(-limit, limit).map(lambda m: m - m % step) | edges
    return micros.map(lambda m: time_text(m, fsp))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _values(c: ColumnSchema) -> st.SearchStrategy[Any]:
    tp = c.mysql_type
    if tp in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[tp]
        low, high = (0, (1 << bits) - 1) if c.unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return st.integers(low, high) | st.sampled_from((low, high))
    if tp == "year":
        return st.integers(1901, 2155)
    if tp == "bit":
        return st.integers(0, (1 << (c.length or 1)) - 1)
    if tp == "decimal":
        largest = 10 ** (c.length or 10) - 1
        units = st.integers(-largest, largest) | st.sampled_from((largest, -largest, 0, 1, -1))
        return units.map(lambda u: Decimal(u).scaleb(-(c.scale or 0)))
    if tp == "float":
        # Magnitudes near the largest float32 crash go_json (test_largest_float32_round_trips).
        return st.floats(-3e38, 3e38).map(float32)
    if tp == "double":
        return st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from((1e-7, 1.5e21, 123456789.125))
    if tp in ("char", "varchar"):
        return st.text(st.characters(codec="utf-8"), max_size=c.length or 1)
    if tp.endswith("text"):
        return st.text(st.characters(codec="utf-8"), max_size=60).filter(
            lambda t: len(t.encode()) <= _LOB_LIMITS[tp.removesuffix("text")]
        )
    if tp in ("binary", "varbinary"):
        return st.binary(max_size=c.length or 1)
    if tp.endswith("blob"):
        return st.binary(max_size=_LOB_LIMITS[tp.removesuffix("blob")])
    if tp == "date":
        return st.dates()
    if tp == "datetime":
        return st.datetimes().map(lambda m: m.replace(microsecond=_truncate(m.microsecond, c.fsp or 0)))
    if tp == "timestamp":
        return _timestamps(c.fsp or 0)
    if tp == "time":
        return _times(c.fsp or 0)
    if tp == "json":
        return _JSON.map(tidb_json_text)
    if tp == "enum":
        return st.sampled_from(c.elements or ())
    if tp == "set":
        elements = c.elements or ()
        return st.lists(st.sampled_from(elements), max_size=len(elements)).map(",".join)
    raise AssertionError(f"no strategy for {tp}")


@st.composite
def _row(draw: st.DrawFn, schema: TableSchema, key: int) -> dict[str, Any]:
    row: dict[str, Any] = {"id": key}
    for c in schema.columns[1:]:
        value = None if c.nullable and draw(st.integers(0, 6)) == 0 else draw(_values(c))
        row[c.name] = normalize_value(c, value, "rt.all_types")
    return row


# ----------------------------------------------------------------------------------- round trip
Framed = tuple[bytes | None, bytes | None]


def _decode(decoder: Decoder, messages: list[Framed], schemas: MemorySchemaLookup) -> list[Any]:
    events = []
    for offset, (key, value) in enumerate(messages):
        for event in decoder.decode(RawMessage("rt", 0, offset, 0, key, value), schemas):
            for announced in (event.table_schema, event.pre_table_schema):
                if announced is not None:
                    schemas.add(announced)
            events.append(event)
    return events


def _roundtrip(protocol: str, schema: TableSchema, before: dict[str, Any], after: dict[str, Any]) -> None:
    encoder, decoder = _codec(protocol)
    db, table = schema.database, schema.table
    changes = [
        RowChange(DmlOp.INSERT, db, table, None, after),
        RowChange(DmlOp.UPDATE, db, table, before, after),
        RowChange(DmlOp.DELETE, db, table, before, None),
    ]
    schemas = MemorySchemaLookup()
    messages: list[Framed] = []
    if encoder.has_bootstrap:
        encoded = encoder.encode_bootstrap(schema, 1)
        messages.append((encoded.key, encoded.value))
    for n, change in enumerate(changes, start=1):
        encoded = encoder.encode_row(change, schema, (1 << 40) + n, 1_700_000_000_000 + n)
        messages.append((encoded.key, encoded.value))
    events = [e for e in _decode(decoder, messages, schemas) if e.kind is EventKind.DML]
    assert [(e.op, e.commit_ts, e.status) for e in events] == [
        (Op.INSERT, (1 << 40) + 1, EventStatus.READY),
        (Op.UPDATE, (1 << 40) + 2, EventStatus.READY),
        (Op.DELETE, (1 << 40) + 3, EventStatus.READY),
    ]
    want_after, want_before = expected_image(protocol, schema, after), expected_image(protocol, schema, before)
    assert events[0].after == want_after
    assert (events[1].before, events[1].after) == (
        _update_before(protocol, before, after, want_before, want_after),
        want_after,
    )
    assert events[2].before == want_before


def _update_before(
    protocol: str, before: Mapping[str, Any], after: Mapping[str, Any], want_before: Any, want_after: Any
) -> Any:
    """The UPDATE before image. With content-compatible (only-output-updated-columns) ``old`` leaves out the
    columns Go deems unchanged (``codec.IsColumnValueEqual``: ``-0.0 == 0.0``), which read back as ``data``."""
    if protocol != "canal-json-cc":
        return want_before
    return {name: want_after[name] if before[name] == after[name] else text for name, text in want_before.items()}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_type_round_trips_with_the_documented_loss(protocol: str, data: st.DataObject) -> None:
    schema = data.draw(_table())
    before = data.draw(_row(schema, 42))
    after = data.draw(_row(schema, 42))
    _roundtrip(protocol, schema, before, after)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_edge_values_round_trip(protocol: str) -> None:
    """Fixed edge values, so that every run covers them whatever hypothesis draws."""
    schema = TableSchema(
        "rt",
        "all_types",
        (
            column("id", "bigint", nullable=False),
            column("u64", "bigint", unsigned=True),
            column("t_neg", "time", fsp=6),
            column("t_long", "time", fsp=0),
            column("d_old", "date"),
            column("dt_old", "datetime", fsp=3),
            column("dt_frac", "datetime", fsp=6),
            column("dbl", "double"),
            column("flt", "float"),
            column("dec", "decimal", length=20, scale=6),
            column("vb", "varbinary", length=16),
            column("txt", "text"),
            column("e", "enum", elements=("a,b", "東京", "c")),
            column("s", "set", elements=("x", "y", "z")),
            column("b1", "bit", length=1),
            column("b64", "bit", length=64),
            *_defaulted_columns(),
        ),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        table_id=100,
        version=1000,
    )
    after = {
        "id": 1,
        "u64": (1 << 64) - 1,
        "t_neg": "-838:59:59.000000",
        "t_long": "100:00:00",
        "d_old": datetime(18, 2, 3).date(),
        "dt_old": datetime(99, 12, 31, 23, 59, 59, 100000),
        "dt_frac": datetime(2024, 1, 1, 0, 0, 0, 120000),
        "dbl": 1e-7,
        "flt": float32(1.5e21),
        "dec": Decimal("12345678901234.500000"),
        "vb": b'\xff\xfe\x00<&>"\\\x7f\xc2\x85',
        "txt": 'Zürich 東京 🚀 <b>&"\\\n\t\x08\u2028',
        "e": "a,b",
        "s": "x,z",
        "b1": 1,
        "b64": (1 << 64) - 1,
    }
    after |= {c.name: None for c in _defaulted_columns()}
    before = {**after, "u64": 1 << 63, "dbl": -0.0, "s": "", "e": "東京", "b1": 0, "b64": 0}
    _roundtrip(protocol, schema, before, after)


# ----------------------------------------------------------------------------------- workloads
Summary = tuple[str, int, str, str | None, str | None]
_OPS = {DmlOp.INSERT: "I", DmlOp.UPDATE: "U", DmlOp.DELETE: "D"}


def _simulate(seed: int, protocol: str) -> tuple[TicdcSimulator, dict[tuple[int, int], list[ChangeEvent]]]:
    """Run a seeded workload and decode every message, partition by partition in offset order."""
    encoder, decoder = _codec(protocol)
    simulator = TicdcSimulator(
        seed=seed, partitions=3, server_time_zone=ZONE, encoder=encoder, workload=WorkloadConfig(tables=4)
    )
    simulator.setup(create_databases=True)
    simulator.run_transactions(150)
    simulator.flush_watermark()
    schemas = MemorySchemaLookup()
    decoded: dict[tuple[int, int], list[ChangeEvent]] = {}
    for partition in range(simulator.partitions):
        for offset, message in enumerate(simulator.partition_log(partition)):
            decoded[(partition, offset)] = _decode(decoder, [(message.key, message.value)], schemas)
    return simulator, decoded


def _dump(image: Mapping[str, str | None] | None) -> str | None:
    return None if image is None else json.dumps(image, sort_keys=True, ensure_ascii=False)


def _decoded_dml(simulator: TicdcSimulator, decoded: Mapping[tuple[int, int], list[ChangeEvent]]) -> list[Summary]:
    """The decoded DMLs, partition by partition in offset order."""
    rows = []
    for partition in range(simulator.partitions):
        for offset, message in enumerate(simulator.partition_log(partition)):
            if message.kind != MessageKind.DML:
                continue
            (event,) = decoded[(partition, offset)]
            assert event.kind is EventKind.DML
            assert event.status is EventStatus.READY
            assert event.op is not None
            rows.append((event.table_ref(), event.commit_ts, event.op.value, _dump(event.before), _dump(event.after)))
    return rows


def _expected_dml(simulator: TicdcSimulator, protocol: str) -> list[Summary]:
    """The model's row changes as ``protocol`` carries them, in the same order as :func:`_decoded_dml`."""
    changes = iter(c for t in simulator.model.transactions() for c in t.changes)
    by_message: dict[int, Summary] = {}
    for message in (m for m in simulator.messages() if m.kind == MessageKind.DML):
        change = next(changes)
        schema = simulator.model.schema(change.database, change.table)
        before = None if change.before is None else _dump(expected_image(protocol, schema, change.before))
        after = None if change.after is None else _dump(expected_image(protocol, schema, change.after))
        by_message[id(message)] = (
            f"{change.database}.{change.table}",
            message.commit_ts,
            _OPS[change.op],
            before,
            after,
        )
    return [
        by_message[id(m)]
        for partition in range(simulator.partitions)
        for m in simulator.partition_log(partition)
        if m.kind == MessageKind.DML
    ]


@pytest.mark.parametrize("protocol", ["debezium", "canal-json", "canal-json-cc", "open"])
def test_a_workload_decodes_like_its_simple_json_run(protocol: str) -> None:
    simple, simple_decoded = _simulate(5, "simple-json")
    other, other_decoded = _simulate(5, protocol)
    simple_rows, other_rows = _decoded_dml(simple, simple_decoded), _decoded_dml(other, other_decoded)
    assert len(other_rows) > 300
    assert [r[:3] for r in other_rows] == [r[:3] for r in simple_rows]
    assert simple_rows == _expected_dml(simple, "simple-json")
    assert other_rows == _expected_dml(other, protocol)
    _check_control_events(other, other_decoded)


def _check_control_events(simulator: TicdcSimulator, decoded: Mapping[tuple[int, int], list[ChangeEvent]]) -> None:
    """WATERMARK and DDL messages decode to those event kinds with the simulator's commit TSO."""
    kinds: Counter[str] = Counter()
    ddl_partitions = set()
    for partition in range(simulator.partitions):
        for offset, message in enumerate(simulator.partition_log(partition)):
            if message.kind == MessageKind.DML:
                continue
            (event,) = decoded[(partition, offset)]
            assert (event.kind.value, event.commit_ts) == (message.kind, message.commit_ts)
            kinds[event.kind.value] += 1
            if event.kind is EventKind.DDL:
                ddl_partitions.add(partition)
                assert event.ddl_type in ("CREATE", "QUERY")
                assert (event.ddl_type == "CREATE") == (event.table is not None)
    assert kinds["DDL"] >= 5
    assert kinds["WATERMARK"] >= 3 * simulator.partitions
    assert ddl_partitions == (set(range(simulator.partitions)) if simulator.encoder.ddl_to_all_partitions else {0})


def test_workload_watermarks_need_the_extension() -> None:
    """Without the TiDB extension Canal-JSON and Debezium send no watermarks at all."""
    for protocol in ("canal-json", "debezium"):
        simulator = TicdcSimulator(seed=3, partitions=2, encoder=encoder_for(protocol, enable_tidb_extension=False))
        simulator.setup()
        simulator.run_transactions(20)
        simulator.flush_watermark()
        kinds = {m.kind for m in simulator.messages()}
        assert kinds == {MessageKind.DDL, MessageKind.DML}, protocol


# ----------------------------------------------------------------------------------- decoder gaps
def _debezium_null_with_default(col: ColumnSchema) -> ChangeEvent:
    schema = TableSchema(
        "rt", "t", (column("id", "int", nullable=False), col), (IndexSchema("PRIMARY", ("id",), primary=True),)
    )
    encoder, decoder = _codec("debezium")
    encoded = encoder.encode_row(RowChange(DmlOp.INSERT, "rt", "t", None, {"id": 1, col.name: None}), schema, 9, 1)
    (event,) = decoder.decode(RawMessage("rt", 0, 0, 0, encoded.key, encoded.value), MemorySchemaLookup())
    return event


def test_debezium_null_year_with_default_decodes_as_the_default() -> None:
    assert _debezium_null_with_default(column("y", "year", default="2001")).after == {"id": "1", "y": "2001"}


def test_debezium_null_binary_with_default_decodes_as_the_default() -> None:
    assert _debezium_null_with_default(column("vb", "varbinary", length=4, default="ab")).after == {
        "id": "1",
        "vb": "YWI=",
    }


def test_debezium_without_the_extension_or_schema_loses_what_docs_say() -> None:
    """docs/protocols.md, Debezium: without ``tidb_type`` BIGINT UNSIGNED stays signed and DECIMAL is the
    double as sent; without schema every value is the bare JSON scalar (DATE a day count, BIT(1) 1/0)."""
    columns = (
        column("id", "int", nullable=False),
        column("u", "bigint", unsigned=True),
        column("dec", "decimal", length=6, scale=2),
        column("d", "date"),
        column("b", "bit", length=1),
    )
    schema = TableSchema("rt", "t", columns, (IndexSchema("PRIMARY", ("id",), primary=True),))
    row: Row = {"id": 1, "u": (1 << 64) - 1, "dec": Decimal("12.50"), "d": datetime(1970, 1, 11).date(), "b": 1}
    decoder = decoder_for("debezium", CodecOptions())
    images = []
    options: dict[str, Any]
    for options in ({"enable_tidb_extension": False}, {"disable_schema": True}):
        encoder = encoder_for("debezium", "UTC", **options)
        encoded = encoder.encode_row(RowChange(DmlOp.INSERT, "rt", "t", None, row), schema, 9, 1)
        (event,) = decoder.decode(RawMessage("rt", 0, 0, 0, encoded.key, encoded.value), MemorySchemaLookup())
        images.append(event.after)
    assert images == [
        {"id": "1", "u": "-1", "dec": "12.5", "d": "1970-01-11", "b": "1"},
        {"id": "1", "u": "-1", "dec": "12.5", "d": "10", "b": "1"},
    ]


_FLOAT32_MAX = 3.4028234663852886e38


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_largest_float32_round_trips(protocol: str) -> None:
    schema = TableSchema(
        "rt",
        "t",
        (column("id", "bigint", nullable=False), column("f", "float")),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        table_id=100,
        version=1000,
    )
    _roundtrip(protocol, schema, {"id": 1, "f": -_FLOAT32_MAX}, {"id": 1, "f": _FLOAT32_MAX})

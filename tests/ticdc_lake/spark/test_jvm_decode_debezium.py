"""The JVM Debezium decoder (``jvm_decode.debezium``, ``include/jvm/decoder``) against the Python decoder.

Message by message: the same landed messages go through the JVM decoder in a Spark query (then
``jvm_decode.events`` makes their ``change_events`` rows, as the workers do) and through the Python
decoder (``decoder.read``, ``events_to_arrow``, then ``ImageRecords.add``: what the workers write for
it). Every message the JVM takes must give exactly the rows the Python path gives, every column and
the typed record carrier's bytes included; the messages it must take are stated by the cases
(``jvm_debezium_cases``), so a test where it silently takes nothing fails. The stage-level test runs
the real decode stage both ways.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from tests import tiflow_vectors
from tests.stage_runs import land_messages, pipeline_rows, stage_config
from tests.ticdc_lake.spark.arrow_decode.differential_support import BATCH, PIPELINE, RUN, raw, reference
from tests.ticdc_lake.spark.arrow_decode.test_debezium_differential import compact
from tests.ticdc_lake.spark.jvm_debezium_cases import (
    DB,
    VERSION,
    Pair,
    binary_mutations,
    binary_rows,
    binary_schema,
    composite_schema,
    dated_mutations,
    dated_rows,
    dated_schema,
    encode,
    lean_pair,
    lean_row,
    lean_schema,
    mixed_mutations,
    mixed_rows,
    mixed_schema,
    mutations,
)
from ticdc_lake.config import CodecOptions, Compression
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.spark.arrow_decode.image_records import ImageRecords
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.jvm_decode.debezium import decode_debezium
from ticdc_lake.spark.jvm_decode.events import decided_events
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.catalog import column
from ticdc_sim.ddl_sql import create_table_sql
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.model import DdlChange, DmlOp, RowChange
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

OPTIONS = CodecOptions()
_MESSAGES = (
    "batch_id STRING, topic STRING, `partition` INT, `offset` BIGINT, timestamp BIGINT, key BINARY, value BINARY, "
    "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
)
Row = dict[str, Any]


def _jvm_rows(
    spark: SparkSession, messages: Sequence[RawMessage], lookup: MemorySchemaLookup, options: CodecOptions = OPTIONS
) -> dict[int, Row]:
    """Message index -> the ``change_events`` row the JVM path gives it, for the messages it takes."""
    frame = spark.createDataFrame(
        [(BATCH, m.topic, m.partition, m.offset, m.timestamp_ms, m.key, m.value, []) for m in messages], _MESSAGES
    )
    decoded = decode_debezium(spark, frame, lookup, options)
    assert decoded is not None
    table = decoded.orderBy("offset").toArrow()
    batch = table.combine_chunks().to_batches()[0] if table.num_rows else None
    if batch is None:
        return {}
    decided = decided_events(batch, PIPELINE, RUN)
    if decided.events is None:
        return {}
    taken = sorted(set(range(batch.num_rows)) - set(decided.rest.tolist()))
    offsets = batch.column("offset").to_pylist()
    return {offsets[i]: row for i, row in zip(taken, decided.events.to_pylist(), strict=True)}


def _python_rows(
    messages: Sequence[RawMessage], lookup: MemorySchemaLookup, indexes: Sequence[int], options: CodecOptions = OPTIONS
) -> dict[int, Row]:
    """Message index -> what the workers write for it from the Python decoder (carrier made from the
    maps), for ``indexes``; each must decode to exactly one event."""
    outcomes = reference(options, messages, lookup)
    rows = []
    for n in indexes:
        assert outcomes[n].reason is None, f"message {n}: the Python decoder quarantines it: {outcomes[n].reason}"
        assert len(outcomes[n].rows) == 1, f"message {n}: {len(outcomes[n].rows)} events"
        rows.append(outcomes[n].rows[0])
    if not rows:
        return {}
    batch = ImageRecords(copy.deepcopy(lookup)).add(pa.RecordBatch.from_pylist(rows, schema=EVENTS_ARROW_SCHEMA))
    return dict(zip(indexes, batch.to_pylist(), strict=True))


def _assert_same(
    spark: SparkSession,
    pairs: Sequence[tuple[bytes | None, bytes | None]],
    lookup: MemorySchemaLookup,
    taken: set[int],
    options: CodecOptions = OPTIONS,
) -> dict[int, Row]:
    messages = raw(pairs)
    jvm = _jvm_rows(spark, messages, lookup, options)
    assert set(jvm) == taken, f"taken {sorted(set(jvm) - taken)}, left {sorted(taken - set(jvm))}"
    python = _python_rows(messages, lookup, sorted(taken), options)
    for n in sorted(taken):
        differing = {c: (python[n][c], jvm[n][c]) for c in python[n] if python[n][c] != jvm[n][c]}
        assert not differing, f"message {n} (column: (Python, JVM)): {differing}"
    return jvm


def _lookup(*schemas: Any) -> MemorySchemaLookup:
    return MemorySchemaLookup([lean_schema(), composite_schema(), *schemas])


def test_the_mutations_of_a_row_change(spark: SparkSession) -> None:
    encoder = DebeziumEncoder("UTC")
    key, value = lean_pair(encoder, 1)
    assert key is not None
    assert value is not None
    cases = mutations(key, value)
    pairs = [pair for _, pair, _ in cases]
    taken = {n for n, (_, _, take) in enumerate(cases) if take}
    _assert_same(spark, pairs, _lookup(), taken)


def test_row_changes_of_every_operation_and_key(spark: SparkSession) -> None:
    encoder = DebeziumEncoder("UTC")
    lean, composite = lean_schema(), composite_schema()
    nulls = {**{c.name: None for c in lean.columns}, "id": 7}
    pairs = [
        lean_pair(encoder, 1),
        lean_pair(encoder, 2, DmlOp.UPDATE),
        lean_pair(encoder, 3, DmlOp.DELETE),
        encode(encoder, RowChange(DmlOp.INSERT, DB, "lean", after=nulls), lean, 6_100),
        encode(encoder, RowChange(DmlOp.UPDATE, DB, "lean", before=nulls, after=lean_row(7)), lean, 6_101),
        encode(
            encoder, RowChange(DmlOp.INSERT, DB, "composite", after={"k": "ä", "j": -1, "v": None}), composite, 6_102
        ),
        encode(
            encoder,
            RowChange(
                DmlOp.UPDATE, DB, "composite", before={"k": "a", "j": 1, "v": 2}, after={"k": "a", "j": 1, "v": 3}
            ),
            composite,
            6_103,
        ),
        encode(encoder, RowChange(DmlOp.DELETE, DB, "composite", before={"k": "", "j": 0, "v": 0}), composite, 6_104),
    ]
    rows = _assert_same(spark, pairs, _lookup(), set(range(len(pairs))))
    assert [rows[n]["op"] for n in range(3)] == ["I", "U", "D"]
    assert rows[5]["after_key"] == ["ä", "-1"]
    assert rows[3]["after_record"] is not None
    assert rows[3]["before_record"] is None


def test_columns_the_version_adds_and_values_the_carried_type_cannot_hold(spark: SparkSession) -> None:
    """A newer version with one more column (the rows, sent with the older schema, lack it: an untyped
    NULL entry), and carried types narrower than the values (the ``long`` id carried as ``int``)."""
    encoder = DebeziumEncoder("UTC")
    lean = lean_schema()
    wider = lean_schema(version=5_000)
    wider = replace(wider, columns=(*wider.columns, column("late", "int")))
    lookup = _lookup(wider)
    lookup.carried[(DB, "lean", VERSION)] = ("int", "long", "long", "int", "int", "int", "string", "string", "string")
    big = {**lean_row(1), "id": 2**40}
    pairs = [
        encode(encoder, RowChange(DmlOp.INSERT, DB, "lean", after=big), lean, 4_000),
        encode(encoder, RowChange(DmlOp.INSERT, DB, "lean", after=lean_row(2)), lean, 4_001),
        encode(encoder, RowChange(DmlOp.INSERT, DB, "lean", after=lean_row(3)), lean, 5_001),
        encode(encoder, RowChange(DmlOp.DELETE, DB, "lean", before=big), lean, 5_002),
    ]
    rows = _assert_same(spark, pairs, lookup, set(range(len(pairs))))
    assert rows[0]["after_untyped"] == [("id", str(2**40))]
    assert rows[1]["after_untyped"] is None
    assert rows[2]["after_untyped"] == [("late", None)]
    assert rows[2]["schema_version"] == 5_000


def _type_case(
    spark: SparkSession,
    schema: TableSchema,
    rows: list[dict[str, Any]],
    mutate: Callable[[bytes | None, bytes], list[tuple[str, Pair, bool]]],
    template: int,
) -> tuple[dict[int, Row], int, list[str]]:
    """Each row inserted, the first updated to the second, the third deleted, then the mutations of
    message ``template``: compared with :func:`_assert_same`. Returns the JVM rows, the index of the first
    mutation and the mutations' names."""
    encoder = DebeziumEncoder("UTC")
    table = schema.table
    pairs = [
        encode(encoder, RowChange(DmlOp.INSERT, DB, table, after=row), schema, 6_000 + n) for n, row in enumerate(rows)
    ]
    pairs.append(encode(encoder, RowChange(DmlOp.UPDATE, DB, table, before=rows[0], after=rows[1]), schema, 6_100))
    pairs.append(encode(encoder, RowChange(DmlOp.DELETE, DB, table, before=rows[2]), schema, 6_101))
    key, value = pairs[template]
    assert value is not None
    cases = mutate(key, value)
    taken = set(range(len(pairs))) | {len(pairs) + n for n, (_, _, take) in enumerate(cases) if take}
    got = _assert_same(spark, [*pairs, *(pair for _, pair, _ in cases)], _lookup(schema), taken)
    return got, len(pairs), [name for name, _, _ in cases]


def test_dates_datetimes_and_years(spark: SparkSession) -> None:
    got, first, _ = _type_case(spark, dated_schema(), dated_rows(), dated_mutations, 3)
    assert [got[first + n]["after_untyped"] for n in (0, 1)] == [None, None]


def test_timestamps_bits_enums_and_sets(spark: SparkSession) -> None:
    got, first, names = _type_case(spark, mixed_schema(), mixed_rows(), mixed_mutations, 0)
    february_30 = first + next(n for n, name in enumerate(names) if name.startswith("February 30"))
    assert got[february_30]["after_untyped"] == [("ts0", "2023-02-30T00:00:00Z")]


def test_binary_columns_and_times(spark: SparkSession) -> None:
    got, _, _ = _type_case(spark, binary_schema(), binary_rows(), binary_mutations, 0)
    assert got[0]["after_key"] == ["1"]


#: Columns of TiCDC's golden Debezium row of every type family that the JVM decoder leaves to Python:
#: BIT(n>1), the doubles (DECIMAL, NUMERIC, FLOAT, DOUBLE), the binary types (sent
#: as plain strings without the TiDB extension, but carried as ``binary``) and BIGINT UNSIGNED (carried
#: as a decimal).
_GOLDEN_UNTAKEN = {
    "col_bit_5",
    "col_bit_6",
    "col_bit_60",
    "col_decimal",
    "col_numeric",
    "col_float",
    "col_double",
    "col_varbinary",
    "col_binary",
    "col_blob",
    "col_bigint_unsigned",
}
#: The golden row's TiDB types (tiflow's datatype.ddl.sql) of the columns the JVM decoder takes.
_GOLDEN_TYPES = {
    "pk": ("int", None),
    "col_t": ("time", None),
    "col_y": ("year", None),
    "col_bit_1": ("bit", 1),
    "col_varchar": ("varchar", 16),
    "col_char": ("char", 16),
    "col_json": ("json", None),
    "col_int": ("int", None),
    "col_tinyint": ("tinyint", None),
    "col_smallint": ("smallint", None),
    "col_mediumint": ("mediumint", None),
    "col_bigint": ("bigint", None),
}


@tiflow_vectors.needs_vectors
def test_tiflow_vectors(spark: SparkSession) -> None:
    """TiCDC's own encoder output: the golden row of every type family (its other columns left out, so
    the rest is taken whole; whole, it is left to Python) and codec_test.go's row changes, compact as
    on the wire (pretty-printed, they are left to Python)."""
    testdata = tiflow_vectors.DEBEZIUM_DATA
    doc = json.loads((testdata / "datatype.dbz.json").read_bytes())
    doc["payload"]["source"]["commit_ts"] = 445815958939484161  # what TiCDC adds to the connector's output
    key = compact((testdata / "datatype.dbz.key.json").read_bytes())
    whole = {"payload": doc["payload"], "schema": doc["schema"]}
    reduced = json.loads(json.dumps(whole))
    for image in reduced["schema"]["fields"]:
        if image["field"] in ("before", "after"):
            image["fields"] = [f for f in image["fields"] if f["field"] not in _GOLDEN_UNTAKEN]
    after = reduced["payload"]["after"]
    reduced["payload"]["after"] = {k: v for k, v in after.items() if k not in _GOLDEN_UNTAKEN}

    def dumps(value: dict[str, Any]) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()

    def column_of(name: str) -> ColumnSchema:
        if name in _GOLDEN_TYPES:
            kind, length = _GOLDEN_TYPES[name]
            return ColumnSchema(name, kind, length=length)
        if name.startswith(("col_enum", "col_set")):
            return ColumnSchema(name, name.split("_")[1], elements=("a", "b", "c"))
        for prefix, kind in (("col_d_", "date"), ("col_dt", "datetime"), ("col_ts", "timestamp"), ("col_t_", "time")):
            if name.startswith(prefix):
                return ColumnSchema(name, kind)
        unsigned = name.endswith("_unsigned")
        return ColumnSchema(name, name.removeprefix("col_").removesuffix("_unsigned"), unsigned=unsigned)

    columns = tuple(column_of(n) for n in reduced["payload"]["after"])
    primary = (IndexSchema("PRIMARY", ("pk",), primary=True, unique=True),)
    golden = TableSchema("test", "foo", columns, primary, version=1)
    pairs: list[tuple[bytes | None, bytes | None]] = [(key, dumps(whole)), (key, dumps(reduced))]
    taken = {1}
    for value_name, key_name, schema_on in _CODEC_TEST_PAIRS:
        value, key_text = _tiflow(value_name), _tiflow(key_name)
        pairs.append((key_text, value))
        if schema_on:
            taken.add(len(pairs))
        pairs.append((compact(key_text), compact(value)))
    lookup = MemorySchemaLookup([golden, TableSchema("test", "table1", (ColumnSchema("tiny", "smallint"),), version=1)])
    rows = _assert_same(spark, pairs, lookup, taken, CodecOptions(enable_tidb_extension=False))
    assert [rows[1]["after_key"], rows[1]["op"]] == [["1"], "I"]


#: (value, key, a row change with its schema) of tiflow's codec_test.go vectors.
_CODEC_TEST_PAIRS = [
    ("L816", "L794", True),  # INSERT
    ("L1019", "L996", True),  # UPDATE with before
    ("L1264", "L1241", True),  # DELETE
    ("L758", "L749", False),  # INSERT, schema off
    ("L1137", "L1126", False),  # UPDATE without before, schema off
    ("L563", "L553", False),  # watermark
    ("L91", "L72", False),  # RENAME TABLE
    ("L428", "L422", False),  # CREATE TABLE
]


def _tiflow(name: str) -> bytes:
    matches = list(tiflow_vectors.EXTRACTED.glob(f"debezium_codec_test_{name}_*.json"))
    assert len(matches) == 1, name
    return matches[0].read_bytes()


def test_a_compressed_pipeline_has_no_jvm_decoder(spark: SparkSession) -> None:
    frame = spark.createDataFrame([], _MESSAGES)
    assert decode_debezium(spark, frame, _lookup(), CodecOptions(compression=Compression.LZ4)) is None


def test_the_decode_stage_writes_the_same_rows_both_ways(spark: Any, tmp_path: Path, lake_home: Path) -> None:
    """The simulator's workload (its DDL, watermarks and tables of other types, which fall back) and the
    lean tables' rows, landed once per mode and decoded by the real stage with and without the JVM."""
    topic = "jvm-dbz"
    encoder = DebeziumEncoder("UTC")
    sim = TicdcSimulator(seed=7, topic=topic, partitions=1, workload=WorkloadConfig(tables=2), encoder=encoder)
    sim.setup()
    sim.run_transactions(20)
    sim.flush_watermark()
    values: list[tuple[bytes | None, bytes | None]] = [(m.key, m.value) for m in sim.take()]
    lean = lean_schema()
    ddl = encoder.encode_ddl(DdlChange("CREATE", create_table_sql(lean), DB, "lean", lean), VERSION, VERSION)
    assert ddl is not None
    values.append((ddl.key, ddl.value))
    lean_rows = [
        lean_pair(encoder, n, op, 10**12) for n, op in enumerate([DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE] * 4)
    ]
    values += lean_rows
    key, value = lean_pair(encoder, 1, commit_ts=10**12)
    assert key is not None
    assert value is not None
    bad = [pair for _, pair, _ in mutations(key, value)]
    values += bad
    results = {}
    for mode in ("python", "jvm"):
        home = tmp_path / mode
        home.mkdir()
        config = stage_config(
            home, lake_home, {"id": f"jvmdbz_{mode}", "protocol": "debezium", "kafka": {"topics": [topic]}}
        )
        pipeline = config.pipeline(f"jvmdbz_{mode}")
        land_messages(LandingStore(pipeline.landing_uri, pipeline.id), topic, {0: values})
        summary = run_decode(spark, config, pipeline, "run-1", jvm=mode == "jvm")
        tables = SystemTables.of(config, pipeline)
        position = ("topic", "partition", "offset", "idx")
        drop = ("run_id", "recorded_at", "resolved_at")
        results[mode] = (
            summary,
            pipeline_rows(spark, tables.change_events, pipeline.id, position, drop),
            pipeline_rows(spark, tables.quarantine, pipeline.id, position, drop),
        )
    (python, py_events, py_quarantine), (jvm, jvm_events, jvm_quarantine) = results["python"], results["jvm"]
    assert jvm_events == py_events
    assert jvm_quarantine == py_quarantine
    assert (jvm.events, jvm.pending, jvm.quarantined) == (python.events, python.pending, python.quarantined)
    taken_mutations = sum(1 for _, _, take in mutations(key, value) if take)
    assert jvm.jvm_events == len(lean_rows) + taken_mutations
    assert jvm.python_messages == len(values) - jvm.jvm_events


def test_the_stage_takes_the_jvm_path_by_default_when_it_takes_every_table(
    spark: Any, tmp_path: Path, lake_home: Path
) -> None:
    """Only lean tables: the JVM decodes every row change without being asked (``jvm_by_default``)."""
    topic = "jvm-dbz-default"
    encoder = DebeziumEncoder("UTC")
    lean = lean_schema()
    ddl = encoder.encode_ddl(DdlChange("CREATE", create_table_sql(lean), DB, "lean", lean), VERSION, VERSION)
    assert ddl is not None
    rows = [lean_pair(encoder, n, op) for n, op in enumerate([DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE] * 3)]
    config = stage_config(
        tmp_path, lake_home, {"id": "jvmdbz_default", "protocol": "debezium", "kafka": {"topics": [topic]}}
    )
    pipeline = config.pipeline("jvmdbz_default")
    land_messages(LandingStore(pipeline.landing_uri, pipeline.id), topic, {0: [(ddl.key, ddl.value), *rows]})
    summary = run_decode(spark, config, pipeline, "run-1")
    assert (summary.jvm_events, summary.python_messages, summary.events) == (len(rows), 1, len(rows) + 1)

"""Differential test of the JVM Simple JSON decoder against the Python decoder, its specification.

The same landed messages are decoded twice by the real decode stage: once with ``jvm=False``
(every message through the Python decoder) and once with the JVM path (``jvm_decode``: the JVM
decodes what it can verify, the rest falls back to Python). Both must write identical
``change_events`` rows (every column) and identical quarantine rows and reasons, and the JVM must
really have decoded the messages this test expects it to (so the test fails if everything
silently falls back). Messages: the simulator's workload, a table of every column type the
simulator makes (in two schema versions: with TIMESTAMP columns, whose values fall back, and
without), and malformed messages of each kind the JVM must leave to Python. TiCDC's test vectors
hold no Simple JSON messages (only its Avro schema), so the simulator's encoder stands in for them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import localcontext
from pathlib import Path
from typing import Any

import cramjam
import pytest
from pyspark.sql import functions as F

from tests.stage_runs import land_messages, stage_config
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, wide_rows, wide_schema
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.spark.decode_job import run_decode
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

pytestmark = pytest.mark.spark

TOPIC = "jvm-diff"
DB = "diffdb"
#: Schema versions of the wide table: with its TIMESTAMP columns, and without them.
WITH_TS, WITHOUT_TS = 7001, 7002
COMMIT = 450_000_000_000_000_000


def _wide_messages() -> tuple[list[bytes], list[bytes]]:
    """(messages the JVM decodes, messages that fall back) of the every-type table."""
    encoder = SimpleJsonEncoder(SERVER_ZONE)
    full = replace(wide_schema(DB), version=WITH_TS, table_id=91)
    bare_columns = tuple(c for c in full.columns if c.mysql_type != "timestamp")
    bare = replace(full, table="no_ts", columns=bare_columns, version=WITHOUT_TS)
    jvm: list[bytes] = []
    fallback = [encoder.encode_bootstrap(full, COMMIT).value, encoder.encode_bootstrap(bare, COMMIT).value]
    rows = wide_rows()
    for schema in (full, bare):
        names = {c.name for c in schema.columns}
        images = [{k: v for k, v in row.items() if k in names} for row in rows]
        changes = [RowChange(DmlOp.INSERT, DB, schema.table, after=image) for image in images]
        changes.append(RowChange(DmlOp.UPDATE, DB, schema.table, before=images[0], after=images[1]))
        changes.append(RowChange(DmlOp.DELETE, DB, schema.table, before=images[2]))
        for n, change in enumerate(changes):
            with localcontext() as context:
                context.prec = 100  # DECIMAL(65,30) has 65 digits; Python's default context keeps 28
                value = encoder.encode_row(change, schema, COMMIT + n, COMMIT + n).value
            every_null = all(v is None for k, v in (change.after or change.before or {}).items() if k != "id")
            zero_dates = b"0000-00-00" in value
            (jvm if (schema is bare and not zero_dates) or every_null else fallback).append(value)
    return jvm, fallback


def _dml(**fields: Any) -> bytes:
    doc = {
        "version": 1,
        "database": DB,
        "table": "no_ts",
        "type": "INSERT",
        "commitTs": COMMIT,
        "schemaVersion": WITHOUT_TS,
    }
    doc.update(fields)
    return json.dumps({k: v for k, v in doc.items() if v is not _DROP}, separators=(",", ":")).encode()


_DROP = object()


def _malformed() -> list[bytes]:
    """Messages the JVM must leave to Python (most are quarantined there, one stays PENDING)."""
    valid = _dml(data={"id": "90", "i": "5"})
    return [
        b"not json",
        valid + b" x",
        valid + b"{}",
        valid + "\u2028".encode(),  # not JSON whitespace (Java's $ would match before it)
        _dml(data={"id": "104", "tx": "a\tb"}).replace(b"\\t", b"\t"),  # a raw control character
        _dml(data={"id": "5\n"}),
        valid[:-1] + b',"version":1}',  # a duplicate key
        _dml(version=1.0, data={"id": "91"}),
        _dml(data={"id": 92}),  # a number where Simple sends a string
        _dml(data={"id": "2147483648"}),  # out of INT's range
        _dml(data={"id": "007"}),  # not canonical: Python returns "7"
        _dml(data={"id": "-0"}),
        _dml(data={"id": "93", "nope": "1"}),  # a column the schema lacks
        _dml(schemaVersion=424242, data={"id": "94"}),  # unknown version: PENDING
        _dml(data={"id": "95", "vb": "QR=="}),  # padding bits set: Python returns "QQ=="
        _dml(data={"id": "96", "f": "1e999"}),
        _dml(data={"id": "97", "dt": "2020-13-01"}),
        _dml(data={"id": "98", "en": "99"}),  # beyond the ENUM's members
        _dml(data={"id": "98", "st": "99999"}),  # bits beyond the SET's members
        _dml(type="DELETE", data={"id": "99"}, old={"id": "99"}),
        _dml(handleKeyOnly=True, data={"id": "100"}),
        _dml(claimCheckLocation="file:///nowhere/claim", data={"id": "101"}),
        _dml(commitTs=-1, data={"id": "102"}),
        bytes(cramjam.lz4.compress(_dml(data={"id": "103"}))),  # an LZ4 frame, codec.compression none
    ]


def _full_image_cases(template: bytes) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(decoded in the JVM, decoded in Python, quarantined) messages whose row image has every
    column of the bare table, so only the checks of the values (and of the raw text) tell them
    apart: ``template`` is a message of that table the JVM decodes, with one value changed."""
    doc = json.loads(template)

    def text_value(value: Any) -> bytes:
        changed = {**doc, "data": {**doc["data"], "tx": value}}
        return json.dumps(changed, separators=(",", ":"), ensure_ascii=False).encode()

    timestamp_like = {"location": "UTC", "value": "2020-01-01 00:00:00"}
    jvm = [
        text_value('say "hi" to back\\slash \\"'),  # escaped quotes and backslashes
        text_value("nul\u0000byte"),
        text_value('a"},"tx":"b'),  # looks like the end of the row and another key
        text_value(json.dumps(timestamp_like, separators=(",", ":"))),  # a string reading like a TIMESTAMP
        text_value('\\"' * 200_000 + "ü" * 500_000),  # long: the regular expressions must not recurse
    ]
    python = [
        text_value("\U0001f600").replace("\U0001f600".encode(), b"\\ud83d\\ude00"),  # a non-BMP escape
        text_value("first").replace(b'"data":{', b'"data":{"tx":"second",', 1),  # a key repeated
        text_value("x").replace(b'"tx":"x"', b'"tx" : "x"'),  # whitespace (Python keeps "x")
    ]
    quarantined = [
        text_value(5),  # a number where a string is expected
        text_value(timestamp_like),  # an object in a text column
        text_value({"a": "b"}),
        text_value(["a"]),
    ]
    return jvm, python, quarantined


def _land(store: LandingStore, values: list[bytes]) -> None:
    land_messages(store, TOPIC, {0: [(None, v) for v in values]})


def _rows(spark: Any, table: str, pipeline: str, drop: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The pipeline's rows (the catalog is shared with other tests of the worker) by (topic,
    partition, offset, idx); maps as lists of entries, so their order counts too."""
    frame = spark.table(table).where(F.col("pipeline") == pipeline).drop("pipeline", *drop)
    maps = [f.name for f in frame.schema.fields if f.dataType.typeName() == "map"]
    frame = frame.select(*(F.map_entries(c).alias(c) if c in maps else F.col(c) for c in frame.columns))
    return {(r["topic"], r["partition"], r["offset"], r["idx"]): r.asDict(recursive=True) for r in frame.collect()}


def _differences(left: dict[Any, dict[str, Any]], right: dict[Any, dict[str, Any]]) -> list[tuple[Any, ...]]:
    missing = [(key, "only in one") for key in left.keys() ^ right.keys()]
    return missing + [
        (key, column, value, right[key][column])
        for key, row in sorted(left.items())
        if key in right
        for column, value in row.items()
        if value != right[key][column]
    ]


def test_jvm_path_writes_what_the_python_decoder_writes(spark: Any, tmp_path: Path, lake_home: Path) -> None:
    sim = TicdcSimulator(seed=5, topic=TOPIC, partitions=1, workload=WorkloadConfig(tables=2))
    sim.setup()
    sim.run_transactions(15)
    sim.flush_watermark()
    simulated = [m.value for m in sim.take()]
    sim_dml = [v for v in simulated if any(f'"type":"{t}"'.encode() in v for t in ("INSERT", "UPDATE", "DELETE"))]
    wide_jvm, wide_fallback = _wide_messages()
    template = next(v for v in wide_jvm if b'"table":"no_ts"' in v and b'"INSERT"' in v)
    tricky_jvm, tricky_python, tricky_bad = _full_image_cases(template)
    values = simulated + wide_fallback + wide_jvm + _malformed() + tricky_jvm + tricky_python + tricky_bad
    results = {}
    for mode in ("python", "jvm"):
        home = tmp_path / mode
        home.mkdir()
        config = stage_config(
            home,
            lake_home,
            {
                "id": f"diff_{mode}",
                "protocol": "simple-json",
                "kafka": {"topics": [TOPIC]},
                "codec": {"server_time_zone": SERVER_ZONE},
            },
        )
        pipeline = config.pipeline(f"diff_{mode}")
        _land(LandingStore(pipeline.landing_uri, pipeline.id), values)
        summary = run_decode(spark, config, pipeline, "run-1", jvm=mode == "jvm")
        tables = SystemTables.of(config, pipeline)
        events = _rows(spark, tables.change_events, pipeline.id, ())
        quarantine = _rows(spark, tables.quarantine, pipeline.id, ("recorded_at", "resolved_at"))
        results[mode] = (summary, events, quarantine)
    (py_summary, py_events, py_quarantine), (jvm_summary, jvm_events, jvm_quarantine) = (
        results["python"],
        results["jvm"],
    )
    assert py_summary.jvm_events == 0
    assert _differences(py_events, jvm_events) == []
    assert _differences(py_quarantine, jvm_quarantine) == []
    assert jvm_summary.jvm_events == len(sim_dml) + len(wide_jvm) + len(tricky_jvm)
    assert jvm_summary.python_messages == len(values) - jvm_summary.jvm_events
    assert (jvm_summary.events, jvm_summary.pending, jvm_summary.quarantined) == (
        py_summary.events,
        py_summary.pending,
        py_summary.quarantined,
    )
    # Of the malformed messages, the duplicate key (Python keeps the last), "007", "-0" and "QR=="
    # decode in Python; the unknown version waits, then is quarantined (its TSO is long past).
    # The full-image cases: the number, the objects and the array are quarantined.
    assert (py_summary.pending, py_summary.quarantined) == (0, len(_malformed()) - 4 + len(tricky_bad))

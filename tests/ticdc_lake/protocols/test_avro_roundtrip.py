"""Simulator encoder → our decoder for TiCDC's ``avro`` protocol (Confluent registry), against an
independent expectation.

Same table and rows as ``test_protocol_roundtrip`` (a column of every simulator type, NULLs and edge
values), written by :class:`AvroConfluentEncoder` with schemas registered in the real local schema
registry (``include/scripts/registry.sh start``), decoded by ``decoder_for("avro", …)`` with the
writer schemas fetched back from the registry by id, as the land task does.

Avro's documented losses (``docs/protocols.md`` "Avro (Confluent registry)"), stated
here explicitly rather than taken from the decoder:

* values: none. Every column decodes to its canonical text (``canonical_text``): the
  fraction digits TiDB wrote are kept, TIMESTAMP server wall time reads back as UTC, BIGINT
  UNSIGNED travels as a two's-complement long and reads back unsigned, NULL stays NULL (no default
  substitution), ENUM/SET as member names;
* UPDATE: no old image, ``before`` is ``None`` (only the new row travels);
* DELETE: a tombstone, the key record only: ``before`` = the handle-key columns, ``commit_ts`` 0
  and ``facts.offset_ordered``;
* names are sanitised (``[A-Za-z0-9_]``); the test uses names that sanitise to themselves.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ticdc_lake.protocols.roundtrip_expectations import canonical_text
from tests.ticdc_lake.protocols.test_protocol_roundtrip import (
    ZONE,
    Framed,
    _decode,
    _defaulted_columns,
    _row,
    _table,
)
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import EventFacts, EventKind, EventStatus, Op
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.column_types import float32
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange

#: One subject pair per example: fresh subjects keep the registry's compatibility rules out of the test.
_RUN = uuid.uuid4().hex[:12]
_TOPICS: Iterator[int] = itertools.count()


@pytest.fixture(scope="session")
def registry_client(schema_registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": schema_registry_url})


def _canonical_image(schema: TableSchema, row: Mapping[str, Any]) -> dict[str, str | None]:
    """Avro loses no value: every column is its canonical text."""
    image: dict[str, str | None] = {}
    for name, value in row.items():
        col = schema.column(name)
        assert col is not None, name
        image[name] = canonical_text(col, value)
    return image


def _roundtrip(
    client: SchemaRegistryClient, schema: TableSchema, before: dict[str, Any], after: dict[str, Any]
) -> None:
    topic = f"rt.avro_{_RUN}_{next(_TOPICS)}"
    registered: dict[str, int] = {}

    def register(subject: str, text: str) -> int:
        schema_id = client.register_schema(subject, Schema(text, "AVRO"))
        registered[subject] = schema_id
        return schema_id

    encoder = encoder_for("avro", ZONE, register=register, topic=topic)
    db, table = schema.database, schema.table
    changes = [
        RowChange(DmlOp.INSERT, db, table, None, after),
        RowChange(DmlOp.UPDATE, db, table, before, after),
        RowChange(DmlOp.DELETE, db, table, before, None),
    ]
    messages: list[Framed] = []
    for n, change in enumerate(changes, start=1):
        encoded = encoder.encode_row(change, schema, (1 << 40) + n, 1_700_000_000_000 + n)
        messages.append((encoded.key, encoded.value))
    assert messages[2][1] is None  # DELETE is a Kafka tombstone

    subject = topic.replace(".", "_")
    key_id, value_id = registered[f"{subject}-key"], registered[f"{subject}-value"]
    writer_schemas = {i: client.get_schema(i).schema_str or "" for i in (key_id, value_id)}
    decoder = decoder_for("avro", CodecOptions(server_time_zone=ZONE), DecodeResources(writer_schemas=writer_schemas))
    events = [e for e in _decode(decoder, messages, MemorySchemaLookup()) if e.kind is EventKind.DML]

    assert [(e.op, e.commit_ts, e.status, e.table_ref()) for e in events] == [
        (Op.INSERT, (1 << 40) + 1, EventStatus.READY, f"{db}.{table}"),
        (Op.UPDATE, (1 << 40) + 2, EventStatus.READY, f"{db}.{table}"),
        (Op.DELETE, 0, EventStatus.READY, f"{db}.{table}"),  # a tombstone carries no commit TSO
    ]
    want_after = _canonical_image(schema, after)
    key_names = [c.name for c in schema.columns if c.name in schema.handle_key()]
    want_key = {name: value for name, value in _canonical_image(schema, before).items() if name in key_names}
    # INSERT: the full new row.
    assert (events[0].before, events[0].after) == (None, want_after)
    # UPDATE: the new row only, no old image.
    assert (events[1].before, events[1].after) == (None, want_after)
    # DELETE: the key columns of the old row only.
    assert (events[2].before, events[2].after) == (want_key, None)
    for event in events[:2]:
        assert (event.facts.key_schema_id, event.facts.value_schema_id) == (key_id, value_id)
        assert event.facts.handle_key == tuple(key_names)
        assert not event.facts.offset_ordered
    assert events[2].facts == EventFacts(handle_key=tuple(key_names), key_schema_id=key_id, offset_ordered=True)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_every_type_round_trips_with_the_documented_loss(
    registry_client: SchemaRegistryClient, data: st.DataObject
) -> None:
    schema = data.draw(_table())
    before = data.draw(_row(schema, 42))
    after = data.draw(_row(schema, 42))
    _roundtrip(registry_client, schema, before, after)


def test_edge_values_round_trip(registry_client: SchemaRegistryClient) -> None:
    """Fixed edge values, so that every run covers them whatever hypothesis draws."""
    schema = TableSchema(
        "rt",
        "all_types",
        (
            column("id", "bigint", nullable=False),
            column("u64", "bigint", unsigned=True),
            column("u32", "int", unsigned=True),
            column("i8", "tinyint"),
            column("yr", "year"),
            column("t_neg", "time", fsp=6),
            column("t_long", "time", fsp=0),
            column("d_old", "date"),
            column("dt_old", "datetime", fsp=3),
            column("dt_frac", "datetime", fsp=6),
            column("ts", "timestamp", fsp=6),
            column("dbl", "double"),
            column("dbl_neg0", "double"),
            column("flt", "float"),
            column("dec", "decimal", length=20, scale=6),
            column("dec_neg", "decimal", length=4, scale=2),
            column("dec_big", "decimal", length=28, scale=0),
            column("vb", "varbinary", length=16),
            column("txt", "text"),
            column("e", "enum", elements=("a,b", "東京", "c")),
            column("s", "set", elements=("x", "y", "z")),
            column("b1", "bit", length=1),
            column("b64", "bit", length=64),
            column("j", "json"),
            *_defaulted_columns(),
        ),
        (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
        table_id=100,
        version=1000,
    )
    after = {
        "id": -(1 << 63),
        "u64": (1 << 64) - 1,
        "u32": (1 << 32) - 1,
        "i8": -128,
        "yr": 2155,
        "t_neg": "-838:59:59.000000",
        "t_long": "100:00:00",
        "d_old": date(18, 2, 3),
        "dt_old": datetime(99, 12, 31, 23, 59, 59, 100000),
        "dt_frac": datetime(2024, 1, 1, 0, 0, 0, 120000),
        "ts": datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC),
        "dbl": 1e-7,
        "dbl_neg0": -0.0,
        "flt": float32(1.5e21),
        "dec": Decimal("12345678901234.500000"),
        "dec_neg": Decimal("-12.30"),
        "dec_big": Decimal("-" + "9" * 28),
        "vb": b'\xff\xfe\x00<&>"\\\x7f\xc2\x85',
        "txt": 'Zürich 東京 🚀 <b>&"\\\n\t\x08\u2028',
        "e": "a,b",
        "s": "x,z",
        "b1": 1,
        "b64": (1 << 64) - 1,
        "j": '{"a": [1, null, "東"]}',
    }
    after |= {c.name: None for c in _defaulted_columns()}
    before = {**after, "u64": 1 << 63, "dbl": -0.0, "s": "", "e": "東京", "b1": 0, "b64": 0}
    _roundtrip(registry_client, schema, before, after)

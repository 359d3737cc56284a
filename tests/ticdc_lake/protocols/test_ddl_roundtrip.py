"""Every DDL kind: simulator encoder → our decoder (raw ``decode``, no schema facts), per protocol.

The cases and what TiCDC's DDL event holds for each are in :mod:`ddl_cases` (stated by hand from
tiflow). Each decoded DDL must carry exactly: the subtype, TiCDC's query (rebuilt for DROP TABLE and
for each half of a multi-table RENAME), the commit TSO, the table it leaves (new name for RENAME,
none for database DDL) and the table schemas the protocol itself carries — Simple ``tableSchema``/
``preTableSchema`` (for ERASE the dropped table comes back as the schema *before*), Debezium
``tableChanges`` (none for TRUNCATE, DROP TABLE and database DDL), nothing for Canal-JSON and Open.
A row encoded after ADD COLUMN must decode in the new schema. The avro protocol (registry) is in
``test_avro_ddl_roundtrip``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from tests.ticdc_lake.protocols.ddl_cases import (
    CASES,
    ORDERS_0,
    ORDERS_ADD,
    ORDERS_DROP,
    ORDERS_MODIFY,
    ROW_AFTER_ADD,
    ROW_AFTER_ADD_TEXT,
    DdlCase,
)
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.column_types import Value
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DdlChange, DmlOp, RowChange

ZONE = "UTC"
BUILD_MS = 1_700_000_000_000
PROTOCOLS = ("simple-json", "simple-avro", "debezium", "canal-json", "open")


def _simple_schema(schema: TableSchema | None) -> TableSchema | None:
    """A Simple ``tableSchema`` carries the whole schema; only the provenance differs."""
    return None if schema is None else replace(schema, source="simple-ddl", extra={})


def _debezium_schema(schema: TableSchema | None) -> tuple[Any, ...] | None:
    """What ``tableChanges`` tells: columns (name, type, nullability, default) and the primary key."""
    if schema is None:
        return None
    columns = tuple((c.name, c.mysql_type, c.nullable, c.default) for c in schema.columns)
    return (schema.database, schema.table, columns, tuple(i.columns for i in schema.indexes if i.primary))


def _summary(protocol: str, event: ChangeEvent) -> tuple[Any, ...]:
    if protocol.startswith("simple"):
        schemas: tuple[Any, ...] = (
            None if event.table_schema is None else replace(event.table_schema, extra={}),
            None if event.pre_table_schema is None else replace(event.pre_table_schema, extra={}),
            event.table_id,
        )
    elif protocol == "debezium":
        schemas = (_debezium_schema(event.table_schema), event.pre_table_schema, event.facts.renamed_from)
    else:  # canal-json, open, avro
        schemas = (event.table_schema, event.pre_table_schema, event.facts.ddl_action)
    return (event.kind, event.commit_ts, event.ddl_type, event.ddl_query, event.database, event.table, *schemas)


def _expected(protocol: str, case: DdlCase) -> tuple[Any, ...]:
    head = (EventKind.DDL, case.commit_ts, case.subtype, case.query, case.database, case.table)
    if protocol.startswith("simple"):
        if case.subtype == "ERASE":  # the dropped table is the schema before; nothing is left after it
            return (*head, None, _simple_schema(case.before), case.before.table_id if case.before else None)
        after = case.after
        return (*head, _simple_schema(after), _simple_schema(case.before), after.table_id if after else None)
    if protocol == "debezium":
        carried = case.subtype not in ("TRUNCATE", "ERASE", "QUERY")
        renamed = None
        if case.subtype == "RENAME" and case.before is not None:
            renamed = (case.before.database, case.before.table)
        return (*head, _debezium_schema(case.after) if carried else None, None, renamed)
    return (*head, None, None, case.action if protocol == "open" else None)


def _decode_all(protocol: str) -> tuple[list[ChangeEvent], list[ChangeEvent]]:
    """The decoded DDL events of every case, then a row INSERTed after ADD COLUMN, decoded."""
    encoder = encoder_for(protocol, ZONE)
    decoder = decoder_for(protocol, CodecOptions(server_time_zone=ZONE))
    schemas = MemorySchemaLookup()
    events: list[ChangeEvent] = []
    for offset, case in enumerate(CASES):
        message = encoder.encode_ddl(case.ddl, case.commit_ts, BUILD_MS)
        assert message is not None, case.name
        decoded = decoder.decode(RawMessage("shop", 0, offset, 0, message.key, message.value), schemas)
        assert len(decoded) == 1, case.name
        for announced in (decoded[0].table_schema, decoded[0].pre_table_schema):
            if announced is not None:
                schemas.add(announced)
        events.extend(decoded)
    insert = RowChange(DmlOp.INSERT, "shop", "orders", None, ROW_AFTER_ADD)
    row = encoder.encode_row(insert, ORDERS_ADD, CASES[2].commit_ts + 1, BUILD_MS)
    rows = decoder.decode(RawMessage("shop", 0, len(CASES), 0, row.key, row.value), schemas)
    return events, rows


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_ddl_kind_decodes_as_ticdc_sent_it(protocol: str) -> None:
    events, _ = _decode_all(protocol)
    assert [_summary(protocol, e) for e in events] == [_expected(protocol, case) for case in CASES]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ddl_partitions(protocol: str) -> None:
    """Canal-JSON sends DDL to partition 0 only; the others broadcast it (``getDDLDispatchRule``)."""
    assert encoder_for(protocol, ZONE).ddl_to_all_partitions is (protocol != "canal-json")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_row_after_add_column_decodes_in_the_new_schema(protocol: str) -> None:
    _, rows = _decode_all(protocol)
    assert [(r.kind, r.op, r.status, r.table_ref(), r.after) for r in rows] == [
        (EventKind.DML, Op.INSERT, EventStatus.READY, "shop.orders", ROW_AFTER_ADD_TEXT)
    ]
    if protocol.startswith("simple"):
        assert rows[0].schema_version == ORDERS_ADD.version


def test_two_table_rename_shares_one_commit_ts() -> None:
    first, second = (case for case in CASES if case.name.startswith("rename tables"))
    assert first.commit_ts == second.commit_ts
    assert first.ddl.sql == second.ddl.sql  # one statement; TiCDC gives each table its own query


@pytest.mark.parametrize(
    ("sql", "action"),
    [
        ("ALTER TABLE `shop`.`orders` ADD CONSTRAINT `fk` FOREIGN KEY (`id`) REFERENCES `p`(`id`)", 9),
        ("ALTER TABLE `shop`.`orders` DROP FOREIGN KEY `fk`", 10),
    ],
)
def test_debezium_sends_nothing_for_actions_it_does_not_support(sql: str, action: int) -> None:
    """``EncodeDDLEvent`` returns ErrDDLUnsupportType; the MQ DDL sink sends no message."""
    ddl = DdlChange("ALTER", sql, "shop", "orders", ORDERS_ADD, ORDERS_ADD)
    assert encoder_for("debezium", ZONE).encode_ddl(ddl, CASES[3].commit_ts, BUILD_MS) is None
    open_message = encoder_for("open", ZONE).encode_ddl(ddl, CASES[3].commit_ts, BUILD_MS)
    assert open_message is not None
    (event,) = decoder_for("open", CodecOptions()).decode(
        RawMessage("shop", 0, 0, 0, open_message.key, open_message.value), MemorySchemaLookup()
    )
    assert (event.ddl_type, event.facts.ddl_action) == ("CINDEX" if action == 9 else "DINDEX", action)


# ------------------------------------------------------------------------------------------ avro
#: (schema in effect, row, canonical text)
_AVRO_ROWS: tuple[tuple[TableSchema, dict[str, Value], dict[str, str | None]], ...] = (
    (ORDERS_0, {"id": 1, "name": "a", "note": "n"}, {"id": "1", "name": "a", "note": "n"}),
    (ORDERS_ADD, ROW_AFTER_ADD, ROW_AFTER_ADD_TEXT),
    (ORDERS_DROP, {"id": 3, "name": None, "qty": 7}, {"id": "3", "name": None, "qty": "7"}),
    (ORDERS_MODIFY, {"id": 4, "title": "t", "qty": 1 << 40}, {"id": "4", "title": "t", "qty": str(1 << 40)}),
)


def test_avro_ddl_messages_only_with_the_watermark_option(schema_registry_url: str) -> None:
    """With ``enable-tidb-extension`` + ``avro-enable-watermark`` (test-only in TiCDC) a DDL is the
    ``0x01`` JSON event, decoded like Open's; without them TiCDC sends no DDL at all."""

    def never(subject: str, text: str) -> int:
        raise AssertionError("a DDL registers no schema")

    encoder = encoder_for("avro", ZONE, register=never, topic="shop")
    plain = encoder_for("avro", ZONE, register=never, topic="shop", enable_tidb_extension=False)
    decoder = decoder_for("avro", CodecOptions(server_time_zone=ZONE))
    decoded = []
    for offset, case in enumerate(CASES):
        assert plain.encode_ddl(case.ddl, case.commit_ts, BUILD_MS) is None
        message = encoder.encode_ddl(case.ddl, case.commit_ts, BUILD_MS)
        assert message is not None
        decoded += decoder.decode(RawMessage("shop", 0, offset, 0, message.key, message.value), MemorySchemaLookup())
    assert [_summary("avro", e) for e in decoded] == [
        (EventKind.DDL, c.commit_ts, c.subtype, c.query, c.database, c.table, None, None, c.action) for c in CASES
    ]
    assert encoder.ddl_to_all_partitions is True


def test_avro_schema_change_is_a_new_writer_schema_version(schema_registry_url: str) -> None:
    """Without DDL messages, a row written after ADD/DROP/MODIFY COLUMN is the only signal: TiCDC
    registers the changed value schema again under the same subject (a new version and id), and
    the row decodes with exactly the new columns."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": schema_registry_url})
    topic = f"ddl.avro_{uuid.uuid4().hex[:12]}"
    subject = topic.replace(".", "_")
    ids: list[tuple[str, int]] = []

    def register(name: str, text: str) -> int:
        schema_id = client.register_schema(name, Schema(text, "AVRO"))
        ids.append((name, schema_id))
        return schema_id

    encoder = encoder_for("avro", ZONE, register=register, topic=topic, enable_tidb_extension=False)
    messages = []
    for n, (schema, row, _) in enumerate(_AVRO_ROWS, start=1):
        change = RowChange(DmlOp.INSERT, "shop", "orders", None, row)
        messages.append(encoder.encode_row(change, schema, CASES[1].commit_ts + n, BUILD_MS))
    value_ids = [schema_id for name, schema_id in ids if name == f"{subject}-value"]
    key_ids = {schema_id for name, schema_id in ids if name == f"{subject}-key"}
    assert len(value_ids) == len(_AVRO_ROWS) == len(set(value_ids))  # one new version per schema change
    assert len(key_ids) == 1  # the key (id) did not change
    versions = client.get_versions(f"{subject}-value")
    assert len(versions) == len(_AVRO_ROWS)

    writer_schemas = {i: client.get_schema(i).schema_str or "" for i in {*value_ids, *key_ids}}
    decoder = decoder_for(
        "avro", CodecOptions(server_time_zone=ZONE, enable_tidb_extension=False), DecodeResources(writer_schemas)
    )
    rows = [
        event
        for offset, message in enumerate(messages)
        for event in decoder.decode(RawMessage(topic, 0, offset, 0, message.key, message.value), MemorySchemaLookup())
    ]
    assert [(r.op, r.table_ref(), r.after, r.facts.value_schema_id) for r in rows] == [
        (Op.INSERT, "shop.orders", text, value_id) for (_, _, text), value_id in zip(_AVRO_ROWS, value_ids, strict=True)
    ]
    assert [sorted(r.column_types or {}) for r in rows] == [sorted(c.name for c in s.columns) for s, _, _ in _AVRO_ROWS]
    assert (rows[3].column_types or {})["qty"] == "BIGINT"

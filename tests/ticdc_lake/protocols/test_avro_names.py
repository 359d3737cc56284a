"""Avro rows and DDL name one upstream table alike (``avro_names``).

TiCDC's avro encoder sanitizes the record (table), namespace (database) and field (column) names
of rows, while its DDL messages keep the upstream names. Rows are encoded here by the simulator's
encoder (which sanitizes like TiCDC), with an in-memory registry; the DDL is folded with
``prepared_lookup`` as the decode stage's driver does, then the rows are read against it.
"""

from __future__ import annotations

from typing import Any

import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import ChangeEvent, EventKind, RawMessage
from ticdc_lake.protocols.avro_names import sanitize_name
from ticdc_lake.protocols.avro_versions import registry_versions
from ticdc_lake.protocols.base import MessageLocation
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import prepared_lookup
from ticdc_lake.schema.avro_registry import WriterSchemaUse
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_sim.avro_confluent_encoder import sanitize_name as encoder_sanitize
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DdlChange, DmlOp, RowChange

TS = 450_000_000_000_000_000


def test_sanitize_name_like_ticdc() -> None:
    """``common.SanitizeName`` and its test (``avro_test.go``), and names the issue names."""
    assert sanitize_name("normalColumnName123") == "normalColumnName123"
    assert sanitize_name("1ColumnNameStartWithNumber") == "_1ColumnNameStartWithNumber"
    assert sanitize_name("A.B") == "A_B"
    assert sanitize_name("columnNameWith中文") == "columnNameWith__"
    names = ("we ird", "1st-table", "数据", "-x", "_9", "é")
    assert [sanitize_name(n) for n in names] == ["we_ird", "_1st_table", "__", "_x", "_9", "_"]
    assert [encoder_sanitize(n) for n in names] == [sanitize_name(n) for n in names]  # the simulator writes them so


def _table(database: str, table: str, *columns: str) -> TableSchema:
    cols = (
        ColumnSchema(columns[0], "int", nullable=False),
        *(ColumnSchema(c, "varchar", length=20) for c in columns[1:]),
    )
    return TableSchema(database, table, cols, (IndexSchema("PRIMARY", (columns[0],), primary=True),), version=TS)


def _create_sql(schema: TableSchema) -> str:
    cols = ", ".join(
        f"`{c.name}` int NOT NULL" if i == 0 else f"`{c.name}` varchar(20)" for i, c in enumerate(schema.columns)
    )
    return f"CREATE TABLE `{schema.database}`.`{schema.table}` ({cols}, PRIMARY KEY (`{schema.columns[0].name}`))"


def _stream(*schemas: TableSchema) -> tuple[list[RawMessage], dict[int, str]]:
    """Each table's CREATE TABLE DDL, then one INSERT per table."""
    registry: dict[int, str] = {}

    def register(subject: str, text: str) -> int:
        for schema_id, known in registry.items():
            if known == text:
                return schema_id
        registry[len(registry) + 1] = text
        return len(registry)

    encoder = encoder_for("avro", "UTC", register=register, topic="t")
    encoded = []
    for n, schema in enumerate(schemas):
        ddl = encoder.encode_ddl(
            DdlChange("CREATE", _create_sql(schema), schema.database, schema.table, schema), TS + n, 1
        )
        assert ddl is not None
        encoded.append(ddl)
    for n, schema in enumerate(schemas):
        row: dict[str, Any] = {c.name: (7 if i == 0 else f"v{i}") for i, c in enumerate(schema.columns)}
        change = RowChange(DmlOp.INSERT, schema.database, schema.table, None, row)
        encoded.append(encoder.encode_row(change, schema, TS + 100 + n, 1))
    return [RawMessage("t", 0, i, 0, m.key, m.value) for i, m in enumerate(encoded)], registry


def _read(messages: list[RawMessage], registry: dict[int, str]) -> list[ChangeEvent]:
    decoder = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    lookup = prepared_lookup(decoder, messages)
    return [e for m in messages for e in decoder.read(m, lookup) if e.kind is EventKind.DML]


def test_rows_of_sanitized_names_belong_to_the_table_their_ddl_names() -> None:
    tables = (
        _table("shop db", "we ird", "id", "first name", "1st-col"),
        _table("shop db", "1st-table", "id", "数据"),
        _table("shop db", "plain", "id", "note"),
    )
    messages, registry = _stream(*tables)
    raw = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    first_row = raw.decode(messages[3], prepared_lookup(raw, []))[0]
    assert (first_row.database, first_row.table) == ("shop_db", "we_ird")  # what the record says
    assert set(first_row.after or {}) == {"id", "first_name", "_1st_col"}

    rows = _read(messages, registry)
    assert [(r.database, r.table, r.after, r.facts.handle_key, r.status.value) for r in rows] == [
        ("shop db", "we ird", {"id": "7", "first name": "v1", "1st-col": "v2"}, ("id",), "READY"),
        ("shop db", "1st-table", {"id": "7", "数据": "v1"}, ("id",), "READY"),
        ("shop db", "plain", {"id": "7", "note": "v1"}, ("id",), "READY"),
    ]
    assert [r.schema_version for r in rows] == [TS, TS + 1, TS + 2]
    assert set(rows[0].column_types or {}) == {"id", "first name", "1st-col"}


def test_two_upstream_tables_with_one_sanitized_name_are_refused_naming_both() -> None:
    messages, registry = _stream(_table("d", "a b", "id"), _table("d", "a-b", "id"))
    decoder = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    lookup = prepared_lookup(decoder, messages)
    with pytest.raises(DecodeError) as info:
        decoder.read(messages[2], lookup)
    assert info.value.reason == (
        f"the row of d.a_b at commit ts {TS + 100} names table d.a_b, which TiCDC's avro encoder writes for both "
        "upstream tables d.a b and d.a-b (it replaces characters outside [A-Za-z0-9_]); the row cannot be assigned "
        "to one of them. Rename one upstream table, or exclude one of them from the changefeed"
    )


def test_registry_gives_no_version_to_a_table_whose_ddl_names_it_upstream() -> None:
    messages, registry = _stream(_table("shop db", "we ird", "id"))
    decoder = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    lookup = prepared_lookup(decoder, messages)
    use = WriterSchemaUse(2, "shop_db", "we_ird", TS + 100, ("id",))
    assert registry_versions(lookup, [use], DecodeResources(writer_schemas=registry), "UTC") == []
    assert sorted({(s.database, s.table) for s in lookup.as_mapping().values()}) == [("shop db", "we ird")]


def test_a_rejected_row_is_located_at_its_upstream_table() -> None:
    """Quarantine holds the table the row belongs to: the upstream one, or none when two match."""
    messages, registry = _stream(_table("shop db", "we ird", "id"))
    decoder = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    lookup = prepared_lookup(decoder, messages)
    row = messages[1]
    cut = RawMessage(row.topic, row.partition, row.offset, 0, row.key, (row.value or b"")[:-1])
    with pytest.raises(DecodeError):
        decoder.read(cut, lookup)
    assert decoder.locate(cut) == MessageLocation("shop db", "we ird")
    messages, registry = _stream(_table("d", "a b", "id"), _table("d", "a-b", "id"))
    decoder = decoder_for("avro", CodecOptions(), DecodeResources(writer_schemas=registry))
    with pytest.raises(DecodeError):
        decoder.read(messages[2], prepared_lookup(decoder, messages))
    assert decoder.locate(messages[2]) is None

"""Avro table versions from the registry's value writer schemas, at the first commit TSO of their rows."""

from __future__ import annotations

import json

from tests.ticdc_lake.protocols.test_avro_confluent import (
    COMMIT_TS,
    EXTENSION,
    KEY_ID,
    KEY_SCHEMA,
    VALUE_FIELDS,
    VALUE_ID,
    VALUE_SCHEMA,
    column_type,
    decoder,
    extension,
    field,
    framed,
    record,
)
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.avro_versions import registry_versions
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import scanned_facts
from ticdc_lake.schema.avro_registry import REGISTRY_SOURCE, WRITER_SCHEMA_ID, WriterSchemaUse, split_allowed
from ticdc_lake.schema.inference import MISSING_FACTS
from ticdc_lake.schema.lookup import MemorySchemaLookup

NEW_ID = VALUE_ID + 1
NEW_SCHEMA = record([*VALUE_FIELDS, field("added", column_type("TEXT", "string"), nullable="null-first"), *EXTENSION])


def _row(schema_id: int, schema: dict, row_id: int, ts: int, offset: int, partition: int = 1) -> RawMessage:  # type: ignore[type-arg]
    datum = {f["name"]: None for f in schema["fields"]} | {"id": row_id, "t_varchar": "x", "t_enum": "a"}
    datum |= extension(commit_ts=ts)
    if "added" in datum:
        datum["added"] = "new"
    key = framed(KEY_ID, KEY_SCHEMA, {"id": row_id})
    return RawMessage("shop.all", partition, offset, 0, key, framed(schema_id, schema, datum))


def test_allowed_members_unescape_commas() -> None:
    assert split_allowed("a,b\\,c,") == ("a", "b,c", "")


def test_each_value_writer_schema_becomes_a_version_at_its_first_commit_ts() -> None:
    schemas = {KEY_ID: KEY_SCHEMA, VALUE_ID: VALUE_SCHEMA, NEW_ID: NEW_SCHEMA}
    dec = decoder(schemas)
    partition_1 = [
        _row(VALUE_ID, VALUE_SCHEMA, 1, COMMIT_TS + 10, 0),
        _row(VALUE_ID, VALUE_SCHEMA, 2, COMMIT_TS + 20, 1),
        _row(NEW_ID, NEW_SCHEMA, 3, COMMIT_TS + 40, 2),
    ]
    partition_2 = [
        _row(VALUE_ID, VALUE_SCHEMA, 4, COMMIT_TS + 5, 0, 2),
        _row(NEW_ID, NEW_SCHEMA, 5, COMMIT_TS + 30, 1, 2),
    ]
    uses = [f for msgs in (partition_1, partition_2) for f in scanned_facts(dec, msgs)]
    assert uses == [
        WriterSchemaUse(VALUE_ID, "shop", "all_types", COMMIT_TS + 10, ("id",)),
        WriterSchemaUse(NEW_ID, "shop", "all_types", COMMIT_TS + 40, ("id",)),
        WriterSchemaUse(VALUE_ID, "shop", "all_types", COMMIT_TS + 5, ("id",)),
        WriterSchemaUse(NEW_ID, "shop", "all_types", COMMIT_TS + 30, ("id",)),
    ]
    assert all(WriterSchemaUse.from_json(u.to_json()) == u for u in uses if isinstance(u, WriterSchemaUse))
    lookup = MemorySchemaLookup()
    texts = {i: json.dumps(s) for i, s in schemas.items()}
    found = registry_versions(lookup, uses, DecodeResources(texts), "UTC")  # type: ignore[arg-type]
    assert [(s.version, s.extra[WRITER_SCHEMA_ID], s.source) for s in found] == [
        (COMMIT_TS + 5, VALUE_ID, REGISTRY_SOURCE),
        (COMMIT_TS + 30, NEW_ID, REGISTRY_SOURCE),
    ]
    first, second = found
    assert [c.name for c in second.columns] == [c.name for c in first.columns] + ["added"]
    types = {c.name: c.type_text() for c in first.columns}
    assert (types["id"], types["t_int_u"], types["t_dec"], types["t_bit"]) == (
        "bigint",
        "int unsigned",
        "decimal(12,2)",
        "bit(12)",
    )
    assert first.column("t_enum").elements == ("a", "b,c")  # type: ignore[union-attr]
    assert (first.column("id").nullable, first.column("t_tiny").nullable) == (False, True)  # type: ignore[union-attr]
    assert first.handle_key() == ("id",)
    assert len(first.extra[MISSING_FACTS]) == 1
    assert lookup.latest("shop", "all_types", COMMIT_TS + 29) == first
    assert registry_versions(lookup, uses, DecodeResources(texts), "UTC") == []  # type: ignore[arg-type]  # known


def test_rows_without_a_commit_ts_give_no_version() -> None:
    use = WriterSchemaUse(VALUE_ID, "shop", "all_types", 0, ("id",))
    texts = {VALUE_ID: json.dumps(VALUE_SCHEMA)}
    assert registry_versions(MemorySchemaLookup(), [use], DecodeResources(texts), "UTC") == []


def test_tables_with_ddl_versions_get_no_registry_version() -> None:
    from dataclasses import replace

    from ticdc_lake.schema.inference import schema_from_types

    ddl_version = replace(schema_from_types("shop", "all_types", {"id": "bigint"}, ("id",)), source="avro-ddl")
    use = WriterSchemaUse(VALUE_ID, "shop", "all_types", COMMIT_TS, ("id",))
    texts = {VALUE_ID: json.dumps(VALUE_SCHEMA)}
    assert registry_versions(MemorySchemaLookup([ddl_version]), [use], DecodeResources(texts), "UTC") == []

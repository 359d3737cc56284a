"""Schema versions of rows without commit TSO, by position (``schema.offset_versions``)."""

from __future__ import annotations

import json

from tests.ticdc_lake.protocols.test_avro_confluent import KEY_FIELDS, KEY_ID, KEY_SCHEMA, column_type, field, framed
from tests.ticdc_lake.protocols.test_avro_confluent import decoder as avro_decoder
from tests.ticdc_lake.protocols.test_avro_confluent import record as avro_record
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.avro_versions import registry_versions
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.protocols.schema_scan import scanned_facts
from ticdc_lake.schema.avro_registry import WriterSchemaUse
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.offset_versions import offset_versions

OLD_ID, NEW_ID = 30, 41
OLD = avro_record([*KEY_FIELDS, field("v", column_type("TEXT", "string"))])
NEW = avro_record(
    [*KEY_FIELDS, field("v", column_type("TEXT", "string")), field("note", column_type("TEXT", "string"))]
)
SCHEMAS = {KEY_ID: KEY_SCHEMA, OLD_ID: OLD, NEW_ID: NEW}


def _avro(partition: int, offset: int, row_id: int, schema_id: int | None) -> RawMessage:
    key = framed(KEY_ID, KEY_SCHEMA, {"id": row_id})
    if schema_id is None:
        return RawMessage("t", partition, offset, 0, key, None)  # a tombstone delete
    datum = {"id": row_id, "v": "x"} | ({"note": "n"} if schema_id == NEW_ID else {})
    return RawMessage("t", partition, offset, 0, key, framed(schema_id, SCHEMAS[schema_id], datum))


def test_avro_rows_bind_to_their_writer_schema_and_tombstones_to_the_partitions_change_points() -> None:
    dec = avro_decoder(SCHEMAS)
    p0 = [
        _avro(0, 0, 1, None),  # before any row of the table in this run: the next change point's version
        _avro(0, 1, 1, OLD_ID),
        _avro(0, 2, 2, None),
        _avro(0, 3, 3, NEW_ID),
        _avro(0, 4, 3, None),
        _avro(0, 5, 1, OLD_ID),  # a replayed copy of offset 1: its own writer schema
        _avro(0, 6, 2, None),
    ]
    p1 = [_avro(1, 0, 9, None)]  # no row of the table in this run's part of the partition: the newest
    uses = [f for part in (p0, p1) for f in scanned_facts(dec, part) if isinstance(f, WriterSchemaUse)]
    assert [(u.schema_id, u.partition, u.offset, u.commit_ts) for u in uses] == [
        (OLD_ID, 0, 1, 0),
        (NEW_ID, 0, 3, 0),
        (OLD_ID, 0, 5, 0),
    ]
    lookup = MemorySchemaLookup()
    texts = {i: json.dumps(s) for i, s in SCHEMAS.items()}
    found = registry_versions(lookup, uses, DecodeResources(texts), "UTC", offset_ordered=True)
    assert [(s.version, [c.name for c in s.columns]) for s in found] == [
        (OLD_ID, ["id", "v"]),
        (NEW_ID, ["id", "v", "note"]),
    ]
    assert registry_versions(MemorySchemaLookup(), uses, DecodeResources(texts), "UTC") == []  # TSO order: none
    rule = offset_versions([], list(lookup.as_mapping().values()), uses)
    lookup.offset_versions = rule
    bound = [(e.position.partition, e.position.offset, e.schema_version) for m in p0 + p1 for e in dec.read(m, lookup)]
    # Offset 5 is a replayed copy of offset 1 written after the change: it binds to the newer version,
    # so versions only move forward along the partition; partition 1 has only a tombstone: the newest.
    old, new = [(0, o, OLD_ID) for o in range(3)], [(0, o, NEW_ID) for o in range(3, 7)]
    assert bound == [*old, *new, (1, 0, NEW_ID)]
    # The next run: the floor is the newest version recorded, so a re-sent old row does not go back.
    later = offset_versions(found, found, [WriterSchemaUse(OLD_ID, "shop", "all_types", 0, ("id",), "t", 0, 9)])
    lookup.offset_versions = later
    assert [e.schema_version for e in dec.read(_avro(0, 9, 1, OLD_ID), lookup)] == [NEW_ID]
    assert [e.schema_version for e in dec.read(_avro(2, 0, 1, None), lookup)] == [NEW_ID]


def test_without_the_rule_rows_without_commit_ts_keep_the_version_at_tso_0() -> None:
    dec = avro_decoder(SCHEMAS)
    lookup = MemorySchemaLookup()
    lookup.infer_missing = True
    (event,) = dec.read(_avro(0, 0, 1, NEW_ID), lookup)
    assert event.schema_version == 0  # inferred from the row: what decode did before the rule

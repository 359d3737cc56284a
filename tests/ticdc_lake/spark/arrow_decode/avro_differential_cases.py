"""Messages for ``test_avro_differential``: the simulator's avro encoder (Confluent framing) over a table
of every column type under each option set, two versions of a table without the TiDB extension bound
by offset, names the DDL spells otherwise, DDL and watermarks, and mutations of a valid message.

What the vector path must take, stated from the documented rule (``avro_batch``), not from its code:

* a row (key and value framed) of a writer schema the resources hold, with the TiDB extension: an
  INSERT or UPDATE (``_tidb_op`` c/u, physical time consistent, commit TSO not 0, not marked
  corrupted where it has row checksums) that binds to one version the lookup holds with every
  column of the row; without the extension: every row, bound by the offset rule or
  ``latest(db, table, 0)``;
* a tombstone (key, null value): likewise, bound by the offset rule or ``latest(db, table, 0)``;
* a row or tombstone no version binds is taken unbound, but not where the lookup infers a schema
  for it (``infer_missing`` and no version of its table known);
* but never a row holding a value the twins refuse: a TIMESTAMP whose server wall time is 2038 or
  later (the zone has daylight saving rules), a precise DECIMAL of more than 31 bytes, NaN or an
  infinity; nor DDL, watermarks, or anything the Python decoder quarantines.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal, localcontext
from typing import Any
from zoneinfo import ZoneInfo

import fastavro

from tests.ticdc_lake.spark.arrow_decode.debezium_differential_cases import Case, Pair
from tests.ticdc_lake.spark.type_cases import SERVER_ZONE, wide_schema
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.offset_versions import OffsetVersions
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.avro_confluent_encoder import AvroConfluentEncoder, signed_bytes, unscaled_decimal
from ticdc_sim.catalog import column
from ticdc_sim.column_types import Value
from ticdc_sim.model import DdlChange, DmlOp, RowChange

ZONE = SERVER_ZONE
DB = "diffdb"
EVERY_TYPE_VERSION = 1_000
_RULES_END = datetime(2038, 1, 1)
_MAX_DECIMAL_BYTES = 31


@dataclass
class Registry:
    """A schema registry in memory: one id per distinct schema text, as a registry gives them."""

    texts: dict[int, str] = field(default_factory=dict)

    def register(self, subject: str, text: str) -> int:
        for schema_id, known in self.texts.items():
            if known == text:
                return schema_id
        schema_id = 100 + len(self.texts)
        self.texts[schema_id] = text
        return schema_id

    def resources(self) -> DecodeResources:
        return DecodeResources(dict(self.texts))

    def id_of(self, text: str) -> int:
        return next(i for i, known in self.texts.items() if known == text)


def encoder(registry: Registry, **options: Any) -> AvroConfluentEncoder:
    return AvroConfluentEncoder(ZONE, register=registry.register, topic="diff", **options)


def encode(enc: AvroConfluentEncoder, change: RowChange, schema: TableSchema, commit_ts: int) -> Pair:
    with localcontext() as context:
        context.prec = 100  # DECIMAL(65,30) has 65 digits
        message = enc.encode_row(change, schema, commit_ts, commit_ts)
    return message.key, message.value


def every_type_schema() -> TableSchema:
    return replace(wide_schema(DB), version=EVERY_TYPE_VERSION, table_id=11)


def twins_take(schema: TableSchema, row: Mapping[str, Any], precise: bool) -> bool:
    """The values of ``row`` that the twins refuse (module docstring) are absent."""
    zone = ZoneInfo(ZONE)
    for col in schema.columns:
        value = row.get(col.name)
        if value is None:
            continue
        if col.mysql_type == "timestamp" and value.astimezone(zone).replace(tzinfo=None) >= _RULES_END:
            return False
        if col.mysql_type == "decimal" and precise:
            with localcontext() as context:
                context.prec = 100
                unscaled = unscaled_decimal(Decimal(value), col.scale or 0)
            if len(signed_bytes(unscaled)) > _MAX_DECIMAL_BYTES:
                return False
        if col.mysql_type in ("float", "double") and not math.isfinite(value):
            return False
    return True


def dml_case(
    name: str,
    enc: AvroConfluentEncoder,
    schema: TableSchema,
    rows: Sequence[Mapping[str, Any]],
    *,
    commit_ts: int,
    take: Callable[[DmlOp, Mapping[str, Any]], bool],
) -> Case:
    """Each row inserted, updated and deleted (one message each); ``take(op, row)`` says which the rule takes."""
    case = Case(name)
    for n, row in enumerate(rows):
        for op in (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE):
            before = row if op is not DmlOp.INSERT else None
            after = row if op is not DmlOp.DELETE else None
            change = RowChange(op, schema.database, schema.table, before=before, after=after)
            case.add(encode(enc, change, schema, commit_ts + n), take(op, row))
    return case


# ----------------------------------------------------------------------------- two versions by offset
def evolving_schemas() -> tuple[TableSchema, TableSchema]:
    """Table ``evo`` version 7000 and version 8000, which adds the DATE column ``c``."""
    columns = (column("id", "bigint", nullable=False), column("a", "int"), column("b", "varchar", length=20))
    v1 = TableSchema(DB, "evo", columns, _primary("id"), version=7_000, source="registry")
    return v1, replace(v1, columns=(*columns, column("c", "date")), version=8_000)


def _primary(*names: str) -> tuple[IndexSchema, ...]:
    return (IndexSchema("PRIMARY", names, primary=True, unique=True),)


def evolving_rows(n: int, with_c: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"id": n, "a": n * 7 - 50, "b": f"row {n} é"}
    if with_c:
        row["c"] = datetime(2024, 1, 1 + n % 28).date()
    return row


def evolving_case(enc: AvroConfluentEncoder) -> Case:
    """Rows of both versions and their tombstones (all taken: the offset rule gives each a version)."""
    v1, v2 = evolving_schemas()
    case = Case("evolving")
    for n in range(30):
        schema = v1 if n % 5 < 2 else v2
        row = evolving_rows(n, with_c=schema is v2)
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        change = RowChange(
            op, DB, "evo", before=row if op is not DmlOp.INSERT else None, after=None if op is DmlOp.DELETE else row
        )
        case.add(encode(enc, change, schema, 0), True)
    return case


def offset_rule(
    registry: Registry, writers: Sequence[tuple[AvroConfluentEncoder, TableSchema]], topic: str, partitions: int
) -> OffsetVersions:
    """The offset rule the decode driver would give: the value writer ids of ``writers`` (``evo``'s two
    versions among them) → their versions, each table's newest version, ``evo``'s floor (its first
    version) and its change points on each partition but partition 1."""
    rule = OffsetVersions()
    for enc, schema in writers:
        text = enc.schema_text(schema, list(schema.columns), value=True)
        version = schema.version or 0
        rule.writer[(schema.database, schema.table, registry.id_of(text))] = version
        name = (schema.database, schema.table)
        rule.newest[name] = max(rule.newest.get(name, version), version)
    rule.floor[(DB, "evo")] = evolving_schemas()[0].version or 0
    for partition in range(partitions):
        if partition != 1:
            rule.points[(DB, "evo", topic, partition)] = [(3 + partition, 7_000), (9 + partition, 8_000)]
    return rule


# ----------------------------------------------------------------------------- names the DDL spells
def renamed_schemas() -> tuple[TableSchema, TableSchema]:
    """Upstream table ``t-x`` (sent as ``t_x``) with column ``c d`` (sent as ``c_d``), as the folded DDL
    names it (source ``avro-ddl``), and two upstream tables that both sanitise to ``a_b``."""
    columns = (column("id", "int", nullable=False), column("c d", "varchar", length=10))
    upstream = TableSchema(DB, "t-x", columns, _primary("id"), version=500, source="avro-ddl")
    return upstream, replace(upstream, table="a b")


def renamed_case(enc: AvroConfluentEncoder) -> Case:
    """Rows of ``t-x`` renamed back (taken), rows of ``a_b`` (two upstream tables: quarantined), and
    the DDL and watermark messages (never taken)."""
    upstream, ambiguous = renamed_schemas()
    case = Case("renamed")
    for n in range(6):
        for schema, take in ((upstream, True), (ambiguous, False)):
            row: dict[str, Value] = {"id": n, "c d": f"v{n}"}
            change = RowChange(DmlOp.INSERT if n % 2 else DmlOp.UPDATE, DB, schema.table, after=row)
            case.add(encode(enc, change, schema, 600 + n), take)
    ddl = enc.encode_ddl(
        DdlChange("ALTER", "ALTER TABLE diffdb.`t-x` ADD COLUMN e INT", DB, "t-x", upstream, upstream), 550, 1
    )
    assert ddl is not None
    case.add((ddl.key, ddl.value), False)
    watermark = enc.encode_watermark(900, 900)
    case.add((watermark.key, watermark.value), False)
    return case


def ambiguous_twin() -> TableSchema:
    """The second upstream table that sanitises to ``a_b``."""
    return replace(renamed_schemas()[1], table="a-b")


# ----------------------------------------------------------------------------- mutations
def plain_schema() -> TableSchema:
    """A small table of the usual types: the template of the mutations."""
    columns = (
        column("id", "bigint", nullable=False),
        column("n", "int"),
        column("s", "varchar", length=40),
        column("d", "double"),
        column("m", "decimal", length=10, scale=2),
        column("bl", "blob"),
    )
    return TableSchema(DB, "plain", columns, _primary("id"), version=6_000, source="registry")


def plain_row(n: int) -> dict[str, Any]:
    return {"id": n, "n": n * 3 - 7, "s": f"plain {n} ü", "d": n / 8, "m": Decimal(n) / 4, "bl": bytes([n, 0, 255])}


def plain_pair(enc: AvroConfluentEncoder, n: int, op: DmlOp = DmlOp.INSERT, commit_ts: int = 6_500) -> Pair:
    row = plain_row(n)
    before = row if op is not DmlOp.INSERT else None
    change = RowChange(op, DB, "plain", before=before, after=None if op is DmlOp.DELETE else row)
    return encode(enc, change, plain_schema(), commit_ts)


def frame(schema_id: int, document: Any, record: Mapping[str, Any]) -> bytes:
    """A Confluent-framed Avro record written with ``document`` (logical types dropped, as TiCDC's bytes)."""
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(_plain_types(document)), dict(record))
    return b"\x00" + schema_id.to_bytes(4, "big") + buffer.getvalue()


def _plain_types(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _plain_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_plain_types(v) for v in node]
    return node


def _retyped(document: dict[str, Any], name: str, avro_type: str) -> dict[str, Any]:
    """``document`` with field ``name``'s Avro type (or its union's non-null branch) set to ``avro_type``."""
    fields = []
    for f in document["fields"]:
        if f["name"] == name:
            kind = f["type"]
            if isinstance(kind, list):
                kind = [b if b == "null" else {**b, "type": avro_type} for b in kind]
            else:
                kind = {**kind, "type": avro_type} if isinstance(kind, dict) else avro_type
            f = {**f, "type": kind}
        fields.append(f)
    return {**document, "fields": fields}


def mutations(registry: Registry, enc: AvroConfluentEncoder) -> list[tuple[str, Pair, bool]]:
    """(name, message, taken): malformed or unusual variants of a valid plain INSERT (row 1)."""
    schema = plain_schema()
    key, value = plain_pair(enc, 1)
    assert key is not None
    assert value is not None
    value_text = enc.schema_text(schema, list(schema.columns), value=True)
    value_id = registry.id_of(value_text)
    document = json.loads(value_text)
    good: dict[str, Any] = {
        "id": 1,
        "n": -4,
        "s": "plain 1 ü",
        "d": 0.125,
        "m": signed_bytes(25),
        "bl": b"\x01\x00\xff",
        "_tidb_op": "c",
        "_tidb_commit_ts": 6_500,
        "_tidb_commit_physical_time": 6_500 >> 18,
    }

    def written(changes: Mapping[str, Any], doc: dict[str, Any] = document, schema_id: int = value_id) -> bytes:
        return frame(schema_id, doc, {**good, **changes})

    other_key, _ = plain_pair(enc, 2)
    checksum_doc = {
        **document,
        "fields": [
            *document["fields"],
            {"name": "_tidb_row_level_checksum", "type": "string"},
            {"name": "_tidb_corrupted", "type": "boolean"},
            {"name": "_tidb_checksum_version", "type": "int"},
        ],
    }
    checksum_id = registry.register("diff-value", json.dumps(checksum_doc))
    odd_checksum_doc = _retyped(checksum_doc, "_tidb_corrupted", "string")
    odd_checksum_id = registry.register("diff-value", json.dumps(odd_checksum_doc))
    bad_text_id = registry.register("diff-value", json.dumps({**document, "namespace": "nodatabase"}))
    long_n_doc = _retyped(document, "n", "long")
    bytes_s_doc = _retyped(document, "s", "bytes")
    checksum = {"_tidb_row_level_checksum": "123", "_tidb_checksum_version": 1}
    physical = 6_500 >> 18
    high_ts = (1 << 64) - (1 << 62)
    past_half = {"_tidb_commit_ts": high_ts - (1 << 64), "_tidb_commit_physical_time": high_ts >> 18}
    return [
        ("as sent", (key, value), True),
        ("value truncated by one byte", (key, value[:-1]), False),
        ("value truncated to its header", (key, value[:5]), False),
        ("value truncated inside the header", (key, value[:3]), False),
        ("a byte after the value record", (key, value + b"\x00"), False),
        ("key truncated", (key[:-1], value), False),
        ("a byte after the key record", (key + b"\x00", value), False),
        ("no key", (None, value), False),
        ("key of another row", (other_key, value), False),
        ("AWS Glue header", (key, b"\x03" + value[1:]), False),
        ("another first byte", (key, b"\x07" + value[1:]), False),
        ("unknown value schema id", (key, b"\x00\x00\x00\x7f\xff" + value[5:]), False),
        ("unknown key schema id", (b"\x00\x00\x00\x7f\xff" + key[5:], value), False),
        ("value schema id of the key", (key, key[:5] + value[5:]), False),
        ("schema that is no TiCDC record", (key, b"\x00" + bad_text_id.to_bytes(4, "big") + value[5:]), False),
        ("union branch 2", (key, value[:6] + b"\x04" + value[7:]), False),
        ("union branch -1 (fastavro reads the last branch)", (key, value[:6] + b"\x01" + value[7:]), False),
        ("op d", (key, written({"_tidb_op": "d"})), False),
        ("op empty", (key, written({"_tidb_op": ""})), False),
        ("op u", (key, written({"_tidb_op": "u"})), True),
        ("physical time off by one", (key, written({"_tidb_commit_physical_time": physical + 1})), False),
        ("negative physical time", (key, written({"_tidb_commit_physical_time": -1})), False),
        ("commit ts 0", (key, written({"_tidb_commit_ts": 0, "_tidb_commit_physical_time": 0})), False),
        ("commit ts past 2**63 (a negative long)", (key, written(past_half)), True),
        ("int beyond int32", (key, written({"n": 1 << 40}, long_n_doc)), False),
        ("int at int32 max", (key, written({"n": (1 << 31) - 1}, long_n_doc)), True),
        ("string not UTF-8", (key, written({"s": b"\xff\xfe"}, bytes_s_doc)), False),
        ("string with a surrogate", (key, written({"s": b"\xed\xa0\x80"}, bytes_s_doc)), False),
        ("empty decimal", (key, written({"m": b""})), False),
        ("decimal of 40 bytes", (key, written({"m": signed_bytes(1 << 310)})), False),
        ("double NaN", (key, written({"d": math.nan})), False),
        ("double infinity", (key, written({"d": math.inf})), False),
        ("double with an exponent", (key, written({"d": 1.5e-300})), True),
        ("null in the nullable columns", (key, written({"n": None, "s": None, "d": None, "m": None})), True),
        ("key column differs from the value's", (key, written({"id": 2})), False),
        ("checksummed row", (key, written(checksum | {"_tidb_corrupted": False}, checksum_doc, checksum_id)), True),
        ("corrupted row", (key, written(checksum | {"_tidb_corrupted": True}, checksum_doc, checksum_id)), False),
        (
            "checksummed row, _tidb_corrupted a string (TiCDC writes a boolean)",
            (key, written(checksum | {"_tidb_corrupted": ""}, odd_checksum_doc, odd_checksum_id)),
            False,
        ),
        ("empty value: a tombstone", (key, b""), True),
        ("neither key nor value", (None, None), False),
        ("DDL byte, not JSON", (None, b"\x01{"), False),
        ("watermark of 3 bytes", (None, b"\x02\x00\x01"), False),
    ]


def lookup(schemas: Sequence[TableSchema], rule: OffsetVersions | None = None) -> MemorySchemaLookup:
    found = MemorySchemaLookup(schemas)
    found.offset_versions = rule
    return found

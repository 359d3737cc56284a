"""A table schema inferred from a row, for tables first met mid-stream.

When the pipeline starts after a table was created and no baseline statement names it, the rows
are all there is: Canal-JSON's ``mysqlType``, Open Protocol's type codes, Debezium's field schemas
and Avro's ``tidb_type`` give each column's type (``ChangeEvent.column_types``), the message names
the key (``ticdc_lake.protocols.schema_facts.infer_schema`` reads both off a row). Facts the rows
lack get a choice that keeps every value, recorded in ``extra["missing_facts"]`` (and so in schema
history):

* DECIMAL without precision -> precision unknown (``length=None``): the Iceberg column is a string;
* ENUM/SET without members -> the numbers the protocol sent are kept as the values;
* types the text does not name exactly -> a text type (string in Iceberg);
* nullability and defaults are unknown: every non-key column is nullable, without default.

The result has version 0 (in effect from the start: any DDL version wins) and ``source``
``inferred-from-rows``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.schema.type_mapping import iceberg_type

INFERRED_SOURCE = "inferred-from-rows"
#: ``TableSchema.extra`` key: what the schema's source did not say, and the choice made.
MISSING_FACTS = "missing_facts"
#: Version of schemas in effect from the start of the stream (baseline, inferred).
START_VERSION = 0

#: Debezium ``connect:<type>`` (a Connect type that fits several MySQL types) -> the widest one.
_CONNECT_TYPES = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float64": "double",
    "double": "double",
    "boolean": "tinyint",
    "string": "longtext",
    "bytes": "longblob",
}
_BARE_TYPES = frozenset({"varchar", "varbinary", "char", "binary"})


def schema_from_types(
    database: str, table: str, types: Mapping[str, str], key: Sequence[str], table_id: int | None = None
) -> TableSchema:
    """A version-0 schema from column -> type text and the key columns (see the module docstring)."""
    missing: list[str] = []
    columns = []
    for name, text in types.items():
        column, fact = column_from_type(name, text)
        if fact is not None:
            missing.append(fact)
        columns.append(replace(column, nullable=name not in key, default=None))
    known = {c.name for c in columns}
    key = tuple(name for name in key if name in known)
    indexes = (IndexSchema("PRIMARY", key, primary=True, unique=True),) if key else ()
    missing.append("nullability and defaults: not in the rows; columns outside the key are nullable, without default")
    if not key:
        missing.append("key: the rows name none; apply uses the whole row")
    return TableSchema(
        database=database,
        table=table,
        columns=tuple(columns),
        indexes=indexes,
        table_id=table_id,
        version=START_VERSION,
        source=INFERRED_SOURCE,
        extra={MISSING_FACTS: missing},
    )


def column_from_type(name: str, text: str) -> tuple[ColumnSchema, str | None]:
    """The column a type text describes, and the missing fact (None when the text says it all)."""
    lowered = " ".join(text.strip().lower().split())
    unsigned = " unsigned" in lowered
    head = lowered.split("(", 1)[0].split(" ", 1)[0]
    if head.startswith("connect:"):
        mysql_type = _CONNECT_TYPES.get(head.removeprefix("connect:"), "longtext")
        fact = f"column {name!r}: the rows give only the Connect type {text!r}; taken as {mysql_type}"
        return ColumnSchema(name, mysql_type, unsigned=unsigned), fact
    if "(" not in lowered:
        if head in ("decimal", "numeric"):
            fact = f"column {name!r}: DECIMAL precision and scale unknown; the Iceberg column is a string"
            return ColumnSchema(name, "decimal", unsigned=unsigned), fact
        if head in ("enum", "set"):
            fact = f"column {name!r}: {head.upper()} members unknown; values are kept as the numbers the rows send"
            return ColumnSchema(name, head), fact
        if head in _BARE_TYPES:
            return ColumnSchema(name, head), None
    from ticdc_lake.schema.ddl_parser import parse_create_table  # sqlglot loads only where needed

    try:
        column = parse_create_table(f"CREATE TABLE `t` (`c` {text})", "d").columns[0]
        iceberg_type(column)
    except SchemaError:
        fact = f"column {name!r}: type {text!r} is not understood; taken as longtext (string in Iceberg)"
        return ColumnSchema(name, "longtext"), fact
    return replace(column, name=name, charset=None, collation=None), None

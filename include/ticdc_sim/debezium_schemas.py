"""The fixed Connect schemas and DDL ``tableChanges`` of TiCDC's Debezium messages.

From ``pkg/sink/codec/debezium/codec.go`` (``writeSourceSchema``, the envelope tail of
``EncodeValue``/``EncodeCheckpointEvent``, the ``SchemaChangeKey``/``SchemaChangeValue`` schemas
of ``EncodeDDLEvent``) and ``helper.go`` (``getLen``, ``getScale``, ``getCharset``,
``getExpressionAndName``, ``parseBit``), with ``internal/java.go`` ``MySQLType2JdbcType``. Objects
are built in the order codec.go writes their fields.
"""

from __future__ import annotations

from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_sim.column_types import BINARY_TYPES, TEXT_TYPES, display_length
from ticdc_sim.go_text import RawJson, jsoniter_float
from ticdc_sim.tidb_columns import DEFAULT_LENGTH_AND_DECIMAL, is_unsigned

_STRING_TYPES = TEXT_TYPES | BINARY_TYPES
#: ``internal.MySQLType2JdbcType`` for the non-string types.
_JDBC_TYPES = {
    "tinyint": 5,
    "smallint": 5,
    "mediumint": 4,
    "int": 4,
    "year": 4,
    "bigint": -5,
    "float": 6,
    "double": 8,
    "decimal": 3,
    "timestamp": 2014,
    "datetime": 93,
    "date": 91,
    "time": 92,
    "enum": 1,
    "set": 1,
    "bit": -7,
    "json": 1111,
}


def _field(connect_type: str, optional: bool, name: str) -> dict[str, object]:
    return {"type": connect_type, "optional": optional, "field": name}


def source_schema() -> dict[str, object]:
    """``writeSourceSchema``."""
    snapshot = {
        "type": "string",
        "optional": True,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "true,last,false,incremental"},
        "default": "false",
        "field": "snapshot",
    }
    fields = [
        _field("string", False, "version"),
        _field("string", False, "connector"),
        _field("string", False, "name"),
        _field("int64", False, "ts_ms"),
        snapshot,
        _field("string", False, "db"),
        _field("string", True, "sequence"),
        _field("string", True, "table"),
        _field("int64", False, "server_id"),
        _field("string", True, "gtid"),
        _field("string", False, "file"),
        _field("int64", False, "pos"),
        _field("int32", False, "row"),
        _field("int64", True, "thread"),
        _field("string", True, "query"),
    ]
    return {
        "type": "struct",
        "fields": fields,
        "optional": False,
        "name": "io.debezium.connector.mysql.Source",
        "field": "source",
    }


def envelope_tail() -> list[dict[str, object]]:
    """The ``op``, ``ts_ms`` and ``transaction`` fields that end every envelope schema."""
    transaction = {
        "type": "struct",
        "fields": [
            _field("string", False, "id"),
            _field("int64", False, "total_order"),
            _field("int64", False, "data_collection_order"),
        ],
        "optional": True,
        "name": "event.block",
        "version": 1,
        "field": "transaction",
    }
    return [_field("string", False, "op"), _field("int64", True, "ts_ms"), transaction]


def named(name: str, optional: bool, connect_type: str) -> dict[str, object]:
    return {"field": name, "optional": optional, "type": connect_type}


def ddl_value_schema() -> dict[str, object]:
    """The ``io.debezium.connector.mysql.SchemaChangeValue`` schema of DDL messages."""
    strings = {"type": "string", "optional": False}
    column_fields = [
        named("name", False, "string"),
        named("jdbcType", False, "int32"),
        named("nativeType", True, "int32"),
        named("typeName", False, "string"),
        named("typeExpression", True, "string"),
        named("charsetName", True, "string"),
        named("length", True, "int32"),
        named("scale", True, "int32"),
        named("position", False, "int32"),
        named("optional", True, "boolean"),
        named("autoIncremented", True, "boolean"),
        named("generated", True, "boolean"),
        named("comment", True, "string"),
        named("defaultValueExpression", True, "string"),
        {**named("enumValues", True, "array"), "items": dict(strings)},
    ]
    column = {"name": "io.debezium.connector.schema.Column", "optional": False, "type": "struct", "version": 1}
    table = {
        **named("table", True, "struct"),
        "name": "io.debezium.connector.schema.Table",
        "version": 1,
        "fields": [
            named("defaultCharsetName", True, "string"),
            {**named("primaryKeyColumnNames", True, "array"), "items": dict(strings)},
            {**named("columns", False, "array"), "items": {**column, "fields": column_fields}},
            named("comment", True, "string"),
        ],
    }
    change = {
        "name": "io.debezium.connector.schema.Change",
        "optional": False,
        "type": "struct",
        "version": 1,
        "fields": [named("type", False, "string"), named("id", False, "string"), table],
    }
    return {
        "optional": False,
        "type": "struct",
        "version": 1,
        "name": "io.debezium.connector.mysql.SchemaChangeValue",
        "fields": [
            source_schema(),
            named("ts_ms", False, "int64"),
            named("databaseName", True, "string"),
            named("schemaName", True, "string"),
            named("ddl", True, "string"),
            {**named("tableChanges", False, "array"), "items": change},
        ],
    }


def table_change_column(column: ColumnSchema, position: int) -> dict[str, object]:
    """One ``tableChanges[].table.columns`` item (``EncodeDDLEvent``), ``position`` 1-based."""
    tp = column.mysql_type
    binary = tp in BINARY_TYPES
    jdbc = _JDBC_TYPES.get(tp)
    if jdbc is None:  # string types: VARCHAR/VARBINARY 12/-3, CHAR/BINARY 1/-2, TEXT/BLOB 12/2004
        jdbc = {"varchar": 12, "varbinary": -3, "char": 1, "binary": -2}.get(tp, 2004 if binary else 12)
    type_name = tp.upper()
    bare = tp in ("year", "bit", "char", "binary", "varchar", "varbinary", "decimal")  # getExpressionAndName
    suffix = " UNSIGNED" if is_unsigned(column) and not bare else ""
    charset = column.charset or ("utf8mb4" if tp in TEXT_TYPES or tp in ("enum", "set") else "binary")
    return {
        "name": column.name,
        "jdbcType": jdbc,
        "nativeType": None,
        "comment": None,  # parseColumns clears the comments of the columns in the query
        "defaultValueExpression": _default_expression(column),
        "enumValues": [f"'{e}'" for e in column.elements] if column.elements else None,
        "typeName": type_name + suffix,
        "typeExpression": type_name + suffix,
        "charsetName": charset if charset != "binary" and (tp in _STRING_TYPES or tp in ("enum", "set")) else None,
        "length": _length(column),
        "scale": RawJson(jsoniter_float(float(column.scale or 0), 64)) if tp == "decimal" else None,
        "position": position,
        "optional": column.nullable,
        "autoIncremented": False,
        "generated": False,
    }


def _default_expression(column: ColumnSchema) -> str | None:
    text = column.default
    if text is None:
        return None
    if text.upper() == "CURRENT_TIMESTAMP":
        return "1970-01-01 00:00:00"
    if column.mysql_type == "bit":
        # TiDB keeps a BIT default as a minimal big-endian binary literal (NewBinaryLiteralFromUint(v, -1));
        # parseBit prints its first byte n%8 binary digits wide, the others 8.
        width, number = display_length(column), int(text)
        raw = number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")
        return format(raw[0], f"0{width % 8}b" if width % 8 else "b") + "".join(format(b, "08b") for b in raw[1:])
    return text


def _length(column: ColumnSchema) -> int | None:
    """``getLen``: the fsp for time types, the length when not TiDB's default, else null."""
    tp = column.mysql_type
    flen = display_length(column)
    default = DEFAULT_LENGTH_AND_DECIMAL[tp][0]
    if tp in ("timestamp", "time", "datetime"):
        return column.fsp or 0
    if tp in ("bit", "varchar", "varbinary", "char", "binary", "bigint", "float", "double"):
        return flen if flen != default else None
    if tp in ("tinyint", "smallint", "mediumint", "int"):
        return flen if flen != (default - 1 if column.unsigned else default) else None
    if tp in ("year", "decimal"):
        return flen
    if tp == "set":
        return 2 * len(column.elements or ()) - 1
    if tp == "enum":
        return 1
    return None

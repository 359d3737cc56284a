"""What an ALTER does to the values of existing rows, the MySQL way (the oracle's rules).

* ADD COLUMN: every row gets the column default converted to the model value; a NOT NULL
  column without default gets the type's implicit default (0, 0.0, '', the first ENUM member).
* MODIFY COLUMN: only the conversions listed in :func:`convert_value` are modelled; a value that
  no longer fits raises, as TiDB's strict mode does ("data truncated", "out of range").
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema
from ticdc_sim.column_types import (
    BINARY_TYPES,
    FLOAT_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    Value,
    float32,
    normalize_value,
)
from ticdc_sim.ddl_specs import (
    AddColumnSpec,
    AlterSpec,
    DropColumnSpec,
    ModifyColumnSpec,
    RenameColumnSpec,
    complete_column,
)

Row = dict[str, Value]
_STRINGISH = TEXT_TYPES | {"json", "enum", "set", "time"}


def default_value(column: ColumnSchema, where: str) -> Value:
    """The value existing rows get for a column added with ``column``'s definition."""
    column = complete_column(column)
    text = column.default
    tp = column.mysql_type
    if text is None:
        if column.nullable:
            return None
        return normalize_value(column, _implicit_default(column, where), where)
    try:
        value: Value
        if tp in INTEGER_TYPES or tp in ("year", "bit"):
            value = int(text)
        elif tp == "decimal":
            value = Decimal(text)
        elif tp in FLOAT_TYPES:
            value = float32(float(text)) if tp == "float" else float(text)
        elif tp in _STRINGISH:
            value = text
        elif tp in BINARY_TYPES:
            value = text.encode("utf-8")
        elif tp == "date":
            value = date.fromisoformat(text)
        elif tp == "datetime":
            value = datetime.fromisoformat(text)
        else:
            raise SchemaError(f"{where}.{column.name}: a DEFAULT for type {tp!r} is not modelled by the simulator")
    except (ValueError, InvalidOperation) as exc:
        raise SchemaError(f"{where}.{column.name}: DEFAULT {text!r} is not a valid {column.type_text()}") from exc
    return normalize_value(column, value, where)


def _implicit_default(column: ColumnSchema, where: str) -> Value:
    """MySQL's implicit default of a NOT NULL column declared without DEFAULT."""
    tp = column.mysql_type
    if tp in INTEGER_TYPES or tp == "bit":
        return 0
    if tp == "decimal":
        return Decimal(0)
    if tp in FLOAT_TYPES:
        return 0.0
    if tp == "enum":
        return (column.elements or ("",))[0]
    if tp in TEXT_TYPES or tp == "set":
        return ""
    if tp in BINARY_TYPES:
        return b""
    if tp == "json":
        return "null"
    raise SchemaError(
        f"{where}.{column.name}: NOT NULL {column.type_text()} without DEFAULT has an implicit default (a zero "
        "date/time) the simulator does not model; give the column a DEFAULT"
    )


def convert_value(old: ColumnSchema, new: ColumnSchema, value: Value, where: str) -> Value:
    """``value`` of column ``old`` after ``MODIFY COLUMN`` to ``new``, as MySQL converts it.

    Modelled: between integer types, FLOAT→DOUBLE, DECIMAL(P,S)→DECIMAL(P2,S), between the
    CHAR/VARCHAR/TEXT family, integer→string, and any change that keeps the type and only changes
    attributes. Anything else raises :class:`SchemaError`.
    """
    new = complete_column(new)
    label = f"{where}.{old.name}: MODIFY {old.type_text()} -> {new.type_text()}"
    same_kind = old.mysql_type == new.mysql_type and old.unsigned == new.unsigned and old.scale == new.scale
    supported = (
        same_kind
        or (old.mysql_type in INTEGER_TYPES and new.mysql_type in INTEGER_TYPES)
        or (old.mysql_type == "float" and new.mysql_type == "double")
        or (old.mysql_type == "decimal" and new.mysql_type == "decimal" and (old.scale or 0) == (new.scale or 0))
        or (old.mysql_type in TEXT_TYPES and new.mysql_type in TEXT_TYPES)
        or (old.mysql_type in INTEGER_TYPES and new.mysql_type in TEXT_TYPES)
    )
    if not supported:
        raise SchemaError(f"{label}: this conversion is not modelled by the simulator (see ddl_values.convert_value)")
    if value is None:
        converted: Value = None
    elif old.mysql_type in INTEGER_TYPES and new.mysql_type in TEXT_TYPES:
        converted = str(value)
    else:
        converted = value
    try:
        return normalize_value(new, converted, where)
    except SchemaError as exc:
        raise SchemaError(f"{label}: an existing value does not fit, TiDB would reject the DDL: {exc}") from None


def transform_row(schema: TableSchema, after: TableSchema, spec: AlterSpec, row: Row, where: str) -> Row:
    """``row`` (in ``schema``) after one spec; ``after`` is the post-spec schema (its column order)."""
    values = dict(row)
    if isinstance(spec, AddColumnSpec):
        values[spec.column.name] = default_value(spec.column, where)
    elif isinstance(spec, DropColumnSpec):
        values.pop(_actual(schema, spec.name).name)
    elif isinstance(spec, RenameColumnSpec):
        values[spec.new] = values.pop(_actual(schema, spec.old).name)
    elif isinstance(spec, ModifyColumnSpec):
        old = _actual(schema, spec.column.name)
        values[spec.column.name] = convert_value(old, spec.column, values.pop(old.name), where)
    return {c.name: values[c.name] for c in after.columns}


def _actual(schema: TableSchema, name: str) -> ColumnSchema:
    for column in schema.columns:
        if column.name.lower() == name.lower():
            return column
    raise SchemaError(f"{schema.database}.{schema.table}: column {name!r} does not exist")

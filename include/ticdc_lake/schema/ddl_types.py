"""One sqlglot column definition → :class:`ColumnSchema`, the way TiDB stores the column.

TiDB's rules applied here: type aliases (INTEGER, BOOL, DEC/NUMERIC/FIXED, REAL, NATIONAL CHAR,
LONG VARCHAR, SERIAL, ...), default display lengths (:func:`tidb_default_length`), DECIMAL without
precision (10,0), FLOAT(p) (p <= 24 FLOAT, p <= 53 DOUBLE), BIT without length 1, fsp 0 when not
given, ZEROFILL implies UNSIGNED, PRIMARY KEY and AUTO_INCREMENT imply NOT NULL, non-string types
have charset and collation ``binary``, and a string type whose character set is ``binary``
becomes the binary type (VARCHAR → VARBINARY, TEXT → BLOB, CHAR → BINARY).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_charsets import BINARY, charset_maxlen, resolve_charset
from ticdc_lake.schema.ddl_defaults import default_text
from ticdc_lake.schema.ddl_dialect import UNSIGNED_FLOAT, TidbColumnOption, UnsignedColumnConstraint, option_value
from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_lake.schema.tidb_lengths import tidb_default_length

D = exp.DType
_SIMPLE_TYPES: dict[D, tuple[str, bool]] = {
    D.TINYINT: ("tinyint", False),
    D.UTINYINT: ("tinyint", True),
    D.SMALLINT: ("smallint", False),
    D.USMALLINT: ("smallint", True),
    D.MEDIUMINT: ("mediumint", False),
    D.UMEDIUMINT: ("mediumint", True),
    D.INT: ("int", False),
    D.UINT: ("int", True),
    D.BIGINT: ("bigint", False),
    D.UBIGINT: ("bigint", True),
    D.DOUBLE: ("double", False),
    D.UDOUBLE: ("double", True),
    D.DECIMAL: ("decimal", False),
    D.UDECIMAL: ("decimal", True),
    D.DATE: ("date", False),
    D.DATETIME: ("datetime", False),
    D.TIMESTAMP: ("timestamp", False),
    D.TIMESTAMPTZ: ("timestamp", False),
    D.TIME: ("time", False),
    D.YEAR: ("year", False),
    D.CHAR: ("char", False),
    D.NCHAR: ("char", False),
    D.VARCHAR: ("varchar", False),
    D.NVARCHAR: ("varchar", False),
    D.BINARY: ("binary", False),
    D.VARBINARY: ("varbinary", False),
    D.TINYTEXT: ("tinytext", False),
    D.TEXT: ("text", False),
    D.MEDIUMTEXT: ("mediumtext", False),
    D.LONGTEXT: ("longtext", False),
    D.TINYBLOB: ("tinyblob", False),
    D.BLOB: ("blob", False),
    D.MEDIUMBLOB: ("mediumblob", False),
    D.LONGBLOB: ("longblob", False),
    D.ENUM: ("enum", False),
    D.SET: ("set", False),
    D.BIT: ("bit", False),
    D.JSON: ("json", False),
    D.VECTOR: ("vector", False),
}
_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})
_NUMERIC = _INTEGERS | {"float", "double", "decimal"}
_FSP_TYPES = frozenset({"datetime", "timestamp", "time"})
#: Types with a character set of their own; every other type is ``binary``.
TEXTUAL_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
_TO_BINARY = {
    "char": "binary",
    "varchar": "varbinary",
    "tinytext": "tinyblob",
    "text": "blob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
}
_TEXT_FAMILY = (("tinytext", 255), ("text", 65535), ("mediumtext", 16777215), ("longtext", 4294967295))
_BLOB_FAMILY = (("tinyblob", 255), ("blob", 65535), ("mediumblob", 16777215), ("longblob", 4294967295))
#: Column attributes that do not change the column's facts.
_IGNORED_ATTRIBUTES = (
    exp.CommentColumnConstraint,
    exp.OnUpdateColumnConstraint,
    exp.CheckColumnConstraint,
    exp.Reference,
    exp.InvisibleColumnConstraint,
    TidbColumnOption,
)


@dataclass(frozen=True, slots=True)
class ParsedColumn:
    """A column definition: the column plus the keys and generation declared on it."""

    column: ColumnSchema
    primary: bool = False
    unique: bool = False
    #: ``VIRTUAL`` or ``STORED`` for a generated column.
    generated: str | None = None


def parse_column(
    definition: exp.ColumnDef, default_charset: str | None, default_collation: str | None, where: str
) -> ParsedColumn:
    """The column of ``definition``; ``where`` names the table and DDL for error messages.

    ``default_charset``/``default_collation`` are the table's defaults (``None`` when unknown:
    a textual column without its own character set then keeps ``charset=None``).
    """
    name = definition.name
    if not name:
        raise SchemaError(f"{where}: a column definition has no name")
    here = f"{where}, column {name!r}"
    kind = definition.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise SchemaError(f"{here}: the column has no type")
    mysql_type, unsigned, length, scale, fsp, elements = _type_facts(kind, here)
    nullable = True
    primary = unique = binary_attribute = False
    charset = collation = generated = None
    default: exp.Expr | None = None
    if kind.this == D.SERIAL:  # BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
        nullable, unique = False, True
    elif kind.this in (D.NCHAR, D.NVARCHAR):
        charset = "utf8"
    for constraint in definition.args.get("constraints") or []:
        option = constraint.args.get("kind")
        if isinstance(option, exp.NotNullColumnConstraint):
            nullable = bool(option.args.get("allow_null"))
        elif isinstance(option, exp.PrimaryKeyColumnConstraint):
            primary, nullable = True, False
        elif isinstance(option, exp.UniqueColumnConstraint):
            unique = True
        elif isinstance(option, exp.AutoIncrementColumnConstraint):
            nullable = False
        elif isinstance(option, exp.DefaultColumnConstraint):
            default = option.this
        elif isinstance(option, exp.CharacterSetColumnConstraint):
            charset = option_value(option).lower()
        elif isinstance(option, exp.CollateColumnConstraint):
            collation = option_value(option).lower()
        elif isinstance(option, exp.BinaryColumnConstraint):
            binary_attribute = True
        elif isinstance(option, exp.ZeroFillColumnConstraint | UnsignedColumnConstraint):
            unsigned = unsigned or mysql_type in _NUMERIC
        elif isinstance(option, exp.ComputedColumnConstraint):
            generated = "STORED" if option.args.get("persisted") else "VIRTUAL"
        elif isinstance(option, exp.GeneratedAsIdentityColumnConstraint) and option.args.get("expression"):
            generated = "VIRTUAL"
        elif not isinstance(option, _IGNORED_ATTRIBUTES):
            raise SchemaError(f"{here}: attribute {constraint.sql(dialect='mysql')!r} is not understood")
    column = ColumnSchema(
        name=name,
        mysql_type=mysql_type,
        length=length,
        scale=scale,
        fsp=fsp,
        unsigned=unsigned,
        nullable=nullable,
        charset=charset,
        collation=collation,
        elements=elements,
    )
    column = _finish_column(column, default_charset, default_collation, binary_attribute=binary_attribute)
    if default is not None:
        column = replace(column, default=default_text(default, column, here))
    return ParsedColumn(column, primary=primary, unique=unique, generated=generated)


def _finish_column(
    column: ColumnSchema,
    default_charset: str | None,
    default_collation: str | None,
    *,
    binary_attribute: bool = False,
) -> ColumnSchema:
    """Character set, collation, binary-charset type and display length as TiDB settles them."""
    charset: str | None = BINARY
    collation: str | None = BINARY
    if column.mysql_type in TEXTUAL_TYPES:
        charset, collation = resolve_charset(
            column.charset, column.collation, default_charset, default_collation, binary_attribute
        )
    mysql_type, length = column.mysql_type, column.length
    if charset == BINARY and mysql_type in _TO_BINARY:
        mysql_type = _TO_BINARY[mysql_type]
    if mysql_type in ("text", "blob") and length is not None:
        # TEXT(n) / BLOB(n): the smallest type that holds n characters (bytes for BLOB).
        family = _BLOB_FAMILY if mysql_type == "blob" else _TEXT_FAMILY
        size = length * (1 if mysql_type == "blob" else charset_maxlen(charset))
        mysql_type = next((name for name, limit in family if size <= limit), family[-1][0])
    if mysql_type.endswith("text") or mysql_type.endswith("blob"):
        length = None
    column = replace(column, mysql_type=mysql_type, charset=charset, collation=collation, length=length)
    if column.length is None and column.mysql_type != "vector":
        column = replace(column, length=tidb_default_length(column))
    return column


def fill_table_charset(
    column: ColumnSchema, default_charset: str | None, default_collation: str | None
) -> ColumnSchema:
    """A finished textual column without a character set of its own given the table's defaults."""
    if column.mysql_type not in TEXTUAL_TYPES or column.charset is not None or column.collation is not None:
        return column
    charset, collation = resolve_charset(None, None, default_charset, default_collation)
    column = replace(column, charset=charset, collation=collation)
    if charset == BINARY and column.mysql_type in _TO_BINARY:
        mysql_type = _TO_BINARY[column.mysql_type]
        length = None if mysql_type.endswith("blob") else column.length
        column = replace(column, mysql_type=mysql_type, length=length)
        if length is None:
            column = replace(column, length=tidb_default_length(column))
    return column


def _type_facts(
    kind: exp.DataType, where: str
) -> tuple[str, bool, int | None, int | None, int | None, tuple[str, ...] | None]:
    """(mysql_type, unsigned, length, scale, fsp, elements) of a data type, TiDB's way."""
    dtype = kind.this
    if dtype == D.BOOLEAN:
        return "tinyint", False, 1, None, None, None
    if dtype == D.SERIAL:
        return "bigint", True, None, None, None, None
    if dtype == D.FLOAT:
        return _float_facts(kind, where)
    if dtype not in _SIMPLE_TYPES:
        raise SchemaError(f"{where}: type {_shown(kind)} is not a TiDB column type this parser knows")
    mysql_type, unsigned = _SIMPLE_TYPES[dtype]
    if mysql_type in ("enum", "set"):
        return mysql_type, False, None, None, None, _members(kind, where)
    params = _params(kind, where)
    if mysql_type == "decimal":
        precision = params[0] if params else 10
        scale = params[1] if len(params) > 1 else 0
        if not 1 <= precision <= 65 or not 0 <= scale <= min(30, precision) or len(params) > 2:
            raise SchemaError(f"{where}: {_shown(kind)} is not a valid DECIMAL")
        return "decimal", unsigned, precision, scale, None, None
    if mysql_type in _FSP_TYPES:
        fsp = params[0] if params else 0
        if not 0 <= fsp <= 6 or len(params) > 1:
            raise SchemaError(f"{where}: {_shown(kind)} has an invalid fractional-second precision")
        return mysql_type, False, None, None, fsp, None
    if len(params) > (2 if mysql_type == "double" else 1):
        raise SchemaError(f"{where}: {_shown(kind)} has too many parameters")
    length = params[0] if params else None
    if mysql_type == "year":
        length = 4
    elif mysql_type == "bit" and length is not None and not 1 <= length <= 64:
        raise SchemaError(f"{where}: {_shown(kind)} needs a length from 1 to 64")
    elif mysql_type in ("varchar", "varbinary") and length is None:
        raise SchemaError(f"{where}: {_shown(kind)} needs a length")
    return mysql_type, unsigned, length, None, None, None


def _float_facts(
    kind: exp.DataType, where: str
) -> tuple[str, bool, int | None, int | None, int | None, tuple[str, ...] | None]:
    unsigned = bool(kind.meta.get(UNSIGNED_FLOAT))
    params = _params(kind, where)
    if len(params) == 1:  # FLOAT(p): a precision in bits, not a display width
        if params[0] > 53:
            raise SchemaError(f"{where}: {_shown(kind)} needs a precision from 0 to 53")
        return ("float" if params[0] <= 24 else "double"), unsigned, None, None, None, None
    if len(params) > 2:
        raise SchemaError(f"{where}: {_shown(kind)} has too many parameters")
    return "float", unsigned, (params[0] if params else None), None, None, None


def _shown(kind: exp.DataType) -> str:
    """The type as written, for messages (``VARCHAR``, ``DECIMAL(70,2)``, ``GEOMETRY``)."""
    if kind.this not in _SIMPLE_TYPES and kind.this not in (D.FLOAT, D.BOOLEAN, D.SERIAL):
        return kind.sql(dialect="mysql")
    name = _SIMPLE_TYPES[kind.this][0] if kind.this in _SIMPLE_TYPES else kind.this.name.lower()
    params = ",".join(param.sql(dialect="mysql") for param in kind.expressions)
    return name.upper() + (f"({params})" if params else "")


def _params(kind: exp.DataType, where: str) -> list[int]:
    values = []
    for param in kind.expressions:
        text = param.name
        if not text.isdigit():
            raise SchemaError(f"{where}: {_shown(kind)} has a parameter that is not a number")
        values.append(int(text))
    return values


def _members(kind: exp.DataType, where: str) -> tuple[str, ...]:
    members = []
    for member in kind.expressions:
        literal = member.expression if isinstance(member, exp.Introducer) else member
        if not isinstance(literal, exp.Literal) or not literal.is_string:
            raise SchemaError(f"{where}: {_shown(kind)} has a member that is not a string")
        members.append(literal.this)
    if not members:
        raise SchemaError(f"{where}: {_shown(kind)} has no members")
    return tuple(members)

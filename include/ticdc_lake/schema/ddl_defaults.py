"""A column's ``DEFAULT`` clause as text, close to how TiDB stores it.

* literals: their value as written (``'0.00'`` → ``0.00``, ``-1`` → ``-1``, ``'a' 'b'`` → ``ab``,
  ``TRUE``/``FALSE`` → ``1``/``0``), ``NULL`` → ``None``;
* ``b'101'`` / ``x'41'``: the integer (``5``) for BIT and numeric columns, else the bytes as text;
* ``CURRENT_TIMESTAMP``, ``NOW()``, ``LOCALTIME``, ``LOCALTIMESTAMP``: ``CURRENT_TIMESTAMP`` or
  ``CURRENT_TIMESTAMP(n)``;
* any other expression (``(UUID())``, ``(CURRENT_DATE)``): its SQL text without the outer
  parentheses, as sqlglot prints it in the MySQL dialect.
"""

from __future__ import annotations

from sqlglot import exp

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import ColumnSchema

_NOW_FUNCTIONS = frozenset({"NOW", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP"})
#: Types whose bit and hex literal defaults are numbers.
NUMERIC_TYPES = frozenset({"bit", "tinyint", "smallint", "mediumint", "int", "bigint", "float", "double", "decimal"})


def default_text(expression: exp.Expr, column: ColumnSchema, where: str) -> str | None:
    """The default of ``column`` written as ``expression``; ``where`` names the column for errors."""
    if isinstance(expression, exp.Paren):
        inner = expression.this
        literal = _literal_text(inner, column)
        if literal is not None or isinstance(inner, exp.Null):
            return literal
        return _now_text(inner) or inner.sql(dialect="mysql")
    if isinstance(expression, exp.Null):
        return None
    literal = _literal_text(expression, column)
    if literal is not None:
        return literal
    now = _now_text(expression)
    if now is not None:
        return now
    if isinstance(expression, exp.Func | exp.Column | exp.Var):
        return expression.sql(dialect="mysql")
    raise SchemaError(f"{where}: DEFAULT {expression.sql(dialect='mysql')} is not understood")


def _literal_text(expression: exp.Expr, column: ColumnSchema) -> str | None:
    if isinstance(expression, exp.Literal):
        return str(expression.this)
    if isinstance(expression, exp.Neg) and isinstance(expression.this, exp.Literal):
        return "-" + str(expression.this.this)
    if isinstance(expression, exp.Boolean):
        return "1" if expression.this else "0"
    if isinstance(expression, exp.Introducer):  # _utf8mb4'x'
        return _literal_text(expression.expression, column)
    if isinstance(expression, exp.Collate):  # 'x' COLLATE utf8mb4_bin
        return _literal_text(expression.this, column)
    if isinstance(expression, exp.National):
        return str(expression.this)
    if isinstance(expression, exp.Concat):  # adjacent string literals: 'a' 'b'
        parts = expression.expressions
        if all(isinstance(part, exp.Literal) and part.is_string for part in parts):
            return "".join(str(part.this) for part in parts)
        return None
    if isinstance(expression, exp.BitString | exp.HexString):
        digits = str(expression.this)
        value = int(digits or "0", 2 if isinstance(expression, exp.BitString) else 16)
        if column.mysql_type in NUMERIC_TYPES:
            return str(value)
        raw = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
        if isinstance(expression, exp.HexString):
            raw = bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
    return None


def _now_text(expression: exp.Expr) -> str | None:
    """``CURRENT_TIMESTAMP[(n)]`` for the current-time functions, else None."""
    if isinstance(expression, exp.CurrentTimestamp | exp.Localtimestamp | exp.Localtime):
        fsp = expression.this
    elif isinstance(expression, exp.Anonymous) and str(expression.this).upper() in _NOW_FUNCTIONS:
        fsp = expression.expressions[0] if expression.expressions else None
    else:
        return None
    if isinstance(fsp, exp.Literal) and str(fsp.this) not in ("", "0"):
        return f"CURRENT_TIMESTAMP({fsp.this})"
    return "CURRENT_TIMESTAMP"

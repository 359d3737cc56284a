"""sqlglot key definitions (PRIMARY KEY, UNIQUE, KEY/INDEX, FULLTEXT, FOREIGN KEY, CHECK) → specs.

A key part that is an expression (``KEY ((lower(a)))``) has no plain column: the index is kept
with ``columns=()`` so that it never becomes the row key. A prefix (``KEY (a(10))``) counts as
the whole column. FULLTEXT and SPATIAL indexes (which TiDB does not build), FOREIGN KEY and
CHECK constraints do not change the columns or the row key: they become :class:`IgnoredSpec`.
"""

from __future__ import annotations

from sqlglot import exp

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_dialect import IF_NOT_EXISTS
from ticdc_lake.schema.ddl_statements import AddIndex, IgnoredSpec
from ticdc_lake.schema.table_schema import IndexSchema

PRIMARY = "PRIMARY"


def key_spec(node: exp.Expr, where: str, constraint_name: str = "") -> AddIndex | IgnoredSpec:
    """The index a key definition adds; ``where`` names the table and DDL for errors."""
    if isinstance(node, exp.Constraint):
        inner = node.expressions
        if len(inner) != 1:
            raise SchemaError(f"{where}: constraint {node.sql(dialect='mysql')!r} is not understood")
        return key_spec(inner[0], where, constraint_name=node.name)
    if isinstance(node, exp.PrimaryKey):
        columns = _columns(node.expressions, node, where)
        return AddIndex(IndexSchema(PRIMARY, columns, primary=True, unique=True))
    if isinstance(node, exp.UniqueColumnConstraint):
        schema = node.this
        if not isinstance(schema, exp.Schema):
            raise SchemaError(f"{where}: {node.sql(dialect='mysql')!r} names no columns")
        name = schema.this.name if schema.this is not None else constraint_name
        index = IndexSchema(name, _columns(schema.expressions, node, where), unique=True)
        return AddIndex(index, if_not_exists=bool(node.meta.get(IF_NOT_EXISTS)))
    if isinstance(node, exp.IndexColumnConstraint):
        if node.args.get("kind"):
            return IgnoredSpec(node.sql(dialect="mysql"), f"TiDB does not build {node.args['kind']} indexes")
        name = node.this.name if node.this is not None else ""
        index = IndexSchema(name, _columns(node.expressions, node, where))
        return AddIndex(index, if_not_exists=bool(node.meta.get(IF_NOT_EXISTS)))
    if isinstance(node, exp.ForeignKey):
        return IgnoredSpec(node.sql(dialect="mysql"), "a foreign key does not change the columns or the row key")
    if isinstance(node, exp.CheckColumnConstraint):
        return IgnoredSpec(node.sql(dialect="mysql"), "a CHECK constraint does not change the columns or keys")
    raise SchemaError(f"{where}: key definition {node.sql(dialect='mysql')!r} is not understood")


def _columns(parts: list[exp.Expr], node: exp.Expr, where: str) -> tuple[str, ...]:
    names = []
    for part in parts:
        name = _column_name(part)
        if name is None:
            return ()  # an expression index: no plain column to key on
        names.append(name)
    if not names:
        raise SchemaError(f"{where}: {node.sql(dialect='mysql')!r} names no columns")
    return tuple(names)


def _column_name(part: exp.Expr) -> str | None:
    if isinstance(part, exp.Ordered):
        return _column_name(part.this)
    if isinstance(part, exp.ColumnPrefix):
        return _column_name(part.this)
    if isinstance(part, exp.Identifier | exp.Column):
        return part.name
    return None

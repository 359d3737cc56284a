"""CREATE TABLE (and CREATE TABLE ... LIKE) statements → :class:`CreateTableStatement`.

sqlglot reads the whole statement. When it cannot read what follows the column list (TiDB
table options such as ``TTL = ...`` or ``PLACEMENT POLICY = ...``, or a ``PARTITION BY``
clause sqlglot does not know), the statement is read again without it, and only the table's
default character set, collation and comment are taken from those trailing tokens (partitioning
and the other options do not change the columns or keys).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_alter import GENERATED_COLUMNS, apply_spec
from ticdc_lake.schema.ddl_dialect import option_value, parse_statement
from ticdc_lake.schema.ddl_keys import key_spec
from ticdc_lake.schema.ddl_specs import inline_keys
from ticdc_lake.schema.ddl_statements import (
    AddIndex,
    CreateTableLikeStatement,
    CreateTableStatement,
    SetTableOptions,
    TableName,
)
from ticdc_lake.schema.ddl_types import parse_column
from ticdc_lake.schema.table_schema import ColumnSchema, TableSchema

SOURCE = "ddl-sql"


def create_table(
    sql: str, tokens: list[Token], default_database: str | None
) -> CreateTableStatement | CreateTableLikeStatement:
    """The statement ``sql`` (one CREATE TABLE, tokenized as ``tokens``)."""
    options: SetTableOptions | None = None
    tree = _parse(sql)
    if isinstance(tree, ParseError):
        close = _column_list_end(tokens)
        retry = _parse(sql[: tokens[close].end + 1]) if close is not None else tree
        if isinstance(retry, ParseError):
            raise SchemaError(f"sqlglot cannot read it: {_first_line(retry)}") from retry
        tree = retry
        options = _scan_options(tokens[close + 1 :] if close is not None else [])
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind")).upper() != "TABLE":
        raise SchemaError("sqlglot does not read it as a CREATE TABLE statement")
    if_not_exists = bool(tree.args.get("exists"))
    like = _like_source(tree)
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    name = _table_name(target, default_database)
    if like is not None:
        return CreateTableLikeStatement(sql, name, _table_name(like, default_database), if_not_exists)
    if tree.expression is not None:
        raise SchemaError("CREATE TABLE ... SELECT is not supported")
    if not isinstance(tree.this, exp.Schema):
        raise SchemaError("the statement has no column list")
    if name.database is None:
        raise SchemaError(f"table {name.table!r} has no database: the DDL names none and no default was given")
    if options is None:
        options = _options(tree.args.get("properties"))
    schema = _build(tree.this, TableName(name.database, name.table), options)
    return CreateTableStatement(sql, schema, if_not_exists)


def _build(node: exp.Schema, name: TableName, options: SetTableOptions) -> TableSchema:
    assert name.database is not None
    where = f"table {name.database}.{name.table}"
    columns: list[ColumnSchema] = []
    keys: list[AddIndex] = []
    generated: dict[str, str] = {}
    for element in node.expressions:
        if isinstance(element, exp.ColumnDef):
            parsed = parse_column(element, options.charset, options.collation, where)
            if any(c.name.lower() == parsed.column.name.lower() for c in columns):
                raise SchemaError(f"{where}: column {parsed.column.name!r} is defined twice")
            columns.append(parsed.column)
            keys.extend(AddIndex(index) for index in inline_keys(parsed))
            if parsed.generated is not None:
                generated[parsed.column.name] = parsed.generated
        else:
            spec = key_spec(element, where)
            if isinstance(spec, AddIndex):
                keys.append(spec)
    if not columns:
        raise SchemaError(f"{where}: the table has no columns")
    extra = {GENERATED_COLUMNS: generated} if generated else {}
    schema = TableSchema(name.database, name.table, tuple(columns), (), source=SOURCE, extra=extra)
    template = f"{where}: {{}}"
    schema = apply_spec(schema, options, template)
    for key in keys:
        schema = apply_spec(schema, key, template)
    return schema


def _parse(sql: str) -> exp.Expr | ParseError:
    """The statement, or the error (a sqlglot ``Command`` fallback counts as one)."""
    try:
        tree = parse_statement(sql)
    except ParseError as error:
        return error
    if isinstance(tree, exp.Command):
        return ParseError(f"unsupported syntax in {sql!r}")
    return tree


def _options(properties: exp.Expr | None) -> SetTableOptions:
    charset = collation = comment = None
    for option in properties.expressions if isinstance(properties, exp.Properties) else []:
        if isinstance(option, exp.CharacterSetProperty):
            charset = option_value(option).lower()
        elif isinstance(option, exp.CollateProperty):
            collation = option_value(option).lower()
        elif isinstance(option, exp.SchemaCommentProperty):
            comment = option_value(option)
    return SetTableOptions(charset, collation, comment)


def _scan_options(tokens: list[Token]) -> SetTableOptions:
    """Charset, collation and comment among the table options sqlglot could not read.

    Looks only at tokens outside parentheses and before ``PARTITION``, for
    ``[DEFAULT] {CHARSET | CHARACTER SET} [=] x``, ``[DEFAULT] COLLATE [=] x`` and ``COMMENT [=] 'x'``.
    """
    found: dict[str, str] = {}
    depth, position = 0, 0
    while position < len(tokens):
        token = tokens[position]
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        word = token.text.upper()
        if depth == 0 and word.split()[0] == "PARTITION":  # ``PARTITION BY`` is one token
            break
        key, skip = None, 1
        if depth == 0 and token.token_type == TokenType.CHARACTER_SET:
            key = "charset"
        elif depth == 0 and word == "CHARACTER" and _word(tokens, position + 1) == "SET":
            key, skip = "charset", 2
        elif depth == 0 and word in ("COLLATE", "COMMENT"):
            key = word.lower()
        if key is not None:
            position += skip
            if _word(tokens, position) == "=":
                position += 1
            if position < len(tokens):
                found[key] = tokens[position].text
        position += 1
    charset, collation = found.get("charset"), found.get("collate")
    return SetTableOptions(
        charset.lower() if charset else None, collation.lower() if collation else None, found.get("comment")
    )


def _word(tokens: list[Token], position: int) -> str:
    return tokens[position].text.upper() if position < len(tokens) else ""


def _column_list_end(tokens: list[Token]) -> int | None:
    """Index of the ``)`` closing the column list, or None."""
    depth = 0
    for position, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return position
    return None


def _like_source(tree: exp.Create) -> exp.Table | None:
    places = [tree.args.get("properties"), tree.this if isinstance(tree.this, exp.Schema) else None]
    for place in places:
        for node in place.expressions if place is not None else []:
            if isinstance(node, exp.LikeProperty) and isinstance(node.this, exp.Table):
                return node.this
    return None


def _table_name(table: exp.Expr, default_database: str | None) -> TableName:
    if not isinstance(table, exp.Table) or not table.name:
        raise SchemaError("the statement names no table")
    return TableName(table.db or default_database, table.name)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__

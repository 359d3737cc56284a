"""TiDB DDL text (Canal-JSON ``sql``, Open Protocol ``q``, Debezium ``ddl``) → schema facts.

sqlglot's MySQL dialect, extended in :mod:`ticdc_lake.schema.ddl_dialect`, reads the SQL;
nothing here matches SQL with regular expressions. The text is tokenized once, cut into
statements at ``;`` and each statement is dispatched on its first keywords:

* ``CREATE TABLE`` → :mod:`ticdc_lake.schema.ddl_create`;
* ``ALTER TABLE`` → cut into its comma-separated specs (on tokens, outside parentheses), each
  parsed as ``ALTER TABLE <name> <spec>`` (:mod:`ticdc_lake.schema.ddl_specs`);
* ``CREATE [UNIQUE] INDEX i [USING t] ON t (...)`` and ``DROP INDEX i ON t`` → read as the
  ``ALTER TABLE t ADD ... INDEX`` / ``DROP INDEX`` they are equivalent to (MySQL maps them so);
* ``RENAME TABLE``, ``TRUNCATE``, ``DROP TABLE``, ``CREATE/DROP DATABASE|SCHEMA`` → sqlglot;
* anything else → :class:`UnknownStatement` with the reason.

See ``docs/ddl-parsing.md``.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.ddl_alter import apply_alter
from ticdc_lake.schema.ddl_create import create_table
from ticdc_lake.schema.ddl_dialect import RenameTables, parse_statement, parse_table_name, tokenize
from ticdc_lake.schema.ddl_specs import (
    PARTITION_REASON,
    NotUnderstoodError,
    alter_specs,
    ignorable_reason,
    is_partition_spec,
)
from ticdc_lake.schema.ddl_statements import (
    AddIndex,
    AlterSpec,
    AlterTableStatement,
    CreateDatabaseStatement,
    CreateIndexStatement,
    CreateTableLikeStatement,
    CreateTableStatement,
    DdlStatement,
    DropDatabaseStatement,
    DropIndex,
    DropIndexStatement,
    DropTablesStatement,
    IgnoredSpec,
    RenameTablesStatement,
    TableName,
    TruncateTableStatement,
    UnknownStatement,
)
from ticdc_lake.schema.table_schema import TableSchema

__all__ = ["apply_alter", "held_error", "parse_create_table", "parse_ddl"]

#: Statements that recreate dropped tables (or a whole cluster) as of an earlier schema.
_RESTORING = frozenset({"RECOVER", "FLASHBACK"})


def held_error(sql: str, reason: str) -> SchemaError:
    """The error for DDL that cannot become schema facts: the table waits for a schema."""
    return SchemaError(f"cannot read DDL {sql!r}: {reason}; the table is held until its schema is known")


def parse_create_table(sql: str, default_database: str | None) -> TableSchema:
    """The table one ``CREATE TABLE`` statement creates (``source="ddl-sql"``, ``version=None``).

    Raises :class:`SchemaError` (see :func:`held_error`) for anything else, including
    ``CREATE TABLE ... LIKE``, whose schema is the source table's.
    """
    statements = parse_ddl(sql, default_database)
    if len(statements) != 1:
        raise held_error(sql, f"expected one CREATE TABLE statement, found {len(statements)} statements")
    statement = statements[0]
    if isinstance(statement, UnknownStatement):
        raise held_error(sql, statement.reason)
    if isinstance(statement, CreateTableLikeStatement):
        raise held_error(sql, f"CREATE TABLE ... LIKE: the schema is a copy of table {statement.source}")
    if not isinstance(statement, CreateTableStatement):
        raise held_error(sql, "not a CREATE TABLE statement")
    return statement.schema


def parse_ddl(sql: str, default_database: str | None) -> list[DdlStatement]:
    """One structured result per statement of ``sql``, in order; never raises for bad SQL."""
    try:
        tokens = tokenize(sql)
    except TokenError as error:
        return [UnknownStatement(sql, f"sqlglot cannot tokenize it: {error}")]
    results: list[DdlStatement] = []
    for statement_tokens in _split(tokens, TokenType.SEMICOLON):
        text = _text(sql, statement_tokens)
        try:
            results.append(_statement(text, tokenize(text), default_database))
        except (SchemaError, SqlglotError, NotUnderstoodError) as error:
            results.append(UnknownStatement(text, _reason(error)))
    return results


def _statement(sql: str, tokens: list[Token], default_database: str | None) -> DdlStatement:
    words = [*_words(tokens, 6), "", "", "", "", "", ""]
    head = words[0]
    if head == "CREATE":
        kind = [w for w in words[1:4] if w not in ("GLOBAL", "TEMPORARY")]
        if kind[0] == "TABLE":
            return create_table(sql, tokens, default_database)
        if kind[0] in ("UNIQUE", "FULLTEXT", "SPATIAL", "INDEX"):
            return _create_index(sql, tokens, default_database)
    if head == "ALTER" and "TABLE" in words[1:4]:
        return _alter_table(sql, tokens, default_database)
    if head == "DROP" and words[1] == "INDEX":
        return _drop_index(sql, tokens, default_database)
    if head in ("CREATE", "DROP", "RENAME", "TRUNCATE"):
        return _simple(sql, parse_statement(sql), default_database)
    if head in _RESTORING:
        return UnknownStatement(sql, f"{head} brings back tables whose schema the DDL text does not give")
    return UnknownStatement(sql, f"{head} statements do not change a table's schema facts", may_change_schema=False)


def _simple(sql: str, tree: exp.Expr, default_database: str | None) -> DdlStatement:
    kind = str(tree.args.get("kind") or "").upper()
    if isinstance(tree, RenameTables):
        pairs = tuple(
            (_name(pair.this, default_database), _name(pair.expression, default_database)) for pair in tree.expressions
        )
        return RenameTablesStatement(sql, pairs)
    if isinstance(tree, exp.TruncateTable):
        return TruncateTableStatement(sql, tuple(_name(t, default_database) for t in tree.expressions))
    if isinstance(tree, exp.Drop) and kind == "TABLE":
        tables = tuple(_name(t, default_database) for t in tree.args.get("tables") or [])
        return DropTablesStatement(sql, tables, bool(tree.args.get("exists")))
    if isinstance(tree, exp.Create | exp.Drop) and kind in ("DATABASE", "SCHEMA"):
        target = tree.this if isinstance(tree, exp.Create) else (tree.args.get("tables") or [None])[0]
        database = target.name or target.db if isinstance(target, exp.Table) else ""
        if not database:
            raise SchemaError("the statement names no database")
        if isinstance(tree, exp.Create):
            return CreateDatabaseStatement(sql, database, bool(tree.args.get("exists")))
        return DropDatabaseStatement(sql, database, bool(tree.args.get("exists")))
    what = f"{type(tree).__name__} {kind}".strip()
    if isinstance(tree, exp.Command):
        return UnknownStatement(sql, f"sqlglot does not support this {tree.name.upper()} statement")
    return UnknownStatement(
        sql, f"sqlglot reads it as {what}, which does not change a table's schema facts", may_change_schema=False
    )


def _alter_table(sql: str, tokens: list[Token], default_database: str | None) -> DdlStatement:
    start = next(p for p, token in enumerate(tokens) if token.token_type == TokenType.TABLE) + 1
    end = _name_end(tokens, start)
    name_text = _text(sql, tokens[start:end])
    table = _name(parse_table_name(name_text), default_database)
    specs: list[AlterSpec] = []
    spec_groups = _split(tokens[end:], TokenType.COMMA)
    for group in spec_groups:
        text = _text(sql, group)
        words = _words(group, 4)
        if is_partition_spec(words):
            specs.append(IgnoredSpec(sql[group[0].start : tokens[-1].end + 1], PARTITION_REASON))
            break
        try:
            tree = parse_statement(f"ALTER TABLE {name_text} {text}")
        except ParseError as error:
            tree, failure = None, _reason(error)
        else:
            failure = "sqlglot does not support this syntax"
        if isinstance(tree, exp.Alter):
            specs.extend(alter_specs(tree, text, default_database, f"table {table}"))
            continue
        reason = ignorable_reason(words)
        if reason is None:
            return UnknownStatement(sql, f"ALTER TABLE spec {text!r} is not understood: {failure}")
        specs.append(IgnoredSpec(text, reason))
    return AlterTableStatement(sql, table, tuple(specs))


def _create_index(sql: str, tokens: list[Token], default_database: str | None) -> DdlStatement:
    """``CREATE [kind] INDEX [IF NOT EXISTS] name [USING t] ON table rest`` as ALTER TABLE ADD."""
    index_at = next((p for p, token in enumerate(tokens) if token.token_type == TokenType.INDEX), None)
    on_at = next((p for p, token in enumerate(tokens) if token.token_type == TokenType.ON), None)
    if index_at is None or on_at is None or on_at < index_at:
        raise SchemaError("CREATE INDEX without ON <table>")
    table_end = _name_end(tokens, on_at + 1)
    kind = _text(sql, tokens[1:index_at])
    before_on = _text(sql, tokens[index_at + 1 : on_at])
    rest = _text(sql, tokens[table_end:])
    table_text = _text(sql, tokens[on_at + 1 : table_end])
    alter = " ".join(part for part in ("ALTER TABLE", table_text, "ADD", kind, "INDEX", before_on, rest) if part)
    return _single_spec(sql, _alter_table(alter, tokenize(alter), None), default_database, AddIndex)


def _drop_index(sql: str, tokens: list[Token], default_database: str | None) -> DdlStatement:
    """``DROP INDEX [IF EXISTS] name ON table [options]`` as ALTER TABLE DROP INDEX."""
    on_at = next((p for p, token in enumerate(tokens) if token.token_type == TokenType.ON), None)
    if on_at is None:
        raise SchemaError("DROP INDEX without ON <table>")
    table_end = _name_end(tokens, on_at + 1)
    head = _text(sql, tokens[:on_at])
    table_text = _text(sql, tokens[on_at + 1 : table_end])
    rest = _text(sql, tokens[table_end:])
    alter = " ".join(part for part in ("ALTER TABLE", table_text, head, rest) if part)
    return _single_spec(sql, _alter_table(alter, tokenize(alter), None), default_database, DropIndex)


def _single_spec(sql: str, statement: DdlStatement, default_database: str | None, wanted: type) -> DdlStatement:
    """The CREATE/DROP INDEX statement from its ALTER TABLE equivalent (SQL text of the original)."""
    if not isinstance(statement, AlterTableStatement):
        return UnknownStatement(sql, statement.reason if isinstance(statement, UnknownStatement) else "not an index")
    table = TableName(statement.table.database or default_database, statement.table.table)
    changes = [spec for spec in statement.specs if not isinstance(spec, IgnoredSpec)]
    if not changes:
        return AlterTableStatement(sql, table, statement.specs)
    if len(changes) != 1 or not isinstance(changes[0], wanted):
        return UnknownStatement(sql, "the statement does not read as one index change")
    if isinstance(changes[0], AddIndex):
        return CreateIndexStatement(sql, table, changes[0])
    assert isinstance(changes[0], DropIndex)
    return DropIndexStatement(sql, table, changes[0])


# ---------------------------------------------------------------- tokens


def _split(tokens: list[Token], separator: TokenType) -> list[list[Token]]:
    """Groups of tokens between ``separator`` tokens outside parentheses (empty groups dropped)."""
    groups: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        if token.token_type == separator and depth == 0:
            groups.append([])
        else:
            groups[-1].append(token)
    return [group for group in groups if group]


def _words(tokens: list[Token], count: int) -> list[str]:
    """The first ``count`` words, upper case (``PARTITION BY`` is one token but two words)."""
    return [word for token in tokens[:count] for word in token.text.upper().split()][:count]


def _name_end(tokens: list[Token], start: int) -> int:
    """Index after a table name starting at ``start``: ``t`` or ``db . t``."""
    if start >= len(tokens):
        raise SchemaError("the statement names no table")
    if start + 2 < len(tokens) and tokens[start + 1].token_type == TokenType.DOT:
        return start + 3
    return start + 1


def _text(sql: str, tokens: list[Token]) -> str:
    return sql[tokens[0].start : tokens[-1].end + 1] if tokens else ""


def _name(table: exp.Expr, default_database: str | None) -> TableName:
    if not isinstance(table, exp.Table) or not table.name:
        raise SchemaError("the statement names no table")
    return TableName(table.db or default_database, table.name)


def _reason(error: Exception) -> str:
    lines = str(error).splitlines()
    return lines[0] if lines else type(error).__name__

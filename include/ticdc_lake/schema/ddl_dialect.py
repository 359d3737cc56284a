"""sqlglot's MySQL dialect, extended by the TiDB DDL syntax that sqlglot 30 does not know.

Every addition is a token or grammar rule, never a text rewrite (see ``docs/ddl-parsing.md``):

* type names: ``INT3``/``MIDDLEINT`` (MEDIUMINT), ``INT8`` (BIGINT; sqlglot reads TINYINT),
  ``REAL`` (DOUBLE; sqlglot reads FLOAT), ``LONG``/``LONG VARCHAR`` (MEDIUMTEXT; sqlglot reads
  BIGINT), ``LONG VARBINARY`` (MEDIUMBLOB), ``NATIONAL CHAR``/``NATIONAL VARCHAR``/``NCHAR VARCHAR``
  and friends, ``VARCHARACTER``, ``FLOAT UNSIGNED``;
* column attributes: ``AUTO_RANDOM[(n[, m])]``, ``COLUMN_FORMAT x``, ``STORAGE x``, ``UNSIGNED``
  after ``ZEROFILL``, ``PRIMARY KEY [USING t] (a DESC) ... CLUSTERED | NONCLUSTERED``,
  ``CHECK (...) NOT ENFORCED``;
* index options: TiDB's ``GLOBAL`` / ``LOCAL``;
* ALTER TABLE: ``ADD [COLUMN] (a INT, b INT)``, ``ADD {INDEX|KEY|UNIQUE} IF NOT EXISTS``,
  ``RENAME AS``, ``CONVERT TO CHARACTER SET x [COLLATE y]``;
* ``RENAME TABLE`` is tokenized like any statement (sqlglot swallows it as one string).

TiDB's comment syntax ``/*T![feature] ... */`` and MySQL's ``/*!nnnnn ... */`` stay comments.
"""

from __future__ import annotations

from typing import Any, ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokenizer_core import Token, TokenType


class TidbColumnOption(exp.Expression, exp.ColumnConstraintKind):
    """A TiDB/MySQL column attribute without schema effect: AUTO_RANDOM, COLUMN_FORMAT, STORAGE."""

    arg_types = {"this": True, "expressions": False}


class UnsignedColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``UNSIGNED`` written after ``ZEROFILL`` (``INT(10) ZEROFILL UNSIGNED``)."""

    arg_types: ClassVar[dict[str, bool]] = {}


class TableRenamePair(exp.Expression):
    """One ``old TO new`` of a ``RENAME TABLE`` statement."""

    arg_types = {"this": True, "expression": True}


class RenameTables(exp.Expression):
    """``RENAME TABLE a TO b[, c TO d]``: :class:`TableRenamePair` expressions."""

    arg_types = {"expressions": True}


class ConvertToCharset(exp.Expression):
    """``ALTER TABLE ... CONVERT TO CHARACTER SET x [COLLATE y]``."""

    arg_types = {"this": True, "collate": False}


#: Meta key set on an index constraint written with ``IF NOT EXISTS``.
IF_NOT_EXISTS = "if_not_exists"
#: Meta key set on a ``FLOAT UNSIGNED`` data type (sqlglot has no unsigned FLOAT type).
UNSIGNED_FLOAT = "unsigned_float"


class TidbParser(MySQLParser):
    """MySQL's parser with the TiDB rules listed in the module docstring."""

    SIGNED_TO_UNSIGNED_TYPE_TOKEN = {
        **MySQLParser.SIGNED_TO_UNSIGNED_TYPE_TOKEN,
        TokenType.FLOAT: TokenType.UDOUBLE,
    }

    CONSTRAINT_PARSERS = {
        **MySQLParser.CONSTRAINT_PARSERS,
        "AUTO_RANDOM": lambda self: self._parse_tidb_option("AUTO_RANDOM", wrapped=True),
        "COLUMN_FORMAT": lambda self: self._parse_tidb_option("COLUMN_FORMAT", wrapped=False),
        "STORAGE": lambda self: self._parse_tidb_option("STORAGE", wrapped=False),
        "UNSIGNED": lambda self: self.expression(UnsignedColumnConstraint()),
    }

    STATEMENT_PARSERS = {
        **MySQLParser.STATEMENT_PARSERS,
        TokenType.RENAME: lambda self: self._parse_rename_tables(),
    }

    ALTER_PARSERS = {
        **MySQLParser.ALTER_PARSERS,
        "CONVERT": lambda self: self._parse_convert_to_charset(),
    }

    def _warn_unsupported(self) -> None:
        """Silent: the DDL parser reports a Command fallback itself, with the statement text."""

    def _parse_tidb_option(self, name: str, *, wrapped: bool) -> TidbColumnOption:
        if wrapped:
            values = self._parse_wrapped_csv(self._parse_number, optional=True)
            return self.expression(TidbColumnOption(this=exp.var(name), expressions=values))
        value = self._parse_var(any_token=True)
        return self.expression(TidbColumnOption(this=exp.var(name), expressions=[value] if value else []))

    def _parse_rename_tables(self) -> exp.Expr:
        start = self._prev
        if not (self._match(TokenType.TABLE) or self._match_text_seq("TABLES")):
            return self._parse_as_command(start)
        return self.expression(RenameTables(expressions=self._parse_csv(self._parse_rename_pair)))

    def _parse_rename_pair(self) -> TableRenamePair:
        old = self._parse_table_parts(schema=True)
        if not self._match_text_seq("TO"):
            self.raise_error("Expected TO")
        new = self._parse_table_parts(schema=True)
        return self.expression(TableRenamePair(this=old, expression=new))

    def _parse_convert_to_charset(self) -> ConvertToCharset | None:
        if not self._match_text_seq("TO"):
            return None
        if not (self._match(TokenType.CHARACTER_SET) or self._match_pair(TokenType.CHAR, TokenType.SET)):
            return None
        self._match(TokenType.EQ)
        charset = self._parse_var_or_string(upper=False)
        collate = None
        if self._match(TokenType.COLLATE):
            self._match(TokenType.EQ)
            collate = self._parse_var_or_string(upper=False)
        return self.expression(ConvertToCharset(this=charset, collate=collate))

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        start: Token | None = self._curr
        result = super()._parse_types(
            check_func=check_func, schema=schema, allow_identifiers=allow_identifiers, with_collation=with_collation
        )
        if (
            isinstance(result, exp.DataType)
            and start is not None
            and start.token_type == TokenType.FLOAT
            and result.this == exp.DType.UDOUBLE
        ):
            result.set("this", exp.DType.FLOAT)
            result.meta[UNSIGNED_FLOAT] = True
        return result

    def _parse_primary_key(
        self,
        wrapped_optional: bool = False,
        in_props: bool = False,
        named_primary_key: bool = False,
    ) -> exp.PrimaryKeyColumnConstraint | exp.PrimaryKey:
        if self._match(TokenType.USING):  # PRIMARY KEY USING BTREE (a)
            self._advance_any()
        key = super()._parse_primary_key(
            wrapped_optional=wrapped_optional, in_props=in_props, named_primary_key=named_primary_key
        )
        if self._match_texts(("CLUSTERED", "NONCLUSTERED")) and isinstance(key, exp.PrimaryKey):
            options = [*(key.args.get("options") or []), *self._parse_index_constraint_options()]
            key.set("options", options)
        return key

    def _parse_primary_key_part(self) -> exp.Expr | None:
        part = super()._parse_primary_key_part()  # ``a`` or ``a(10)``, then maybe ``ASC``/``DESC``
        if part is not None and self._match_set((TokenType.ASC, TokenType.DESC)):
            desc = self._prev.token_type == TokenType.DESC
            return self.expression(exp.Ordered(this=part, desc=desc, nulls_first=not desc))
        return part

    def _parse_check_constraint(self) -> exp.CheckColumnConstraint | None:
        check = super()._parse_check_constraint()
        if check is not None and self._match_text_seq("NOT", "ENFORCED"):
            check.set("enforced", False)
        return check

    def _parse_alter_table_add(self) -> list[exp.Expr]:
        index = self._index
        self._match(TokenType.COLUMN)
        if self._match(TokenType.L_PAREN, advance=False):
            columns = self._parse_wrapped_csv(self._parse_field_def)
            if columns and all(isinstance(column, exp.ColumnDef) for column in columns):
                return columns
        self._retreat(index)
        return super()._parse_alter_table_add()

    def _parse_alter_table_rename(self) -> Any:
        if self._match(TokenType.ALIAS):
            return self.expression(exp.AlterRename(this=self._parse_table(schema=True)))
        return super()._parse_alter_table_rename()  # type: ignore[no-untyped-call]

    def _parse_index_constraint_options(self) -> list[exp.IndexConstraintOption]:
        options = super()._parse_index_constraint_options()
        while self._match_texts(("GLOBAL", "LOCAL")):  # TiDB's global indexes of partitioned tables
            options.extend(super()._parse_index_constraint_options())
        return options

    def _parse_index_constraint(self, kind: str | None = None) -> exp.IndexColumnConstraint:
        if kind:
            self._match_texts(("INDEX", "KEY"))
        if_not_exists = self._parse_exists(not_=True)
        constraint = super()._parse_index_constraint()
        if kind:
            constraint.set("kind", kind)
        if if_not_exists:
            constraint.meta[IF_NOT_EXISTS] = True
        return constraint

    def _parse_unique(self) -> exp.UniqueColumnConstraint:
        self._match_texts(("KEY", "INDEX"))
        if_not_exists = self._parse_exists(not_=True)
        constraint = super()._parse_unique()
        if if_not_exists:
            constraint.meta[IF_NOT_EXISTS] = True
        return constraint


class TidbDdl(MySQL):
    """The dialect :mod:`ticdc_lake.schema.ddl_parser` reads TiDB DDL with."""

    class Tokenizer(MySQL.Tokenizer):
        KEYWORDS = {
            **MySQL.Tokenizer.KEYWORDS,
            "INT3": TokenType.MEDIUMINT,
            "INT8": TokenType.BIGINT,
            "MIDDLEINT": TokenType.MEDIUMINT,
            "REAL": TokenType.DOUBLE,
            "LONG": TokenType.MEDIUMTEXT,
            "LONG VARCHAR": TokenType.MEDIUMTEXT,
            "LONG VARCHARACTER": TokenType.MEDIUMTEXT,
            "LONG CHAR VARYING": TokenType.MEDIUMTEXT,
            "LONG CHARACTER VARYING": TokenType.MEDIUMTEXT,
            "LONG VARBINARY": TokenType.MEDIUMBLOB,
            "VARCHARACTER": TokenType.VARCHAR,
            "NATIONAL CHAR": TokenType.NCHAR,
            "NATIONAL CHARACTER": TokenType.NCHAR,
            "NATIONAL VARCHAR": TokenType.NVARCHAR,
            "NATIONAL VARCHARACTER": TokenType.NVARCHAR,
            "NATIONAL CHAR VARYING": TokenType.NVARCHAR,
            "NATIONAL CHARACTER VARYING": TokenType.NVARCHAR,
            "NCHAR VARCHAR": TokenType.NVARCHAR,
            "NCHAR VARCHARACTER": TokenType.NVARCHAR,
            "NCHAR VARYING": TokenType.NVARCHAR,
        }
        COMMANDS = MySQL.Tokenizer.COMMANDS - {TokenType.RENAME}

    Parser = TidbParser


_DIALECT = TidbDdl()


def tokenize(sql: str) -> list[Token]:
    """sqlglot tokens of ``sql`` (``start``/``end`` are offsets into ``sql``; comments dropped)."""
    return _DIALECT.tokenize(sql)


def parse_statement(sql: str) -> exp.Expr:
    """The one statement in ``sql``; raises sqlglot's ``ParseError``/``TokenError`` when unreadable."""
    trees = [tree for tree in _DIALECT.parse(sql) if tree is not None]
    if len(trees) != 1:
        raise sqlglot.ParseError(f"expected one statement, found {len(trees)}")
    return trees[0]


def option_value(node: exp.Expr) -> str:
    """The word or string an option node wraps: ``CHARSET utf8mb4``, ``COLLATE 'x'``, ``COMMENT 'y'``."""
    inner = node.args.get("this")
    return inner.name if isinstance(inner, exp.Expr) else str(inner or "")


def parse_table_name(text: str) -> exp.Table:
    """A possibly qualified table name (```db`.`t```)."""
    return sqlglot.parse_one(text, read=TidbDdl, into=exp.Table)

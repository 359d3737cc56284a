"""The DDL subtype and the database of a DDL statement, from its text alone.

Simple, Canal-JSON, Open and avro messages state the DDL's type (or TiDB action) themselves;
Debezium only says CREATE/ALTER/DROP, and Simple sends no database name for schema-level DDL
(``CREATE DATABASE`` has no ``tableSchema``). Both gaps are filled from the statement, which
TiCDC sends restored by TiDB's parser (upper-case keywords, backquoted names, special comments).

The subtype follows TiCDC's Simple mapping (``getDDLType``) of the action TiDB would give the
statement: ``CREATE TABLE`` → CREATE; ``CREATE INDEX`` and single-spec ``ALTER TABLE … ADD
INDEX/KEY/UNIQUE/PRIMARY KEY/FOREIGN KEY`` → CINDEX; ``DROP INDEX`` and single-spec ``… DROP
INDEX/KEY/PRIMARY KEY/FOREIGN KEY`` → DINDEX; ``DROP TABLE`` → ERASE; ``TRUNCATE`` → TRUNCATE;
``RENAME TABLE`` and ``ALTER TABLE … RENAME [TO|AS] x`` → RENAME; any other ``ALTER TABLE``
(several specs are TiDB's multi-schema change) → ALTER; everything else (databases, views, …) →
QUERY. Only a light scanner is used (quotes, parentheses, comments): decoding must not fail on a
statement a full parser would reject.
"""

from __future__ import annotations

import re

#: ALTER TABLE single-spec prefixes (upper case) → subtype; the first match wins, default ALTER.
_ALTER_SPECS = (
    ("ADD PRIMARY KEY", "CINDEX"),
    ("ADD FOREIGN KEY", "CINDEX"),
    ("ADD INDEX", "CINDEX"),
    ("ADD KEY", "CINDEX"),
    ("ADD UNIQUE", "CINDEX"),
    ("ADD FULLTEXT", "CINDEX"),
    ("ADD SPATIAL", "CINDEX"),
    ("DROP PRIMARY KEY", "DINDEX"),
    ("DROP FOREIGN KEY", "DINDEX"),
    ("DROP INDEX", "DINDEX"),
    ("DROP KEY", "DINDEX"),
    ("RENAME COLUMN", "ALTER"),
    ("RENAME INDEX", "ALTER"),
    ("RENAME KEY", "ALTER"),
    ("RENAME", "RENAME"),
)
_STATEMENTS = (
    ("CREATE TABLE", "CREATE"),
    ("CREATE INDEX", "CINDEX"),
    ("CREATE UNIQUE INDEX", "CINDEX"),
    ("CREATE FULLTEXT INDEX", "CINDEX"),
    ("CREATE SPATIAL INDEX", "CINDEX"),
    ("DROP INDEX", "DINDEX"),
    ("DROP TABLE", "ERASE"),
    ("TRUNCATE", "TRUNCATE"),
    ("RENAME TABLE", "RENAME"),
)
_SCHEMA_DDL = re.compile(
    r"^(?:CREATE|DROP|ALTER)\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(`(?:[^`]|``)+`|[^\s;]+)",
    re.IGNORECASE,
)


def ddl_type_from_sql(query: str, unknown: str | None = "QUERY") -> str | None:
    """The DDL subtype (CREATE, ALTER, ERASE, RENAME, TRUNCATE, CINDEX, DINDEX, QUERY) of ``query``.

    Database and view statements are QUERY; a statement the scanner does not know is ``unknown``.
    """
    text = " ".join(_strip_comments(query).split())
    words = text.upper()
    if _starts(words, "ALTER TABLE"):
        specs = _split_top_level(_after_name(words, len("ALTER TABLE ")))
        if len(specs) != 1:
            return "ALTER"
        spec = specs[0]
        if _starts(spec, "ADD CONSTRAINT"):
            return "CINDEX" if any(f" {kind}" in spec for kind in ("PRIMARY KEY", "UNIQUE", "FOREIGN KEY")) else "ALTER"
        for prefix, subtype in _ALTER_SPECS:
            if _starts(spec, prefix):
                return subtype
        return "ALTER"
    for prefix, subtype in _STATEMENTS:
        if _starts(words, prefix):
            return subtype
    if _SCHEMA_DDL.match(text) or _starts(words, "DROP VIEW") or (_starts(words, "CREATE") and " VIEW " in words):
        return "QUERY"
    return unknown


def schema_ddl_database(query: str) -> str | None:
    """The database of ``CREATE/DROP/ALTER DATABASE|SCHEMA [IF [NOT] EXISTS] name``, unquoted; else None."""
    match = _SCHEMA_DDL.match(" ".join(_strip_comments(query).split()))
    if match is None:
        return None
    name = match.group(1)
    if name.startswith("`"):
        return name[1:-1].replace("``", "`")
    return name


def _starts(words: str, prefix: str) -> bool:
    """``words`` begins with the keywords ``prefix`` followed by a word boundary."""
    if not words.startswith(prefix):
        return False
    rest = words[len(prefix) : len(prefix) + 1]
    return rest == "" or not (rest.isalnum() or rest == "_")


def _strip_comments(sql: str) -> str:
    """``sql`` without ``/* … */`` comments outside quotes (TiDB's special comments included)."""
    out: list[str] = []
    position, quote = 0, ""
    while position < len(sql):
        char = sql[position]
        if quote:
            out.append(char)
            if char == "\\" and quote != "`" and position + 1 < len(sql):
                out.append(sql[position + 1])
                position += 1
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
            out.append(char)
        elif sql.startswith("/*", position):
            end = sql.find("*/", position + 2)
            position = len(sql) if end < 0 else end + 2
            out.append(" ")
            continue
        else:
            out.append(char)
        position += 1
    return "".join(out)


def _split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and quotes, parts stripped, empty ones dropped."""
    parts: list[str] = []
    depth, quote, start, position = 0, "", 0, 0
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\" and quote != "`":
                position += 1
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:position].strip())
            start = position + 1
        position += 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def _after_name(text: str, position: int) -> str:
    """What follows the (maybe qualified, maybe backquoted) name at ``position``, stripped."""
    while True:
        if text.startswith("`", position):
            end = position + 1
            while True:
                end = text.find("`", end)
                if end < 0:
                    return ""
                if not text.startswith("``", end):
                    break
                end += 2
            position = end + 1
        else:
            while position < len(text) and not text[position].isspace() and text[position] not in ".,(":
                position += 1
        if not text.startswith(".", position):
            return text[position:].strip()
        position += 1

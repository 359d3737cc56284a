"""The TiDB DDL action type of a simulated DDL, and what TiCDC's encoders derive from it.

A :class:`~ticdc_lake.simulator.model.DdlChange` carries the Simple-protocol subtype and the query;
TiDB's DDL job carries an ``ActionType`` number (``pkg/meta/model/job.go``), which the Open
Protocol sends as is, Canal-JSON maps to its event type (``canal_entry.go``
``convertDdlEventType``) and Debezium to ``tableChanges[].type`` (``debezium/codec.go``
``EncodeDDLEvent``). The action is read from the subtype and, where several actions share one,
from the query's leading keywords.
"""

from __future__ import annotations

from ticdc_lake.errors import SchemaError
from ticdc_lake.simulator.model import DdlChange

CREATE_SCHEMA = 1
DROP_SCHEMA = 2
CREATE_TABLE = 3
DROP_TABLE = 4
ADD_COLUMN = 5
DROP_COLUMN = 6
ADD_INDEX = 7
DROP_INDEX = 8
TRUNCATE_TABLE = 11
MODIFY_COLUMN = 12
REBASE_AUTO_ID = 13
RENAME_TABLE = 14
SET_DEFAULT_VALUE = 15
MODIFY_TABLE_COMMENT = 17
RENAME_INDEX = 18
ADD_TABLE_PARTITION = 19
DROP_TABLE_PARTITION = 20
CREATE_VIEW = 21
MODIFY_TABLE_CHARSET = 22
TRUNCATE_TABLE_PARTITION = 23
DROP_VIEW = 24
MODIFY_SCHEMA_CHARSET = 26
ADD_PRIMARY_KEY = 32
DROP_PRIMARY_KEY = 33
ALTER_INDEX_VISIBILITY = 41
EXCHANGE_TABLE_PARTITION = 42
RENAME_TABLES = 47
CREATE_TABLES = 60
MULTI_SCHEMA_CHANGE = 61
REORGANIZE_PARTITION = 64
ALTER_TABLE_PARTITIONING = 71
REMOVE_PARTITIONING = 72

_SIMPLE_TYPES = {"CREATE": CREATE_TABLE, "ERASE": DROP_TABLE, "TRUNCATE": TRUNCATE_TABLE, "RENAME": RENAME_TABLE}
#: ALTER TABLE clauses (upper case, after the table name) → action.
_ALTER_CLAUSES = (
    ("ADD PARTITION", ADD_TABLE_PARTITION),
    ("DROP PARTITION", DROP_TABLE_PARTITION),
    ("TRUNCATE PARTITION", TRUNCATE_TABLE_PARTITION),
    ("RENAME INDEX", RENAME_INDEX),
    ("RENAME KEY", RENAME_INDEX),
    ("ADD", ADD_COLUMN),
    ("DROP", DROP_COLUMN),
    ("MODIFY", MODIFY_COLUMN),
    ("CHANGE", MODIFY_COLUMN),
    ("ALTER", SET_DEFAULT_VALUE),
    ("COMMENT", MODIFY_TABLE_COMMENT),
    ("AUTO_INCREMENT", REBASE_AUTO_ID),
    ("CHARSET", MODIFY_TABLE_CHARSET),
    ("CHARACTER SET", MODIFY_TABLE_CHARSET),
    ("DEFAULT CHARSET", MODIFY_TABLE_CHARSET),
    ("CONVERT TO", MODIFY_TABLE_CHARSET),
    ("COLLATE", MODIFY_TABLE_CHARSET),
)


def ddl_action(ddl: DdlChange) -> int:
    """The TiDB ``ActionType`` of ``ddl``; a SchemaError names the DDL when it cannot be told."""
    words = " ".join(ddl.sql.upper().split())
    if ddl.ddl_type in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[ddl.ddl_type]
    if ddl.ddl_type == "CINDEX":
        return ADD_PRIMARY_KEY if "ADD PRIMARY KEY" in words else ADD_INDEX
    if ddl.ddl_type == "DINDEX":
        return DROP_PRIMARY_KEY if "DROP PRIMARY KEY" in words else DROP_INDEX
    if ddl.ddl_type == "QUERY":
        for prefix, action in (
            ("CREATE DATABASE", CREATE_SCHEMA),
            ("CREATE SCHEMA", CREATE_SCHEMA),
            ("DROP DATABASE", DROP_SCHEMA),
            ("DROP SCHEMA", DROP_SCHEMA),
            ("ALTER DATABASE", MODIFY_SCHEMA_CHARSET),
            ("ALTER SCHEMA", MODIFY_SCHEMA_CHARSET),
            ("DROP VIEW", DROP_VIEW),
        ):
            if words.startswith(prefix):
                return action
        if words.startswith("CREATE") and " VIEW " in f"{words} ":
            return CREATE_VIEW
    if ddl.ddl_type == "ALTER":
        return _alter_action(words, ddl)
    raise SchemaError(
        f"DDL {ddl.sql!r} ({ddl.ddl_type}) on {ddl.database}.{ddl.table}: the simulator cannot tell its "
        "TiDB action type"
    )


def _alter_action(words: str, ddl: DdlChange) -> int:
    if not words.startswith("ALTER TABLE "):
        raise SchemaError(f"ALTER DDL {ddl.sql!r} on {ddl.database}.{ddl.table} is not an ALTER TABLE statement")
    parts = words.split(" ", 3)
    clauses = parts[3] if len(parts) > 3 else ""
    if "," in clauses:
        return MULTI_SCHEMA_CHANGE
    for prefix, action in _ALTER_CLAUSES:
        if clauses.startswith(prefix):
            if action == ADD_COLUMN and clauses.startswith(("ADD INDEX", "ADD KEY", "ADD UNIQUE")):
                return ADD_INDEX
            if action == DROP_COLUMN and clauses.startswith(("DROP INDEX", "DROP KEY")):
                return DROP_INDEX
            return action
    raise SchemaError(f"ALTER DDL {ddl.sql!r} on {ddl.database}.{ddl.table}: unknown clause {clauses[:40]!r}")


#: ``convertDdlEventType`` (``canal_entry.go``): the Canal event type of each action.
_CANAL_TYPES = {
    CREATE_TABLE: "CREATE",
    RENAME_TABLE: "RENAME",
    ADD_INDEX: "CINDEX",
    ADD_PRIMARY_KEY: "CINDEX",
    DROP_INDEX: "DINDEX",
    DROP_PRIMARY_KEY: "DINDEX",
    DROP_TABLE: "ERASE",
    TRUNCATE_TABLE: "TRUNCATE",
}
_CANAL_ALTER = frozenset(
    {
        ADD_COLUMN,
        DROP_COLUMN,
        MODIFY_COLUMN,
        REBASE_AUTO_ID,
        SET_DEFAULT_VALUE,
        MODIFY_TABLE_COMMENT,
        RENAME_INDEX,
        ADD_TABLE_PARTITION,
        DROP_TABLE_PARTITION,
        MODIFY_TABLE_CHARSET,
        TRUNCATE_TABLE_PARTITION,
        ALTER_INDEX_VISIBILITY,
        MULTI_SCHEMA_CHANGE,
        REORGANIZE_PARTITION,
        ALTER_TABLE_PARTITIONING,
        REMOVE_PARTITIONING,
        37,  # add columns (before TiDB 6.2)
        38,  # drop columns (before TiDB 6.2)
    }
)


def canal_event_type(action: int) -> str:
    """The Canal-JSON ``type`` of a DDL (``convertDdlEventType``; everything else is QUERY)."""
    if action in _CANAL_ALTER:
        return "ALTER"
    return _CANAL_TYPES.get(action, "QUERY")


#: ``EncodeDDLEvent`` change types; actions outside these are not sent at all.
_DEBEZIUM_CREATE = frozenset({CREATE_SCHEMA, CREATE_TABLE, CREATE_VIEW, CREATE_TABLES})
_DEBEZIUM_DROP = frozenset({DROP_SCHEMA, DROP_TABLE, DROP_INDEX, DROP_VIEW, TRUNCATE_TABLE})
_DEBEZIUM_ALTER = frozenset(
    {
        ADD_COLUMN,
        MODIFY_COLUMN,
        DROP_COLUMN,
        MULTI_SCHEMA_CHANGE,
        ADD_TABLE_PARTITION,
        REMOVE_PARTITIONING,
        REORGANIZE_PARTITION,
        EXCHANGE_TABLE_PARTITION,
        ALTER_TABLE_PARTITIONING,
        TRUNCATE_TABLE_PARTITION,
        DROP_TABLE_PARTITION,
        REBASE_AUTO_ID,
        SET_DEFAULT_VALUE,
        MODIFY_TABLE_COMMENT,
        MODIFY_TABLE_CHARSET,
        MODIFY_SCHEMA_CHARSET,
        ADD_INDEX,
        ALTER_INDEX_VISIBILITY,
        RENAME_INDEX,
        RENAME_TABLE,
        RENAME_TABLES,
        ADD_PRIMARY_KEY,
        DROP_PRIMARY_KEY,
    }
)


def debezium_change_type(action: int) -> str | None:
    """CREATE, ALTER or DROP (``tableChanges[].type``); None for actions TiCDC's Debezium encoder
    does not support (it logs them and sends nothing)."""
    if action in _DEBEZIUM_CREATE:
        return "CREATE"
    if action in _DEBEZIUM_DROP:
        return "DROP"
    if action in _DEBEZIUM_ALTER:
        return "ALTER"
    return None

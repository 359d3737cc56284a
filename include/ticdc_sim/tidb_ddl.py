"""The TiDB DDL action type of a simulated DDL, and what TiCDC's encoders derive from it.

A :class:`~ticdc_sim.model.DdlChange` carries the Simple-protocol subtype and the query;
TiDB's DDL job carries an ``ActionType`` number (``pkg/meta/model/job.go``), which the Open
Protocol sends as is, Canal-JSON maps to its event type (``canal_entry.go``
``convertDdlEventType``) and Debezium to ``tableChanges[].type`` (``debezium/codec.go``
``EncodeDDLEvent``) and Simple to its subtype (``getDDLType``). The action is read from the
statement text as TiDB's DDL executor would decide it (the subtype only breaks ties).
"""

from __future__ import annotations

from ticdc_lake.errors import SchemaError
from ticdc_sim.model import DdlChange
from ticdc_sim.sql_text import rename_pairs, skip_name, split_top_level, strip_comments

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

ADD_FOREIGN_KEY = 9
DROP_FOREIGN_KEY = 10

#: Fallback when the statement text says nothing the classifier knows (Simple subtype → action).
_SIMPLE_TYPES = {"CREATE": CREATE_TABLE, "ERASE": DROP_TABLE, "TRUNCATE": TRUNCATE_TABLE, "RENAME": RENAME_TABLE}
#: One ALTER TABLE spec (upper case, leading words) → action; the first matching prefix wins.
_ALTER_SPECS = (
    ("ADD PARTITION", ADD_TABLE_PARTITION),
    ("DROP PARTITION", DROP_TABLE_PARTITION),
    ("TRUNCATE PARTITION", TRUNCATE_TABLE_PARTITION),
    ("REORGANIZE PARTITION", REORGANIZE_PARTITION),
    ("EXCHANGE PARTITION", EXCHANGE_TABLE_PARTITION),
    ("REMOVE PARTITIONING", REMOVE_PARTITIONING),
    ("PARTITION BY", ALTER_TABLE_PARTITIONING),
    ("ADD PRIMARY KEY", ADD_PRIMARY_KEY),
    ("ADD FOREIGN KEY", ADD_FOREIGN_KEY),
    ("ADD INDEX", ADD_INDEX),
    ("ADD KEY", ADD_INDEX),
    ("ADD UNIQUE", ADD_INDEX),
    ("ADD FULLTEXT", ADD_INDEX),
    ("ADD SPATIAL", ADD_INDEX),
    ("ADD", ADD_COLUMN),
    ("DROP PRIMARY KEY", DROP_PRIMARY_KEY),
    ("DROP FOREIGN KEY", DROP_FOREIGN_KEY),
    ("DROP INDEX", DROP_INDEX),
    ("DROP KEY", DROP_INDEX),
    ("DROP", DROP_COLUMN),
    ("MODIFY", MODIFY_COLUMN),
    ("CHANGE", MODIFY_COLUMN),
    ("RENAME COLUMN", MODIFY_COLUMN),  # TiDB runs RENAME COLUMN as a modify-column job
    ("RENAME INDEX", RENAME_INDEX),
    ("RENAME KEY", RENAME_INDEX),
    ("RENAME", RENAME_TABLE),
    ("ALTER INDEX", ALTER_INDEX_VISIBILITY),
    ("ALTER", SET_DEFAULT_VALUE),
    ("COMMENT", MODIFY_TABLE_COMMENT),
    ("AUTO_INCREMENT", REBASE_AUTO_ID),
    ("CHARSET", MODIFY_TABLE_CHARSET),
    ("CHARACTER SET", MODIFY_TABLE_CHARSET),
    ("DEFAULT CHARSET", MODIFY_TABLE_CHARSET),
    ("DEFAULT CHARACTER SET", MODIFY_TABLE_CHARSET),
    ("DEFAULT COLLATE", MODIFY_TABLE_CHARSET),
    ("CONVERT TO", MODIFY_TABLE_CHARSET),
    ("COLLATE", MODIFY_TABLE_CHARSET),
)
#: Statement prefixes (upper case) → action, for everything but ALTER TABLE.
_STATEMENTS = (
    ("CREATE TABLE", CREATE_TABLE),
    ("CREATE INDEX", ADD_INDEX),
    ("CREATE UNIQUE INDEX", ADD_INDEX),
    ("CREATE FULLTEXT INDEX", ADD_INDEX),
    ("CREATE SPATIAL INDEX", ADD_INDEX),
    ("DROP INDEX", DROP_INDEX),
    ("DROP TABLE", DROP_TABLE),
    ("TRUNCATE", TRUNCATE_TABLE),
    ("RENAME TABLE", RENAME_TABLE),
    ("CREATE DATABASE", CREATE_SCHEMA),
    ("CREATE SCHEMA", CREATE_SCHEMA),
    ("DROP DATABASE", DROP_SCHEMA),
    ("DROP SCHEMA", DROP_SCHEMA),
    ("ALTER DATABASE", MODIFY_SCHEMA_CHARSET),
    ("ALTER SCHEMA", MODIFY_SCHEMA_CHARSET),
    ("DROP VIEW", DROP_VIEW),
)


def ddl_action(ddl: DdlChange) -> int:
    """The ``ActionType`` of TiCDC's DDL event for ``ddl``, told from its statement text.

    As ``DDLEvent.FromJobWithArgs`` sets it: the events TiCDC splits a multi-table ``RENAME TABLE``
    into are ``ActionRenameTable`` (14), not the job's ``ActionRenameTables`` (47). An ALTER TABLE
    with several specs is ``ActionMultiSchemaChange`` (61), as is ``ADD COLUMN (a …, b …)``. A
    SchemaError names the DDL when the text says nothing known and the subtype does not decide.
    """
    words = " ".join(strip_comments(ddl.sql).upper().split())
    if words.startswith("ALTER TABLE "):
        return _alter_action(words, ddl)
    for prefix, action in _STATEMENTS:
        if words == prefix or words.startswith(prefix + " "):
            return action
    if words.startswith("CREATE") and " VIEW " in f"{words} ":
        return CREATE_VIEW
    if ddl.ddl_type in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[ddl.ddl_type]
    raise SchemaError(
        f"DDL {ddl.sql!r} ({ddl.ddl_type}) on {ddl.database}.{ddl.table}: the simulator cannot tell its "
        "TiDB action type"
    )


def tidb_job_action(ddl: DdlChange) -> int:
    """The action of TiDB's DDL *job* (``RENAME TABLE a TO b, c TO d`` is ``ActionRenameTables``)."""
    action = ddl_action(ddl)
    if action == RENAME_TABLE and len(rename_pairs(ddl.sql)) > 1:
        return RENAME_TABLES
    return action


def _alter_action(words: str, ddl: DdlChange) -> int:
    rest = skip_name(words, len("ALTER TABLE "))
    specs = split_top_level(rest)
    if len(specs) > 1:
        return MULTI_SCHEMA_CHANGE
    spec = specs[0] if specs else ""
    if spec.startswith("ADD CONSTRAINT "):  # ADD CONSTRAINT [symbol] PRIMARY KEY | UNIQUE | FOREIGN KEY …
        for kind, action in (("PRIMARY KEY", ADD_PRIMARY_KEY), ("UNIQUE", ADD_INDEX), ("FOREIGN KEY", ADD_FOREIGN_KEY)):
            if f" {kind}" in spec:
                return action
    added = spec[len("ADD COLUMN") :].lstrip() if spec.startswith("ADD COLUMN") else spec[3:].lstrip()
    if spec.startswith("ADD") and added.startswith("(") and len(split_top_level(added[1:].rsplit(")", 1)[0])) > 1:
        return MULTI_SCHEMA_CHANGE  # TiDB splits ADD COLUMN (a, b) into one spec per column
    for prefix, action in _ALTER_SPECS:
        if spec == prefix or spec.startswith(prefix + " ") or spec.startswith(prefix + "("):
            return action
        if prefix in ("AUTO_INCREMENT", "COMMENT", "CHARSET", "COLLATE") and spec.startswith(prefix + "="):
            return action
    raise SchemaError(f"ALTER DDL {ddl.sql!r} on {ddl.database}.{ddl.table}: unknown clause {spec[:40]!r}")


#: TiDB's ActionAddColumns / ActionDropColumns, merged into ADD/DROP COLUMN since TiDB 6.2.
ADD_COLUMNS_BEFORE_6_2 = 37
DROP_COLUMNS_BEFORE_6_2 = 38

#: ``convertDdlEventType`` (``canal_entry.go``): the Canal event type of each action.
_CANAL_TYPES = {
    CREATE_TABLE: "CREATE",
    RENAME_TABLE: "RENAME",
    RENAME_TABLES: "RENAME",
    ADD_INDEX: "CINDEX",
    ADD_FOREIGN_KEY: "CINDEX",
    ADD_PRIMARY_KEY: "CINDEX",
    DROP_INDEX: "DINDEX",
    DROP_FOREIGN_KEY: "DINDEX",
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
        ADD_COLUMNS_BEFORE_6_2,
        DROP_COLUMNS_BEFORE_6_2,
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


#: ``getDDLType`` (``simple/message.go``) names the same actions as Canal's ``convertDdlEventType``.
_SIMPLE_SUBTYPES = _CANAL_TYPES


def simple_type(action: int) -> str:
    """The Simple protocol's DDL ``type`` of an action (``getDDLType``)."""
    if action in _SIMPLE_SUBTYPES:
        return _SIMPLE_SUBTYPES[action]
    # getDDLType does not list the pre-6.2 multi-column actions: they are QUERY there.
    return "ALTER" if action in _CANAL_ALTER - {ADD_COLUMNS_BEFORE_6_2, DROP_COLUMNS_BEFORE_6_2} else "QUERY"

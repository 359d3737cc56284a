"""One ALTER TABLE spec, parsed by sqlglot on its own, → :data:`AlterSpec` values.

The statement parser cuts an ALTER TABLE into its comma-separated specs (on sqlglot tokens) and
parses each as ``ALTER TABLE <name> <spec>``. A spec sqlglot cannot parse is looked at by its
first keywords: partition maintenance and table options without effect on the columns or keys
(TTL, placement, TiFlash replicas, ALGORITHM/LOCK, ...) become :class:`IgnoredSpec`; anything
else makes the whole statement an ``UnknownStatement``.
"""

from __future__ import annotations

from sqlglot import exp

from ticdc_lake.schema.ddl_defaults import default_text
from ticdc_lake.schema.ddl_dialect import ConvertToCharset, option_value
from ticdc_lake.schema.ddl_keys import PRIMARY, key_spec
from ticdc_lake.schema.ddl_statements import (
    AddColumn,
    AlterSpec,
    ColumnPosition,
    ConvertCharset,
    DropColumn,
    DropIndex,
    DropPrimaryKey,
    IgnoredSpec,
    ModifyColumn,
    RenameColumn,
    RenameIndex,
    RenameTable,
    SetColumnDefault,
    SetTableOptions,
    TableName,
)
from ticdc_lake.schema.ddl_types import ParsedColumn, parse_column
from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema

_PARTITION_VERBS = frozenset(
    {"ADD", "DROP", "TRUNCATE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD"}
    | {"REPAIR", "DISCARD", "IMPORT", "FIRST", "LAST"}
)
_OPTION_WORDS = frozenset(
    {"TTL", "TTL_ENABLE", "TTL_JOB_INTERVAL", "PLACEMENT", "AUTO_ID_CACHE", "AUTO_RANDOM_BASE", "SHARD_ROW_ID_BITS"}
    | {"PRE_SPLIT_REGIONS", "CHECKSUM", "TABLE_CHECKSUM", "CACHE", "NOCACHE", "COMPACT", "ATTRIBUTES", "ALGORITHM"}
    | {"LOCK", "FORCE", "ENGINE", "ROW_FORMAT", "KEY_BLOCK_SIZE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "MAX_ROWS"}
    | {"MIN_ROWS", "PACK_KEYS", "DELAY_KEY_WRITE", "COMPRESSION", "ENCRYPTION", "CONNECTION", "INSERT_METHOD"}
    | {"TABLESPACE", "UNION", "STORAGE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE"}
    | {"SECONDARY_LOAD", "SECONDARY_UNLOAD", "AUTOEXTEND_SIZE", "ORDER", "ENABLE", "DISABLE", "WITH", "WITHOUT"}
    | {"DATA", "INDEX"}
)
_CONSTRAINT_HEADS = frozenset(
    {("REMOVE", "TTL"), ("SET", "TIFLASH"), ("ALTER", "INDEX"), ("ALTER", "CHECK"), ("ALTER", "CONSTRAINT")}
    | {("ADD", "CHECK"), ("ADD", "FOREIGN"), ("DROP", "FOREIGN"), ("DROP", "CHECK"), ("DROP", "CONSTRAINT")}
)
PARTITION_REASON = "partitioning does not change the columns or keys"
_OPTION_REASON = "a table option without effect on the columns or keys"


class NotUnderstoodError(Exception):
    """A spec that parsed but means something this module does not turn into schema facts."""


def is_partition_spec(words: list[str]) -> bool:
    """Whether a spec starting with ``words`` (upper case) is partition maintenance or layout."""
    first, second = [*words, "", ""][:2]
    if first in ("PARTITION", "PARTITIONS") or (first == "REMOVE" and second == "PARTITIONING"):
        return True
    return first in _PARTITION_VERBS and second in ("PARTITION", "PARTITIONS")


def ignorable_reason(words: list[str]) -> str | None:
    """Why a spec sqlglot cannot parse may be ignored, by its first keywords; None if it may not."""
    padded = [*words, "", "", ""]
    if (padded[0], padded[1]) in _CONSTRAINT_HEADS:
        return "a constraint, TTL, TiFlash or visibility change does not change the columns or keys"
    if padded[0] == "ADD" and padded[1] == "CONSTRAINT" and {"CHECK", "FOREIGN"} & {padded[2], padded[3]}:
        return "a CHECK or FOREIGN KEY constraint does not change the columns or keys"
    if padded[0] in _OPTION_WORDS or padded[0].startswith("STATS_"):
        return _OPTION_REASON
    return None


def alter_specs(tree: exp.Alter, text: str, default_database: str | None, where: str) -> list[AlterSpec]:
    """The specs of one parsed spec ``text`` (``ADD (a INT, b INT)`` gives two)."""
    specs: list[AlterSpec] = []
    for action in tree.args.get("actions") or []:
        specs.extend(_action_specs(action, default_database, where))
    options = tree.args.get("options") or []
    charset = collation = comment = None
    for option in options:
        if isinstance(option, exp.CharacterSetProperty):
            charset = option_value(option).lower()
        elif isinstance(option, exp.CollateProperty):
            collation = option_value(option).lower()
        elif isinstance(option, exp.SchemaCommentProperty):
            comment = option_value(option)
        else:
            specs.append(IgnoredSpec(option.sql(dialect="mysql"), _OPTION_REASON))
    if charset is not None or collation is not None or comment is not None:
        specs.append(SetTableOptions(charset=charset, collation=collation, comment=comment))
    if not specs:
        raise NotUnderstoodError(f"sqlglot found nothing to change in {text!r}")
    return specs


def _action_specs(action: exp.Expr, default_database: str | None, where: str) -> list[AlterSpec]:
    if isinstance(action, exp.ColumnDef):
        parsed = parse_column(action, None, None, where)
        return [
            AddColumn(
                parsed.column,
                _position(action),
                inline_keys(parsed),
                parsed.generated,
                if_not_exists=bool(action.args.get("exists")),
            )
        ]
    if isinstance(action, exp.ModifyColumn):
        definition = action.this
        parsed = parse_column(definition, None, None, where)
        old = action.args.get("rename_from")
        old_name = old.name if old is not None else parsed.column.name
        return [ModifyColumn(old_name, parsed.column, _position(definition), inline_keys(parsed), parsed.generated)]
    if isinstance(action, exp.Drop):
        return [_drop(action)]
    if isinstance(action, exp.DropPrimaryKey):
        return [DropPrimaryKey()]
    if isinstance(action, exp.RenameColumn):
        return [RenameColumn(action.this.name, action.args["to"].name)]
    if isinstance(action, exp.AlterColumn):
        return [_alter_column(action, where)]
    if isinstance(action, exp.AddConstraint):
        return [key_spec(node, where) for node in action.expressions]
    if isinstance(action, exp.RenameIndex):
        return [RenameIndex(action.this.name, action.args["to"].name)]
    if isinstance(action, exp.AlterRename):
        table = action.this
        return [RenameTable(TableName(table.db or default_database, table.name))]
    if isinstance(action, exp.AlterIndex):
        return [IgnoredSpec(action.sql(dialect="mysql"), "index visibility does not change the columns or keys")]
    if isinstance(action, exp.ForceProperty):
        return [IgnoredSpec("FORCE", "rebuilding the table does not change the columns or keys")]
    if isinstance(action, ConvertToCharset):
        collation = action.args.get("collate")
        return [ConvertCharset(option_value(action).lower(), collation.name.lower() if collation is not None else None)]
    raise NotUnderstoodError(f"sqlglot read it as {type(action).__name__}, which has no schema meaning here")


def _drop(action: exp.Drop) -> AlterSpec:
    kind = str(action.args.get("kind") or "").upper()
    if_exists = bool(action.args.get("exists"))
    targets = action.args.get("tables") or []
    if kind in ("FOREIGN KEY", "CHECK", "CONSTRAINT"):
        return IgnoredSpec(action.sql(dialect="mysql"), "a constraint does not change the columns or keys")
    if len(targets) != 1 or kind not in ("COLUMN", "INDEX"):
        raise NotUnderstoodError(f"DROP {kind} of {len(targets)} objects has no schema meaning here")
    name = targets[0].name
    return DropColumn(name, if_exists) if kind == "COLUMN" else DropIndex(name, if_exists)


def _alter_column(action: exp.AlterColumn, where: str) -> AlterSpec:
    name = action.this.name
    if action.args.get("visible") or action.args.get("comment") is not None:
        return IgnoredSpec(action.sql(dialect="mysql"), "column visibility or comment does not change the schema")
    if action.args.get("drop") and not action.args.get("allow_null"):
        return SetColumnDefault(name, None)
    default = action.args.get("default")
    if default is None:
        raise NotUnderstoodError(f"ALTER COLUMN {action.sql(dialect='mysql')!r} has no MySQL meaning")
    as_text = default_text(default, ColumnSchema(name, "varchar"), where)
    as_number = default_text(default, ColumnSchema(name, "bigint"), where)
    return SetColumnDefault(name, as_text, as_number if as_number != as_text else None)


def _position(definition: exp.Expr) -> ColumnPosition | None:
    position = definition.args.get("position")
    if not isinstance(position, exp.ColumnPosition):
        return None
    if str(position.args.get("position")).upper() == "FIRST":
        return ColumnPosition(first=True)
    return ColumnPosition(after=position.this.name)


def inline_keys(parsed: ParsedColumn) -> tuple[IndexSchema, ...]:
    """The keys declared on a column itself (``PRIMARY KEY``, ``UNIQUE``), unnamed unique keys."""
    keys = []
    name = parsed.column.name
    if parsed.primary:
        keys.append(IndexSchema(PRIMARY, (name,), primary=True, unique=True))
    if parsed.unique:
        keys.append(IndexSchema("", (name,), unique=True))
    return tuple(keys)

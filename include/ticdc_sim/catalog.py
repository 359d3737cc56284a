"""The simulated upstream tables: four templates that together cover the replicated TiDB types.

* ``orders``, key ``id`` BIGINT (an int primary key is TiDB's row handle): bigint, varchar
  (multi-byte), decimal(12,2), enum, datetime, timestamp(3), text.
* ``accounts``, key ``account_code`` VARCHAR(32): varchar, decimal(20,6), bigint unsigned, date,
  timestamp, varbinary, json.
* ``order_lines``, composite key ``(order_id, line_no)``: bigint, int, binary(8),
  decimal(10,4), double, datetime(6), bigint unsigned, varchar.
* ``sensor_readings``, composite key ``(device_id, reading_id)``: int unsigned, bigint, tinyint,
  smallint unsigned, mediumint, year, float, set, bit(8), char.

* ``event_log`` (``WorkloadConfig.keyless_tables``), NO primary or unique key (TiCDC
  ``force-replicate``; rows form a multiset): int, varchar, decimal(10,2), datetime, all nullable.

Table ``i`` uses template ``i % 4`` (name suffixed ``_<i // 4>`` from the fifth table on) and lives
in database ``i % databases`` (``<prefix>``, ``<prefix>_1``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ticdc_lake.schema.table_schema import ColumnSchema, IndexSchema, TableSchema
from ticdc_lake.schema.tidb_lengths import tidb_default_length
from ticdc_sim.column_types import TEXT_TYPES

#: How new keys are made: ``sequence`` (auto-increment style id), ``code`` (varchar codes),
#: ``composite`` (random pairs).
KeyStyle = str


def column(
    name: str,
    mysql_type: str,
    *,
    length: int | None = None,
    scale: int | None = None,
    fsp: int | None = None,
    unsigned: bool = False,
    nullable: bool = True,
    default: str | None = None,
    elements: tuple[str, ...] | None = None,
) -> ColumnSchema:
    """A column as TiDB describes it: explicit display length, charset and collation filled in."""
    textual = mysql_type in TEXT_TYPES or mysql_type in ("enum", "set")
    charset, collation = ("utf8mb4", "utf8mb4_bin") if textual else ("binary", "binary")
    draft = ColumnSchema(
        name=name,
        mysql_type=mysql_type,
        length=length,
        scale=scale if mysql_type == "decimal" else None,
        fsp=fsp if mysql_type in ("datetime", "timestamp", "time") else None,
        unsigned=unsigned,
        nullable=nullable,
        default=default,
        charset=charset,
        collation=collation,
        elements=elements,
    )
    if mysql_type == "decimal" and scale is None:
        draft = replace(draft, scale=0)
    if length is None:
        draft = replace(draft, length=tidb_default_length(draft))
    return draft


def _index(name: str, columns: tuple[str, ...], table_columns: tuple[ColumnSchema, ...], **flags: bool) -> IndexSchema:
    by_name = {c.name: c for c in table_columns}
    nullable = any(by_name[c].nullable for c in columns)
    return IndexSchema(name=name, columns=columns, nullable=nullable, **flags)


@dataclass(frozen=True, slots=True)
class TableTemplate:
    name: str
    key_style: KeyStyle
    build: Callable[[str, str], TableSchema]


def _orders(database: str, table: str) -> TableSchema:
    cols = (
        column("id", "bigint", nullable=False),
        column("customer", "varchar", length=64, nullable=False),
        column("city", "varchar", length=32),
        column("amount", "decimal", length=12, scale=2, nullable=False, default="0.00"),
        column("status", "enum", elements=("new", "paid", "shipped", "cancelled"), nullable=False, default="new"),
        column("created_at", "datetime", fsp=0, nullable=False),
        column("updated_at", "timestamp", fsp=3),
        column("note", "text"),
    )
    # An int primary key is TiDB's row handle: it is not in the index list, and TiCDC appends a
    # synthetic "primary" index after the real ones.
    indexes = (
        _index("idx_customer", ("customer",), cols),
        _index("primary", ("id",), cols, primary=True, unique=True),
    )
    return TableSchema(database, table, cols, indexes, source="simulator")


def _accounts(database: str, table: str) -> TableSchema:
    cols = (
        column("account_code", "varchar", length=32, nullable=False),
        column("owner", "varchar", length=64, nullable=False),
        column("balance", "decimal", length=20, scale=6, nullable=False),
        column("lifetime_points", "bigint", unsigned=True, nullable=False),
        column("opened_on", "date", nullable=False),
        column("last_login", "timestamp", fsp=0),
        column("avatar", "varbinary", length=64),
        column("profile", "json"),
    )
    indexes = (_index("PRIMARY", ("account_code",), cols, primary=True, unique=True),)
    return TableSchema(database, table, cols, indexes, source="simulator")


def _order_lines(database: str, table: str) -> TableSchema:
    cols = (
        column("order_id", "bigint", nullable=False),
        column("line_no", "int", nullable=False),
        column("sku", "binary", length=8, nullable=False),
        column("quantity", "int", nullable=False, default="1"),
        column("unit_price", "decimal", length=10, scale=4),
        column("weight_kg", "double"),
        column("shipped_at", "datetime", fsp=6),
        column("counter", "bigint", unsigned=True),
        column("label", "varchar", length=40),
    )
    indexes = (
        _index("PRIMARY", ("order_id", "line_no"), cols, primary=True, unique=True),
        _index("idx_sku", ("sku",), cols),
    )
    return TableSchema(database, table, cols, indexes, source="simulator")


def _sensor_readings(database: str, table: str) -> TableSchema:
    cols = (
        column("device_id", "int", unsigned=True, nullable=False),
        column("reading_id", "bigint", nullable=False),
        column("level", "tinyint"),
        column("channel", "smallint", unsigned=True),
        column("offset_mv", "mediumint"),
        column("model_year", "year"),
        column("temperature", "float"),
        column("flags", "set", elements=("calibrated", "outlier", "manual")),
        column("mask", "bit", length=8),
        column("site", "char", length=6),
    )
    indexes = (_index("PRIMARY", ("device_id", "reading_id"), cols, primary=True, unique=True),)
    return TableSchema(database, table, cols, indexes, source="simulator")


def _event_log(database: str, table: str) -> TableSchema:
    cols = (
        column("event_type", "int"),
        column("source", "varchar", length=32),
        column("amount", "decimal", length=10, scale=2),
        column("happened_at", "datetime", fsp=0),
    )
    return TableSchema(database, table, cols, (), source="simulator")


#: The keyless template (key style ``keyless``: rows are a multiset, see ``workload_keyless``).
KEYLESS_TEMPLATE = TableTemplate("event_log", "keyless", _event_log)

TEMPLATES: tuple[TableTemplate, ...] = (
    TableTemplate("orders", "sequence", _orders),
    TableTemplate("accounts", "code", _accounts),
    TableTemplate("order_lines", "composite", _order_lines),
    TableTemplate("sensor_readings", "composite", _sensor_readings),
)


def database_name(prefix: str, index: int) -> str:
    return prefix if index == 0 else f"{prefix}_{index}"


def table_layout(tables: int, databases: int, prefix: str) -> list[tuple[str, str, TableTemplate]]:
    """``(database, table, template)`` for each of the ``tables`` simulated tables."""
    layout = []
    for i in range(tables):
        template = TEMPLATES[i % len(TEMPLATES)]
        round_ = i // len(TEMPLATES)
        name = template.name if round_ == 0 else f"{template.name}_{round_}"
        layout.append((database_name(prefix, i % databases), name, template))
    return layout


def keyless_layout(tables: int, databases: int, prefix: str) -> list[tuple[str, str, TableTemplate]]:
    """``(database, table, template)`` for ``tables`` keyless tables: ``event_log``,
    ``event_log_1``, ... in database ``j % databases``."""
    return [
        (database_name(prefix, j % databases), KEYLESS_TEMPLATE.name + (f"_{j}" if j else ""), KEYLESS_TEMPLATE)
        for j in range(tables)
    ]

"""Which tables a rebuild resets: the names asked for, resolved against what the pipeline landed.

A name is ``db.table`` (upstream names) or the Iceberg name (``namespace.table``, optionally with
the catalog in front); ``*`` is every table of the pipeline. A table renamed upstream brings every
name it had along (its rows before the RENAME are under the old name), so the set is closed under
the RENAMEs found in the change events. A table whose database was dropped upstream (DROP DATABASE)
is rebuilt only with every table (``*``): replaying that DROP would touch the database's other
tables (``docs/rebuild.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ticdc_lake.config import PipelineConfig
from ticdc_lake.errors import RebuildError
from ticdc_lake.identifiers import sql_string
from ticdc_lake.spark.ddl_sequence import collect_ddls
from ticdc_lake.spark.system_tables import SystemTables
from ticdc_lake.spark.target_tables import TargetTable

Name = tuple[str, str]
ALL = "*"
_DROP_DATABASE = re.compile(r"\s*DROP\s+(DATABASE|SCHEMA)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class RebuildScope:
    #: Upstream (database, table) names whose Iceberg tables and positions are reset.
    names: tuple[Name, ...]
    #: Databases whose database-level DDL positions are reset too (only when every table is rebuilt).
    databases: tuple[str, ...] = ()
    everything: bool = False
    #: The names asked for, as given (for the ledger and logs).
    asked: tuple[str, ...] = field(default_factory=tuple)

    def targets(self, pipeline: PipelineConfig) -> list[TargetTable]:
        return [TargetTable.for_upstream(pipeline, d, t) for d, t in self.names]

    def describe(self) -> str:
        names = ", ".join(f"{d}.{t}" for d, t in self.names)
        return ("every table: " if self.everything else "") + (names or "no table")


def parse_request(value: str | Sequence[str] | None) -> list[str]:
    """The DAG parameter or command line value as a list of names: a list, one name, or ``*``."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item and item.strip()]


def resolve(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig, requested: Sequence[str]
) -> RebuildScope:
    """The scope of ``requested`` (non-empty); :class:`RebuildError` for a name the pipeline never saw."""
    known = _known_names(spark, tables, pipeline)
    renames, dropped_databases = _renames_and_database_drops(spark, tables, pipeline)
    everything = ALL in requested
    if everything:
        names = set(known)
        for old, new in renames:
            names.update(n for n in (old, new) if pipeline.target.wants(*n))
        ordered = tuple(sorted(names))
        databases = tuple(sorted({d for d, _ in ordered} | dropped_databases))
        return RebuildScope(ordered, databases, True, tuple(requested))
    chosen: set[Name] = set()
    for text in requested:
        chosen.add(_match(text, known, pipeline))
    closed = _rename_closure(chosen, renames)
    blocked = sorted(f"{d}.{t}" for d, t in closed if d in dropped_databases)
    if blocked:
        raise RebuildError(
            f"pipeline {pipeline.id!r}: cannot rebuild {', '.join(blocked)} alone: its database was dropped upstream "
            "(DROP DATABASE in the landed events), and replaying that DROP would drop the database's other tables "
            'too. Rebuild every table of the pipeline instead (`--all`, or the DAG parameter rebuild: "*")'
        )
    return RebuildScope(tuple(sorted(n for n in closed if pipeline.target.wants(*n))), (), False, tuple(requested))


def _match(text: str, known: Iterable[Name], pipeline: PipelineConfig) -> Name:
    """``text`` as an upstream name, else as an Iceberg name; exact first, then ignoring case."""
    names = sorted(known)
    for fold in (False, True):

        def same(a: str, b: str, fold: bool = fold) -> bool:
            return a.lower() == b.lower() if fold else a == b

        for database, table in names:
            target = TargetTable.for_upstream(pipeline, database, table)
            spellings = (
                f"{database}.{table}",
                f"{target.namespace}.{target.name}",
                f"{target.catalog}.{target.namespace}.{target.name}",
            )
            if any(same(text, s) for s in spellings):
                return database, table
    sample = ", ".join(f"{d}.{t}" for d, t in names[:20]) or "none"
    raise RebuildError(
        f"pipeline {pipeline.id!r}: no table {text!r} in its landed events or schema history (known: {sample}"
        f"{', ...' if len(names) > 20 else ''}); name it as database.table (upstream) or namespace.table (Iceberg)"
    )


def _known_names(spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig) -> set[Name]:
    pid = sql_string(pipeline.id)
    rows = spark.sql(
        f"SELECT DISTINCT `database`, `table` FROM {tables.change_events} "
        f"WHERE pipeline = {pid} AND `table` IS NOT NULL AND `database` IS NOT NULL "
        f"UNION SELECT DISTINCT `database`, `table` FROM {tables.schema_history} WHERE pipeline = {pid}"
    ).collect()
    return {(r["database"], r["table"]) for r in rows if pipeline.target.wants(r["database"], r["table"])}


def _renames_and_database_drops(
    spark: SparkSession, tables: SystemTables, pipeline: PipelineConfig
) -> tuple[list[tuple[Name, Name]], set[str]]:
    ddl_rows = spark.table(tables.change_events).where(
        (F.col("pipeline") == pipeline.id) & (F.col("kind") == "DDL") & F.col("database").isNotNull()
    )
    renames: list[tuple[Name, Name]] = []
    dropped: set[str] = set()
    for ddl in collect_ddls(ddl_rows):
        if ddl.name is None:
            if _DROP_DATABASE.match(ddl.event.query or ""):
                dropped.add(ddl.event.database)
        elif ddl.old_name is not None:
            renames.append((ddl.old_name, ddl.name))
    return renames, dropped


def _rename_closure(chosen: set[Name], renames: list[tuple[Name, Name]]) -> set[Name]:
    """Every name connected to a chosen one by RENAMEs (either direction)."""
    closed = set(chosen)
    grew = True
    while grew:
        grew = False
        for old, new in renames:
            if (old in closed) != (new in closed):
                closed.update((old, new))
                grew = True
    return closed

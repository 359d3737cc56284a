"""The oracle's answer: what the Iceberg table of an upstream table must hold after the pipeline
applied everything up to a TSO, under the pipeline's :class:`~ticdc_lake.config.Policies`.

Values follow docs/type-mapping.md (:mod:`ticdc_sim.expected_values`); columns and rows
after DDL follow docs/schema-evolution.md (:mod:`ticdc_sim.expected_evolution`). Which upstream table an
Iceberg name holds: the table of that name at the TSO (its rows from before a RENAME included);
after DROP TABLE the dropped table as of its drop under ``on_drop_table: keep``, nothing under
``drop``; nothing under a name renamed away; a table created again is a fresh table.
"""

from __future__ import annotations

from ticdc_lake.config import DropTablePolicy, Policies
from ticdc_sim.expected_evolution import Evolution
from ticdc_sim.expected_values import IcebergValue, expected_iceberg_value
from ticdc_sim.model import UpstreamModel
from ticdc_sim.model_lineage import Lineage, RowVersion, key_sort_value

__all__ = [
    "IcebergValue",
    "expected_iceberg_columns",
    "expected_iceberg_key",
    "expected_iceberg_rows",
    "expected_iceberg_value",
    "iceberg_table_source",
]


def iceberg_table_source(
    model: UpstreamModel, database: str, table: str, tso: int, policies: Policies
) -> tuple[Lineage, int] | None:
    """The upstream table whose data the Iceberg table ``database.table`` holds after applying up
    to ``tso``, and the TSO to read it at (the drop's for a kept dropped table); None: no table."""
    ref = (database, table)
    model.last_lineage(database, table)  # unknown names raise
    best: tuple[int, Lineage] | None = None
    for lineage in model.lineages():
        acquired = [ts for ts, name in lineage.names if name == ref and ts <= tso and lineage.created_ts <= tso]
        if acquired and (best is None or max(acquired) >= best[0]):
            best = (max(acquired), lineage)
    if best is None:
        return None
    lineage = best[1]
    if lineage.name_at(tso) == ref:
        return lineage, tso
    dropped = lineage.dropped_ts
    if dropped is None or dropped > tso or lineage.name_at(dropped - 1) != ref:
        return None  # renamed away
    return (lineage, dropped) if policies.on_drop_table is DropTablePolicy.KEEP else None


def _evolution(
    model: UpstreamModel, database: str, table: str, tso: int, policies: Policies
) -> tuple[Lineage, int, Evolution] | None:
    source = iceberg_table_source(model, database, table, tso, policies)
    if source is None:
        return None
    lineage, at = source
    evolution = Evolution(lineage, at, policies)
    if evolution.halted_at is not None:
        at = evolution.halted_at
    return lineage, at, evolution


def expected_iceberg_rows(
    model: UpstreamModel, database: str, table: str, tso: int, policies: Policies | None = None
) -> list[dict[str, IcebergValue]] | None:
    """The rows of the Iceberg table for ``database.table`` after applying up to ``tso``, sorted by
    the upstream key, as ``table.scan().to_arrow().to_pylist()`` returns them; None when that
    Iceberg table must not exist."""
    found = _evolution(model, database, table, tso, policies or Policies())
    if found is None:
        return None
    lineage, at, evolution = found
    rows = []
    for version in _sorted_versions(lineage, at):
        assert version.origin is not None, "a live row has a DML origin"
        rows.append(evolution.image(*version.origin))
    return rows


def expected_iceberg_columns(
    model: UpstreamModel, database: str, table: str, tso: int, policies: Policies | None = None
) -> list[tuple[str, str]]:
    """The Iceberg table's columns in order as ``(name, Iceberg type)``; [] when it must not exist."""
    found = _evolution(model, database, table, tso, policies or Policies())
    return found[2].columns() if found is not None else []


def expected_iceberg_key(
    model: UpstreamModel, database: str, table: str, tso: int, policies: Policies | None = None
) -> tuple[str, ...]:
    """The identifier fields (upstream handle key) of the Iceberg table; () when it must not exist."""
    found = _evolution(model, database, table, tso, policies or Policies())
    if found is None:
        return ()
    lineage, at, _ = found
    schema = lineage.schema_at(min(at, lineage.dropped_ts - 1 if lineage.dropped_ts is not None else at))
    return schema.handle_key() if schema is not None else ()


def _sorted_versions(lineage: Lineage, tso: int) -> list[RowVersion]:
    return [v for _, v in sorted(lineage.versions_at(tso), key=lambda item: key_sort_value(item[0]))]

"""After a run: every Iceberg table the model knows a name for equals the model at the run's watermark.

The oracle is :mod:`ticdc_sim.expected` (None: that Iceberg table must not exist). A
name the pipeline has not applied yet must be absent or empty; an applied one must have the
model's columns, identifier fields and rows. Debezium sends DECIMAL as a float64
(docs/protocols.md): its expected decimals are the values as they arrive, as in
tests/e2e/test_schema_evolution.py.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pyiceberg.exceptions import NoSuchTableError

from tests.ticdc_lake.protocols.roundtrip_expectations import expected_text
from ticdc_lake.config import PipelineConfig
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_sim.compare import table_differences
from ticdc_sim.expected import expected_iceberg_columns, expected_iceberg_key, expected_iceberg_rows
from ticdc_sim.model import TableRef
from ticdc_sim.simulator import TicdcSimulator

#: Differences printed per table.
FIRST_DIFFERENCES = 6


def table_names(sim: TicdcSimulator) -> list[TableRef]:
    """Every name any upstream table had (renamed, dropped and truncated tables included)."""
    return sorted({name for lineage in sim.model.lineages() for _, name in lineage.names})


def _debezium_decimals(
    sim: TicdcSimulator, ref: TableRef, tso: int, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    history = sim.model.schema_history(*ref)
    schema = sim.model.schema_at(*ref, tso) or history[-1][1]
    result = []
    for row in rows:
        row = dict(row)
        for col in schema.columns:
            value = row.get(col.name)
            if col.mysql_type == "decimal" and isinstance(value, Decimal):
                sent = Decimal(expected_text("debezium", col, value) or "0")
                exact = sent.quantize(Decimal(1).scaleb(-(col.scale or 0)), ROUND_HALF_UP)
                row[col.name] = exact if len(exact.as_tuple().digits) <= (col.length or 38) else None
        result.append(row)
    return result


def _columns(table: Any) -> list[tuple[str, str]]:
    return [(f.name, str(f.field_type).replace(" ", "")) for f in table.schema().fields]


def _identifier(table: Any) -> tuple[str, ...]:
    schema = table.schema()
    return tuple(schema.find_field(i).name for i in schema.identifier_field_ids)


def check_table(
    sim: TicdcSimulator, catalog: Any, pipeline: PipelineConfig, ref: TableRef, watermark: int, protocol: str
) -> tuple[list[str], int]:
    """The differences of one table name from the model at ``watermark`` (empty when equal), and
    how many rows the model expects there."""
    database, table = ref
    policies = pipeline.policies
    expected = expected_iceberg_rows(sim.model, database, table, watermark, policies)
    identifier = (pipeline.target.namespace_for(database), iceberg_table_name(table))
    try:
        iceberg = catalog.load_table(identifier)
    except NoSuchTableError:
        iceberg = None
    if iceberg is None:
        if expected:
            return [f"the Iceberg table {'.'.join(identifier)} does not exist; the model has {len(expected)} row(s)"], 0
        return [], 0
    rows = iceberg.scan().to_arrow().to_pylist()
    if expected is None:
        if rows:
            return [f"must not exist or be empty at this watermark, holds {len(rows)} row(s): {rows[:2]}"], 0
        return [], 0
    problems = []
    columns = expected_iceberg_columns(sim.model, database, table, watermark, policies)
    if _columns(iceberg) != columns:
        problems.append(f"columns {_columns(iceberg)} != model {columns}")
    key = tuple(expected_iceberg_key(sim.model, database, table, watermark, policies))
    if _identifier(iceberg) != key:
        problems.append(f"identifier fields {_identifier(iceberg)} != model {key}")
    if protocol == "debezium":
        expected = _debezium_decimals(sim, ref, watermark, expected)
    problems.extend(table_differences(expected, rows, limit=FIRST_DIFFERENCES))
    return problems, len(expected)

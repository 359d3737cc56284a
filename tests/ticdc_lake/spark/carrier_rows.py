"""Expected ``change_events`` rows of decoded events, with the typed record carrier the workers add."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ticdc_lake.events import ChangeEvent
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.spark.arrow_decode.image_records import CARRIER_COLUMNS, ImageRecords
from ticdc_lake.spark.decode_arrow import events_to_arrow
from ticdc_lake.spark.event_rows import event_row
from ticdc_lake.spark.system_tables import CARRIER_SQL


def event_rows_with_carrier(
    pipeline_id: str, batch_id: str, run_id: str, events: Sequence[ChangeEvent], lookup: MemorySchemaLookup
) -> list[tuple[Any, ...]]:
    """``event_row`` of each event, its carrier made by ``ImageRecords`` over ``lookup`` (maps as
    dicts and records as bytes, as Spark collects them); a row given a carrier has no maps."""
    carried = ImageRecords(lookup).add(events_to_arrow(pipeline_id, batch_id, run_id, events))
    carrier = zip(*(carried[name].to_pylist() for name in CARRIER_COLUMNS), strict=True)
    sides = [carried.schema.get_field_index(side) for side in ("before", "after")]
    rows = []
    for e, c in zip(events, carrier, strict=True):
        row = list(event_row(pipeline_id, batch_id, run_id, e)[: -len(CARRIER_COLUMNS)]) + list(map(_as_spark, c))
        if c[CARRIER_COLUMNS.index("record_layout")] is not None:
            for at in sides:
                row[at] = None
        rows.append(tuple(row))
    return rows


def _as_spark(value: Any) -> Any:
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return dict(value)
    return value


def without_carrier(frame: Any) -> Any:
    """``frame`` (a subset of ``change_events``' columns, as the apply frames' tests build it) with the
    carrier columns NULL and, if it has none, a NULL ``schema_version``: rows decoded before the
    carrier, which apply types from their maps."""
    from pyspark.sql import functions as F

    columns = {name: F.lit(None).cast(kind) for name, kind in CARRIER_SQL}
    if "schema_version" not in frame.columns:
        columns["schema_version"] = F.lit(None).cast("decimal(20,0)")
    return frame.withColumns(columns)

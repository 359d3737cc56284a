"""Counting the TIMESTAMP values of a segment that TiCDC sends for two instants (``ticdc_lake.ambiguous_times``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ticdc_lake.ambiguous_times import text_prefixes
from ticdc_lake.protocols.registry import decoder_class
from ticdc_lake.schema.table_schema import TableSchema

log = logging.getLogger(__name__)


def reading_of(protocol: str) -> str:
    """How a protocol's TIMESTAMP became UTC, as its decoder declares (``Decoder.timestamp_reading``)."""
    return decoder_class(protocol).timestamp_reading


def timestamp_columns(schema: TableSchema) -> list[str]:
    return [c.name for c in schema.columns if c.mysql_type.lower() == "timestamp"]


def counts_need_rows(schema: TableSchema, zone: str, reading: str) -> bool:
    """Whether :func:`ambiguous_counts` reads the rows (a Spark job) for this table and zone."""
    return bool(timestamp_columns(schema)) and bool(text_prefixes(zone, reading))


def ambiguous_counts(dml: DataFrame, columns: Sequence[str], zone: str, reading: str) -> dict[str, int]:
    """Per TIMESTAMP column, the values of the after images in an ambiguous interval of ``zone``
    (only the columns with some); no Spark job when the zone has none or the table no such column."""
    groups = text_prefixes(zone, reading)
    if not groups or not columns:
        return {}
    aliases = [f"c{i}" for i in range(len(columns))]
    row = dml.select(
        *[
            F.count(F.when(_ambiguous(F.col("after")[name], groups), 1)).alias(a)
            for name, a in zip(columns, aliases, strict=True)
        ]
    ).first()
    if row is None:
        return {}
    return {name: int(row[a]) for name, a in zip(columns, aliases, strict=True) if row[a]}


def warn(target: str, counts: dict[str, int], zone: str) -> None:
    for column, count in counts.items():
        log.warning(
            "apply: %s: %d TIMESTAMP value(s) of column %s lie in a repeated daylight-saving interval of %s that "
            "TiCDC sends for two instants: each may be one shift off (docs/canonical-values.md, TIMESTAMP)",
            target,
            count,
            column,
            zone,
        )


def _ambiguous(value: Column, groups: tuple[tuple[int, frozenset[str]], ...]) -> Column:
    tests = [F.substring(value, 1, length).isin(sorted(prefixes)) for length, prefixes in groups]
    return reduce(lambda a, b: a | b, tests)

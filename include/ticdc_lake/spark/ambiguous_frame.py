"""Counting the TIMESTAMP values of a segment that TiCDC sends for two instants (``ticdc_lake.ambiguous_times``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from ticdc_lake.ambiguous_times import instant_buckets, text_prefixes
from ticdc_lake.protocols.registry import decoder_class
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.record_images import VersionLayout, same_schema_groups

#: The carried type of a TIMESTAMP column read as an instant.
INSTANT = "timestamptz"

log = logging.getLogger(__name__)


def reading_of(protocol: str) -> str:
    """How a protocol's TIMESTAMP became UTC, as its decoder declares (``Decoder.timestamp_reading``)."""
    return decoder_class(protocol).timestamp_reading


def timestamp_columns(schema: TableSchema) -> list[str]:
    return [c.name for c in schema.columns if c.mysql_type.lower() == "timestamp"]


def counts_need_rows(schema: TableSchema, zone: str, reading: str) -> bool:
    """Whether :func:`ambiguous_counts` reads the rows (a Spark job) for this table and zone."""
    return bool(timestamp_columns(schema)) and bool(text_prefixes(zone, reading))


def ambiguous_counts(
    dml: DataFrame, columns: Sequence[str], zone: str, reading: str, layouts: Sequence[VersionLayout] = ()
) -> dict[str, int]:
    """Per TIMESTAMP column, the values of the after images in an ambiguous interval of ``zone``
    (only the columns with some); no Spark job when the zone has none or the table no such column.
    A row of one of ``layouts``' versions that carries its record is read from it (the typed
    instant, ``instant_buckets``; a text the record could not hold from its untyped texts; the text
    of a column kept as string), any other row from its map's text (``text_prefixes``): the same
    values either way, so a row that carries no map is counted too."""
    groups = text_prefixes(zone, reading)
    if not groups or not columns:
        return {}
    by_record = _record_tests(columns, layouts, instant_buckets(zone, reading), groups)
    aliases = [f"c{i}" for i in range(len(columns))]
    tests = []
    for name in columns:
        by_text = _ambiguous(F.col("after")[name], groups)
        chosen = by_record.get(name)
        tests.append(chosen.otherwise(by_text) if chosen is not None else by_text)
    row = dml.select(*[F.count(F.when(test, 1)).alias(a) for test, a in zip(tests, aliases, strict=True)]).first()
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


def _record_tests(
    columns: Sequence[str],
    layouts: Sequence[VersionLayout],
    buckets: tuple[tuple[int, frozenset[int]], ...],
    groups: tuple[tuple[int, frozenset[str]], ...],
) -> dict[str, Column]:
    """Per column, the test of the rows whose record carries it as an instant (``timestamptz``) or
    as its text (a column kept as string): a CASE on the row's version, no branch for the other
    rows (NULL: the caller's ``otherwise``)."""
    record, untyped = F.col("after_record"), F.col("after_untyped")
    tests: dict[str, Column] = {}
    for same in same_schema_groups(layouts):
        names, types = same[0].names, same[0].types
        mine = record.isNotNull() & F.col("schema_version").isin([layout.version for layout in same])
        fields = from_avro(record, same[0].schema_json())
        for name in columns:
            carried = types[names.index(name)] if name in names else None
            field = fields[f"c{names.index(name)}"] if carried is not None else None
            if field is None or carried not in (INSTANT, "string"):
                continue
            if carried == "string":  # a column kept as string: the record holds the text as sent
                test = F.coalesce(_ambiguous(field, groups), F.lit(False))
            else:
                micros = F.unix_micros(field)
                test = reduce(lambda a, b: a | b, [F.floor(micros / step).isin(sorted(b)) for step, b in buckets])
                # A text the instant could not hold (a zero TIMESTAMP) is kept as sent: test it as text.
                test = F.coalesce(test, F.lit(False)) | F.coalesce(_ambiguous(untyped[name], groups), F.lit(False))
            tests[name] = F.when(mine, test) if name not in tests else tests[name].when(mine, test)
    return tests


def _ambiguous(value: Column, groups: tuple[tuple[int, frozenset[str]], ...]) -> Column:
    tests = [F.substring(value, 1, length).isin(sorted(prefixes)) for length, prefixes in groups]
    return reduce(lambda a, b: a | b, tests)

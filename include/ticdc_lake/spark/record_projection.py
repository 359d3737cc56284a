"""The typed MERGE source read from record images: ``merge_sql.typed_projection`` for the record carrier.

A segment's rows share their version's columns, so one writer schema reads them all
(``from_avro``, no text parsed). Each target column (matched by exact name, as the map's keys
are) takes the field of its version column:

* the carried type is the target's: the field as it is;
* the target widened it (``int`` → ``long``, decimal precision up): a cast;
* otherwise (the history did not foresee the target's type: docs/typed-row-images.md) the value's
  text, made by Spark, typed as the target's type as a map's text would be. Exact for integers,
  dates, strings and binary; DECIMAL, FLOAT, DOUBLE and the date-times keep the text as sent
  (``1.5`` in a DECIMAL(12,2), fraction digits), which Spark's rendering may not give back, and
  what a target type makes of a text can depend on it (``try_cast('-1.0' AS BIGINT)`` is NULL):
  those values are counted (``RENDERED_COLUMN``). The history foresees every type change the
  pipeline makes, so this is for targets changed outside it.

A value the carried type could not hold is NULL in the record and its text is in ``untyped``: it
is typed as the target's type from that text. The count of unrepresentable values
(``BAD_VALUES_COLUMN``) is the map path's: a non-NULL text whose target value is NULL.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, spark_type, typed_items
from ticdc_lake.schema.type_mapping import is_lossless_widening
from ticdc_lake.spark.record_images import VersionLayout, same_schema_groups, typed_text

RENDERED_COLUMN = "__ticdc_lake_rendered__"
#: In :func:`carried_projection`'s items: 1 where the row was typed from its record, 0 from its map.
FROM_RECORD_COLUMN = "__ticdc_lake_from_record__"
#: Carried types whose values Spark renders as the canonical text would be (docs/canonical-values.md).
_EXACT_TEXT = ("int", "long", "date", "string", "binary")


def record_projection(
    record: Column, untyped: Column, layout: VersionLayout, columns: Sequence[TargetColumn]
) -> list[Column]:
    """SELECT items over rows of ``layout``'s version: one typed column per target column, the count
    of unrepresentable values and the count of values rendered by Spark (module docstring)."""
    values, bad, rendered = _record_values(record, untyped, layout, columns)
    named = [value.alias(column.name) for value, column in zip(values, columns, strict=True)]
    return [*named, bad.alias(BAD_VALUES_COLUMN), rendered.alias(RENDERED_COLUMN)]


def renders_nothing(layout: VersionLayout, columns: Sequence[TargetColumn]) -> bool:
    """Whether every target column reads its field of ``layout`` as it is, widened, or from a text
    Spark makes exactly as the canonical text would be (no value of it is counted as rendered)."""
    kinds = dict(zip(layout.names, layout.types, strict=True))
    return all(
        (carried := kinds.get(c.name)) is None
        or carried == c.iceberg_type
        or (is_lossless_widening(carried, c.iceberg_type) and carried != "float")
        or carried in _EXACT_TEXT
        for c in columns
    )


def carried_projection(columns: Sequence[TargetColumn], layouts: Sequence[VersionLayout]) -> list[Column]:
    """SELECT items over net changes (columns ``image``, ``record``, ``untyped``, ``schema_version``):
    one typed column per target column, the count of unrepresentable values
    (``merge_sql.typed_projection``'s items), whether the row was typed from its record
    (``FROM_RECORD_COLUMN``) and the count of its values Spark rendered (``RENDERED_COLUMN``).

    A row with a record of a version among ``layouts`` is typed from its record where that layout
    :func:`renders_nothing` for these columns, or where the row carries no map (apply drops the map
    of a row its record types: ``net_change_frame``); then a value whose carried type the target
    does not have is Spark's rendering of it, counted (module docstring). Every other row is typed
    from its text map, as ``typed_projection`` types it: a row decoded before the carrier, a row
    decode left without one, and a version whose carried types the target does not have (a target
    changed outside the pipeline) while the row still has its map, which holds the exact text.

    Versions with the same layout share one ``from_avro``."""
    map_values, map_count = typed_items("image", columns)
    by_map, map_bad = [F.expr(value) for value in map_values], F.expr(map_count)
    record, version, image = F.col("record"), F.col("schema_version"), F.col("image")
    exact = [layout for layout in layouts if renders_nothing(layout, columns)]
    rendering = [layout for layout in layouts if not renders_nothing(layout, columns)]
    values: list[Column | None] = [None] * len(columns)
    bad: Column | None = None
    from_record: Column | None = None
    rendered: Column | None = None
    for chosen, needs_no_map in ((exact, False), (rendering, True)):
        for same in same_schema_groups(chosen):
            mine = record.isNotNull() & version.isin([layout.version for layout in same])
            if needs_no_map:
                mine = mine & image.isNull()
            typed, typed_bad, typed_rendered = _record_values(record, F.col("untyped"), same[0], columns)
            values = [_when(previous, mine, value) for previous, value in zip(values, typed, strict=True)]
            bad = _when(bad, mine, typed_bad)
            from_record = _when(from_record, mine, F.lit(1))
            if needs_no_map:
                rendered = _when(rendered, mine, typed_rendered)
    items = [
        (value.otherwise(fallback) if value is not None else fallback).alias(column.name)
        for value, fallback, column in zip(values, by_map, columns, strict=True)
    ]
    return [
        *items,
        (bad.otherwise(map_bad) if bad is not None else map_bad).alias(BAD_VALUES_COLUMN),
        (from_record.otherwise(0) if from_record is not None else F.lit(0)).alias(FROM_RECORD_COLUMN),
        (rendered.otherwise(0) if rendered is not None else F.lit(0)).alias(RENDERED_COLUMN),
    ]


def keys_from_records(record: Column, untyped: Column, layouts: Sequence[VersionLayout], key: Sequence[str]) -> Column:
    """Per row with a ``record`` of one of ``layouts``' versions, the texts of the ``key`` columns
    read from it: a text its carried type could not hold as sent (``untyped``), else the value's
    text (``value_text``), which is the canonical text for the :func:`exact_texts` types; NULL for other
    rows. For rows whose version's handle key is not ``key`` (its key texts are another key's)."""
    chosen: Column | None = None
    for same in same_schema_groups(layouts):
        names, types = same[0].names, same[0].types
        fields = from_avro(record, same[0].schema_json())
        texts = [
            F.coalesce(untyped[k], value_text(fields[f"c{names.index(k)}"], types[names.index(k)]))
            if k in names
            else F.lit(None).cast("string")
            for k in key
        ]
        mine = record.isNotNull() & F.col("schema_version").isin([layout.version for layout in same])
        chosen = _when(chosen, mine, F.array(*texts))
    return chosen if chosen is not None else F.lit(None).cast("array<string>")


def exact_texts(layouts: Sequence[VersionLayout], key: Sequence[str]) -> bool:
    """Whether every ``key`` column that ``layouts`` carry has a type whose values Spark renders as
    their canonical texts, so :func:`keys_from_records` equals the key texts decode writes."""
    return all(
        layout.types[layout.names.index(k)] in _EXACT_TEXT for layout in layouts for k in key if k in layout.names
    )


def _when(chosen: Column | None, condition: Column, value: Column) -> Column:
    return F.when(condition, value) if chosen is None else chosen.when(condition, value)


def _record_values(
    record: Column, untyped: Column, layout: VersionLayout, columns: Sequence[TargetColumn]
) -> tuple[list[Column], Column, Column]:
    """Per target column its typed value (unnamed), the count of unrepresentable values and the
    count of values rendered by Spark, over rows of ``layout``'s version."""
    fields = from_avro(record, layout.schema_json())
    position = {name: i for i, name in enumerate(layout.names)}
    values: list[Column] = []
    bad: list[Column] = []
    rendered: list[Column] = []
    for column in columns:
        i = position.get(column.name)
        if i is None:
            values.append(F.lit(None).cast(spark_type(column.iceberg_type)))
            continue
        carried, target = layout.types[i], column.iceberg_type
        text = untyped[column.name]
        field = fields[f"c{i}"]
        if carried == target:
            converted = field
        elif is_lossless_widening(carried, target) and carried != "float":
            # Not float → double: the map path types the sent text ("3.14" → 3.14), a cast would
            # give the float's own value (3.140000104904175).
            converted = field.cast(spark_type(target))
        else:
            made = value_text(field, carried)
            converted = typed_text(made, target)
            if carried not in _EXACT_TEXT:
                rendered.append(F.when(field.isNotNull(), 1).otherwise(0))
            bad.append(F.when(made.isNotNull() & converted.isNull(), 1).otherwise(0))
        value = F.when(text.isNotNull(), typed_text(text, target)).otherwise(converted)
        values.append(value)
        if target != "string":
            bad.append(F.when(text.isNotNull() & value.isNull(), 1).otherwise(0))
    return values, _sum(bad), _sum(rendered)


def value_text(field: Column, carried: str) -> Column:
    """The value's text as a map would hold it: base64 for binary, Spark's rendering otherwise."""
    if carried == "binary":
        return F.base64(field)
    return field.cast("string")


def _sum(parts: Sequence[Column]) -> Column:
    total: Column = F.lit(0)
    for part in parts:
        total = total + part
    return total

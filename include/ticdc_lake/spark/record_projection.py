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

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, spark_type
from ticdc_lake.schema.type_mapping import is_lossless_widening
from ticdc_lake.spark.record_images import VersionLayout, typed_text

RENDERED_COLUMN = "__ticdc_lake_rendered__"
#: Carried types whose values Spark renders as the canonical text would be (docs/canonical-values.md).
_EXACT_TEXT = ("int", "long", "date", "string", "binary")


def record_projection(
    record: Column, untyped: Column, layout: VersionLayout, columns: Sequence[TargetColumn]
) -> list[Column]:
    """SELECT items over rows of ``layout``'s version: one typed column per target column, the count
    of unrepresentable values and the count of values rendered by Spark (module docstring)."""
    fields = from_avro(record, layout.schema_json())
    position = {name: i for i, name in enumerate(layout.names)}
    items: list[Column] = []
    bad: list[Column] = []
    rendered: list[Column] = []
    for column in columns:
        i = position.get(column.name)
        if i is None:
            items.append(F.lit(None).cast(spark_type(column.iceberg_type)).alias(column.name))
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
            made = _text(field, carried)
            converted = typed_text(made, target)
            if carried not in _EXACT_TEXT:
                rendered.append(F.when(field.isNotNull(), 1).otherwise(0))
            bad.append(F.when(made.isNotNull() & converted.isNull(), 1).otherwise(0))
        value = F.when(text.isNotNull(), typed_text(text, target)).otherwise(converted)
        items.append(value.alias(column.name))
        if target != "string":
            bad.append(F.when(text.isNotNull() & value.isNull(), 1).otherwise(0))
    items.append(_sum(bad).alias(BAD_VALUES_COLUMN))
    items.append(_sum(rendered).alias(RENDERED_COLUMN))
    return items


def _text(field: Column, carried: str) -> Column:
    """The value's text as a map would hold it: base64 for binary, Spark's rendering otherwise."""
    if carried == "binary":
        return F.base64(field)
    return field.cast("string")


def _sum(parts: Sequence[Column]) -> Column:
    total: Column = F.lit(0)
    for part in parts:
        total = total + part
    return total

"""Row images of ``change_events`` rows that carry text maps, turned into the typed record carrier.

Decode writes each DML image as an Avro record of its table version's carried types
(``arrow_decode.avro_records``, ``ticdc_lake.carried_types``), with the texts of the values the
types cannot hold and the names of the columns the image lacks in ``<side>_untyped`` (a name with
a NULL text: absent), and the canonical texts of the version's key columns in ``<side>_key``
(docs/typed-row-images.md). Rows decoded before that carry only the ``MAP<STRING, STRING>`` of
canonical text. Apply reads both alike: the functions here give a map row the record, untyped
texts and key texts decode would have written for it (Spark's ``to_avro`` of the ``try_cast``
typed values: the same bytes as decode's encoder), so everything after the read sees one carrier,
and a message decoded once to a map and once to a record hashes the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from ticdc_lake.apply.merge_sql import spark_type
from ticdc_lake.spark.arrow_decode.avro_records import writer_schema


@dataclass(frozen=True, slots=True)
class VersionLayout:
    """What reading the images of one table schema version needs."""

    version: int
    #: The version's column names, in order: record field ``c<i>`` is column ``i``.
    names: tuple[str, ...]
    #: Their carried Iceberg types (``carried_types``).
    types: tuple[str, ...]
    #: The version's handle key columns (empty: no key).
    key: tuple[str, ...]

    def schema_json(self) -> str:
        return json.dumps(writer_schema(self.types))


def typed_text(text: Column, iceberg_type: str) -> Column:
    """``merge_sql.typed_value`` as a Column: the Iceberg value of a canonical text, NULL where impossible."""
    if iceberg_type == "string":
        return text
    if iceberg_type == "binary":
        return F.try_to_binary(text, F.lit("base64"))
    return text.try_cast(spark_type(iceberg_type))


def _per_version(
    side: str, layouts: Sequence[VersionLayout], value: Callable[[Column, VersionLayout], Column]
) -> Column:
    """``value(image, layout)`` for the rows of each layout's version; NULL for other rows and null images."""
    image = F.col(side)
    chosen: Column | None = None
    version = F.col("schema_version")
    for layout in layouts:
        this = value(image, layout)
        chosen = (
            F.when(version == layout.version, this) if chosen is None else chosen.when(version == layout.version, this)
        )
    if chosen is None:
        return F.lit(None)
    return F.when(image.isNotNull(), chosen)


def records_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """The Avro record of each row's ``side`` map (``before``/``after``) under its version's writer schema."""

    def record(image: Column, layout: VersionLayout) -> Column:
        fields = [
            typed_text(image[name], kind).alias(f"c{i}")
            for i, (name, kind) in enumerate(zip(layout.names, layout.types, strict=True))
        ]
        return to_avro(F.struct(*fields), layout.schema_json())

    return _per_version(side, layouts, record)


def untyped_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """Per row, the version's columns the map lacks (name → NULL) and the texts its types cannot hold
    (name → text), in column order; NULL where there are none."""

    def untyped(image: Column, layout: VersionLayout) -> Column:
        entries = []
        for name, kind in zip(layout.names, layout.types, strict=True):
            text = image[name]
            absent = ~F.map_contains_key(image, F.lit(name))
            bad = text.isNotNull() & typed_text(text, kind).isNull()
            entries.append(F.when(absent | bad, F.struct(F.lit(name).alias("key"), F.when(bad, text).alias("value"))))
        found = F.filter(F.array(*entries), lambda e: e.isNotNull()) if entries else F.array()
        return F.when(F.size(found) > 0, F.map_from_entries(found))

    return _per_version(side, layouts, untyped)


def keys_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """Per row, the canonical texts of its version's key columns in the ``side`` map; NULL without a key."""

    def key(image: Column, layout: VersionLayout) -> Column:
        return F.array(*[image[k] for k in layout.key]).cast("array<string>") if layout.key else F.lit(None)

    return _per_version(side, layouts, key)

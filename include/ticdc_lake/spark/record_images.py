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

:func:`with_carrier` does that for the rows of many tables at once, with the layouts apply derives
from the schema history alone (:func:`history_layouts`), which are decode's
(``tests/ticdc_lake/spark/test_record_read.py`` checks both on real decode output).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import to_avro

from ticdc_lake.apply.merge_sql import spark_type
from ticdc_lake.carried_types import carried_types, versions_of
from ticdc_lake.config import Policies
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.arrow_decode.avro_records import writer_schema
from ticdc_lake.spark.arrow_decode.image_records import image_layout, layout_fingerprint
from ticdc_lake.spark.schema_history_table import version_events


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

    @property
    def fingerprint(self) -> int:
        """What decode writes in ``record_layout`` beside a record of this layout."""
        return layout_fingerprint(self.names, self.types, self.key)


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


def _record(image: Column, layout: VersionLayout) -> Column:
    fields = [
        typed_text(image[name], kind).alias(f"c{i}")
        for i, (name, kind) in enumerate(zip(layout.names, layout.types, strict=True))
    ]
    return to_avro(F.struct(*fields), layout.schema_json())


def records_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """The Avro record of each row's ``side`` map (``before``/``after``) under its version's writer schema."""
    return _per_version(side, layouts, _record)


def untyped_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """Per row, the version's columns the map lacks (name → NULL) and the texts its types cannot hold
    (name → text), in column order; NULL where there are none."""

    return _per_version(side, layouts, _untyped)


def _untyped(image: Column, layout: VersionLayout) -> Column:
    entries = []
    for name, kind in zip(layout.names, layout.types, strict=True):
        text = image[name]
        absent = ~F.map_contains_key(image, F.lit(name))
        bad = text.isNotNull() & typed_text(text, kind).isNull()
        entries.append(F.when(absent | bad, F.struct(F.lit(name).alias("key"), F.when(bad, text).alias("value"))))
    found = F.filter(F.array(*entries), lambda e: e.isNotNull()) if entries else F.array()
    return F.when(F.size(found) > 0, F.map_from_entries(found))


def keys_from_maps(side: str, layouts: Sequence[VersionLayout]) -> Column:
    """Per row, the canonical texts of its version's key columns in the ``side`` map; NULL without a key."""

    return _per_version(side, layouts, _key)


def _key(image: Column, layout: VersionLayout) -> Column:
    return F.array(*[image[k] for k in layout.key]).cast("array<string>") if layout.key else F.lit(None)


SIDES = ("before", "after")


def carries_records() -> Column:
    """Whether a ``change_events`` row carries the typed records of its images (decode wrote them,
    or the read made them: ``with_carrier``); the duplicate rules hash and group such a row by its
    records, any other by its maps, so copies of one message must meet in one form."""
    return F.col("before_record").isNotNull() | F.col("after_record").isNotNull()


def same_schema_groups(layouts: Sequence[VersionLayout]) -> list[list[VersionLayout]]:
    """``layouts`` grouped by writer schema (the same columns and carried types): versions of one
    group read their records with one ``from_avro``."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[VersionLayout]] = {}
    for layout in layouts:
        groups.setdefault((layout.names, layout.types), []).append(layout)
    return list(groups.values())


#: Per (database, table), the layouts of its versions.
TableLayouts = Mapping[tuple[str, str], Sequence[VersionLayout]]


def history_layouts(
    history: Iterable[Row], policies: Policies | None = None, server_time_zone: str = "UTC"
) -> dict[tuple[str, str], list[VersionLayout]]:
    """The layout of every version of ``history`` (``schema_history_table.history_of`` rows) as decode
    makes it (``image_records.image_layout`` of the carried types); versions decode carries no
    record for are left out."""
    rows = list(history)
    schemas = {
        (r["database"], r["table"], int(r["schema_version"])): TableSchema.from_json(r["table_schema"]) for r in rows
    }
    events = version_events(rows)
    return version_layouts(schemas, carried_types(versions_of(schemas, events), policies, server_time_zone))


def version_layouts(
    schemas: Mapping[tuple[str, str, int], TableSchema], carried: Mapping[tuple[str, str, int], tuple[str, ...]]
) -> dict[tuple[str, str], list[VersionLayout]]:
    """The layout of each of ``schemas`` (by (database, table, version)) with its ``carried`` types,
    as decode's workers make it (``image_records.image_layout``); versions without one left out.
    The decode driver's are ``version_layouts(lookup.as_mapping(), lookup.carried)``."""
    layouts: dict[tuple[str, str], list[VersionLayout]] = {}
    for (database, table, version), schema in sorted(schemas.items()):
        layout = image_layout(schema, carried.get((database, table, version)))
        if layout is not None:
            names = tuple(layout.names[k] for k in layout.key)
            layouts.setdefault((database, table), []).append(VersionLayout(version, layout.names, layout.types, names))
    return layouts


def with_carrier(events: DataFrame, layouts: TableLayouts) -> DataFrame:
    """``events`` (``change_events`` rows) with the carrier of every READY row change bound to a
    version that decode left without one (decoded before the carrier, or by the JVM decoder) made
    from its maps, as decode would have made it (``arrow_decode.image_records``: no carrier where
    the version is unknown or an image names a column the version lacks)."""
    made = (F.col("before_record").isNull() & F.col("after_record").isNull()) & (
        (F.col("kind") == "DML") & (F.col("status") == "READY")
    )
    parts: dict[str, Callable[[Column, VersionLayout], Column]] = {"record": _record, "untyped": _untyped, "key": _key}
    values = {f"{side}_{part}": _per_table(side, layouts, make) for part, make in parts.items() for side in SIDES}
    values["record_layout"] = _per_table(None, layouts, lambda _, layout: F.lit(layout.fingerprint))
    return events.withColumns({name: F.when(made, value).otherwise(F.col(name)) for name, value in values.items()})


def without_carried_maps(events: DataFrame) -> DataFrame:
    """``events`` with the maps of every row that carries its layout's record NULL, as the decode
    workers write such rows (``arrow_decode.image_records``)."""
    kept = F.col("record_layout").isNull()
    return events.withColumns({side: F.when(kept, F.col(side)) for side in SIDES})


def _per_table(side: str | None, layouts: TableLayouts, value: Callable[[Column, VersionLayout], Column]) -> Column:
    """``value(image, layout)`` for the rows of each table version of ``layouts`` whose images name
    only the version's columns; NULL for the other rows and for null images (``side`` None: for
    every such row, whatever its images, as decode writes the layout's fingerprint)."""
    image = F.col(side or "after")
    chosen: Column | None = None
    for (database, table), versions in layouts.items():
        mine = (F.col("database") == database) & (F.col("table") == table)
        for layout in versions:
            when = mine & (F.col("schema_version") == layout.version)
            for other in SIDES:
                when = when & _only_columns_of(F.col(other), layout.names)
            this = value(image, layout)
            chosen = F.when(when, this) if chosen is None else chosen.when(when, this)
    if chosen is None:
        return F.lit(None)
    return chosen if side is None else F.when(image.isNotNull(), chosen)


def _only_columns_of(image: Column, names: Sequence[str]) -> Column:
    """Whether the map ``image`` names no column but ``names`` (true for a null image)."""
    listed = F.array(*[F.lit(n) for n in names]) if names else F.array().cast("array<string>")
    return F.coalesce(F.size(F.array_except(F.map_keys(image), listed)) == 0, F.lit(True))


def foreign_layouts(
    pipeline: str, table: str, found: Iterable[tuple[int, int]], layouts: Sequence[VersionLayout]
) -> str | None:
    """Why a table's rows wait when some carry records written with another layout than this
    release derives for their version (``found``: (version, fingerprint) pairs read beside the
    records); None when every pair is one of ``layouts``. Read with the wrong layout, a record's
    bytes would give other values, so such rows are not read at all."""
    mine = {layout.version: layout for layout in layouts}
    foreign = sorted((v, f) for v, f in found if (layout := mine.get(v)) is None or layout.fingerprint != f)
    if not foreign:
        return None
    parts = []
    for version, fingerprint in foreign:
        layout = mine.get(version)
        if layout is None:
            reads = "has no layout for it"
        else:
            columns = ", ".join(f"{n} {t}" for n, t in zip(layout.names, layout.types, strict=True))
            reads = f"reads it as layout {layout.fingerprint} ({columns})"
        parts.append(f"schema version {version}: written as layout {fingerprint}, this release {reads}")
    return (
        f"row events of {table} carry typed records written by another release's layout rules ({'; '.join(parts)}); "
        "read with this release's layout their values would be wrong, so nothing of the table is applied. "
        "Rebuild it from the landed batches, which decodes them again "
        f"(`ticdc-lake rebuild --pipeline {pipeline} --table {table}`, docs/rebuild.md)"
    )

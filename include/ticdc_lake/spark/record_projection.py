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

The items are built as SQL text and handed to Spark as one expression each: built from PySpark's
``Column`` functions, the projection of a 10-column table read from two versions took about 1,900
py4j calls (0.2 s of a warm driver's wall per table and run), as SQL text 39
(docs/apply-performance.md, "The typed MERGE source built as SQL text").
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from ticdc_lake.apply.merge_sql import BAD_VALUES_COLUMN, TargetColumn, spark_type, typed_items, typed_value
from ticdc_lake.identifiers import quote, sql_string
from ticdc_lake.schema.type_mapping import is_lossless_widening
from ticdc_lake.spark.record_images import VersionLayout, same_schema_groups

RENDERED_COLUMN = "__ticdc_lake_rendered__"
#: In :func:`carried_projection`'s items: 1 where the row was typed from its record, 0 from its map.
FROM_RECORD_COLUMN = "__ticdc_lake_from_record__"
#: Carried types whose values Spark renders as the canonical text would be (docs/canonical-values.md).
_EXACT_TEXT = ("int", "long", "date", "string", "binary")


def record_projection(
    record: str, untyped: str, layout: VersionLayout, columns: Sequence[TargetColumn]
) -> list[Column]:
    """SELECT items over rows of ``layout``'s version (``record``, ``untyped``: the names of the
    columns holding the record and its untyped texts): one typed column per target column, the count
    of unrepresentable values and the count of values rendered by Spark (module docstring)."""
    values, bad, rendered = _record_values(quote(record), quote(untyped), layout, columns)
    named = [f"{value} AS {quote(column.name)}" for value, column in zip(values, columns, strict=True)]
    return _items([*named, f"{bad} AS {BAD_VALUES_COLUMN}", f"{rendered} AS {RENDERED_COLUMN}"])


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
    by_map, map_bad = typed_items("image", columns)
    exact = [layout for layout in layouts if renders_nothing(layout, columns)]
    rendering = [layout for layout in layouts if not renders_nothing(layout, columns)]
    values: list[list[tuple[str, str]]] = [[] for _ in columns]
    bad: list[tuple[str, str]] = []
    from_record: list[tuple[str, str]] = []
    rendered: list[tuple[str, str]] = []
    for chosen, needs_no_map in ((exact, False), (rendering, True)):
        for same in same_schema_groups(chosen):
            mine = f"record IS NOT NULL AND {_of_versions(same)}"
            if needs_no_map:
                mine += " AND image IS NULL"
            typed, typed_bad, typed_rendered = _record_values("record", "untyped", same[0], columns)
            for cases, value in zip(values, typed, strict=True):
                cases.append((mine, value))
            bad.append((mine, typed_bad))
            from_record.append((mine, "1"))
            if needs_no_map:
                rendered.append((mine, typed_rendered))
    items = [
        f"{_case(cases, fallback)} AS {quote(column.name)}"
        for cases, fallback, column in zip(values, by_map, columns, strict=True)
    ]
    return _items(
        [
            *items,
            f"{_case(bad, map_bad)} AS {BAD_VALUES_COLUMN}",
            f"{_case(from_record, '0')} AS {FROM_RECORD_COLUMN}",
            f"{_case(rendered, '0')} AS {RENDERED_COLUMN}",
        ]
    )


def keys_from_records(record: str, untyped: str, layouts: Sequence[VersionLayout], key: Sequence[str]) -> Column:
    """Per row with a record (column ``record``) of one of ``layouts``' versions, the texts of the
    ``key`` columns read from it: a text its carried type could not hold as sent (column
    ``untyped``), else the value's text (``value_text``), which is the canonical text for the
    :func:`exact_texts` types; NULL for other rows. For rows whose version's handle key is not
    ``key`` (its key texts are another key's)."""
    cases: list[tuple[str, str]] = []
    for same in same_schema_groups(layouts):
        names, types = same[0].names, same[0].types
        fields = from_avro_sql(quote(record), same[0])
        texts = [
            f"coalesce({quote(untyped)}[{sql_string(k)}], "
            f"{value_text(f'{fields}[{sql_string(_field(names.index(k)))}]', types[names.index(k)])})"
            if k in names
            else "CAST(NULL AS STRING)"
            for k in key
        ]
        cases.append((f"{quote(record)} IS NOT NULL AND {_of_versions(same)}", f"array({', '.join(texts)})"))
    return F.expr(_case(cases, None) if cases else "CAST(NULL AS ARRAY<STRING>)")


def exact_texts(layouts: Sequence[VersionLayout], key: Sequence[str]) -> bool:
    """Whether every ``key`` column that ``layouts`` carry has a type whose values Spark renders as
    their canonical texts, so :func:`keys_from_records` equals the key texts decode writes."""
    return all(
        layout.types[layout.names.index(k)] in _EXACT_TEXT for layout in layouts for k in key if k in layout.names
    )


def value_text(field: str, carried: str) -> str:
    """SQL of a carried value's text as a map would hold it: base64 for binary, Spark's rendering
    otherwise (``field``: SQL of the value)."""
    if carried == "binary":
        return f"base64({field})"
    return f"CAST({field} AS STRING)"


def from_avro_sql(record: str, layout: VersionLayout) -> str:
    """SQL of the record (``record``: SQL of a record column) read with ``layout``'s writer schema."""
    return f"from_avro({record}, {sql_string(layout.schema_json())})"


def _record_values(
    record: str, untyped: str, layout: VersionLayout, columns: Sequence[TargetColumn]
) -> tuple[list[str], str, str]:
    """SQL, per target column, of its typed value (unnamed), the count of unrepresentable values and
    the count of values rendered by Spark, over rows of ``layout``'s version (``record``,
    ``untyped``: SQL of the record and untyped texts columns)."""
    fields = from_avro_sql(record, layout)
    position = {name: i for i, name in enumerate(layout.names)}
    values: list[str] = []
    bad: list[str] = []
    rendered: list[str] = []
    for column in columns:
        i = position.get(column.name)
        if i is None:
            values.append(f"CAST(NULL AS {spark_type(column.iceberg_type)})")
            continue
        carried, target = layout.types[i], column.iceberg_type
        text = f"{untyped}[{sql_string(column.name)}]"
        field = f"{fields}[{sql_string(_field(i))}]"
        if carried == target:
            converted = field
        elif is_lossless_widening(carried, target) and carried != "float":
            # Not float → double: the map path types the sent text ("3.14" → 3.14), a cast would
            # give the float's own value (3.140000104904175).
            converted = f"CAST({field} AS {spark_type(target)})"
        else:
            made = value_text(field, carried)
            converted = typed_value(made, target)
            if carried not in _EXACT_TEXT:
                rendered.append(f"CASE WHEN {field} IS NOT NULL THEN 1 ELSE 0 END")
            bad.append(f"CASE WHEN {made} IS NOT NULL AND {converted} IS NULL THEN 1 ELSE 0 END")
        value = f"CASE WHEN {text} IS NOT NULL THEN {typed_value(text, target)} ELSE {converted} END"
        values.append(value)
        if target != "string":
            bad.append(f"CASE WHEN {text} IS NOT NULL AND {value} IS NULL THEN 1 ELSE 0 END")
    return values, _sum(bad), _sum(rendered)


def _field(i: int) -> str:
    """The record field of a version's column ``i`` (``record_images.writer_schema``)."""
    return f"c{i}"


def _of_versions(layouts: Sequence[VersionLayout]) -> str:
    return f"schema_version IN ({', '.join(str(int(layout.version)) for layout in layouts)})"


def _case(cases: Sequence[tuple[str, str]], otherwise: str | None) -> str:
    """``CASE WHEN`` each (condition, value) in order, else ``otherwise`` (None: NULL); ``otherwise``
    alone without cases."""
    if not cases:
        assert otherwise is not None
        return otherwise
    whens = " ".join(f"WHEN {condition} THEN {value}" for condition, value in cases)
    return f"CASE {whens} END" if otherwise is None else f"CASE {whens} ELSE {otherwise} END"


def _sum(parts: Sequence[str]) -> str:
    return "(" + " + ".join(["0", *parts]) + ")"


def _items(items: Sequence[str]) -> list[Column]:
    return [F.expr(item) for item in items]

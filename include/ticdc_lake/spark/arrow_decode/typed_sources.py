"""Typed image values from what a column reader read, before they become text (``docs/typed-row-images.md``).

A vector decoder's column reader reads a column as an Arrow array (JSON integers as ``int64``,
dates as epoch days, times as epoch microseconds, ...) and renders it as canonical text
(``ColumnReader.canonical``). Typing that text again (``typed_columns.typed_column``) parses what
was typed a moment before; a reader with a :data:`Typed` converter hands over the typed value
directly. The contract, checked differentially for every reader that has one: for every value the
reader takes (``ok``), the typed value equals ``typed_column`` of the reader's canonical text, the
specification. A converter answers None for an Iceberg type it does not cover, and the caller
types the texts instead (:func:`image_columns`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.spark.arrow_decode.typed_columns import TypedColumn, typed_column

#: (the values as the reader read them, the column's Iceberg type) -> the typed values, or None.
Typed = Callable[[pa.Array, str], pa.Array | None]

_UNSIGNED_BIGINT = pa.decimal128(20, 0)


def integers(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """``int64`` values (within the MySQL type's bounds: the reader checked them) as ``int``/``long``."""
    if iceberg_type == "long":
        return values.cast(pa.int64())
    if iceberg_type == "int":
        try:  # a value beyond int32 (a version's type the reader's bounds do not know): from the texts
            return values.cast(pa.int32())
        except pa.ArrowInvalid:
            return None
    return None


def unsigned_bigint(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """BIGINT UNSIGNED sent as the ``int64`` of its bits, as Iceberg's ``decimal(20,0)``."""
    if iceberg_type != "decimal(20,0)":
        return None
    return values.cast(pa.int64()).cast(pa.uint64(), safe=False).cast(_UNSIGNED_BIGINT)


def booleans(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """BIT(1) or BOOL sent as a JSON boolean: 1 or 0 as ``int``/``long``."""
    if iceberg_type in ("int", "long"):
        return values.cast(pa.int32() if iceberg_type == "int" else pa.int64())
    return None


def texts(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """A text column whose canonical text is the value itself."""
    return values.cast(pa.string()) if iceberg_type == "string" else None


def epoch_days(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """DATE as days since 1970-01-01 (in years 1..9999: the reader checked them)."""
    return values.cast(pa.int32()).view(pa.date32()) if iceberg_type == "date" else None


def epoch_micros(scale: int) -> Typed:
    """DATETIME as ``scale`` µs since 1970-01-01 00:00:00 (in range: the reader checked them)."""

    def typed(values: pa.Array, iceberg_type: str) -> pa.Array | None:
        if iceberg_type != "timestamp":
            return None
        micros = values.cast(pa.int64())
        if scale != 1:
            try:
                micros = pc.multiply_checked(micros, scale)
            except pa.ArrowInvalid:  # beyond int64: from the texts
                return None
        return micros.view(pa.timestamp("us"))

    return typed


def floats(values: pa.Array, iceberg_type: str) -> pa.Array | None:
    """FLOAT or DOUBLE read at its own width (Avro's ``float``/``double``): the text is the shortest
    that reads back to it, so the value is the typed value as it is, -0 included."""
    if (iceberg_type, values.type) in (("float", pa.float32()), ("double", pa.float64())):
        return values
    return None


def image_columns(
    image: pa.StructArray,
    converters: Sequence[Typed | None],
    canonical: Sequence[pa.Array],
    iceberg_types: Sequence[str],
) -> list[TypedColumn]:
    """Each column of ``image`` typed as its Iceberg type: by its reader's converter (``converters``,
    in the image's column order) where it has one for the type, else from the column's
    ``canonical`` texts. A converter types values only, so the values a type cannot hold come
    from the texts (a reader with a converter takes none: a zero date is never typed at source)."""
    columns = []
    for child, typed, texts_, iceberg_type in zip(image.flatten(), converters, canonical, iceberg_types, strict=True):
        values = typed(child, iceberg_type) if typed is not None else None
        if values is None:
            columns.append(typed_column(texts_, iceberg_type))
        else:
            columns.append(TypedColumn(values, np.zeros(len(values), dtype=bool)))
    return columns

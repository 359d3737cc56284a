"""Typed row images, a measured prototype (``docs/typed-row-images.md``); not part of the product: the
typed-row-images benchmarks (``bench_typed_images*.py``) and ``test_typed_images_probe.py`` use it.

A row image today is ``column -> canonical text`` (``docs/canonical-values.md``) and apply casts
each text to the target's type. This module turns an image into typed carriers once, at decode:

- :class:`VariantImages`: one Spark/Parquet ``VARIANT`` per image, built in the Python worker
  (``value``/``metadata`` bytes of the Parquet variant encoding, which ``mapInArrow`` hands to the
  JVM as Spark's Arrow struct for ``VariantType``). A value the column's Iceberg type cannot hold
  stays in the variant as its canonical text, so apply's typed read returns NULL for it and counts
  it, and the text is not lost; an absent column is a missing field, a SQL NULL a variant null.
- :class:`AvroImages`: the Avro writer schema of one table version and the record of an image for
  fastavro's schemaless writer (read back by spark-avro's ``from_avro``). Avro has no absent field
  and no place for text in a typed field: the image's absent columns and the texts of values the
  type cannot hold travel beside the record (``unrepresentable`` is then NULL in the record).

Both convert canonical text with :func:`ticdc_lake.typed_values.typed_value`, the specification of
a typed value (it agrees with Spark's ``try_cast`` of the same text, what apply does today).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ticdc_lake.spark.arrow_decode.avro_records import writer_schema
from ticdc_lake.typed_values import UNREPRESENTABLE, typed_value


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    iceberg_type: str


# --- Parquet variant encoding (basic types 0 primitive, 1 short string, 2 object) -----------------
_NULL = b"\x00"
_INT_TYPES = ((3, "<b", 2**7), (4, "<h", 2**15), (5, "<i", 2**31), (6, "<q", 2**63))


def _int(number: int) -> bytes:
    for type_id, fmt, bound in _INT_TYPES:
        if -bound <= number < bound:
            return bytes([type_id << 2]) + struct.pack(fmt, number)
    return _decimal(Decimal(number))


def _decimal(value: Decimal) -> bytes:
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -int(exponent)
    for type_id, size, precision in ((8, 4, 9), (9, 8, 18), (10, 16, 38)):
        if max(len(digits), scale) <= precision:  # a reader checks the scale against the precision too
            return bytes([type_id << 2, scale]) + unscaled.to_bytes(size, "little", signed=True)
    raise ValueError(f"decimal {value} has more than 38 digits")


def _string(text: str) -> bytes:
    data = text.encode()
    if len(data) < 64:
        return bytes([len(data) << 2 | 1]) + data
    return bytes([16 << 2]) + struct.pack("<I", len(data)) + data


def _variant_value(value: Any, iceberg_type: str) -> bytes:
    if iceberg_type in ("int", "long"):
        return _int(value)
    if iceberg_type == "double":
        return bytes([7 << 2]) + struct.pack("<d", value)
    if iceberg_type == "float":
        return bytes([14 << 2]) + struct.pack("<f", value)
    if iceberg_type == "binary":
        return bytes([15 << 2]) + struct.pack("<I", len(value)) + bytes(value)
    if iceberg_type == "date":
        return bytes([11 << 2]) + struct.pack("<i", value)
    if iceberg_type == "timestamp":
        return bytes([13 << 2]) + struct.pack("<q", value)
    if iceberg_type == "timestamptz":
        return bytes([12 << 2]) + struct.pack("<q", value)
    if iceberg_type.startswith("decimal("):
        return _decimal(value)
    return _string(value)


def variant_metadata(names: Sequence[str]) -> bytes:
    """Variant metadata (version 1, sorted dictionary, 4-byte offsets) holding ``names``."""
    keys = sorted(set(names), key=lambda n: n.encode())
    encoded = [k.encode() for k in keys]
    offsets = [0]
    for data in encoded:
        offsets.append(offsets[-1] + len(data))
    header = bytes([0x01 | 0x10 | (3 << 6)])
    return header + struct.pack(f"<{len(keys) + 2}I", len(keys), *offsets) + b"".join(encoded)


@dataclass
class VariantImages:
    """Variant encoder of one table version: the metadata is the same for all of its images."""

    columns: Sequence[Column]
    metadata: bytes = b""
    _ids: dict[str, int] = field(default_factory=dict)
    _types: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = sorted((c.name for c in self.columns), key=lambda n: n.encode())
        self.metadata = variant_metadata(names)
        self._ids = {name: i for i, name in enumerate(names)}  # id order is name order
        self._types = {c.name: c.iceberg_type for c in self.columns}

    def value(self, image: Mapping[str, str | None]) -> bytes:
        """The variant value of ``image`` (an object with a field per present column)."""
        return self.encode(image)[0]

    def encode(self, image: Mapping[str, str | None]) -> tuple[bytes, int]:
        """(the variant value of ``image``, how many of its values the column types cannot hold)."""
        present = sorted((self._ids[name], name) for name in image)
        parts = []
        bad = 0
        for _, name in present:
            text = image[name]
            if text is None:
                parts.append(_NULL)
                continue
            typed = typed_value(text, self._types[name])
            if typed is UNREPRESENTABLE:
                bad += 1
                parts.append(_string(text))
            else:
                parts.append(_variant_value(typed, self._types[name]))
        offsets = [0]
        for part in parts:
            offsets.append(offsets[-1] + len(part))
        count = len(present)
        large = count > 255
        id_size = 1 if len(self._ids) <= 256 else 4
        offset_size = 1 if offsets[-1] < 256 else 2 if offsets[-1] < 65536 else 4
        header = bytes([(int(large) << 6) | ((id_size - 1) << 4) | ((offset_size - 1) << 2) | 2])
        head = header + (struct.pack("<I", count) if large else bytes([count]))
        ids = bytes(i for i, _ in present) if id_size == 1 else struct.pack(f"<{count}I", *(i for i, _ in present))
        packed = b"".join(o.to_bytes(offset_size, "little") for o in offsets)
        return head + ids + packed + b"".join(parts), bad


@dataclass
class AvroImages:
    """Avro writer schema of one table version (field ``c<i>`` is column i) and its records."""

    columns: Sequence[Column]
    schema: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.schema = writer_schema([c.iceberg_type for c in self.columns])

    def record(self, image: Mapping[str, str | None]) -> tuple[dict[str, object], dict[str, str], list[str]]:
        """(the Avro record, the texts of values the type cannot hold, the absent columns)."""
        out: dict[str, object] = {}
        untyped: dict[str, str] = {}
        absent: list[str] = []
        for i, column in enumerate(self.columns):
            if column.name not in image:
                absent.append(column.name)
                out[f"c{i}"] = None
                continue
            text = image[column.name]
            typed = None if text is None else typed_value(text, column.iceberg_type)
            if typed is UNREPRESENTABLE:
                untyped[column.name] = text  # type: ignore[assignment]
                typed = None
            out[f"c{i}"] = typed
        return out, untyped, absent

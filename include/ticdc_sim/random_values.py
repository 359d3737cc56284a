"""Seeded random column values with the edge cases a decoder must get right."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from ticdc_lake.schema.table_schema import ColumnSchema
from ticdc_sim.column_types import (
    BINARY_TYPES,
    INTEGER_TYPES,
    TEXT_TYPES,
    Value,
    display_length,
    float32,
    integer_range,
)

#: Words for text values: multi-byte UTF-8 (2, 3 and 4 bytes), quotes, HTML-ish characters that
#: Go's JSON encoder escapes, backslashes and control characters.
WORDS: tuple[str, ...] = (
    "Zürich",
    "東京",
    "São Paulo",
    "Kraków",
    "Reykjavík",
    "Αθήνα",
    "Москва",
    "서울",
    "🚀",
    "😀",
    "naïve café",
    "O'Brien",
    'say "hi"',
    "<b>bold</b>",
    "Smith & Sons",
    "back\\slash",
    "tab\there",
    "alpha",
    "beta",
    "gamma",
    "delta",
    "north",
    "south",
    "widget",
    "gadget",
    "Berlin",
    "Lisbon",
)
_ASCII = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
_EPOCH_MIN = datetime(1950, 1, 1)
_EPOCH_SPAN_S = int((datetime(2040, 12, 31) - _EPOCH_MIN).total_seconds())
_TS_MIN = datetime(1971, 1, 1, tzinfo=UTC)
_TS_SPAN_S = int((datetime(2037, 12, 31, tzinfo=UTC) - _TS_MIN).total_seconds())


class ValueGenerator:
    """Random values for columns, drawing only from the given ``random.Random``.

    TIMESTAMP values are never instants whose wall time in ``server_time_zone`` is ambiguous (the
    repeated hour when clocks go back): TiCDC sends zone-local wall time, so such values cannot be
    read back exactly by anyone, and the oracle would disagree with any correct decoder.
    """

    def __init__(
        self,
        rng: random.Random,
        null_probability: float,
        edge_probability: float = 0.08,
        server_time_zone: str = "UTC",
    ) -> None:
        self._rng = rng
        self._zone = ZoneInfo(server_time_zone)
        self._null_probability = null_probability
        self._edge_probability = edge_probability

    def value(self, column: ColumnSchema) -> Value:
        """A value for ``column``; NULL with ``null_probability`` when the column is nullable."""
        if column.nullable and self._rng.random() < self._null_probability:
            return None
        return self.non_null(column)

    def non_null(self, column: ColumnSchema) -> Value:
        rng = self._rng
        tp = column.mysql_type
        edge = rng.random() < self._edge_probability
        if tp in INTEGER_TYPES:
            low, high = integer_range(column)
            if edge:
                return rng.choice((low, high, 0, high // 2 + 1))
            return rng.randint(max(low, -100_000), min(high, 10_000_000))
        if tp == "year":
            return rng.choice((1901, 2155)) if edge else rng.randint(1990, 2030)
        if tp == "bit":
            return rng.randint(0, (1 << display_length(column)) - 1)
        if tp == "decimal":
            return self._decimal(column, edge)
        if tp == "double":
            if edge:
                return rng.choice((0.0, 1e-7, 1.5e20, -2.5e-5, 123456789.125))
            return round(rng.uniform(-10_000, 10_000), rng.randint(0, 6))
        if tp == "float":
            return float32(round(rng.uniform(-500, 500), rng.randint(0, 3)))
        if tp in ("char", "varchar"):
            return self._text(display_length(column), exact=tp == "char")
        if tp in TEXT_TYPES:
            return self.sentence(rng.randint(0, 120))
        if tp in BINARY_TYPES:
            return self._bytes(column)
        if tp == "date":
            return (_EPOCH_MIN + timedelta(days=rng.randint(0, _EPOCH_SPAN_S // 86400))).date()
        if tp == "datetime":
            moment = _EPOCH_MIN + timedelta(seconds=rng.randint(0, _EPOCH_SPAN_S))
            return moment.replace(microsecond=self._fraction(column.fsp or 0))
        if tp == "timestamp":
            while True:
                moment = _TS_MIN + timedelta(seconds=rng.randint(0, _TS_SPAN_S))
                if not is_ambiguous_wall_time(moment, self._zone):
                    return moment.replace(microsecond=self._fraction(column.fsp or 0))
        if tp == "json":
            return self._json()
        if tp == "enum":
            return rng.choice(column.elements or ())
        if tp == "set":
            elements = column.elements or ()
            return ",".join(e for e in elements if rng.random() < 0.4)
        raise ValueError(f"column {column.name!r}: the generator has no values for type {tp!r}")

    def sentence(self, max_chars: int) -> str:
        rng = self._rng
        words: list[str] = []
        while not words or (len(" ".join(words)) < max_chars and rng.random() < 0.8):
            words.append(rng.choice(WORDS))
        text = " ".join(words)
        if rng.random() < 0.1:
            text += "\nsecond line"
        return text

    def code(self, prefix: str, width: int) -> str:
        return prefix + "".join(self._rng.choice(_ASCII) for _ in range(width))

    def _text(self, limit: int, exact: bool) -> str:
        if exact:
            return "".join(self._rng.choice(_ASCII) for _ in range(limit))
        text = self.sentence(limit)[:limit]
        return text.strip() or "x"

    def _bytes(self, column: ColumnSchema) -> bytes:
        rng = self._rng
        limit = min(display_length(column), 48)
        size = limit if column.mysql_type == "binary" else rng.randint(0, limit)
        data = bytearray(rng.randbytes(size))
        if size >= 2 and rng.random() < 0.5:
            data[0:2] = b"\xff\xfe"  # never valid UTF-8
        return bytes(data)

    def _decimal(self, column: ColumnSchema, edge: bool) -> Decimal:
        precision, scale = column.length or 10, column.scale or 0
        largest = 10**precision - 1
        if edge:
            units = self._rng.choice((largest, -largest, 0, 1, -1))
        else:
            units = self._rng.randint(-min(largest, 10 ** min(precision, 9)), min(largest, 10 ** min(precision, 11)))
        return Decimal(units).scaleb(-scale)

    def _fraction(self, fsp: int) -> int:
        if fsp == 0:
            return 0
        step = int(10 ** (6 - fsp))
        return self._rng.randint(0, 10**fsp - 1) * step

    def _json(self) -> str:
        rng = self._rng
        document: dict[str, object] = {"id": rng.randint(1, 10_000)}
        if rng.random() < 0.6:
            document["tags"] = rng.sample(["vip", "new", "eu", "asia", "東京", "🚀"], rng.randint(0, 3))
        if rng.random() < 0.5:
            document["score"] = round(rng.uniform(0, 100), 2)
        if rng.random() < 0.4:
            document["active"] = rng.random() < 0.5
        if rng.random() < 0.3:
            document["address"] = {"city": rng.choice(WORDS[:8]), "zip": None}
        return tidb_json_text(document)


def is_ambiguous_wall_time(instant: datetime, zone: ZoneInfo) -> bool:
    """True when the wall time of ``instant`` in ``zone`` happens twice (a DST fall-back hour)."""
    wall = instant.astimezone(zone).replace(tzinfo=None)
    return zone.utcoffset(wall.replace(fold=0)) != zone.utcoffset(wall.replace(fold=1))


def tidb_json_text(document: object) -> str:
    """JSON text the way TiDB prints a JSON value: keys sorted, ``", "`` and ``": "`` separators."""
    return json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))

"""The vectorized Avro reader (``avro_binary``) against ``fastavro``, which the Python decoder reads with.

Valid records written by ``fastavro.schemaless_writer`` (random values, edge varints, empty
strings, nulls, non-ASCII text) must all be ok and read to fastavro's values. For any bytes at
all (truncated, garbled, hand-made varints and union branches), a record the reader calls ok must
be one fastavro reads to the same values, consuming exactly all its bytes.
"""

from __future__ import annotations

import io
import math
import random
import struct
from typing import Any

import fastavro
import numpy as np
import pytest

from ticdc_lake.spark.arrow_decode.avro_binary import FieldSpec, field_specs, read_longs, read_records

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "r",
    "namespace": "default.db",
    "fields": [
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "ni", "type": ["null", "int"]},
        {"name": "ln", "type": ["long", "null"]},
        {"name": "f", "type": "float"},
        {"name": "d", "type": ["null", "double"]},
        {"name": "s", "type": {"type": "string", "connect.parameters": {"tidb_type": "TEXT"}}},
        {"name": "ns", "type": ["null", "string"]},
        {"name": "b", "type": "bytes"},
        {"name": "nb", "type": [{"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "null"]},
        {"name": "t", "type": "boolean"},
    ],
}
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_EDGE_LONGS = [0, -1, 1, 63, -64, 64, -65, 8191, -8192, *_INT32, _INT32[0] - 1, _INT32[1] + 1, *_INT64]


def _without_logical(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_logical(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_without_logical(v) for v in node]
    return node


READER = fastavro.parse_schema(_without_logical(SCHEMA))


def _record(rng: random.Random) -> dict[str, Any]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.3 else value

    def text() -> str:
        return "".join(rng.choice('aé中\U0001f600\n"\\ ') for _ in range(rng.choice([0, 0, 1, 5, 40, 200])))

    def long(bounds: tuple[int, int]) -> int:
        return rng.choice([rng.choice(_EDGE_LONGS), rng.randint(*bounds), rng.randint(-1000, 1000)])

    return {
        "i": max(min(long(_INT32), _INT32[1]), _INT32[0]),
        "l": long(_INT64),
        "ni": maybe(max(min(long(_INT32), _INT32[1]), _INT32[0])),
        "ln": maybe(long(_INT64)),
        "f": struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0],
        "d": maybe(rng.choice([struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0], -0.0, 1.5])),
        "s": text(),
        "ns": maybe(text()),
        "b": rng.randbytes(rng.choice([0, 1, 3, 300])),
        "nb": maybe(rng.randbytes(rng.choice([0, 1, 16]))),
        "t": rng.random() < 0.5,
    }


def _encode(record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, READER, record)
    return buffer.getvalue()


def _read(bodies: list[bytes], fields: list[FieldSpec]) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """read_records over the bodies laid end to end (with a byte between them): ok and the values per body."""
    joined = b"".join(b"\xff" + body for body in bodies) + b"\xff"
    lengths = np.array([len(b) for b in bodies], dtype=np.int64)
    starts = np.cumsum(lengths + 1) - lengths
    records = read_records(np.frombuffer(joined, dtype=np.uint8), starts, starts + lengths, fields)
    values = [{name: column[n].as_py() for name, column in records.columns.items()} for n in range(len(bodies))]
    return records.ok, values


def _fastavro(body: bytes, reader: Any = READER) -> dict[str, Any] | None:
    """What the Python decoder reads: the record, or None where fastavro fails or leaves bytes."""
    buffer = io.BytesIO(body)
    try:
        record = fastavro.schemaless_reader(buffer, reader)
    except Exception:  # any failure: the Python decoder rejects the record
        return None
    assert isinstance(record, dict)
    return record if buffer.tell() == len(body) else None


def _same(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    for name, value in theirs.items():
        other = mine[name]
        if isinstance(value, float) and math.isnan(value):
            if not (isinstance(other, float) and math.isnan(other)):
                return False
        elif type(value) is not type(other) or value != other or _signs_differ(value, other):
            return False
    return True


def _signs_differ(value: Any, other: Any) -> bool:
    return isinstance(value, float) and math.copysign(1, value) != math.copysign(1, other)


def _assert_ok_means_fastavro(bodies: list[bytes], fields: list[FieldSpec], reader: Any = READER) -> int:
    ok, values = _read(bodies, fields)
    for n, body in enumerate(bodies):
        if ok[n]:
            expected = _fastavro(body, reader)
            assert expected is not None, f"ok, but fastavro rejects {body!r}"
            assert _same(values[n], expected), (body, values[n], expected)
    return int(ok.sum())


def test_field_specs() -> None:
    fields = field_specs(SCHEMA)
    assert fields is not None
    assert [(f.name, f.kind, f.null_branch) for f in fields[:4]] == [
        ("i", "int", None),
        ("l", "long", None),
        ("ni", "int", 0),
        ("ln", "long", 1),
    ]
    assert fields[9] == FieldSpec("nb", "bytes", 1)
    for bad in (
        {"type": "record", "fields": [{"name": "x", "type": {"type": "fixed", "size": 2, "name": "f"}}]},
        {"type": "record", "fields": [{"name": "x", "type": ["null", "int", "long"]}]},
        {"type": "record", "fields": [{"name": "x", "type": ["int", "long"]}]},
        {"type": "record", "fields": [{"name": "x", "type": ["null", "null"]}]},
        {"type": "record", "fields": [{"name": "x", "type": {"type": "array", "items": "int"}}]},
        {"type": "record", "fields": [{"type": "int"}]},
        {"type": "enum", "symbols": ["a"]},
        {"type": "record"},
    ):
        assert field_specs(bad) is None, bad


def test_random_records_read_as_fastavro_reads_them() -> None:
    rng = random.Random(7)
    records = [_record(rng) for _ in range(600)]
    bodies = [_encode(r) for r in records]
    fields = field_specs(SCHEMA)
    assert fields is not None
    ok, values = _read(bodies, fields)
    assert ok.all()
    for body, mine in zip(bodies, values, strict=True):
        expected = _fastavro(body)
        assert expected is not None
        assert _same(mine, expected), (mine, expected)


def test_edge_varints() -> None:
    """Every edge long, minimal and padded encodings, and overlong ones (refused)."""
    fields = [FieldSpec("l", "long")]
    reader = fastavro.parse_schema({"type": "record", "name": "x", "fields": [{"name": "l", "type": "long"}]})
    bodies = [_encode_long(v) for v in _EDGE_LONGS]
    ok, values = _read(bodies, fields)
    assert ok.all()
    assert [v["l"] for v in values] == _EDGE_LONGS
    crafted = [
        b"\x80\x00",  # 0 padded
        b"\xff" * 9 + b"\x01",  # the 10-byte maximum
        b"\xfe" + b"\xff" * 8 + b"\x01",
        b"\x80" * 9 + b"\x00",
        b"\xff" * 9 + b"\x02",  # beyond 64 bits: fastavro wraps it
        b"\xff" * 9 + b"\x7f",
        b"\xff" * 10 + b"\x01",  # 11 bytes
        b"\x80" * 10 + b"\x00",
        b"\x80",  # unterminated
        b"",
    ]
    ok, values = _read(crafted, fields)
    assert ok.tolist() == [True, True, True, True, False, False, False, False, False, False]
    assert _assert_ok_means_fastavro(crafted, fields, reader) == 4


def _encode_long(value: int) -> bytes:
    bits = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        if bits < 0x80:
            out.append(bits)
            return bytes(out)
        out.append((bits & 0x7F) | 0x80)
        bits >>= 7


def test_read_longs_against_python() -> None:
    rng = random.Random(3)
    values = [rng.choice(_EDGE_LONGS) for _ in range(50)] + [rng.randint(*_INT64) for _ in range(500)]
    data = b"".join(_encode_long(v) for v in values)
    widths = [len(_encode_long(v)) for v in values]
    pos = np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)
    got, width, good = read_longs(np.frombuffer(data, np.uint8), pos, np.full(len(values), len(data), np.int64))
    assert good.all()
    assert got.tolist() == values
    assert width.tolist() == widths


def test_union_branches() -> None:
    """Branch 0/1 only: fastavro also takes a negative branch (from the end), which is refused here."""
    fields = [FieldSpec("x", "long", 0)]
    reader = fastavro.parse_schema({"type": "record", "name": "u", "fields": [{"name": "x", "type": ["null", "long"]}]})
    bodies = [b"\x00", b"\x02\x04", b"\x01\x04", b"\x03", b"\x04\x04", b"\x02", b"\x00\x00"]
    ok, values = _read(bodies, fields)
    assert ok.tolist() == [True, True, False, False, False, False, False]
    assert [v["x"] for v in values[:2]] == [None, 2]
    _assert_ok_means_fastavro(bodies, fields, reader)


def test_strings() -> None:
    fields = [FieldSpec("s", "string"), FieldSpec("b", "bytes")]
    reader = fastavro.parse_schema(
        {"type": "record", "name": "s", "fields": [{"name": "s", "type": "string"}, {"name": "b", "type": "bytes"}]}
    )
    bodies = [
        b"\x00\x00",  # two empty values
        b"\x04\xc3\xa9\x02\xff",  # é and one byte
        b"\x04\xed\xa0\x02\xff",  # a surrogate: not UTF-8
        b"\x02\xff\x00",  # not UTF-8
        b"\x01\x00",  # negative length
        b"\x06ab",  # beyond the end
        b"\x00\x00\x00",  # a byte after the record
    ]
    ok, values = _read(bodies, fields)
    assert ok.tolist() == [True, True, False, False, False, False, False]
    assert values[1] == {"s": "é", "b": b"\xff"}
    assert values[2] == {"s": None, "b": None}
    _assert_ok_means_fastavro(bodies, fields, reader)


def test_booleans() -> None:
    fields = [FieldSpec("t", "boolean")]
    ok, values = _read([b"\x00", b"\x01", b"\x02", b""], fields)
    assert ok.tolist() == [True, True, False, False]
    assert [v["t"] for v in values[:2]] == [False, True]


@pytest.mark.parametrize("seed", range(4))
def test_truncated_and_garbled(seed: int) -> None:
    """No truncation of a valid record is ok; any garbled record that is ok is what fastavro reads."""
    rng = random.Random(seed)
    fields = field_specs(SCHEMA)
    assert fields is not None
    bodies = [_encode(_record(rng)) for _ in range(60)]
    truncated = [body[:cut] for body in bodies for cut in range(len(body)) if cut < 60 or rng.random() < 0.05]
    ok, _ = _read(truncated, fields)
    assert not ok.any()
    garbled = []
    for body in bodies:
        for _ in range(40):
            data = bytearray(body)
            for _ in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] = rng.choice([0, 1, 2, 3, 0x7F, 0x80, 0xFF, rng.randrange(256)])
            garbled.append(bytes(data))
    assert _assert_ok_means_fastavro(garbled, fields) > 100
    extended = [body + bytes([rng.randrange(256)]) for body in bodies]
    ok, _ = _read(extended, fields)
    assert not ok.any()


def test_no_records() -> None:
    fields = field_specs(SCHEMA)
    assert fields is not None
    records = read_records(np.zeros(0, np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64), fields)
    assert len(records.ok) == 0
    assert all(len(column) == 0 for column in records.columns.values())

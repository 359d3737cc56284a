"""The floor UDFs of `bench_jvm_decode_path.py` read what the landed messages hold: the bench times real work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bench_jvm_decode_path as path  # type: ignore[import-not-found,unused-ignore]  # beside this file
import bench_jvm_json_floor as floor  # type: ignore[import-not-found,unused-ignore]  # beside this file
import msgspec
import pytest
from pyspark.sql import SparkSession

from ticdc_lake.spark.jvm_decode import frames

pytestmark = pytest.mark.spark


def _text(value: Any) -> str | None:
    """A JSON scalar as Jackson's ``getText`` gives it (the payloads hold integers and strings)."""
    return None if value is None else str(value)


def _record(image: dict[str, Any]) -> bytes:
    """The reference encoding of ``DebeziumFloorUdf$Records``: per column a union branch (0 null, 2
    a value), an integer as a zig-zag varint, anything else as its length-prefixed UTF-8 text."""

    def varint(number: int) -> bytes:
        number &= (1 << 64) - 1
        out = bytearray()
        while number > 0x7F:
            out.append(number & 0x7F | 0x80)
            number >>= 7
        return bytes([*out, number])

    out = b""
    for value in image.values():
        if value is None:
            out += b"\x00"
        elif isinstance(value, int) and not isinstance(value, bool):
            out += b"\x02" + varint((value << 1) ^ (value >> 63))
        else:
            text = str(value).encode()
            out += b"\x02" + varint(len(text) << 1) + text
    return out


def test_the_udfs_return_every_row_change_as_its_payload_holds_it_and_nothing_for_the_rest(
    tmp_path: Path, spark: SparkSession
) -> None:
    store, pipeline = floor.land(tmp_path, 30)
    spark.sql(f"ADD JAR '{path.compile_udf(tmp_path)}'")
    path.register_udf(spark)
    root = frames.local_root(pipeline.landing_uri, pipeline.id)
    assert root is not None

    rows = (
        frames.landed_messages(spark, root, path.landed_files(store, pipeline))
        .selectExpr("`offset`", "value", "floor_decode(key, value) AS e", "floor_records(key, value) AS r")
        .orderBy("offset")
        .collect()
    )

    assert len(rows) == 32  # the CREATE TABLE, 30 row changes, the watermark
    assert [r["e"] is None for r in rows] == [True] + [False] * 30 + [True]
    assert [r["r"] is None for r in rows] == [True] + [False] * 30 + [True]
    for row in rows[1:31]:
        payload = msgspec.json.decode(row["value"])["payload"]  # the reference: the payload as sent
        decoded = row["e"]
        assert (decoded["op"], decoded["commit_ts"]) == (payload["op"], payload["source"]["commit_ts"])
        assert (decoded["database"], decoded["table"]) == (payload["source"]["db"], payload["source"]["table"])
        assert decoded["key_members"] == 1  # the key's payload: the id
        for side in ("before", "after"):
            image = payload.get(side)
            expected = None if image is None else {k: _text(v) for k, v in image.items()}
            assert decoded[side] == expected, (row["offset"], side)  # (a collected map keeps no order)
            record = None if image is None else _record(image)
            assert row["r"][side] == record, (row["offset"], side)
        assert row["r"]["op"] == decoded["op"]
    assert {r["e"]["op"] for r in rows[1:31]} == {"c", "u", "d"}

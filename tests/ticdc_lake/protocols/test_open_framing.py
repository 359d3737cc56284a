"""Open Protocol byte framing: the real encoder's golden files and every malformed case."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import tiflow_vectors
from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.open_framing import (
    FramedItem,
    JsonNumberText,
    frame_batch,
    load_json_object,
    split_batch,
)

VECTORS = tiflow_vectors.OPEN_DATA
V1 = (1).to_bytes(8, "big")


def u64(n: int) -> bytes:
    return n.to_bytes(8, "big")


def pair(name: str) -> tuple[bytes, bytes]:
    tiflow_vectors.require()
    kind, number = name.rsplit("_", 1)
    return (VECTORS / "key" / f"{kind}_key_{number}").read_bytes(), (
        VECTORS / "value" / f"{kind}_value_{number}"
    ).read_bytes()


#: Every golden pair: (key JSON items, value items) exactly as the Go encoder framed them.
GOLDEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any] | None]]] = {
    "ddl_0": ([{"ts": 1, "scm": "a", "tbl": "b", "t": 2}], [{"q": "create table a", "t": 1}]),
    "ddl_1": (
        [{"ts": ts, "scm": "a", "tbl": "b", "t": 2} for ts in (1, 2, 3)],
        [{"q": "create table a", "t": 1}, {"q": "create table b", "t": 2}, {"q": "create table c", "t": 3}],
    ),
    "ddl_2": ([], []),
    "row_0": ([{"ts": 1, "scm": "a", "tbl": "b", "t": 1}], [{"u": {"col1": {"t": 1, "v": "aa"}}}]),
    "row_1": (
        [
            {"ts": 1, "scm": "a", "tbl": "b", "t": 1},
            {"ts": 2, "scm": "a", "tbl": "b", "t": 1},
            {"ts": 3, "scm": "a", "tbl": "b", "t": 1},
            {"ts": 4, "scm": "a", "tbl": "c", "ptn": 6, "t": 1},
        ],
        [{"u": {"col1": {"t": 1, "v": v}}} for v in ("aa", "bb", "bb", "cc")],
    ),
    "row_2": ([], []),
    "rts_0": ([{"ts": 1, "t": 3}], [None]),
    "rts_1": ([{"ts": ts, "t": 3} for ts in (1, 2, 3)], [None, None, None]),
    "rts_2": ([], []),
}


@tiflow_vectors.needs_vectors
def test_every_golden_file_pair_is_covered() -> None:
    names = {p.name.replace("_key_", "_") for p in (VECTORS / "key").iterdir()}
    assert names == set(GOLDEN)
    assert {p.name.replace("_value_", "_") for p in (VECTORS / "value").iterdir()} == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_pairs_split_into_items(name: str) -> None:
    key, value = pair(name)
    keys, values = GOLDEN[name]
    pairs = split_batch(key, value)
    assert len(pairs) == len(keys)
    offset = 8
    value_offset = 0
    for index, (key_item, value_item) in enumerate(pairs):
        assert (key_item.index, value_item.index) == (index, index)
        assert key_item.offset == offset
        assert value_item.offset == value_offset
        assert load_json_object(key_item, "key") == keys[index]
        if values[index] is None:
            assert value_item.data == b""  # resolved: u64be(0)
        else:
            assert load_json_object(value_item, "value") == values[index]
        offset += 8 + len(key_item.data)
        value_offset += 8 + len(value_item.data)
    assert offset == len(key)
    assert value_offset == len(value)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_frame_batch_rebuilds_golden_bytes(name: str) -> None:
    key, value = pair(name)
    pairs = split_batch(key, value)
    assert frame_batch([k.data for k, _ in pairs], [v.data for _, v in pairs]) == (key, value)


def test_empty_batch_with_missing_value() -> None:
    assert split_batch(V1, None) == []
    assert split_batch(V1, b"") == []


def test_floats_keep_their_text_and_ints_stay_exact() -> None:
    doc = load_json_object(FramedItem(0, 0, b'{"a": 1e-07, "b": 18446744073709551615, "c": 3.140}'), "value")
    assert doc == {"a": "1e-07", "b": 18446744073709551615, "c": "3.140"}
    assert isinstance(doc["a"], JsonNumberText)
    assert type(doc["b"]) is int


MALFORMED = [
    (None, b"", "open: the message has no key; Open Protocol keys carry the batch version and every event's key "
     "(check that the pipeline's protocol matches the changefeed)"),
    (b"\x00\x00\x00", b"", "open: the key is 3 bytes, shorter than the 8-byte batch version that starts every Open "
     "Protocol key (check that the pipeline's protocol matches the changefeed)"),
    (u64(2), b"", "open: unsupported batch version 2 in the first 8 bytes of the key; this decoder reads Open "
     "Protocol batch version 1 (check that the pipeline's protocol matches the changefeed)"),
    (V1 + u64(2) + b"{}" + b"\x00\x00\x00\x00", u64(0) + u64(0),
     "open: key item 1 at byte offset 18: the 8-byte length prefix is truncated (4 bytes left)"),
    (V1 + u64(10) + b"{}", u64(0),
     "open: key item 0 at byte offset 8: length 10 goes beyond the end of the key (2 bytes left)"),
    (V1 + u64(2) + b"{}", u64(0) + u64(5) + b"abc",
     "open: value item 1 at byte offset 8: length 5 goes beyond the end of the value (3 bytes left)"),
    (V1 + u64(2) + b"{}", u64(2) + b"{}" + b"\x00",
     "open: value item 1 at byte offset 10: the 8-byte length prefix is truncated (1 bytes left)"),
    (V1 + u64(2) + b"{}" + u64(2) + b"{}", u64(0),
     "open: the key holds 2 items but the value holds 1; key item i pairs with value item i, so the message "
     "is truncated or corrupted"),
    (V1, u64(0),
     "open: the key holds 0 items but the value holds 1; key item i pairs with value item i, so the message "
     "is truncated or corrupted"),
    (V1 + u64((1 << 64) - 1), b"",
     "open: key item 0 at byte offset 8: length 18446744073709551615 goes beyond the end of the key "
     "(0 bytes left)"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "value", "message"), MALFORMED)
def test_malformed_framing(key: bytes | None, value: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        split_batch(key, value)
    assert str(info.value) == message
    assert info.value.protocol == "open"


def test_invalid_json_names_item_and_offset() -> None:
    with pytest.raises(DecodeError) as info:
        load_json_object(FramedItem(2, 60, b'{"ts":'), "key")
    assert str(info.value) == (
        "open: key item 2 at byte offset 60 is not valid JSON: Expecting value: line 1 column 7 (char 6)"
    )
    with pytest.raises(DecodeError) as info:
        load_json_object(FramedItem(1, 30, b"\xff"), "value")
    assert str(info.value) == (
        "open: value item 1 at byte offset 30 is not valid JSON: 'utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte (if the changefeed compresses messages, set the pipeline's "
        "codec.compression to match)"
    )
    with pytest.raises(DecodeError) as info:
        load_json_object(FramedItem(0, 8, b"[1]"), "key")
    assert str(info.value) == "open: key item 0 at byte offset 8 must be a JSON object, got an array"
    with pytest.raises(DecodeError) as info:
        load_json_object(FramedItem(0, 8, b'{"v": NaN}'), "value")
    assert str(info.value).startswith("open: value item 0 at byte offset 8 is not valid JSON: NaN is not allowed")


def test_frame_batch_needs_as_many_values_as_keys() -> None:
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        frame_batch([b"{}", b"{}"], [b""])
    assert json.loads(frame_batch([b"{}"], [b"[]"])[0][16:]) == {}

"""Byte framing of TiCDC Open Protocol messages (docs/protocols.md, "Framing").

One Kafka message is a batch of events::

    key   = u64be(1)                               -- batch version, once
            then per event: u64be(len) + key JSON
    value = per event: u64be(len) + value bytes    -- no version prefix

Key item *i* pairs with value item *i*. A resolved event's value item is empty (``u64be(0)``);
an empty batch is a key holding only the version and an empty value.

This module only splits and joins the items; it knows nothing of the JSON inside them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ticdc_lake.errors import DecodeError
from ticdc_lake.protocols.json_surrogates import lone_surrogate, lone_surrogate_reason

PROTOCOL = "open"
BATCH_VERSION = 1
_LENGTH_BYTES = 8


@dataclass(frozen=True, slots=True)
class FramedItem:
    """One length-prefixed item: its index in the batch and the offset of its length prefix."""

    index: int
    #: Byte offset of the item's 8-byte length prefix in the key (or value) bytes.
    offset: int
    data: bytes


class JsonNumberText(str):
    """A JSON number with a fraction or exponent, kept as the exact text that was sent."""

    __slots__ = ()


def split_batch(key: bytes | None, value: bytes | None) -> list[tuple[FramedItem, FramedItem]]:
    """The (key item, value item) pairs of one Open Protocol Kafka message, in batch order.

    A missing value (``None``) reads as empty: an empty batch needs no value bytes.
    """
    if key is None:
        raise DecodeError(
            PROTOCOL,
            "the message has no key; Open Protocol keys carry the batch version and every event's "
            "key (check that the pipeline's protocol matches the changefeed)",
        )
    if len(key) < _LENGTH_BYTES:
        raise DecodeError(
            PROTOCOL,
            f"the key is {len(key)} bytes, shorter than the 8-byte batch version that starts every "
            "Open Protocol key (check that the pipeline's protocol matches the changefeed)",
        )
    version = int.from_bytes(key[:_LENGTH_BYTES], "big")
    if version != BATCH_VERSION:
        raise DecodeError(
            PROTOCOL,
            f"unsupported batch version {version} in the first 8 bytes of the key; this decoder reads "
            f"Open Protocol batch version {BATCH_VERSION} (check that the pipeline's protocol matches "
            "the changefeed)",
        )
    key_items = split_items(key, "key", start=_LENGTH_BYTES)
    value_items = split_items(value or b"", "value", start=0)
    if len(key_items) != len(value_items):
        raise DecodeError(
            PROTOCOL,
            f"the key holds {len(key_items)} items but the value holds {len(value_items)}; key item i "
            "pairs with value item i, so the message is truncated or corrupted",
        )
    return list(zip(key_items, value_items, strict=True))


def split_items(data: bytes, part: str, *, start: int) -> list[FramedItem]:
    """The length-prefixed items of ``data`` from byte ``start`` on; ``part`` is key or value."""
    items: list[FramedItem] = []
    offset = start
    size = len(data)
    while offset < size:
        index = len(items)
        if size - offset < _LENGTH_BYTES:
            raise DecodeError(
                PROTOCOL,
                f"{part} item {index} at byte offset {offset}: the 8-byte length prefix is truncated "
                f"({size - offset} bytes left)",
            )
        length = int.from_bytes(data[offset : offset + _LENGTH_BYTES], "big")
        body = offset + _LENGTH_BYTES
        if length > size - body:
            raise DecodeError(
                PROTOCOL,
                f"{part} item {index} at byte offset {offset}: length {length} goes beyond the end of "
                f"the {part} ({size - body} bytes left)",
            )
        items.append(FramedItem(index, offset, data[body : body + length]))
        offset = body + length
    return items


def load_json_object(item: FramedItem, part: str) -> dict[str, Any]:
    """Parse one item as a JSON object; numbers with a fraction stay :class:`JsonNumberText`."""
    try:
        text = item.data.decode("utf-8")
        doc = _JSON.decode(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(
            PROTOCOL,
            f"{part} item {item.index} at byte offset {item.offset} is not valid JSON: {exc}"
            + (
                " (if the changefeed compresses messages, set the pipeline's codec.compression to match)"
                if part == "value"
                else ""
            ),
        ) from None
    if not isinstance(doc, dict):
        raise DecodeError(
            PROTOCOL,
            f"{part} item {item.index} at byte offset {item.offset} must be a JSON object, got {describe(doc)}",
        )
    if (where := lone_surrogate(text, doc)) is not None:
        reason = lone_surrogate_reason(where)
        raise DecodeError(PROTOCOL, f"{part} item {item.index} at byte offset {item.offset}: {reason}")
    return doc


def frame_batch(keys: Sequence[bytes], values: Sequence[bytes]) -> tuple[bytes, bytes]:
    """Build an Open Protocol (key, value) pair from per-event key and value bytes.

    The inverse of :func:`split_batch`, for tests and tools.
    """
    if len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys but {len(values)} values: each event needs one of each")
    key = BATCH_VERSION.to_bytes(_LENGTH_BYTES, "big") + b"".join(
        len(k).to_bytes(_LENGTH_BYTES, "big") + k for k in keys
    )
    value = b"".join(len(v).to_bytes(_LENGTH_BYTES, "big") + v for v in values)
    return key, value


def describe(value: object) -> str:
    """A short description of a parsed JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, JsonNumberText | int | Decimal | float):
        return f"number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return 'string "' + shown + '"'
    if isinstance(value, list):
        return "an array"
    return "an object"


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed in JSON")


_JSON = json.JSONDecoder(parse_float=JsonNumberText, parse_constant=_reject_constant)

"""A lone UTF-16 surrogate escape in a JSON message is a clear decode error, not a crashed task.

Python's JSON parser accepts ``"\\ud800"`` and yields a code point that cannot be written as UTF-8,
so before the check the decoders returned an event whose row image broke the Arrow writer and
failed the whole decode task. Each JSON protocol now quarantines the message with its own reason.
"""

from __future__ import annotations

import json

import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.json_surrogates import lone_surrogate, lone_surrogate_reason
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import IndexSchema, TableSchema
from ticdc_sim.catalog import column
from ticdc_sim.encoders import encoder_for
from ticdc_sim.model import DmlOp, RowChange

#: Six characters, as long as the escape ``\ud800`` that replaces them in the encoded bytes, so a
#: length-prefixed frame (Open Protocol) stays well formed.
MARKER = "QZQZQZ"
SCHEMA = TableSchema(
    "shop",
    "orders",
    (column("id", "int", nullable=False), column("name", "varchar", length=32)),
    (IndexSchema("PRIMARY", ("id",), primary=True, unique=True),),
    table_id=100,
    version=1000,
    source="simulator",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "\\ud83d\\ude00"}', None),  # a pair is one character
        ('{"a": "\\\\ud800"}', None),  # an escaped backslash, then plain text
        ('{"a": "plain"}', None),
        ('{"a": ["x", {"b": "\\ud800"}]}', "$.a[1].b"),
        ('{"a": "\\udc00x"}', "$.a"),
        ('{"\\ud800": 1}', "$.<key '\\ud800'>"),
    ],
)
def test_lone_surrogate_names_where_the_string_is(text: str, expected: str | None) -> None:
    assert lone_surrogate(text, json.loads(text)) == expected


@pytest.mark.parametrize(
    ("protocol", "prefix", "path"),
    [
        ("simple-json", "simple-json: ", "$.data.name"),
        ("canal-json", "canal-json: ", "$.data[0].name"),
        ("debezium", "debezium: value: ", "$.payload.after.name"),
        ("open", "open: value item 0 at byte offset 0: ", "$.u.name.v"),
    ],
)
def test_each_json_protocol_rejects_a_lone_surrogate_with_its_position(protocol: str, prefix: str, path: str) -> None:
    encoder = encoder_for(protocol, "UTC")
    change = RowChange(DmlOp.INSERT, "shop", "orders", None, {"id": 1, "name": MARKER})
    encoded = encoder.encode_row(change, SCHEMA, 449506832000000000, 1)
    assert encoded.value.count(MARKER.encode()) == 1
    value = encoded.value.replace(MARKER.encode(), b"\\ud800")
    decoder = decoder_for(protocol, CodecOptions())
    schemas = MemorySchemaLookup([SCHEMA])
    # The message as encoded decodes; with the escape it is refused, naming the string.
    assert decoder.decode(RawMessage("cdc", 0, 5, 0, encoded.key, encoded.value), schemas)
    with pytest.raises(DecodeError) as caught:
        decoder.decode(RawMessage("cdc", 0, 5, 0, encoded.key, value), schemas)
    assert str(caught.value) == prefix + lone_surrogate_reason(path)

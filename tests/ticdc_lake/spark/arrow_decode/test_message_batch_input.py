"""The vector decoders read a :class:`MessageBatch` (the decode worker's input, columns gathered from
the landed blocks) exactly as the same messages given one by one: the same rows, the same taken."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.message_batch import batches
from ticdc_lake.landing.raw_batch import ConsumedRecord, read_raw_blocks, write_raw_batch
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.schema.inference import schema_from_types
from ticdc_lake.spark.arrow_decode.debezium_batch import DebeziumVectorDecoder
from ticdc_lake.spark.arrow_decode.simple_json_batch import SimpleJsonVectorDecoder
from ticdc_sim.debezium_encoder import DebeziumEncoder
from ticdc_sim.model import DmlOp, RowChange
from ticdc_sim.simple_json_encoder import SimpleJsonEncoder

SCHEMA = replace(
    schema_from_types("db", "t", {"id": "bigint", "note": "varchar", "n": "int"}, ("id",), None), version=100
)


def _messages(encoder: DebeziumEncoder | SimpleJsonEncoder) -> list[RawMessage]:
    messages = []
    for n in range(300):
        op = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)[n % 3]
        row = {"id": n, "note": f"note {n}" if n % 5 else None, "n": n * 7}
        before = row if op is not DmlOp.INSERT else None
        after = {**row, "n": -n} if op is DmlOp.UPDATE else row if op is DmlOp.INSERT else None
        encoded = encoder.encode_row(RowChange(op, "db", "t", before, after), SCHEMA, 200 + n, 1)
        value = encoded.value if n != 77 else b"not json"  # one the vector decoder leaves to Python
        messages.append(RawMessage("topic", 0, 1000 + n, 5, encoded.key, value))
    return messages


@pytest.mark.parametrize(
    ("encoder", "decoder"),
    [(DebeziumEncoder("UTC"), DebeziumVectorDecoder), (SimpleJsonEncoder("UTC"), SimpleJsonVectorDecoder)],
)
def test_a_message_batch_decodes_as_its_messages(
    encoder: DebeziumEncoder | SimpleJsonEncoder, decoder: type[DebeziumVectorDecoder | SimpleJsonVectorDecoder]
) -> None:
    messages = _messages(encoder)
    sink = io.BytesIO()
    records = [ConsumedRecord(m) for m in messages]
    write_raw_batch(sink, records, pipeline="p", topic="topic", partition=0, start=1000, end=1300, block_bytes=4_000)
    chunks = list(batches(read_raw_blocks(io.BytesIO(sink.getvalue())), 1010, 1290, 128))
    assert [len(c) for c in chunks] == [128, 128, 24]
    lookup = MemorySchemaLookup([SCHEMA])
    for chunk in chunks:
        as_batch = decoder(CodecOptions(), "p", "r").decode("b", chunk, lookup)
        as_list = decoder(CodecOptions(), "p", "r").decode("b", list(chunk), lookup)
        assert as_batch.taken == as_list.taken
        assert as_batch.events is not None
        assert as_list.events is not None
        assert as_batch.events.to_pylist() == as_list.events.to_pylist()
    assert sum(not t for c in chunks for t in decoder(CodecOptions(), "p", "r").decode("b", c, lookup).taken) == 1

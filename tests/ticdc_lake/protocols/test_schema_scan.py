"""The first pass in one process: DDL of several partitions folded, then rows bound to the folded versions."""

from __future__ import annotations

import json

from tests.ticdc_lake.spark.test_schema_history_job import PARTITION_0, PARTITION_1, T
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import EventKind, RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import prepared_lookup


def test_prepared_lookup_folds_the_ddl_and_rows_bind_to_their_versions() -> None:
    decoder = decoder_for("canal-json", CodecOptions())
    messages = [
        RawMessage("t", partition, offset, 0, None, json.dumps(doc, separators=(",", ":")).encode())
        for partition, docs in ((1, PARTITION_1), (0, PARTITION_0))
        for offset, doc in enumerate(docs)
    ]
    lookup = prepared_lookup(decoder, messages)
    events = [e for m in messages for e in decoder.read(m, lookup)]
    dml = [(e.table, e.schema_version and e.schema_version - T) for e in events if e.kind is EventKind.DML]
    assert dml == [("legacy", None), ("customers", None), ("orders", 100), ("orders", 300), ("orders_v2", 400)]
    errors = [e.position.offset for e in events if e.schema_error is not None]
    assert errors == [9]

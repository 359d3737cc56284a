"""What a decode task records of the events a vector decoder made, read from a whole batch's columns.

The Python loop of ``decode_worker`` counts its events one by one (``_count``) and records the
first row bound to a start schema (version 0) per table (``_start_schemas``); these functions give
the same facts of a ``change_events`` batch of DML rows, for ``decode_worker`` to record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.config import Compression, PipelineConfig, Protocol
from ticdc_lake.protocols.resources import DecodeResources
from ticdc_lake.spark.arrow_decode.canal_batch import CanalJsonVectorDecoder
from ticdc_lake.spark.arrow_decode.compressed_values import DecompressingDecoder
from ticdc_lake.spark.arrow_decode.debezium_batch import DebeziumVectorDecoder
from ticdc_lake.spark.arrow_decode.open_batch import OpenVectorDecoder
from ticdc_lake.spark.arrow_decode.simple_json_batch import SimpleJsonVectorDecoder
from ticdc_lake.spark.decode_arrow import TSO_ARROW

if TYPE_CHECKING:
    from ticdc_lake.spark.arrow_decode.avro_batch import AvroVectorDecoder
    from ticdc_lake.spark.arrow_decode.simple_avro_batch import SimpleAvroVectorDecoder

#: (commit_ts, topic, partition, offset) of a row.
Rank = tuple[int, str, int, int]

#: The rank of a row among the rows bound to a start schema: the smallest is recorded (``_start_schemas``).
_RANK = ("commit_ts", "topic", "partition", "offset")

#: Protocols whose changefeed compresses the whole value (and Debezium's key): Open Protocol compresses
#: each value item of a batch message instead (its decoder undoes that), Avro never (``protocols/compression``).
_WHOLE_VALUE_COMPRESSION = frozenset(
    {Protocol.DEBEZIUM, Protocol.SIMPLE_JSON, Protocol.SIMPLE_AVRO, Protocol.CANAL_JSON}
)


def vector_decoder(
    pipeline: PipelineConfig, run_id: str, resources: DecodeResources | None = None
) -> (
    DebeziumVectorDecoder
    | SimpleJsonVectorDecoder
    | CanalJsonVectorDecoder
    | AvroVectorDecoder
    | SimpleAvroVectorDecoder
    | OpenVectorDecoder
    | DecompressingDecoder
    | None
):
    """The whole-batch decoder of the pipeline's protocol, or None where it has none (docs/vector-decode.md);
    ``resources``: the landed writer schemas the Python decoder is given (avro takes nothing without them).
    Where the changefeed compresses whole values, the decoder reads them decompressed (:mod:`.compressed_values`)."""
    compression = pipeline.codec.compression
    if compression is not Compression.NONE and pipeline.protocol in _WHOLE_VALUE_COMPRESSION:
        plain = pipeline.model_copy(
            update={"codec": pipeline.codec.model_copy(update={"compression": Compression.NONE})}
        )
        inner = vector_decoder(plain, run_id, resources)
        if inner is None:
            return None
        return DecompressingDecoder(inner, compression, keys=pipeline.protocol is Protocol.DEBEZIUM)
    if pipeline.protocol is Protocol.DEBEZIUM:
        return DebeziumVectorDecoder(pipeline.codec, pipeline.id, run_id)
    if pipeline.protocol is Protocol.SIMPLE_JSON:
        return SimpleJsonVectorDecoder(pipeline.codec, pipeline.id, run_id)
    if pipeline.protocol is Protocol.CANAL_JSON:
        return CanalJsonVectorDecoder(pipeline.codec, pipeline.id, run_id)
    if pipeline.protocol is Protocol.OPEN:
        return OpenVectorDecoder(pipeline.codec, pipeline.id, run_id)
    if pipeline.protocol is Protocol.AVRO:
        from ticdc_lake.spark.arrow_decode.avro_batch import AvroVectorDecoder  # fastavro loads only for avro

        return AvroVectorDecoder(pipeline.codec, pipeline.id, run_id, resources)
    if pipeline.protocol is Protocol.SIMPLE_AVRO:
        from ticdc_lake.spark.arrow_decode.simple_avro_batch import SimpleAvroVectorDecoder

        return SimpleAvroVectorDecoder(pipeline.codec, pipeline.id, run_id)
    return None


def partition_counts(batch: pa.RecordBatch) -> list[tuple[str, int, int]]:
    """(topic, partition, rows) of the batch's rows."""
    counts = (
        pa.table(batch.select(["topic", "partition"])).group_by(["topic", "partition"]).aggregate([([], "count_all")])
    )
    return list(zip(*(counts.column(i).to_pylist() for i in range(3)), strict=True))


def first_start_rows(batch: pa.RecordBatch) -> list[tuple[str, str, Rank]]:
    """(database, table, rank) of the first row per table bound to version 0, the start schema."""
    at_start = batch.filter(pc.equal(batch.column("schema_version"), pa.scalar(0, TSO_ARROW)))
    if at_start.num_rows == 0:
        return []
    rows = pa.table(at_start.select(["database", "table", *_RANK]))
    rows = rows.set_column(2, "commit_ts", rows.column("commit_ts").cast(pa.uint64()))  # "first" takes no decimal
    rows = rows.sort_by([(name, "ascending") for name in _RANK])
    first = rows.group_by(["database", "table"], use_threads=False).aggregate([(name, "first") for name in _RANK])
    return [
        (database, table, (int(commit_ts), topic, partition, offset))
        for database, table, commit_ts, topic, partition, offset in zip(
            *(first.column(i).to_pylist() for i in range(first.num_columns)), strict=True
        )
    ]

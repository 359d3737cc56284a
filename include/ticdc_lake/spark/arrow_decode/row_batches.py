"""What every vector decoder shares: its result, row images as maps, and the ``change_events`` rows it makes.

A vector decoder (``debezium_batch``, ``simple_json_batch``) decodes the row changes of one table
version at a time (a :class:`DmlGroup`) and hands the worker one ``change_events`` batch of all of
them in message order (:func:`dml_batch`), with the columns ``decode_arrow.events_to_arrow`` gives
the Python decoder's events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ticdc_lake.events import EventKind, EventStatus, RawMessage
from ticdc_lake.landing.message_batch import MessageBatch
from ticdc_lake.spark.arrow_decode.debezium_columns import ColumnReader
from ticdc_lake.spark.arrow_decode.image_records import CARRIER_ARROW
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA, MAP_ARROW, TSO_ARROW

log = logging.getLogger(__name__)


@dataclass
class VectorDecode:
    #: change_events rows (``decode_arrow.EVENTS_ARROW_SCHEMA``) of the messages decoded here, in message order.
    events: pa.RecordBatch | None
    #: Per input message: True when its events are in ``events``; the others go to the Python decoder.
    taken: list[bool]


@dataclass
class DmlGroup:
    """The row changes of one table version a vector decoder took."""

    #: Indexes of their messages in the batch.
    rows: np.ndarray
    commit_ts: np.ndarray
    #: The ``op`` column (``events.Op`` values).
    ops: pa.Array
    database: str
    table: str
    #: The schema version they bind to; None: unbound (``schema_version`` NULL, as the Python decoder leaves it).
    version: int | None
    before: pa.Array
    after: pa.Array
    #: The ``table_id`` column, where the protocol sends it.
    table_ids: pa.Array | None = None
    #: Each row's index among its message's events (``idx``: a batched protocol); 0 where None.
    idx: np.ndarray | None = None


def group_or_none(make: Callable[[], DmlGroup | None], what: str) -> DmlGroup | None:
    """``make()``, or None where it raises: logged, so that a bug in a vector decoder costs only speed
    (the Python decoder takes the group's messages)."""
    try:
        return make()
    except Exception:
        log.exception("decode: the vector decoder failed on %s; decoding it in Python", what)
        return None


def dml_batch(
    pipeline: str, run_id: str, batch_id: str, messages: Sequence[RawMessage], groups: list[DmlGroup]
) -> VectorDecode:
    """The ``change_events`` rows of ``groups``, in message order (then ``idx``), and which messages they took."""
    rows = np.concatenate([g.rows for g in groups])
    idx = np.concatenate([g.idx if g.idx is not None else np.zeros(len(g.rows), np.int32) for g in groups])
    order = np.lexsort((idx, rows))
    index = pa.array(order)
    taken = np.zeros(len(messages), dtype=bool)
    taken[rows] = True
    in_order = rows[order]
    count = len(in_order)
    topics, partitions, offsets = message_positions(messages, in_order)

    def constant(value: object, kind: pa.DataType) -> pa.Array:
        return pa.repeat(pa.scalar(value, kind), count)

    def per_group(values: list[pa.Array]) -> pa.Array:
        return pa.concat_arrays(values).take(index)

    commit = np.concatenate([g.commit_ts for g in groups])[order].astype(np.uint64)
    versions = np.concatenate([np.full(len(g.rows), g.version or 0, dtype=np.uint64) for g in groups])[order]
    unbound = np.concatenate([np.full(len(g.rows), g.version is None) for g in groups])[order]
    table_ids = [g.table_ids if g.table_ids is not None else pa.nulls(len(g.rows), pa.int64()) for g in groups]
    columns = [
        constant(pipeline, pa.string()),
        constant(batch_id, pa.string()),
        topics,
        partitions,
        offsets,
        pa.array(idx[order], pa.int32()),
        constant(EventKind.DML.value, pa.string()),
        pa.array(commit, pa.uint64()).cast(TSO_ARROW),
        per_group([pa.repeat(pa.scalar(g.database), len(g.rows)) for g in groups]),
        per_group([pa.repeat(pa.scalar(g.table), len(g.rows)) for g in groups]),
        per_group([ids.cast(pa.int64()) for ids in table_ids]),
        per_group([g.ops for g in groups]),
        pa.array(versions, pa.uint64(), mask=unbound if unbound.any() else None).cast(TSO_ARROW),
        per_group([g.before for g in groups]),
        per_group([g.after for g in groups]),
        pa.nulls(count, MAP_ARROW),
        pa.nulls(count, pa.string()),
        pa.nulls(count, pa.string()),
        pa.nulls(count, pa.string()),
        pa.nulls(count, pa.string()),
        constant(False, pa.bool_()),
        constant(False, pa.bool_()),
        constant(EventStatus.READY.value, pa.string()),
        constant(run_id, pa.string()),
        pa.nulls(count, pa.string()),
        *(pa.nulls(count, kind) for kind in CARRIER_ARROW),
    ]
    return VectorDecode(pa.RecordBatch.from_arrays(columns, schema=EVENTS_ARROW_SCHEMA), taken.tolist())


def message_values(messages: Sequence[RawMessage]) -> pa.Array:
    """The messages' values as a ``binary`` array (a :class:`MessageBatch` has them already)."""
    if isinstance(messages, MessageBatch):
        return messages.values
    return pa.array([m.value for m in messages], pa.binary())


def message_keys(messages: Sequence[RawMessage]) -> pa.Array:
    """The messages' keys as a ``binary`` array (a :class:`MessageBatch` has them already)."""
    if isinstance(messages, MessageBatch):
        return messages.keys
    return pa.array([m.key for m in messages], pa.binary())


def message_positions(messages: Sequence[RawMessage], rows: np.ndarray) -> tuple[pa.Array, pa.Array, pa.Array]:
    """topic, partition and offset of the messages at ``rows``."""
    if isinstance(messages, MessageBatch):
        index = pa.array(rows)
        return messages.topics.take(index), messages.partitions.take(index), messages.offsets.take(index)
    picked = [messages[i] for i in rows]
    return (
        pa.array([m.topic for m in picked], pa.string()),
        pa.array([m.partition for m in picked], pa.int32()),
        pa.array([m.offset for m in picked], pa.int64()),
    )


def image_map(image: pa.StructArray, readers: dict[str, ColumnReader]) -> tuple[pa.Array, np.ndarray]:
    """The image (a struct of the ``readers``' columns, in their order) as ``MAP<STRING, STRING>`` of
    canonical texts in that order (null where the image is null) and, per row, whether every value
    converted."""
    count = len(image)
    names = list(readers)
    width = len(names)
    texts = []
    converted = np.ones(count, dtype=bool)
    for name, child in zip(names, image.flatten(), strict=True):
        text, ok = readers[name].canonical(child)
        texts.append(text)
        converted &= ok.to_numpy(zero_copy_only=False)
    valid = image.is_valid().to_numpy(zero_copy_only=False)
    converted |= ~valid
    present = np.flatnonzero(valid)
    # Row-major items of the present rows: row r's values are texts[0][r], texts[1][r], ...
    stacked = pa.concat_arrays([t.take(pa.array(present)) for t in texts])
    order = (np.arange(width)[None, :] * len(present) + np.arange(len(present))[:, None]).ravel()
    items = stacked.take(pa.array(order))
    keys = pa.array(names, pa.string()).take(pa.array(np.tile(np.arange(width), len(present))))
    offsets = np.concatenate(([0], np.cumsum(np.where(valid, width, 0)))).astype(np.int32)
    maps = pa.MapArray.from_arrays(
        pa.array(offsets), keys, items, type=MAP_ARROW, mask=pa.array(~valid) if not valid.all() else None
    )
    return maps, converted


def read_documents(texts: pa.StringArray, read_type: pa.StructType) -> pa.Table | None:
    """Each text read by ``pyarrow.json`` as one document of ``read_type`` (members it does not name
    ignored); None where the read fails anywhere (the caller leaves the texts to the Python decoder)."""
    lines, size = _json_lines(texts)
    try:
        table = pa_json.read_json(
            pa.BufferReader(lines),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, size + 1)),
            parse_options=pa_json.ParseOptions(
                explicit_schema=pa.schema(list(read_type)), unexpected_field_behavior="ignore"
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return table if table.num_rows == len(texts) else None


def _json_lines(texts: pa.StringArray) -> tuple[pa.Buffer, int]:
    """The texts joined by newlines as one buffer (``pyarrow.json`` reads one document per line), and its size."""
    joined = pc.binary_join_element_wise(texts, pa.scalar("\n"), "")
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)
    data = joined.buffers()[2]
    assert data is not None
    return data.slice(int(offsets[0]), int(offsets[-1] - offsets[0])), int(offsets[-1] - offsets[0])


def equal_mask(values: pa.Array, expected: object) -> np.ndarray:
    """Per row: the value equals ``expected`` (False for null)."""
    result: np.ndarray = (
        pc.equal(values, pa.scalar(expected, values.type)).fill_null(False).to_numpy(zero_copy_only=False)
    )
    return result


def utf8_texts(values: pa.Array) -> pa.StringArray:
    """``values`` (binary) as text; a value that is not valid UTF-8 (Python's strict codec, as the
    decoders') becomes null, so only its message goes to the Python decoder, which says where."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:  # rare: one value at a time, only for this batch
        return pa.array([_utf8(value) for value in values.to_pylist()], pa.string())


def _utf8(value: bytes | None) -> str | None:
    try:
        return value.decode("utf-8") if value is not None else None
    except UnicodeDecodeError:
        return None

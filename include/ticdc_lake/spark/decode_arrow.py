"""Normalized events as Arrow record batches, in the column order and types of ``change_events``.

The decode stage's Python workers hand events to the JVM as Arrow (``mapInArrow``) instead of
pickled row tuples: the JVM reads the columns directly, without converting Python objects one
value at a time. The values are exactly those of :func:`ticdc_lake.spark.event_rows.event_row`
(the tests compare both for every event kind). ``schema_error`` (last column): why a DDL has no
schema (``schema_facts.SCHEMA_ERROR``), or why a PENDING row waits; apply holds the table there with it.
``column_types`` is stored only for events other than DML (:func:`~ticdc_lake.spark.event_rows.stored_types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, chain

import pyarrow as pa

from ticdc_lake.events import ChangeEvent, RowImage
from ticdc_lake.protocols.schema_facts import schema_note
from ticdc_lake.spark.arrow_decode.image_records import CARRIER_ARROW, CARRIER_COLUMNS
from ticdc_lake.spark.event_rows import stored_types

#: Arrow type of the ``DECIMAL(20,0)`` TSO columns (Spark's Arrow type for that decimal).
TSO_ARROW = pa.decimal128(20, 0)
#: Arrow type of the ``MAP<STRING, STRING>`` row image columns (entries ``key`` not null, ``value`` nullable).
MAP_ARROW = pa.map_(pa.string(), pa.string())


def _field(name: str, kind: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


#: ``COLUMNS["change_events"]`` as an Arrow schema (a test checks both describe the same columns).
EVENTS_ARROW_SCHEMA = pa.schema(
    [
        _field("pipeline", pa.string(), False),
        _field("batch_id", pa.string(), False),
        _field("topic", pa.string(), False),
        _field("partition", pa.int32(), False),
        _field("offset", pa.int64(), False),
        _field("idx", pa.int32(), False),
        _field("kind", pa.string(), False),
        _field("commit_ts", TSO_ARROW, False),
        _field("database", pa.string()),
        _field("table", pa.string()),
        _field("table_id", pa.int64()),
        _field("op", pa.string()),
        _field("schema_version", TSO_ARROW),
        _field("before", MAP_ARROW),
        _field("after", MAP_ARROW),
        _field("column_types", MAP_ARROW),
        _field("ddl_type", pa.string()),
        _field("ddl_query", pa.string()),
        _field("table_schema", pa.string()),
        _field("pre_table_schema", pa.string()),
        _field("handle_key_only", pa.bool_()),
        _field("claim_check", pa.bool_()),
        _field("status", pa.string(), False),
        _field("run_id", pa.string(), False),
        _field("schema_error", pa.string()),
        # The typed record carrier (``arrow_decode.image_records``), NULL until the worker adds it.
        *(_field(name, kind) for name, kind in zip(CARRIER_COLUMNS, CARRIER_ARROW, strict=True)),
    ]
)


#: Protocols whose row images are stored with their keys in code point order: those whose JVM
#: decoder returns maps (``jvm_decode.registry``, which a test checks against this set), so that a message gives
#: the same map whichever path decoded it (apply hashes the map in its order to find duplicates).
#: TiCDC's Go encoder already writes Simple JSON rows with sorted keys.
SORTED_IMAGE_PROTOCOLS = frozenset({"simple-json"})


def sorts_images(protocol: str) -> bool:
    return protocol in SORTED_IMAGE_PROTOCOLS


def events_to_arrow(
    pipeline: str, batch_id: str, run_id: str, events: Sequence[ChangeEvent], *, sort_images: bool = False
) -> pa.RecordBatch:
    """The rows :func:`~ticdc_lake.spark.event_rows.event_row` would give, as one record batch
    (``sort_images``: image keys in code point order, :data:`SORTED_IMAGE_PROTOCOLS`)."""
    count = len(events)
    positions = [e.position for e in events]
    columns = [
        _constant(pipeline, count),
        _constant(batch_id, count),
        pa.array([p.topic for p in positions], pa.string()),
        pa.array([p.partition for p in positions], pa.int32()),
        pa.array([p.offset for p in positions], pa.int64()),
        pa.array([p.index for p in positions], pa.int32()),
        pa.array([e.kind for e in events], pa.string()),  # StrEnum members are their text
        _tso([e.commit_ts for e in events]),
        pa.array([e.database for e in events], pa.string()),
        pa.array([e.table for e in events], pa.string()),
        pa.array([e.table_id for e in events], pa.int64()),
        pa.array([e.op for e in events], pa.string()),
        _tso([e.schema_version for e in events]),
        _maps([e.before for e in events], sort_images),
        _maps([e.after for e in events], sort_images),
        _maps([stored_types(e) for e in events]),
        pa.array([e.ddl_type for e in events], pa.string()),
        pa.array([e.ddl_query for e in events], pa.string()),
        pa.array([s.to_json() if (s := e.table_schema) is not None else None for e in events], pa.string()),
        pa.array([s.to_json() if (s := e.pre_table_schema) is not None else None for e in events], pa.string()),
        pa.array([e.handle_key_only for e in events], pa.bool_()),
        pa.array([e.claim_check for e in events], pa.bool_()),
        pa.array([e.status for e in events], pa.string()),
        _constant(run_id, count),
        pa.array([schema_note(e) for e in events], pa.string()),
        *(pa.nulls(count, kind) for kind in CARRIER_ARROW),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=EVENTS_ARROW_SCHEMA)


def _constant(value: str, count: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), count)


def _tso(values: list[int | None]) -> pa.Array:
    """Unsigned 64-bit TSOs (None for NULL) as DECIMAL(20,0): through uint64, exact up to 2**64-1."""
    return pa.array(values, pa.uint64()).cast(TSO_ARROW)


def _maps(images: Sequence[RowImage | dict[str, str] | None], sort: bool = False) -> pa.Array:
    """Row images (column -> canonical text or None; None for no image) as one map column.

    Keys and values are gathered by C iteration over the images (``chain``), offsets by ``accumulate`` over
    the images' sizes: no Python step per value.
    """
    present = [image for image in images if image is not None]
    if not present:
        return pa.nulls(len(images), MAP_ARROW)
    if sort:
        present = [{name: image[name] for name in sorted(image)} for image in present]
    keys = list(chain.from_iterable(present))
    values = list(chain.from_iterable(image.values() for image in present))
    mask = None
    if len(present) == len(images):
        offsets = list(accumulate(map(len, present), initial=0))
    else:
        offsets = list(accumulate((0 if image is None else len(image) for image in images), initial=0))
        mask = pa.array([image is None for image in images], pa.bool_())
    return pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()),
        pa.array(keys, pa.string()),
        pa.array(values, pa.string()),
        type=MAP_ARROW,
        mask=mask,
    )

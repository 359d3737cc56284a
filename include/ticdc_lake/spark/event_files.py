"""The decode workers write ``change_events`` Parquet files themselves (``docs/design.md``,
"The decode workers write `change_events`").

Handing the events to the JVM (``mapInArrow`` output) and letting Spark's Iceberg writer make the
files cost the JVM about 15 us of CPU per event at 1M Debezium changes: Arrow into Spark rows,
then Parquet with two ``MAP<STRING, STRING>`` images per row. pyarrow's C++ writer makes the same
files from the Arrow batches the workers already hold for a tenth of that. So each decode task
writes its events into files of its own, one or more per landed batch, and returns one small row
per file (:data:`WRITTEN_FILES_SCHEMA`); the driver commits them all in one Iceberg operation
(``event_commit``), exactly what Spark's dynamic partition overwrite would have committed.

What makes the files Iceberg's: every Parquet field, map key and map value carries the field id
of the table's current schema (``PARQUET:field_id``), so any reader resolves columns by id as
for files Spark wrote (an old lake whose columns were added later has other ids: they are read
from the table, never assumed). Compression, its level, dictionary encoding per column and the
target file size follow the table's properties (:class:`EventFileLayout`).

This module runs in the Python workers; it imports pyarrow only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ticdc_lake.object_store import open_uri
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA

#: The rows a decode task returns, one per file written (Spark DDL for ``mapInArrow``).
WRITTEN_FILES_SCHEMA = "path STRING, batch_id STRING, records BIGINT, bytes BIGINT"
FIELD_ID = b"PARQUET:field_id"
#: Arrow bytes of events buffered per open file before they are written as one Parquet row group:
#: the decoder's batches (4,096 events) would each make a row group of their own, and small row
#: groups compress worse and cost readers more per group. Bounds the memory per open file.
ROW_GROUP_ARROW_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class MapIds:
    """Field ids of a map column's key and value."""

    key: int
    value: int


@dataclass(frozen=True)
class EventFileLayout:
    """How and where the workers write ``change_events`` files: made on the driver from the table."""

    #: Field id of each top-level column, by name.
    field_ids: dict[str, int]
    #: Key and value ids of the map columns, by name.
    map_ids: dict[str, MapIds]
    #: The data folder of each landed batch's partition (``pipeline``, ``batch_id``), no trailing ``/``.
    directories: dict[str, str]
    compression: str = "zstd"
    compression_level: int | None = None
    #: Parquet column paths that are not dictionary-encoded (``before.key_value.value``, ...).
    no_dictionary: frozenset[str] = field(default_factory=frozenset)
    dictionary_default: bool = True
    target_file_bytes: int = 512 * 1024 * 1024
    #: Element id of the list columns, by name.
    element_ids: dict[str, int] = field(default_factory=dict)

    def arrow_schema(self) -> pa.Schema:
        """:data:`EVENTS_ARROW_SCHEMA` with the table's field ids."""
        fields = []
        for column in EVENTS_ARROW_SCHEMA:
            kind = column.type
            if isinstance(kind, pa.MapType):
                ids = self.map_ids[column.name]
                kind = pa.map_(
                    pa.field("key", kind.key_type, nullable=False, metadata={FIELD_ID: str(ids.key).encode()}),
                    pa.field("value", kind.item_type, nullable=True, metadata={FIELD_ID: str(ids.value).encode()}),
                )
            elif isinstance(kind, pa.ListType):
                element = str(self.element_ids[column.name]).encode()
                kind = pa.list_(pa.field("item", kind.value_type, nullable=True, metadata={FIELD_ID: element}))
            metadata = {FIELD_ID: str(self.field_ids[column.name]).encode()}
            fields.append(pa.field(column.name, kind, nullable=column.nullable, metadata=metadata))
        return pa.schema(fields)

    def dictionary_columns(self, schema: pa.Schema) -> bool | list[str]:
        """pyarrow's ``use_dictionary``: True, False, or the leaf column paths to encode."""
        if not self.no_dictionary:
            return self.dictionary_default
        if not self.dictionary_default:
            return False
        return [path for path in _leaf_paths(schema) if path not in self.no_dictionary]


def _leaf_paths(schema: pa.Schema) -> list[str]:
    paths: list[str] = []
    for column in schema:
        if isinstance(column.type, pa.MapType):
            paths += [f"{column.name}.key_value.key", f"{column.name}.key_value.value"]
        elif isinstance(column.type, pa.ListType):
            paths.append(f"{column.name}.list.element")
        else:
            paths.append(column.name)
    return paths


@dataclass(frozen=True)
class WrittenFile:
    path: str
    batch_id: str
    records: int
    bytes: int


class _OpenFile:
    def __init__(self, layout: EventFileLayout, schema: pa.Schema, path: str) -> None:
        filesystem, local_path = open_uri(path)
        if isinstance(filesystem, pafs.LocalFileSystem):  # object stores have no folders to make
            filesystem.create_dir(local_path.rsplit("/", 1)[0], recursive=True)
        self.path = path
        self.sink = filesystem.open_output_stream(local_path)
        self.writer = pq.ParquetWriter(
            self.sink,
            schema,
            compression=layout.compression,
            compression_level=layout.compression_level,
            use_dictionary=layout.dictionary_columns(schema),
            write_statistics=True,
        )
        self.records = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer ``batch``; a row group is written once :data:`ROW_GROUP_ARROW_BYTES` are buffered."""
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        self.records += batch.num_rows
        if self.pending_bytes >= ROW_GROUP_ARROW_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=self.records + 1)
            self.pending, self.pending_bytes = [], 0

    def close(self) -> int:
        self.flush()
        self.writer.close()
        size = int(self.sink.tell())
        self.sink.close()
        return size


class EventFileWriter:
    """Writes one task's event batches into files per landed batch (several open at once: a task
    may hold slices of several batches), rolling to a new file past the target size. Only the
    batch being written holds buffered events: when another batch's events come, the buffer of the
    one before is written out as a row group (a task's slices come batch by batch, so this bounds
    its memory to one buffer)."""

    def __init__(self, layout: EventFileLayout, task: int, attempt: int) -> None:
        self.layout = layout
        self.schema = layout.arrow_schema()
        self.prefix = f"{task:05d}-{attempt}-{uuid.uuid4()}"
        self.open: dict[str, _OpenFile] = {}
        self.written: list[WrittenFile] = []
        self.count = 0
        self.last: _OpenFile | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        """Write ``batch`` (events of one landed batch, ``decode_arrow``'s column order)."""
        if batch.num_rows == 0:
            return
        batch_id = batch.column(1)[0].as_py()
        current = self.open.get(batch_id)
        if current is None:
            self.count += 1
            directory = self.layout.directories[batch_id]
            current = self.open[batch_id] = _OpenFile(
                self.layout, self.schema, f"{directory}/{self.prefix}-{self.count:05d}.parquet"
            )
        if self.last is not None and self.last is not current:
            self.last.flush()
        self.last = current
        current.write(pa.RecordBatch.from_arrays(batch.columns, schema=self.schema))
        if current.sink.tell() >= self.layout.target_file_bytes:
            self._close(batch_id)

    def _close(self, batch_id: str) -> None:
        done = self.open.pop(batch_id)
        if done is self.last:
            self.last = None
        size = done.close()
        self.written.append(WrittenFile(done.path, batch_id, done.records, size))

    def finish(self) -> list[WrittenFile]:
        """Close every open file; the files written, in the order they were finished."""
        for batch_id in list(self.open):
            self._close(batch_id)
        return self.written


def written_files_batch(files: Iterable[WrittenFile]) -> pa.RecordBatch:
    """The task's result rows (:data:`WRITTEN_FILES_SCHEMA`)."""
    rows = list(files)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([f.path for f in rows], pa.string()),
            pa.array([f.batch_id for f in rows], pa.string()),
            pa.array([f.records for f in rows], pa.int64()),
            pa.array([f.bytes for f in rows], pa.int64()),
        ],
        names=["path", "batch_id", "records", "bytes"],
    )


def write_event_files(
    layout: EventFileLayout, events: Iterator[pa.RecordBatch], task: int, attempt: int
) -> Iterator[pa.RecordBatch]:
    """Write ``events`` and yield one batch describing the files (after the last event)."""
    writer = EventFileWriter(layout, task, attempt)
    for batch in events:
        writer.write(batch)
    yield written_files_batch(writer.finish())

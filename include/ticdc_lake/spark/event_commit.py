"""The driver's half of the workers' ``change_events`` files (``event_files``): where they go, and
their commit (``docs/design.md``, "The decode workers write `change_events`").

:func:`event_file_layout` reads from the Iceberg table (Java, through py4j) what the workers need:
the field ids of its current schema, the data folder of each landed batch's partition (the
table's own location provider), compression, dictionary and file-size properties. It answers
None where the workers cannot write the table's files (a location pyarrow cannot reach, another
partition spec, a schema without a column the events have); the stage then lets Spark's writer
write them, as before.

:func:`commit_event_files` commits the files in one ``ReplacePartitions``: what Spark's
``overwritePartitions`` commits (the partitions that get files are replaced, so a batch decoded
again replaces exactly its rows; no file, no commit). Each file's metrics are read from its
footer by Iceberg itself (``ParquetUtil.fileMetrics`` under the table's metrics settings), so
readers prune by them as for files Spark wrote. A commit that fails for certain deletes the files;
one whose outcome is unknown leaves them, as Iceberg does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import DataFrame, SparkSession

from ticdc_lake.object_store import open_uri
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA
from ticdc_lake.spark.event_files import WRITTEN_FILES_SCHEMA, EventFileLayout, MapIds, WrittenFile, write_event_files

log = logging.getLogger("ticdc_lake.decode")

#: The partition spec the workers write for: identity of these columns, in this order.
PARTITION_COLUMNS = ("pipeline", "batch_id")
_FILE_NAME = "ticdc-lake-probe.parquet"
#: Iceberg's Parquet codecs that pyarrow writes the same way; another one leaves the files to Spark.
_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "uncompressed": "none"}
_DICT_DEFAULT = "write.parquet.dict-encoding-enabled"
#: Catalog properties that set how Iceberg's S3FileIO reaches the warehouse (docs/object-storage.md).
_PINNED_S3 = ("s3.", "client.", "io-impl")
_DICT_COLUMN = _DICT_DEFAULT + ".column."
#: The Iceberg type each Arrow type of ``EVENTS_ARROW_SCHEMA`` is written as (the table must agree).
_ICEBERG_TYPES = {
    "string": "string",
    "int32": "int",
    "int64": "long",
    "bool": "boolean",
    "decimal128(20, 0)": "decimal(20, 0)",
    "map<string, string>": "map<string, string>",
    "binary": "binary",
    "list<item: string>": "list<string>",
}


def _jvm(spark: SparkSession) -> Any:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm


def _partition(spark: SparkSession, table: Any, pipeline: str, batch_id: str) -> Any:
    """The partition (``PartitionKey``) of one landed batch's events in ``table``."""
    key = _jvm(spark).org.apache.iceberg.PartitionKey(table.spec(), table.schema())
    key.set(0, pipeline)
    key.set(1, batch_id)
    return key


def event_file_layout(
    spark: SparkSession,
    table: Any,
    pipeline: str,
    batch_ids: Iterable[str],
    catalog_properties: Mapping[str, str] | None = None,
) -> EventFileLayout | None:
    """Where and how the workers write this run's files; None when Spark's writer must (module docstring).

    ``catalog_properties``: the catalog's configured ``properties``; one that pins how Iceberg's
    ``S3FileIO`` reaches the warehouse (``s3.*``, ``client.*``, ``io-impl``) leaves an ``s3://``
    table's files to Spark, since the workers' ``pyarrow.fs`` reads its settings from the environment.
    """
    spec = table.spec()
    if [(f.name(), str(f.transform())) for f in spec.fields()] != [(c, "identity") for c in PARTITION_COLUMNS]:
        log.info("decode: change_events has another partition spec (%s): Spark writes its files", spec)
        return None
    schema = table.schema()
    field_ids: dict[str, int] = {}
    map_ids: dict[str, MapIds] = {}
    element_ids: dict[str, int] = {}
    for column in EVENTS_ARROW_SCHEMA:
        found = schema.findField(column.name)
        if found is None or str(found.type()) != _ICEBERG_TYPES[str(column.type)]:
            what = "no column" if found is None else f"another type ({found.type()}) for column"
            log.info("decode: change_events has %s %s: Spark writes its files", what, column.name)
            return None
        field_ids[column.name] = int(found.fieldId())
        kind = found.type()
        if kind.isMapType():
            map_ids[column.name] = MapIds(int(kind.keyId()), int(kind.valueId()))
        elif kind.isListType():
            element_ids[column.name] = int(kind.elementId())
    extra = [str(f.name()) for f in schema.columns() if f.isRequired() and str(f.name()) not in field_ids]
    if extra:
        log.info("decode: change_events requires column(s) the events lack (%s): Spark writes its files", extra)
        return None
    properties = {str(k): str(v) for k, v in dict(table.properties()).items()}
    codec_name = properties.get("write.parquet.compression-codec", "zstd").lower()
    codec = _CODECS.get(codec_name)
    if codec is None:
        log.info("decode: change_events' codec %s is not one pyarrow writes alike: Spark writes its files", codec_name)
        return None
    level = properties.get("write.parquet.compression-level")
    no_dictionary = frozenset(
        _parquet_path(key[len(_DICT_COLUMN) :], map_ids)
        for key, value in properties.items()
        if key.startswith(_DICT_COLUMN) and value.lower() == "false"
    )
    directories = {}
    for batch_id in sorted(set(batch_ids)):
        partition = _partition(spark, table, pipeline, batch_id)
        location = str(table.locationProvider().newDataLocation(spec, partition, _FILE_NAME))
        directories[batch_id] = location[: -len(_FILE_NAME) - 1]
    # One location provider gives every folder: where one is reachable, all are (one request on S3).
    first = next(iter(directories.values()), "")
    if first.startswith("s3://") and any(k.startswith(_PINNED_S3) for k in catalog_properties or {}):
        log.info("decode: the catalog's properties pin the warehouse's S3 client: Spark writes change_events files")
        return None
    if first and not _reachable(first):
        log.info("decode: pyarrow does not write to %s: Spark writes the change_events files", first)
        return None
    return EventFileLayout(
        field_ids=field_ids,
        map_ids=map_ids,
        element_ids=element_ids,
        directories=directories,
        compression=codec,
        compression_level=int(level) if level else None,
        no_dictionary=no_dictionary,
        dictionary_default=properties.get(_DICT_DEFAULT, "true").lower() != "false",
        target_file_bytes=int(properties.get("write.target-file-size-bytes", str(512 * 1024 * 1024))),
    )


def _parquet_path(iceberg_name: str, map_ids: dict[str, MapIds]) -> str:
    """Iceberg's name of a map's key or value (``before.value``) as Parquet's column path."""
    column, _, leaf = iceberg_name.partition(".")
    if column in map_ids and leaf in ("key", "value"):
        return f"{column}.key_value.{leaf}"
    return iceberg_name


def _reachable(directory: str) -> bool:
    """Whether :func:`open_uri` reaches ``directory`` (Iceberg's ``file:/`` and ``s3://`` locations)."""
    if directory.startswith("file:/") or directory.startswith("/"):
        return True
    if directory.startswith("s3://"):
        try:
            open_uri(directory)
        except (ValueError, OSError):
            return False
        return True
    return False


def workers_write(
    tasks: DataFrame, decode: Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]], layout: EventFileLayout
) -> list[WrittenFile]:
    """Run ``decode`` (a ``mapInArrow`` function giving events) over ``tasks``, each task writing its
    events into files (``event_files``); the files written, not yet committed."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        assert context is not None
        return write_event_files(layout, iter(decode(batches)), context.partitionId(), context.attemptNumber())

    rows = tasks.mapInArrow(run, WRITTEN_FILES_SCHEMA).collect()
    return [WrittenFile(row.path, row.batch_id, row.records, row.bytes) for row in rows]


def commit_event_files(spark: SparkSession, table: Any, pipeline: str, files: Iterable[WrittenFile]) -> int | None:
    """Commit ``files`` (of ``pipeline``) to ``table`` as one dynamic partition overwrite; the new snapshot's id
    (None: no file, nothing committed)."""
    files = list(files)
    if not files:
        return None
    iceberg = _jvm(spark).org.apache.iceberg
    spec, io = table.spec(), table.io()
    metrics_config = iceberg.MetricsConfig.forTable(table)
    replace = table.newReplacePartitions()
    for written in files:
        key = _partition(spark, table, pipeline, written.batch_id)
        metrics = iceberg.parquet.ParquetUtil.fileMetrics(io.newInputFile(written.path), metrics_config)
        data_file = (
            iceberg.DataFiles.builder(spec)
            .withPath(written.path)
            .withFormat(iceberg.FileFormat.PARQUET)
            .withPartition(key)
            .withFileSizeInBytes(written.bytes)
            .withMetrics(metrics)
            .build()
        )
        replace.addFile(data_file)
    replace.set("spark.app.id", spark.sparkContext.applicationId)
    try:
        replace.commit()
    except Exception as exc:
        if "CommitStateUnknownException" not in str(exc):
            _delete(io, files)
        raise
    snapshot = table.currentSnapshot()
    return int(snapshot.snapshotId()) if snapshot is not None else None


def _delete(io: Any, files: list[WrittenFile]) -> None:
    for written in files:
        try:
            io.deleteFile(written.path)
        except Exception as exc:  # best effort: an orphan file is harmless, maintenance removes it
            log.warning("decode: could not delete %s after a failed commit: %s", written.path, exc)

"""The landing storage of one pipeline, over ``pyarrow.fs``: local files or S3 (docs/object-storage.md).

``<landing_uri>/<pipeline_id>/`` holds raw batch files under ``data/`` and published manifests
under ``manifests/`` (see :mod:`ticdc_lake.landing.layout`). Raw batches are written to a hidden
temporary name and moved into place; an existing file with the same size and SHA-256 is left
alone. A manifest is published last, atomically and exclusively: on the local filesystem by
hard-linking a complete temporary file to its final name, which fails if another run published
the same sequence first. On S3 (settings from :mod:`ticdc_lake.object_store`) the move is a
server-side copy and delete, and the manifest is published with a conditional PUT
(:mod:`ticdc_lake.conditional_put`), or check-then-write without a key pair in the environment
(docs/object-storage.md, "Conditional writes").
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator
from itertools import chain
from typing import Any

import pyarrow.fs as pafs

from ticdc_lake import failpoints
from ticdc_lake.conditional_put import put_if_absent
from ticdc_lake.errors import ConcurrentRunError, LandingError, ManifestError
from ticdc_lake.events import RawMessage
from ticdc_lake.landing.layout import (
    MANIFEST_DIR,
    WRITER_SCHEMA_DIR,
    check_data_file,
    data_file,
    manifest_file,
    manifest_sequence,
    writer_schema_file,
    writer_schema_id,
)
from ticdc_lake.landing.manifest import LandedRange, Manifest, SchemaBlocks
from ticdc_lake.landing.ranges import landed_ends
from ticdc_lake.landing.raw_batch import (
    BLOCK_BYTES,
    CODEC,
    ConsumedRecord,
    SchemaTest,
    as_chunks,
    block_messages,
    read_raw_blocks,
    write_raw_batch,
)
from ticdc_lake.landing.raw_block_reader import Block
from ticdc_lake.landing.record_chunks import RecordChunk
from ticdc_lake.storage_files import fsync_local, open_filesystem, read_file

_PIPELINE_ID = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_CHUNK = 1 << 20


class _HashingSink:
    """Passes bytes to ``sink`` while counting them and computing their SHA-256."""

    def __init__(self, sink: Any) -> None:
        self._sink = sink
        self._sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes, /) -> int:
        self._sha256.update(data)
        self.size += len(data)
        self._sink.write(data)
        return len(data)

    def flush(self) -> None:
        self._sink.flush()

    @property
    def sha256(self) -> str:
        return self._sha256.hexdigest()


class LandingStore:
    """Raw batches and manifests of one pipeline."""

    def __init__(self, landing_uri: str, pipeline_id: str, *, logger: logging.Logger | None = None) -> None:
        if not _PIPELINE_ID.match(pipeline_id):
            raise LandingError(f"pipeline id {pipeline_id!r} cannot name a landing folder ([a-z][a-z0-9_]*)")
        self.pipeline_id = pipeline_id
        self.uri = f"{landing_uri.rstrip('/')}/{pipeline_id}"
        self._fs, base = open_filesystem(landing_uri)
        self._root = f"{base}/{pipeline_id}"
        self._local = isinstance(self._fs, pafs.LocalFileSystem)
        self._log = logger or logging.getLogger(__name__)

    def where(self, relative: str) -> str:
        """The full address of a path relative to the pipeline root, for messages."""
        return f"{self.uri}/{relative}"

    # -- reading -------------------------------------------------------------------------------

    def manifests(self) -> list[Manifest]:
        """Published manifests sorted by sequence, checked for holes and offset continuity."""
        selector = pafs.FileSelector(f"{self._root}/{MANIFEST_DIR}", allow_not_found=True)
        found: list[tuple[int, str]] = []
        for info in self._fs.get_file_info(selector):
            sequence = manifest_sequence(info.base_name)
            if info.type == pafs.FileType.File and sequence is not None:
                found.append((sequence, info.path))
        found.sort()
        manifests: list[Manifest] = []
        for expected, (sequence, path) in enumerate(found, start=1):
            name = self.where(manifest_file(sequence))
            if sequence != expected:
                raise ManifestError(
                    f"{self.where(manifest_file(expected))} is missing but {name} exists: published "
                    "manifests were removed by hand; restore the missing manifest from a backup"
                )
            manifest = Manifest.from_json(self._read_bytes(path), source=name)
            if manifest.sequence != sequence or manifest.pipeline != self.pipeline_id:
                raise ManifestError(
                    f"{name}: holds sequence {manifest.sequence} of pipeline {manifest.pipeline!r}, "
                    f"expected sequence {sequence} of {self.pipeline_id!r}; the file was copied or renamed "
                    "by hand: restore the original"
                )
            manifests.append(manifest)
        landed_ends(manifests, where=self.uri)
        return manifests

    def read_messages(
        self, file: str, keep_block: Callable[[bytes], bool] | None = None, only: Collection[int] | None = None
    ) -> Iterator[RawMessage]:
        """The records of a raw batch, ``file`` relative to the pipeline root as in the manifest;
        with ``keep_block`` only those of the blocks it keeps, with ``only`` those of the blocks of
        these indexes (``raw_batch.read_raw_blocks``)."""
        return block_messages(self.read_blocks(file, keep_block, only))

    def read_blocks(
        self, file: str, keep_block: Callable[[bytes], bool] | None = None, only: Collection[int] | None = None
    ) -> Iterator[Block]:
        """The records of a raw batch a block at a time (``raw_batch.read_raw_blocks``)."""
        check_data_file(file)
        return self._iterate(file, keep_block, only)

    def _iterate(
        self, file: str, keep_block: Callable[[bytes], bool] | None, only: Collection[int] | None
    ) -> Iterator[Block]:
        try:
            stream = self._fs.open_input_stream(f"{self._root}/{file}", compression=None)
        except FileNotFoundError:
            raise ManifestError(
                f"{self.where(file)}: raw batch file not found although a manifest lists it; restore it from a backup"
            ) from None
        with stream:
            yield from read_raw_blocks(stream, name=self.where(file), keep_block=keep_block, only=only)

    def writer_schemas(self) -> dict[int, str]:
        """Every landed Avro writer schema by registry id (empty when none were landed)."""
        selector = pafs.FileSelector(f"{self._root}/{WRITER_SCHEMA_DIR}", allow_not_found=True)
        schemas: dict[int, str] = {}
        for info in self._fs.get_file_info(selector):
            schema_id = writer_schema_id(info.base_name)
            if info.type == pafs.FileType.File and schema_id is not None:
                schemas[schema_id] = self._read_bytes(info.path).decode("utf-8")
        return schemas

    def checksum(self, file: str) -> tuple[int, str] | None:
        """``(size_bytes, sha256)`` of a stored file relative to the pipeline root, None if absent."""
        return self._checksum(f"{self._root}/{file}")

    # -- writing -------------------------------------------------------------------------------

    def write_batch(
        self,
        records: Iterable[RecordChunk | ConsumedRecord],
        *,
        topic: str,
        partition: int,
        start: int,
        end: int,
        codec: str = CODEC,
        block_bytes: int = BLOCK_BYTES,
        schema_test: SchemaTest | None = None,
    ) -> LandedRange:
        """Write the raw batch of ``[start, end)`` from ``records`` (chunks or single records); no file
        when there are none. With ``schema_test`` (a name and a decoder's ``schema_block_test``), the
        range records which of the file's blocks the test keeps (``LandedRange.schema_blocks``)."""
        relative = data_file(topic, partition, start, end)
        iterator = as_chunks(records)
        first = next(iterator, None)
        if first is None:
            return LandedRange.empty(topic, partition, start, end)
        final = f"{self._root}/{relative}"
        folder, name = final.rsplit("/", 1)
        temporary = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        self._fs.create_dir(folder, recursive=True)
        try:
            with self._fs.open_output_stream(temporary, compression=None) as out:
                sink = _HashingSink(out)
                stats = write_raw_batch(
                    sink,
                    chain([first], iterator),
                    pipeline=self.pipeline_id,
                    topic=topic,
                    partition=partition,
                    start=start,
                    end=end,
                    codec=codec,
                    block_bytes=block_bytes,
                    block_test=schema_test.test if schema_test is not None else None,
                )
            existing = self._checksum(final, expected_size=sink.size)
            if existing == (sink.size, sink.sha256):
                self._log.info("%s already exists with identical bytes; not rewritten", self.where(relative))
            else:
                if existing is not None:
                    self._log.warning(
                        "%s exists with different bytes (%d bytes, now %d): a leftover of a run that did "
                        "not publish; replacing it",
                        self.where(relative),
                        existing[0],
                        sink.size,
                    )
                self._fsync(temporary)
                failpoints.hit("land.before_data_move")
                self._fs.move(temporary, final)
                self._fsync(folder)
        finally:
            self._delete_quietly(temporary)
        return LandedRange(
            topic=topic,
            partition=partition,
            start=start,
            end=end,
            count=stats.count,
            file=relative,
            sha256=sink.sha256,
            size_bytes=sink.size,
            first_timestamp_ms=stats.first_timestamp_ms,
            last_timestamp_ms=stats.last_timestamp_ms,
            schema_blocks=(
                SchemaBlocks(test=schema_test.name, blocks=tuple(stats.schema_blocks))
                if schema_test is not None and stats.schema_blocks is not None
                else None
            ),
        )

    def has_writer_schema(self, schema_id: int) -> bool:
        """Whether the writer schema with registry id ``schema_id`` was landed."""
        return self._checksum(f"{self._root}/{writer_schema_file(schema_id)}") is not None

    def write_writer_schema(self, schema_id: int, text: str, *, source: str = "the schema registry") -> bool:
        """Land the Avro writer schema ``text`` of registry id ``schema_id``; True if written.

        Written to a hidden temporary name, fsynced, then moved into place. A file already there
        with the same schema (byte for byte, or the same JSON document) is left alone; a
        different schema under the same id means two registries (or a reset one) served this
        pipeline, which decoding cannot resolve: :class:`LandingError` naming the id and both.
        """
        relative = writer_schema_file(schema_id)
        final = f"{self._root}/{relative}"
        payload = text.encode("utf-8")
        if self._fs.get_file_info(final).type != pafs.FileType.NotFound:
            existing = self._read_bytes(final)
            if existing == payload or _same_json(existing, payload):
                return False
            raise LandingError(
                f"writer schema id {schema_id}: {self.where(relative)} already holds a different schema than "
                f"the one {source} now returns for that id. Schema ids must never be reused: the registry was "
                "reset or replaced. Point the pipeline back at the registry that issued the landed schemas, "
                "or land into a new pipeline"
            )
        folder, name = final.rsplit("/", 1)
        temporary = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        self._fs.create_dir(folder, recursive=True)
        try:
            with self._fs.open_output_stream(temporary, compression=None) as out:
                out.write(payload)
            self._fsync(temporary)
            self._fs.move(temporary, final)
            self._fsync(folder)
        finally:
            self._delete_quietly(temporary)
        return True

    def publish(self, manifest: Manifest) -> None:
        """Publish ``manifest`` atomically; :class:`ConcurrentRunError` if its sequence is taken."""
        if manifest.pipeline != self.pipeline_id:
            raise ManifestError(f"manifest of pipeline {manifest.pipeline!r} cannot go to {self.uri}")
        relative = manifest_file(manifest.sequence)
        final = f"{self._root}/{relative}"
        folder = final.rsplit("/", 1)[0]
        self._fs.create_dir(folder, recursive=True)
        payload = manifest.to_json().encode("utf-8")
        if not self._local:
            if self._fs.get_file_info(final).type != pafs.FileType.NotFound:
                raise self._taken(manifest, relative)
            # S3: an exclusive create (If-None-Match: *) when a key pair is there to sign it; else
            # check-then-write (docs/object-storage.md, "Conditional writes").
            created = put_if_absent(final, payload) if isinstance(self._fs, pafs.S3FileSystem) else None
            if created is False:
                raise self._taken(manifest, relative)
            if created is None:
                with self._fs.open_output_stream(final, compression=None) as out:
                    out.write(payload)
            return
        temporary = f"{folder}/.{manifest.batch_id}.json.{uuid.uuid4().hex}.tmp"
        try:
            with self._fs.open_output_stream(temporary, compression=None) as out:
                out.write(payload)
            self._fsync(temporary)
            try:
                os.link(temporary, final)  # atomic and exclusive: fails if the name exists
            except FileExistsError:
                raise self._taken(manifest, relative) from None
            self._fsync(folder)
        finally:
            self._delete_quietly(temporary)

    # -- helpers -------------------------------------------------------------------------------

    def _taken(self, manifest: Manifest, relative: str) -> ConcurrentRunError:
        other = "another run"
        try:
            published = Manifest.from_json(self._read_bytes(f"{self._root}/{relative}"), self.where(relative))
            other = f"run {published.run_id!r}"
        except (ManifestError, OSError):
            pass
        return ConcurrentRunError(
            f"{self.where(relative)} was published by {other} while run {manifest.run_id!r} was landing "
            f"pipeline {self.pipeline_id!r}: two runs of the pipeline ran at the same time. Nothing was "
            "published by this run; run it again and it continues after the published manifest "
            "(limit the DAG to one active run)"
        )

    def _read_bytes(self, path: str) -> bytes:
        return read_file(self._fs, path)

    def _checksum(self, path: str, expected_size: int | None = None) -> tuple[int, str] | None:
        info = self._fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return None
        size = int(info.size)
        if expected_size is not None and size != expected_size:
            return (size, "")  # cannot be identical; skip hashing
        digest = hashlib.sha256()
        with self._fs.open_input_stream(path, compression=None) as stream:
            while chunk := stream.read(_CHUNK):
                digest.update(chunk)
        return (size, digest.hexdigest())

    def _fsync(self, path: str) -> None:
        """Make a local file or folder durable before it becomes visible (pyarrow.fs cannot)."""
        if self._local:
            fsync_local(path)

    def _delete_quietly(self, path: str) -> None:
        try:
            if self._fs.get_file_info(path).type == pafs.FileType.File:
                self._fs.delete_file(path)
        except OSError as exc:
            self._log.warning("could not delete temporary file %s: %s", path, exc)


def _same_json(left: bytes, right: bytes) -> bool:
    """Whether two schema texts are the same JSON document (formatting aside)."""
    try:
        return bool(json.loads(left) == json.loads(right))
    except ValueError:
        return False

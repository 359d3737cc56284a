"""The manifest: what one land run published, and the product's own record of Kafka offsets.

A manifest lists, per topic partition that advanced, the exact half-open offset range
``[start, end)`` it landed, how many records that range held, and the raw batch file with its
size and SHA-256 (no file when the range held no records, e.g. only transaction markers).
Manifests are immutable once published; their sequence numbers start at 1 and have no holes.
The manifest that first lands a partition also records the partition's origin (where the
pipeline starts reading it), against which gaps are judged (``landing.ranges``).
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ticdc_lake.errors import ManifestError
from ticdc_lake.landing.layout import check_topic_name, data_file

FORMAT_VERSION = 1

Offset = Annotated[int, Field(ge=0)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SchemaBlocks(_Frozen):
    """The Avro blocks of a range's file that may hold a message carrying a schema, by the pipeline
    decoder's block test (``Decoder.schema_block_test``) run on each block as it was written: the
    decode stage's schema pass reads only these blocks of the file, by the test it would run."""

    #: ``Decoder.schema_block_test_id`` of the test (protocol and test version).
    test: str = Field(min_length=1)
    #: Indexes of the kept blocks in the file, from 0, ascending.
    blocks: tuple[Offset, ...]

    @model_validator(mode="after")
    def _ascending(self) -> Self:
        if any(a >= b for a, b in itertools.pairwise(self.blocks)):
            raise ValueError(f"schema blocks {list(self.blocks)} must be ascending, each once")
        return self


class LandedRange(_Frozen):
    """One topic partition's offsets ``[start, end)`` landed by one manifest."""

    topic: str
    partition: Offset
    start: Offset
    end: Offset
    #: Records actually read; fewer than ``end - start`` across control records or compaction.
    count: Offset
    #: Path relative to the pipeline root; None when ``count == 0``.
    file: str | None
    sha256: Sha256 | None
    size_bytes: Offset | None
    first_timestamp_ms: int | None
    last_timestamp_ms: int | None
    #: Set by the land stage where the pipeline's decoder has a block test; None in manifests landed
    #: before it recorded them, or without a test (the schema pass then reads the file).
    schema_blocks: SchemaBlocks | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        where = f"range of topic {self.topic!r} partition {self.partition} [{self.start}, {self.end})"
        try:
            check_topic_name(self.topic)
        except Exception as exc:
            raise ValueError(str(exc)) from None
        if self.end <= self.start:
            raise ValueError(f"{where}: end must be greater than start")
        if self.count > self.end - self.start:
            raise ValueError(f"{where}: count {self.count} exceeds the {self.end - self.start} offsets")
        details = (self.file, self.sha256, self.size_bytes, self.first_timestamp_ms, self.last_timestamp_ms)
        if self.count == 0:
            if any(value is not None for value in details):
                raise ValueError(f"{where}: a range without records has no file, sha256, size or timestamps")
            if self.schema_blocks is not None:
                raise ValueError(f"{where}: a range without records has no file, so no schema blocks")
            return self
        if any(value is None for value in details):
            raise ValueError(f"{where}: a range with records needs file, sha256, size_bytes and timestamps")
        expected = data_file(self.topic, self.partition, self.start, self.end)
        if self.file != expected:
            raise ValueError(f"{where}: file must be {expected!r}, not {self.file!r}")
        return self

    @classmethod
    def empty(cls, topic: str, partition: int, start: int, end: int) -> LandedRange:
        """A range of offsets that held no records (control records, compaction): no file."""
        return cls(
            topic=topic,
            partition=partition,
            start=start,
            end=end,
            count=0,
            file=None,
            sha256=None,
            size_bytes=None,
            first_timestamp_ms=None,
            last_timestamp_ms=None,
        )

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def describe(self) -> str:
        return f"{self.topic}[{self.partition}] [{self.start}, {self.end}) {self.count} records"


class PartitionOrigin(_Frozen):
    """Where the pipeline starts reading a partition, fixed when the partition is first landed."""

    topic: str
    partition: Offset
    offset: Offset


class Manifest(_Frozen):
    """One published land run of one pipeline."""

    format_version: int = FORMAT_VERSION
    pipeline: str
    sequence: Annotated[int, Field(ge=1, lt=10**12)]
    batch_id: str
    run_id: str = Field(min_length=1)
    interval_start: datetime | None
    interval_end: datetime | None
    created_at: datetime
    ranges: tuple[LandedRange, ...]
    #: Partitions this manifest lands first: their origin offsets.
    origins: tuple[PartitionOrigin, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.format_version != FORMAT_VERSION:
            raise ValueError(f"format_version {self.format_version} is not supported (this is {FORMAT_VERSION})")
        if self.batch_id != f"{self.sequence:012d}":
            raise ValueError(f"batch_id {self.batch_id!r} does not match sequence {self.sequence}")
        if (self.interval_start is None) != (self.interval_end is None):
            raise ValueError("interval_start and interval_end are both set or both null")
        stamps = [self.created_at, self.interval_start, self.interval_end]
        if any(stamp is not None and stamp.tzinfo is None for stamp in stamps):
            raise ValueError("created_at and the interval need a time zone")
        if not self.ranges:
            raise ValueError("a manifest lands at least one range")
        spans = [(r.topic, r.partition, r.start, r.end) for r in self.ranges]
        if spans != sorted(spans):
            raise ValueError("ranges must be sorted by (topic, partition, start)")
        for (t1, p1, _, e1), (t2, p2, s2, _) in itertools.pairwise(spans):
            if (t1, p1) == (t2, p2) and s2 < e1:
                raise ValueError(f"ranges of topic {t1!r} partition {p1} overlap at offset {s2}")
        return self

    @property
    def messages(self) -> int:
        return sum(r.count for r in self.ranges)

    def to_json(self) -> str:
        document = self.model_dump(mode="json")
        for landed in document["ranges"]:
            if landed["schema_blocks"] is None:  # unknown: written as before the field existed
                del landed["schema_blocks"]
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes, source: str = "manifest") -> Manifest:
        """Parse and validate; :class:`ManifestError` names ``source`` and every problem."""
        try:
            raw: Any = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestError(f"{source}: not valid JSON ({exc}); restore the file from a backup") from None
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(manifest)'}: {e['msg']}" for e in exc.errors()
            )
            raise ManifestError(
                f"{source}: invalid manifest: {problems}. Manifests are written only by the land stage; "
                "restore the file from a backup"
            ) from None

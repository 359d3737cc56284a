"""Every exception the library raises on purpose.

Each message says what went wrong, where (file, pipeline, topic, partition, offset, table,
column) and what to do about it. Catch :class:`TicdcLakeError` to handle all of them.
"""

from __future__ import annotations


class TicdcLakeError(Exception):
    """Base class of the library's errors."""

    #: Whether re-running the same task can succeed without a person changing something.
    retryable: bool = False


class ConfigError(TicdcLakeError):
    """The pipeline configuration is invalid: the message names the file, pipeline and key."""


class ServiceError(TicdcLakeError):
    """A local service (Kafka broker, Java) cannot be started or reached."""

    retryable = True


class LandingError(TicdcLakeError):
    """Landing raw Kafka batches failed."""


class OffsetGapError(LandingError):
    """Landed offset ranges of a partition do not form a gap-free sequence.

    Raised when Kafka can no longer serve offsets the pipeline has not landed yet (retention
    expired) or when the manifests on the landing storage were altered by hand.
    """


class ManifestError(LandingError):
    """A manifest or raw batch file on the landing storage is unreadable or inconsistent."""


class DecodeError(TicdcLakeError):
    """One Kafka message cannot be decoded.

    ``reason`` is the precise cause naming the protocol and field; the position is added by the
    caller, which knows the topic, partition and offset.
    """

    def __init__(self, protocol: str, reason: str) -> None:
        super().__init__(f"{protocol}: {reason}")
        self.protocol = protocol
        self.reason = reason


class SchemaError(TicdcLakeError):
    """A table schema is missing, inconsistent, or cannot be mapped to Iceberg."""


class ApplyError(TicdcLakeError):
    """Applying changes to an Iceberg table failed."""


class RebuildError(TicdcLakeError):
    """A rebuild was asked for tables it cannot rebuild (an unknown name, a table of a dropped database)."""


class ConcurrentRunError(TicdcLakeError):
    """Another run of the same pipeline holds the pipeline lock."""

    retryable = True


class MaintenanceError(TicdcLakeError):
    """A table maintenance job (compact, expire, orphans) failed for one or more tables.

    Retryable when every failure was a lock still held by the pipeline or a commit conflict that
    outlasted the retries; another failure needs a person (the message names table and job).
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable

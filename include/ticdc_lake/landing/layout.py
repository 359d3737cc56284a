"""Where landed files live under ``<landing_uri>/<pipeline_id>/``, as relative paths.

``data/topic=<topic>/partition=<p>/<start:020d>-<end:020d>.avro`` holds one raw batch and
``manifests/<sequence:012d>.json`` one published manifest, and
``schemas/registry/<id>.json`` one Avro writer schema fetched from the schema registry. Topic names are checked against
Kafka's own rule for legal names (ASCII letters, digits, ``.``, ``_``, ``-``; at most 249
characters; not ``.`` or ``..``), so a name can never leave its folder.
"""

from __future__ import annotations

import re

from ticdc_lake.errors import LandingError, ManifestError

DATA_DIR = "data"
MANIFEST_DIR = "manifests"
WRITER_SCHEMA_DIR = "schemas/registry"

_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_MANIFEST_NAME = re.compile(r"^(\d{12})\.json$")
_WRITER_SCHEMA_NAME = re.compile(r"^(\d{1,10})\.json$")
_DATA_FILE = re.compile(
    r"^data/topic=(?P<topic>[A-Za-z0-9._-]{1,249})/partition=(?P<partition>\d+)/"
    r"(?P<start>\d{20})-(?P<end>\d{20})\.avro$"
)


def check_topic_name(topic: str) -> str:
    """Return ``topic`` if Kafka allows it as a topic name, else raise :class:`LandingError`."""
    if not _LEGAL_TOPIC.match(topic) or topic in {".", ".."}:
        raise LandingError(
            f"topic name {topic!r} is not a legal Kafka topic name (allowed: ASCII letters, digits, "
            "'.', '_', '-', at most 249 characters, not '.' or '..'), so it cannot name a landing "
            "folder; fix kafka.topics in the pipeline configuration"
        )
    return topic


def data_file(topic: str, partition: int, start: int, end: int) -> str:
    """Relative path of the raw batch holding offsets ``[start, end)`` of one partition."""
    check_topic_name(topic)
    if partition < 0 or start < 0 or end <= start:
        raise LandingError(
            f"topic {topic!r} partition {partition}: invalid offset range [{start}, {end}) for a raw batch"
        )
    return f"{DATA_DIR}/topic={topic}/partition={partition}/{start:020d}-{end:020d}.avro"


def check_data_file(file: str) -> str:
    """Return ``file`` if it is a raw batch path of this layout (relative, no ``..``), else raise."""
    match = _DATA_FILE.match(file)
    if match is None or match.group("topic") in {".", ".."}:
        raise ManifestError(
            f"{file!r} is not a raw batch path of the landing layout "
            "(data/topic=<topic>/partition=<p>/<start:020d>-<end:020d>.avro)"
        )
    return file


def manifest_file(sequence: int) -> str:
    if not 1 <= sequence < 10**12:
        raise ManifestError(f"manifest sequence {sequence} is outside 1..999999999999")
    return f"{MANIFEST_DIR}/{sequence:012d}.json"


def manifest_sequence(name: str) -> int | None:
    """The sequence of a manifest file name (``000000000042.json`` → 42), None for other names."""
    match = _MANIFEST_NAME.match(name)
    return int(match.group(1)) if match else None


def writer_schema_file(schema_id: int) -> str:
    """Relative path of the landed writer schema with registry id ``schema_id``."""
    if not 0 <= schema_id < 1 << 32:
        raise LandingError(f"schema registry id {schema_id} is outside the 4-byte range of the Confluent wire format")
    return f"{WRITER_SCHEMA_DIR}/{schema_id}.json"


def writer_schema_id(name: str) -> int | None:
    """The registry id of a landed writer schema file name (``42.json`` → 42), None for other names."""
    match = _WRITER_SCHEMA_NAME.match(name)
    return int(match.group(1)) if match else None

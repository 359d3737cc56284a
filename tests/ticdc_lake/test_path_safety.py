"""Upstream names never escape their folder: every path built from a topic, database, table,
pipeline id or claim-check location stays under its root, or the name is refused with a clear error.

The names come from Kafka (topics, also those found by ``topic_pattern``), from TiCDC messages
(database, table, claim-check location) and from the pipeline configuration (pipeline id).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

import pytest

from ticdc_lake.config import CodecOptions
from ticdc_lake.errors import DecodeError, LandingError
from ticdc_lake.identifiers import iceberg_namespace_name, iceberg_table_name, upstream_name
from ticdc_lake.landing.layout import check_topic_name, data_file
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.protocols.claim_check import ClaimCheckReader

HOSTILE = [
    "../x",
    "..",
    ".",
    "a/b",
    "/abs",
    "a\\b",
    "..\\..\\x",
    "a\x00b",
    "x" * 300,
    "订单/../..",
    "caf\u00e9",
    "%2e%2e%2fx",
    "a/../../b",
    "\u2024\u2024",  # ONE DOT LEADER, looks like ".."
    "line\nbreak",
]


@pytest.mark.parametrize("topic", HOSTILE)
def test_a_topic_that_could_leave_its_folder_is_refused(topic: str) -> None:
    with pytest.raises(LandingError, match="is not a legal Kafka topic name"):
        check_topic_name(topic)
    with pytest.raises(LandingError, match="so it cannot name a landing folder"):
        data_file(topic, 0, 0, 1)


@pytest.mark.parametrize("name", HOSTILE)
def test_iceberg_names_of_hostile_upstream_names_are_one_safe_path_segment(name: str) -> None:
    for escaped in (iceberg_table_name(name), iceberg_namespace_name(name)):
        assert escaped not in {".", ".."}
        assert not {"/", "\\", "\x00", "\n", ":"} & set(escaped)
        # Joined under a warehouse folder it stays a direct child of that folder.
        assert posixpath.dirname(posixpath.normpath(f"/warehouse/{escaped}")) == "/warehouse"
        assert upstream_name(escaped) == name  # and the mapping is reversible


@pytest.mark.parametrize("pipeline_id", ["../x", "a/b", "..", "A", "x\x00", ""])
def test_a_pipeline_id_that_could_leave_the_landing_root_is_refused(tmp_path: Path, pipeline_id: str) -> None:
    with pytest.raises(LandingError, match=r"cannot name a landing folder \(\[a-z\]\[a-z0-9_\]\*\)"):
        LandingStore(f"file://{tmp_path}", pipeline_id)


CLAIM_LOCATIONS = [
    "../outside.json",
    "s3://bucket/prefix/../../outside.json",
    "/elsewhere/outside.json",
    "file:///elsewhere/outside.json",
    "a/b/../../outside.json",
]


@pytest.mark.parametrize("location", CLAIM_LOCATIONS)
def test_a_claim_check_location_is_read_from_the_configured_folder_only(tmp_path: Path, location: str) -> None:
    """Only the location's file name counts: an object outside the storage folder is never read."""
    claims = tmp_path / "claims"
    claims.mkdir()
    (tmp_path / "outside.json").write_text('{"key": null, "value": "eA=="}')
    reader = ClaimCheckReader("simple-json", CodecOptions(claim_check_storage_uri=f"file://{claims}"))
    with pytest.raises(DecodeError) as caught:
        reader.fetch(location, "topic 'cdc' partition 0 offset 7", "claimCheckLocation")
    assert str(caught.value).startswith(
        f"simple-json: claim-check object file://{claims}/outside.json does not exist (location {location!r}"
    )


@pytest.mark.parametrize("location", ["..", "a/..", "x/", "."])
def test_a_claim_check_location_without_a_file_name_is_refused(tmp_path: Path, location: str) -> None:
    reader = ClaimCheckReader("simple-json", CodecOptions(claim_check_storage_uri=f"file://{tmp_path}"))
    with pytest.raises(DecodeError) as caught:
        reader.fetch(location, "topic 'cdc' partition 0 offset 7", "claimCheckLocation")
    assert str(caught.value) == (
        f"simple-json: claim-check location {location!r} in field 'claimCheckLocation' of topic 'cdc' "
        "partition 0 offset 7 names no file"
    )


def test_a_claim_check_location_with_a_nul_is_a_decode_error(tmp_path: Path) -> None:
    reader = ClaimCheckReader("simple-json", CodecOptions(claim_check_storage_uri=f"file://{tmp_path}"))
    with pytest.raises(DecodeError, match="names no file"):
        reader.fetch("x\x00y.json", "topic 'cdc' partition 0 offset 7", "claimCheckLocation")

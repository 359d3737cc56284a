"""Landing paths: topic names can never leave their folder."""

from __future__ import annotations

import pytest

from ticdc_lake.errors import LandingError, ManifestError
from ticdc_lake.landing.layout import (
    check_data_file,
    check_topic_name,
    data_file,
    manifest_file,
    manifest_sequence,
)


def test_data_file_path() -> None:
    assert data_file("tidb_cdc.orders-v2", 3, 120, 4567) == (
        "data/topic=tidb_cdc.orders-v2/partition=3/00000000000000000120-00000000000000004567.avro"
    )


@pytest.mark.parametrize(
    "topic", ["a/b", "../x", "..", ".", "", "a\\b", "with space", "caf\u00e9", "a\x00b", "x" * 250, "t=1"]
)
def test_unsafe_or_illegal_topic_names_are_rejected(topic: str) -> None:
    with pytest.raises(LandingError) as caught:
        data_file(topic, 0, 0, 1)
    assert str(caught.value) == (
        f"topic name {topic!r} is not a legal Kafka topic name (allowed: ASCII letters, digits, '.', '_', "
        "'-', at most 249 characters, not '.' or '..'), so it cannot name a landing folder; fix "
        "kafka.topics in the pipeline configuration"
    )


@pytest.mark.parametrize("topic", ["...", "a..b", "_x", "-", "x" * 249])
def test_legal_kafka_names_are_accepted(topic: str) -> None:
    assert check_topic_name(topic) == topic


def test_empty_or_negative_range_has_no_file() -> None:
    with pytest.raises(LandingError, match=r"topic 'o' partition 0: invalid offset range \[5, 5\)"):
        data_file("o", 0, 5, 5)


@pytest.mark.parametrize(
    "file",
    [
        "/data/topic=o/partition=0/00000000000000000000-00000000000000000001.avro",
        "data/topic=o/partition=0/../../../00000000000000000000-00000000000000000001.avro",
        "data/topic=../partition=0/00000000000000000000-00000000000000000001.avro",
        "manifests/000000000001.json",
        "data/topic=o/partition=0/0-1.avro",
    ],
)
def test_only_layout_paths_can_be_read(file: str) -> None:
    with pytest.raises(ManifestError, match="is not a raw batch path of the landing layout"):
        check_data_file(file)


def test_manifest_names() -> None:
    assert manifest_file(42) == "manifests/000000000042.json"
    assert manifest_sequence("000000000042.json") == 42
    assert manifest_sequence(".000000000042.json.1f.tmp") is None
    assert manifest_sequence("42.json") is None
    with pytest.raises(ManifestError, match=r"outside 1\.\.999999999999"):
        manifest_file(0)

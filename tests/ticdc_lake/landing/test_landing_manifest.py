"""Manifest JSON round trip and validation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from ticdc_lake.errors import ManifestError
from ticdc_lake.landing.manifest import LandedRange, Manifest

FILE = "data/topic=orders/partition=1/00000000000000000010-00000000000000000015.avro"
SHA = "ab" * 32


def _range_dict(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "topic": "orders",
        "partition": 1,
        "start": 10,
        "end": 15,
        "count": 4,
        "file": FILE,
        "sha256": SHA,
        "size_bytes": 812,
        "first_timestamp_ms": 1772359200000,
        "last_timestamp_ms": 1772359260000,
    }
    return {**base, **changes}


def _manifest_dict(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format_version": 1,
        "pipeline": "orders_cdc",
        "sequence": 7,
        "batch_id": "000000000007",
        "run_id": "scheduled__2026-03-01T10:00:00+00:00",
        "interval_start": "2026-03-01T10:00:00Z",
        "interval_end": "2026-03-01T11:00:00Z",
        "created_at": "2026-03-01T11:00:05.250000Z",
        "ranges": [
            _range_dict(),
            _range_dict(
                partition=2,
                start=3,
                end=4,
                count=0,
                file=None,
                sha256=None,
                size_bytes=None,
                first_timestamp_ms=None,
                last_timestamp_ms=None,
            ),
        ],
    }
    return {**base, **changes}


def _parse(document: dict[str, Any]) -> Manifest:
    return Manifest.from_json(json.dumps(document), source="s3://lake/orders_cdc/manifests/000000000007.json")


def test_round_trip_is_exact() -> None:
    manifest = _parse(_manifest_dict())
    assert manifest.interval_end == datetime(2026, 3, 1, 11, 0, tzinfo=UTC)
    assert manifest.messages == 4
    assert manifest.ranges[1].file is None
    text = manifest.to_json()
    assert Manifest.from_json(text) == manifest
    assert json.loads(text) == _manifest_dict(origins=[])


def test_manifest_without_interval() -> None:
    manifest = _parse(_manifest_dict(interval_start=None, interval_end=None))
    assert manifest.interval_start is None
    assert json.loads(manifest.to_json())["interval_end"] is None


def _error(document: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as caught:
        _parse(document)
    return str(caught.value)


def test_invalid_json_names_the_file() -> None:
    with pytest.raises(ManifestError) as caught:
        Manifest.from_json("{not json", source="/lake/p/manifests/000000000001.json")
    assert str(caught.value).startswith("/lake/p/manifests/000000000001.json: not valid JSON (")


def test_count_larger_than_range_is_rejected() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(count=6)]))
    assert message == (
        "s3://lake/orders_cdc/manifests/000000000007.json: invalid manifest: ranges.0: Value error, "
        "range of topic 'orders' partition 1 [10, 15): count 6 exceeds the 5 offsets. Manifests are "
        "written only by the land stage; restore the file from a backup"
    )


def test_file_must_be_the_ranges_own_path() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(file="../../etc/passwd")]))
    assert f"file must be {FILE!r}, not '../../etc/passwd'" in message


def test_empty_range_must_not_name_a_file() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(count=0)]))
    assert "a range without records has no file, sha256, size or timestamps" in message


def test_range_with_records_needs_checksum() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(sha256=None)]))
    assert "a range with records needs file, sha256, size_bytes and timestamps" in message


def test_end_must_follow_start() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(start=15, end=15, count=0, file=None)]))
    assert "range of topic 'orders' partition 1 [15, 15): end must be greater than start" in message


def test_batch_id_must_match_sequence() -> None:
    assert "batch_id '000000000008' does not match sequence 7" in _error(_manifest_dict(batch_id="000000000008"))


def _empty_range(**changes: Any) -> dict[str, Any]:
    none = dict(count=0, file=None, sha256=None, size_bytes=None, first_timestamp_ms=None, last_timestamp_ms=None)
    return _range_dict(**{**none, **changes})


def test_several_ranges_of_a_partition_are_sorted_and_disjoint() -> None:
    # A backfill can fill several holes of one partition: [10, 15) and [16, 17) are fine.
    two = _parse(_manifest_dict(ranges=[_range_dict(), _empty_range(start=16, end=17)]))
    assert [(r.start, r.end) for r in two.ranges] == [(10, 15), (16, 17)]
    unsorted = _manifest_dict(ranges=[_empty_range(start=16, end=17), _range_dict()])
    assert "ranges must be sorted by (topic, partition, start)" in _error(unsorted)
    overlapping = _manifest_dict(ranges=[_range_dict(), _empty_range(start=14, end=16)])
    assert "ranges of topic 'orders' partition 1 overlap at offset 14" in _error(overlapping)


def test_origins_round_trip() -> None:
    document = _manifest_dict(origins=[{"topic": "orders", "partition": 1, "offset": 10}])
    manifest = _parse(document)
    assert [(o.topic, o.partition, o.offset) for o in manifest.origins] == [("orders", 1, 10)]
    assert json.loads(manifest.to_json()) == document


def test_half_an_interval_is_rejected() -> None:
    assert "interval_start and interval_end are both set or both null" in _error(_manifest_dict(interval_start=None))


def test_naive_timestamps_are_rejected() -> None:
    assert "need a time zone" in _error(_manifest_dict(created_at="2026-03-01T11:00:05"))


def test_unknown_keys_and_missing_ranges_are_rejected() -> None:
    assert "extra: Extra inputs are not permitted" in _error(_manifest_dict(extra=1))
    assert "(manifest): Value error, a manifest lands at least one range" in _error(_manifest_dict(ranges=[]))


def test_illegal_topic_name_is_rejected() -> None:
    assert "topic name 'a/b' is not a legal Kafka topic name" in _error(
        _manifest_dict(ranges=[_range_dict(topic="a/b")])
    )


def test_future_format_version_is_rejected() -> None:
    assert "format_version 2 is not supported (this is 1)" in _error(_manifest_dict(format_version=2))


def test_landed_range_describe() -> None:
    landed = LandedRange.model_validate(_range_dict())
    assert landed.describe() == "orders[1] [10, 15) 4 records"
    assert landed.key == ("orders", 1)


def test_schema_blocks_round_trip_and_are_left_out_where_unknown() -> None:
    counted = _range_dict(schema_blocks={"test": "debezium/1", "blocks": [0, 5]})
    manifest = _parse(_manifest_dict(ranges=[counted]))
    assert manifest.ranges[0].schema_blocks is not None
    assert (manifest.ranges[0].schema_blocks.test, manifest.ranges[0].schema_blocks.blocks) == ("debezium/1", (0, 5))
    assert json.loads(manifest.to_json())["ranges"][0]["schema_blocks"] == {"test": "debezium/1", "blocks": [0, 5]}
    assert Manifest.from_json(manifest.to_json()) == manifest
    unknown = _parse(_manifest_dict())
    assert unknown.ranges[0].schema_blocks is None
    assert "schema_blocks" not in json.loads(unknown.to_json())["ranges"][0]


def test_empty_range_has_no_schema_blocks() -> None:
    empty = {**_manifest_dict()["ranges"][1], "schema_blocks": {"test": "debezium/1", "blocks": []}}
    message = _error(_manifest_dict(ranges=[empty]))
    assert "a range without records has no file, so no schema blocks" in message


def test_schema_blocks_are_ascending_each_once() -> None:
    message = _error(_manifest_dict(ranges=[_range_dict(schema_blocks={"test": "debezium/1", "blocks": [3, 3]})]))
    assert "schema blocks [3, 3] must be ascending, each once" in message

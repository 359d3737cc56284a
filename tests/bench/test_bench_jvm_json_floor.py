"""The JVM floor probe of `bench_jvm_json_floor.py` reads what the messages hold, both ways alike."""

from __future__ import annotations

from pathlib import Path

import bench_jvm_json_floor as floor  # type: ignore[import-not-found,unused-ignore]  # beside this file


def test_both_ways_of_finding_the_schema_read_the_same_values_and_schemas(tmp_path: Path) -> None:
    store, _ = floor.land(tmp_path, 30)
    count = floor.export(floor.landed_chunks(store), tmp_path / "messages.bin")

    passes = floor.jvm_side(tmp_path, tmp_path / "messages.bin", 2)

    assert count == 32  # the CREATE TABLE, 30 row changes, the watermark
    assert sorted((p.way, p.number) for p in passes) == [
        ("tokenized", 1),
        ("tokenized", 2),
        ("untokenized", 1),
        ("untokenized", 2),
    ]
    assert {p.messages for p in passes} == {count}
    # The checksum covers every value read and the column count of each message's schema: a schema
    # cut wrong without tokenizing it would change it.
    assert len({(p.checksum, p.schemas) for p in passes}) == 1
    assert passes[0].schemas >= 2  # the DDL's schema and the rows' differ

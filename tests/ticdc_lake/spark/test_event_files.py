"""The decode workers' ``change_events`` files (pyarrow only, no JVM): field ids, encodings, rolling."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, SourcePosition
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA, events_to_arrow
from ticdc_lake.spark.event_files import (
    FIELD_ID,
    EventFileLayout,
    EventFileWriter,
    MapIds,
    write_event_files,
)

#: Ids as an old lake might have them: not 1..n in column order.
IDS = {column.name: 100 + 3 * i for i, column in enumerate(EVENTS_ARROW_SCHEMA)}
MAP_IDS = {
    "before": MapIds(501, 502),
    "after": MapIds(503, 504),
    "column_types": MapIds(505, 506),
    "before_untyped": MapIds(507, 508),
    "after_untyped": MapIds(509, 510),
}
ELEMENT_IDS = {"before_key": 511, "after_key": 512}


def _layout(tmp_path: Path, **overrides: object) -> EventFileLayout:
    settings: dict[str, object] = {
        "field_ids": IDS,
        "map_ids": MAP_IDS,
        "element_ids": ELEMENT_IDS,
        "directories": {"b1": f"file:{tmp_path}/data/batch_id=b1", "b2": f"{tmp_path}/data/batch_id=b2"},
        "no_dictionary": frozenset({"before.key_value.value", "after.key_value.value"}),
    }
    settings.update(overrides)
    return EventFileLayout(**settings)  # type: ignore[arg-type]


def _events(count: int, first_offset: int = 0) -> list[ChangeEvent]:
    return [
        ChangeEvent(
            kind=EventKind.DML,
            position=SourcePosition("t", 0, first_offset + i, 0),
            commit_ts=400_000_000_000_000 + i,
            database="db",
            table="orders",
            table_id=7,
            op=Op.UPDATE,
            schema_version=1,
            before={"id": str(i), "note": f"old note {i}"},
            after={"id": str(i), "note": f"new note {i}"},
            status=EventStatus.READY,
        )
        for i in range(count)
    ]


def test_files_carry_the_tables_field_ids_and_its_encodings(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    writer = EventFileWriter(layout, task=3, attempt=1)
    writer.write(events_to_arrow("p", "b1", "run", _events(10)))
    writer.write(events_to_arrow("p", "b2", "run", _events(5, 10)))
    writer.write(events_to_arrow("p", "b1", "run", _events(7, 15)))
    written = writer.finish()

    assert [(f.batch_id, f.records) for f in written] == [("b1", 17), ("b2", 5)]
    assert written[0].path.startswith(f"file:{tmp_path}/data/batch_id=b1/00003-1-")
    assert written[1].path.startswith(f"{tmp_path}/data/batch_id=b2/00003-1-")
    local = [f.path.removeprefix("file:") for f in written]
    assert [f.bytes for f in written] == [Path(p).stat().st_size for p in local]

    schema = pq.read_schema(local[0])
    assert {f.name: int(f.metadata[FIELD_ID]) for f in schema} == IDS
    before = schema.field("before").type
    assert (int(before.key_field.metadata[FIELD_ID]), int(before.item_field.metadata[FIELD_ID])) == (501, 502)
    assert int(schema.field("after_key").type.value_field.metadata[FIELD_ID]) == 512
    table = pq.read_table(local[0])
    assert table.column("offset").to_pylist() == list(range(10)) + list(range(15, 22))
    assert table.column("after").to_pylist()[0] == [("id", "0"), ("note", "new note 0")]

    metadata = pq.ParquetFile(local[0]).metadata
    # b1's events before b2's were written out when b2's came: two row groups, never two buffers.
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [10, 7]
    columns = {
        metadata.row_group(0).column(i).path_in_schema: metadata.row_group(0).column(i)
        for i in range(metadata.num_columns)
    }
    assert columns["kind"].compression == "ZSTD"
    assert any("DICTIONARY" in e for e in columns["before.key_value.key"].encodings)
    assert not any("DICTIONARY" in e for e in columns["before.key_value.value"].encodings)
    assert not any("DICTIONARY" in e for e in columns["after.key_value.value"].encodings)
    assert columns["commit_ts"].statistics.has_min_max


def test_the_events_of_one_batch_are_buffered_into_one_row_group(tmp_path: Path) -> None:
    writer = EventFileWriter(_layout(tmp_path), task=0, attempt=0)
    for i in range(3):
        writer.write(events_to_arrow("p", "b1", "run", _events(4, 4 * i)))
    (written,) = writer.finish()
    metadata = pq.ParquetFile(written.path.removeprefix("file:")).metadata
    assert (metadata.num_row_groups, metadata.num_rows, written.records) == (1, 12, 12)


def test_a_file_past_the_target_size_is_closed_and_the_next_events_start_another(tmp_path: Path) -> None:
    layout = _layout(tmp_path, target_file_bytes=1, compression="snappy")
    batches = [events_to_arrow("p", "b1", "run", _events(4, 4 * i)) for i in range(3)]
    result = list(write_event_files(layout, iter(batches), task=0, attempt=0))

    assert len(result) == 1
    rows = result[0].to_pylist()
    assert [(r["batch_id"], r["records"]) for r in rows] == [("b1", 4), ("b1", 4), ("b1", 4)]
    assert len({r["path"] for r in rows}) == 3
    offsets = [pq.read_table(r["path"].removeprefix("file:")).column("offset").to_pylist() for r in rows]
    assert offsets == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert pq.ParquetFile(rows[0]["path"].removeprefix("file:")).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_a_task_without_events_writes_no_file(tmp_path: Path) -> None:
    result = list(write_event_files(_layout(tmp_path), iter([]), task=0, attempt=0))
    assert [b.num_rows for b in result] == [0]
    assert not (tmp_path / "data").exists()

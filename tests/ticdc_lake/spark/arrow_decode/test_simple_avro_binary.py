"""``simple_avro_binary.read_dml`` against ``fastavro``: wherever it says a value is ok, fastavro reads
the same DML to exactly the value's end (names, type, TSOs, map keys in order, branches, numbers);
on random corruptions of valid values it is never ok where fastavro fails."""

from __future__ import annotations

import io
import random
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from tests.ticdc_lake.spark.arrow_decode import simple_avro_differential_cases as cases
from ticdc_lake.protocols.simple_avro import message_schema
from ticdc_lake.spark.arrow_decode.simple_avro_binary import MAX_ENTRIES, DmlValues, Entries, read_dml
from ticdc_lake.spark.arrow_decode.simple_avro_columns import LONG, NULL, STRING, TIMESTAMP, UNSIGNED
from ticdc_sim.model import DmlOp

_KINDS = ("INSERT", "UPDATE", "DELETE")


def _fastavro(value: bytes) -> dict[str, Any] | None:
    """The DML payload fastavro reads from the whole value, or None where it fails or stops early."""
    buffer = io.BytesIO(value)
    try:
        decoded: Any = fastavro.schemaless_reader(
            buffer, message_schema(), return_record_name=True, return_record_name_override=True
        )
    except Exception:
        return None
    if buffer.tell() != len(value) or decoded[1]["type"] != "DML":
        return None
    return dict(decoded[1]["payload"][1])


def _map_of(entries: Entries, data: np.ndarray, n: int) -> list[tuple[bytes, int, int]]:
    rows = np.flatnonzero(entries.message == n)
    return [
        (bytes(data[entries.key_start[i] : entries.key_stop[i]]), int(entries.branch[i]), int(entries.number[i]))
        for i in rows
    ]


def _texts_valid(read: DmlValues, n: int) -> bool:
    """Whether the value's strings are UTF-8 (``read_dml`` leaves that check to its caller)."""
    ranges = [read.database, read.table]
    for entries in (read.data_entries, read.old_entries):
        for i in np.flatnonzero(entries.message == n):
            ranges.append((entries.key_start[i : i + 1], entries.key_stop[i : i + 1]))
            if entries.branch[i] in (STRING, TIMESTAMP):
                ranges.append((entries.first_start[i : i + 1], entries.first_stop[i : i + 1]))
            if entries.branch[i] == TIMESTAMP:
                ranges.append((entries.second_start[i : i + 1], entries.second_stop[i : i + 1]))
    try:
        for start, stop in ranges:
            at = 0 if len(start) == 1 else n
            bytes(read.data[start[at] : stop[at]]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check(values: list[bytes]) -> int:
    """Every ok value whose strings are UTF-8 agrees with fastavro; returns how many were."""
    read: DmlValues = read_dml(pa.array(values, pa.binary()))
    checked = 0
    for n, value in enumerate(values):
        if not read.ok[n] or not _texts_valid(read, n):
            continue
        checked += 1
        payload = _fastavro(value)
        assert payload is not None, (n, value[:80])
        assert payload["claimCheckLocation"] is None
        assert payload["handleKeyOnly"] in (None, False)
        assert bytes(read.data[read.database[0][n] : read.database[1][n]]).decode() == payload["database"]
        assert bytes(read.data[read.table[0][n] : read.table[1][n]]).decode() == payload["table"]
        assert _KINDS[read.kind[n]] == payload["type"]
        assert int(read.commit_ts[n]) == payload["commitTs"] % (1 << 64)
        assert int(read.schema_version[n]) == payload["schemaVersion"] % (1 << 64)
        assert int(read.table_id[n]) == payload["tableID"]
        for name, present, entries in (
            ("data", read.has_data, read.data_entries),
            ("old", read.has_old, read.old_entries),
        ):
            image = payload[name]
            assert bool(present[n]) == (image is not None)
            got = _map_of(entries, read.data, n)
            assert [key.decode() for key, _, _ in got] == list(image or {})
            for (_, branch, number), item in zip(got, (image or {}).values(), strict=True):
                assert (branch == NULL) == (item is None)
                if branch == LONG:
                    assert number == item
                if branch == UNSIGNED:
                    assert number == item[1]["value"]
    return checked


def _valid(count: int) -> list[bytes]:
    enc = cases.encoder()
    ops = (DmlOp.INSERT, DmlOp.UPDATE, DmlOp.DELETE)
    return [cases.plain_pair(enc, n, ops[n % 3])[1] or b"" for n in range(count)]


def test_valid_values_read_as_fastavro_reads_them() -> None:
    values = _valid(30)
    assert _check(values) == len(values)


def test_random_corruptions() -> None:
    """Bytes flipped, cut, inserted: ok only where fastavro reads the same DML."""
    rng = random.Random(11)
    valid = _valid(9)
    mutated = []
    for _ in range(3_000):
        value = bytearray(rng.choice(valid))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(value))
            action = rng.random()
            if action < 0.6:
                value[at] = rng.randrange(256)
            elif action < 0.8:
                del value[at]
            else:
                value.insert(at, rng.randrange(256))
        mutated.append(bytes(value))
    taken = _check(mutated)
    assert 0 < taken < len(mutated)


def test_maps_longer_than_max_entries_are_not_ok() -> None:
    payload = cases.plain_payload(cases.encoder(), 1)
    head = cases.write({**payload, "data": None, "old": None})[:-2]

    def with_entries(count: int) -> bytes:
        body = b"".join(cases._key(n) + b"\x00" for n in range(count))
        return head + b"\x02" + cases._varint(count) + body + b"\x00\x00"

    read = read_dml(pa.array([with_entries(MAX_ENTRIES), with_entries(MAX_ENTRIES + 2)], pa.binary()))
    assert read.ok.tolist() == [True, False]
    assert _fastavro(with_entries(MAX_ENTRIES + 2)) is not None  # fastavro reads it: only the vector path declines

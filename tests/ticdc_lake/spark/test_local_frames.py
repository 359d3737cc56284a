"""Driver-side rows through Arrow equal what createDataFrame of the tuples gives, without Python workers."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ticdc_lake.events import RawMessage
from ticdc_lake.spark.event_rows import QUARANTINE_SCHEMA, quarantine_row
from ticdc_lake.spark.local_frames import local_frame
from ticdc_lake.spark.system_tables import COLUMNS

pytestmark = pytest.mark.spark


def test_quarantine_rows_keep_binary_keys_and_values(spark: Any) -> None:
    message = RawMessage("t", 1, 2**63 - 1, 0, b"\xff\x00", b"\x00\xfe garbage")
    rows = [
        quarantine_row("p", "000000000001", "run", message, "simple-json", "simple-json: bad", skip=False),
        quarantine_row("p", "000000000001", "run", RawMessage("t", 0, 5, 0, None, None), "open", "open: bad", True),
    ]
    through_arrow = local_frame(spark, rows, QUARANTINE_SCHEMA).collect()
    assert through_arrow == spark.createDataFrame(rows, QUARANTINE_SCHEMA).collect()
    first = through_arrow[0]
    assert (first["raw_key"], first["raw_value"]) == (bytearray(b"\xff\x00"), bytearray(b"\x00\xfe garbage"))


def test_decimal_tso_up_to_2_to_the_64_and_nulls(spark: Any) -> None:
    now = datetime(2026, 11, 21, 10, 30, 0, 123456, tzinfo=UTC)
    row = ("p", "b", 1, "t", 0, 0, 10, 3, 2, 1, 0, 0, Decimal(2**64 - 1), 0, 1, "run", now)
    empty = ("p", "b", 2, "t", 1, 0, 0, 0, 0, 0, 0, 0, None, 0, 0, "run", now)
    frame = local_frame(spark, [row, empty], COLUMNS["decoded_batches"])
    assert frame.schema == spark.createDataFrame([row], COLUMNS["decoded_batches"]).schema
    assert frame.collect() == spark.createDataFrame([row, empty], COLUMNS["decoded_batches"]).collect()
    assert local_frame(spark, [], COLUMNS["decoded_batches"]).count() == 0

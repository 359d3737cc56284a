"""Rows that wait for a table schema too long are quarantined with a reason."""

from __future__ import annotations

from ticdc_lake.events import ChangeEvent, EventKind, EventStatus, Op, SourcePosition
from ticdc_lake.protocols.pending import expired_reason
from ticdc_lake.tso import LOGICAL_BITS

SECOND = 1000 << LOGICAL_BITS
COMMIT = 1_700_000_000_000 << LOGICAL_BITS


def _pending(version: int | None) -> ChangeEvent:
    event = ChangeEvent(
        EventKind.DML, SourcePosition("t", 2, 40), COMMIT, "shop", "items", op=Op.UPDATE, schema_version=version
    )
    event.status = EventStatus.PENDING
    return event


def test_a_row_within_the_timeout_keeps_waiting() -> None:
    assert expired_reason(_pending(7), COMMIT + 899 * SECOND, 900, "simple-json") is None
    assert expired_reason(_pending(7), None, 900, "simple-json") is None


def test_ready_rows_never_expire() -> None:
    event = _pending(7)
    event.status = EventStatus.READY
    assert expired_reason(event, COMMIT + 10_000 * SECOND, 900, "simple-json") is None


def test_a_simple_row_past_the_timeout_names_version_table_and_setting() -> None:
    watermark = COMMIT + 900 * SECOND
    assert expired_reason(_pending(7), watermark, 900, "simple-json") == (
        f"simple-json: U event for shop.items at commit ts {COMMIT} (item 0) still waits for schema version 7 after "
        f"the partition's watermark {watermark} passed it by 900 s (policies.pending_schema_timeout_s = 900). "
        "TiCDC announces schemas with BOOTSTRAP (send-bootstrap-interval-in-sec) and DDL messages: check the "
        "changefeed's settings"
    )


def test_an_enum_row_says_what_it_waits_for() -> None:
    event = _pending(None)
    event.pending_reason = "no schema"
    reason = expired_reason(event, COMMIT + 1000 * SECOND, 900, "open")
    assert reason is not None
    assert "still waits for a table schema to name its ENUM/SET values" in reason
    assert "(policies.pending_schema_timeout_s = 900); no schema. TiCDC announces" in reason


def test_a_row_with_unannounced_columns_names_them() -> None:
    event = _pending(None)
    event.unknown_columns = ("v2", "v3")
    event.pending_reason = "canal-json: row event ... lacks"
    watermark = COMMIT + 900 * SECOND
    assert expired_reason(event, watermark, 900, "canal-json") == (
        f"canal-json: U event for shop.items at commit ts {COMMIT} (item 0) still waits for a table schema version "
        f"with column(s) v2, v3 after the partition's watermark {watermark} passed it by 900 s "
        "(policies.pending_schema_timeout_s = 900); canal-json: row event ... lacks. TiCDC announces schemas with "
        "BOOTSTRAP (send-bootstrap-interval-in-sec) and DDL messages: check the changefeed's settings"
    )

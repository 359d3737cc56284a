"""Ledger messages never carry secrets: they quote errors and settings, and many people read them."""

from __future__ import annotations

from datetime import UTC, datetime

from ticdc_lake.redaction import register_secret
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark.ledger import redacted, stage_row


def test_registered_secrets_and_credential_assignments_are_masked_in_messages() -> None:
    register_secret("s3cr3t-token-for-ledger-test")
    row = stage_row(
        "p",
        "run-1",
        "apply",
        LedgerStatus.FAILED,
        datetime(2026, 11, 21, tzinfo=UTC),
        1.5,
        3,
        "catalog refused s3cr3t-token-for-ledger-test; settings sasl.password=hunter2hunter2 were used",
    )
    (clean,) = redacted([row])
    assert clean.message is not None
    assert "s3cr3t-token-for-ledger-test" not in clean.message
    assert "hunter2hunter2" not in clean.message
    assert clean.message.startswith("catalog refused ")
    assert (clean.pipeline, clean.status, clean.events_in, clean.duration_ms) == ("p", "FAILED", 3, 1500)
    ok = stage_row("p", "r", "apply", LedgerStatus.OK, datetime(2026, 11, 21, tzinfo=UTC), 0, 0, None)
    assert redacted([ok])[0].message is None

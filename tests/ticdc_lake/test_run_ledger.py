"""Ledger statuses are an enum whose values are what the run ledger table stores."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake.spark import ledger


def test_the_statuses_keep_the_values_the_ledger_table_holds() -> None:
    assert [s.value for s in LedgerStatus] == ["OK", "NOOP", "APPLIED", "HELD", "FAILED", "REBUILT"]
    assert LedgerStatus.HELD == "HELD"
    assert f"{LedgerStatus.NOOP:<6}|" == "NOOP  |"
    assert "HELD" in (LedgerStatus.HELD, LedgerStatus.FAILED)


def test_a_row_goes_to_spark_with_its_status_as_a_plain_string() -> None:
    row = ledger.stage_row("p", "run-1", "apply", LedgerStatus.NOOP, datetime(2026, 11, 21, tzinfo=UTC), 0.25, 0)
    values = ledger.values(row)
    assert values[:7] == ("p", "run-1", "apply", None, None, None, "NOOP")
    assert type(values[6]) is str
    assert values[-3:] == (250, None, None)


def test_importing_the_statuses_loads_no_heavy_client() -> None:
    """Plugins import LedgerStatus at module level, and Airflow imports plugins in every process."""
    heavy = ("pyarrow", "pyiceberg", "pyspark")
    code = f"import sys, ticdc_lake.run_ledger; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"

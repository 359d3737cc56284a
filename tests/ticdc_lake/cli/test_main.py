"""``ticdc-lake tso`` and ``snapshots --as-of``: a TSO or an ISO 8601 time, a clear error otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake import tso
from ticdc_lake.cli.main import build_parser, main

DEMO = Path(__file__).resolve().parents[3] / "include" / "pipelines.yaml"
NINE_UTC = 470614435430400000  # 2026-11-21T09:00:00Z, logical 0
FORMS = (
    "give a TSO (an unsigned 64-bit integer, e.g. 470614435430400000) or an ISO 8601 time "
    "(e.g. 2026-11-21T09:00:00Z, 2026-11-21T17:00:00+08:00; a time without a zone is UTC)"
)


@pytest.mark.parametrize(
    "value", ["2026-11-21T09:00:00Z", "2026-11-21T17:00:00+08:00", "2026-11-21T09:00:00", str(NINE_UTC)]
)
def test_tso_command_takes_a_tso_or_an_iso_time(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tso", value]) == 0
    assert capsys.readouterr().out == f"{NINE_UTC} = 2026-11-21T09:00:00+00:00 (logical 0)\n"


def test_as_of_a_time_means_every_tso_of_that_millisecond() -> None:
    args = build_parser().parse_args(["snapshots", "--as-of", "2026-11-21T09:00:00Z"])
    assert args.as_of == NINE_UTC + tso.MAX_LOGICAL
    assert build_parser().parse_args(["snapshots", "--as-of", str(NINE_UTC)]).as_of == NINE_UTC
    assert build_parser().parse_args(["snapshots"]).as_of is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["tso", "yesterday"],
            f"ticdc-lake tso: error: argument TSO_OR_TIME: 'yesterday' is not a TSO or a time; {FORMS}",
        ),
        (
            ["snapshots", "--as-of", "21/11/2026"],
            f"ticdc-lake snapshots: error: argument --as-of: '21/11/2026' is not a TSO or a time; {FORMS}",
        ),
        (
            ["tso", str(1 << 64)],
            "ticdc-lake tso: error: argument TSO_OR_TIME: TSO '18446744073709551616' is outside the unsigned "
            "64-bit range",
        ),
        (
            ["tso", "1969-12-31T23:00:00Z"],
            "ticdc-lake tso: error: argument TSO_OR_TIME: '1969-12-31T23:00:00Z' is before 1970-01-01T00:00:00Z, "
            "the earliest TSO",
        ),
    ],
)
def test_a_bad_value_is_an_argparse_error_naming_the_option_and_the_forms(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == message


def test_validate_config_takes_the_file_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`ticdc-lake validate-config FILE`, as a user types it (before: 'unrecognized arguments')."""
    good = tmp_path / "pipelines.yaml"
    good.write_text(DEMO.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["validate-config", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: OK, 1 pipeline(s): demo\n"
    assert main(["--config", str(good), "validate-config"]) == 0
    assert capsys.readouterr().out == f"{good}: OK, 1 pipeline(s): demo\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        DEMO.read_text(encoding="utf-8").replace('schedule: "@hourly"', 'schedule: "@hourlyy"'), encoding="utf-8"
    )
    assert main(["validate-config", str(bad)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}: invalid pipeline configuration:\n  pipeline 'demo', key 'schedule': Value error, '@hourlyy' "
        "is not a cron expression or preset (@hourly, @daily, @weekly, '30 2 * * *'); did you mean '@hourly'?\n"
    )

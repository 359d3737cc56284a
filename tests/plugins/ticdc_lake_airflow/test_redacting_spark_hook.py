"""The Spark task's hook prints no secret: not in the command line, not in relayed output."""

from __future__ import annotations

import pytest
from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from ticdc_lake_airflow.hooks import mask_secrets
from ticdc_lake_airflow.redacting_spark_hook import RedactingSparkSubmitHook, redacting

CONF = {
    "spark.sql.catalog.lake.s3.session-token": "sessionTokenValue42",
    "spark.sql.catalog.lake.credential": "client:credentialValue42",
    "spark.sql.catalog.lake.s3.access-key-id": "AKIAPUBLICID",
    "spark.sql.catalog.lake.uri": "jdbc:postgresql://db/lake?user=lake&password=jdbcPassword42",
}


def test_the_command_line_and_relayed_lines_are_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    mask_secrets(CONF)
    hook = redacting(SparkSubmitHook(conf=dict(CONF)))
    assert isinstance(hook, RedactingSparkSubmitHook)

    line = hook._mask_cmd(hook._build_spark_submit_command("app.py"))
    assert line == (
        "spark-submit --master local[1] --conf spark.sql.catalog.lake.s3.session-token=*** "
        "--conf spark.sql.catalog.lake.credential=*** --conf spark.sql.catalog.lake.s3.access-key-id=AKIAPUBLICID "
        "--conf spark.sql.catalog.lake.uri=jdbc:postgresql://db/lake?user=lake&password=*** "
        "--name default-name app.py"
    )
    hook.log.info("driver said %s", "token sessionTokenValue42 and 100% done")
    hook.log.info("raw line with client:credentialValue42 and a % sign")
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "driver said token *** and 100% done" in text
    assert "raw line with *** and a % sign" in text
    assert not [s for s in ("sessionTokenValue42", "credentialValue42", "jdbcPassword42") if s in text]


def test_relayed_lines_keep_the_level_they_start_with(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The provider relays every line at INFO; a warning or error of Spark or of the job stays one."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    hook = redacting(SparkSubmitHook(conf={}))
    capsys.readouterr()
    hook.log.info("WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address")
    hook.log.info("WARNING [ticdc_lake.spark.apply_job] apply: topic 'orders' has no watermark yet")
    hook.log.info("ERROR: transform failed: catalog 'lake': ...")
    hook.log.info("INFO [ticdc_lake.spark.transform_job] transform: step 1/3 decode")
    hook.log.info("WARNINGS are not a level")
    printed = capsys.readouterr()
    lines = [line for line in (printed.out + printed.err).splitlines() if "[" in line]
    levels = [line.split("[", 1)[1].split("]", 1)[0].strip() for line in lines]
    assert levels == ["warning", "warning", "error", "info", "info"], lines


def test_on_line_gets_each_relayed_line_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[1]"}')
    mask_secrets(CONF)
    seen: list[str] = []
    hook = redacting(SparkSubmitHook(conf={}), on_line=seen.append)
    hook.log.info("driver said %s", "token sessionTokenValue42")
    hook.log.info("WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address")
    assert seen == ["driver said token ***", "WARN Utils: Set SPARK_LOCAL_IP if you need to bind to another address"]
    assert redacting(SparkSubmitHook(conf={})).on_line is None  # type: ignore[attr-defined]

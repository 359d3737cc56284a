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

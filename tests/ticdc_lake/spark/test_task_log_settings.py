"""The Spark settings that send a task driver's own Spark log to a file (plain Python, no JVM)."""

from __future__ import annotations

from pathlib import Path

from ticdc_lake.spark.settings import TASK_LOG4J2, driver_log_conf


def test_driver_log_conf_names_the_configuration_and_the_file() -> None:
    assert TASK_LOG4J2.is_file()
    assert driver_log_conf(Path("/lake/logs/spark/d/r/transform.1.log"), {}) == {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={TASK_LOG4J2.as_uri()} "
        "-Dticdc.spark.log.file=/lake/logs/spark/d/r/transform.1.log"
    }


def test_the_pipelines_own_driver_options_come_last_and_win() -> None:
    conf = {"spark.driver.extraJavaOptions": " -Xss4m -Dlog4j2.configurationFile=/etc/mine.properties "}
    assert driver_log_conf(Path("/my lake/t.1.log"), conf) == {
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={TASK_LOG4J2.as_uri()} "
        '"-Dticdc.spark.log.file=/my lake/t.1.log" -Xss4m -Dlog4j2.configurationFile=/etc/mine.properties'
    }

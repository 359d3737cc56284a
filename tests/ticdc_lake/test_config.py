"""Pipeline configuration: validation errors name the file, the pipeline and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.config import DecodeErrorPolicy, Protocol, load_config
from ticdc_lake.errors import ConfigError

GOOD = """
catalogs:
  lake:
    uri: jdbc:sqlite:${TICDC_LAKE_HOME}/catalog/lake.db
    warehouse: file://${TICDC_LAKE_HOME}/warehouse
pipelines:
  - id: orders
    protocol: simple-json
    kafka: {topics: [ticdc-orders]}
    landing_uri: file://${LANDING_ROOT:-/data/landing}
    catalog: lake
    target: {include: ["shop.*"], exclude: ["shop.tmp_*"]}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "include" / "pipelines.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_valid_file_with_defaults_and_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TICDC_LAKE_HOME", raising=False)
    monkeypatch.delenv("LANDING_ROOT", raising=False)
    config = load_config(write(tmp_path, GOOD))
    pipeline = config.pipeline("orders")
    assert pipeline.protocol is Protocol.SIMPLE_JSON
    assert pipeline.dag_id == "ticdc_orders"
    assert pipeline.landing_uri == "file:///data/landing"
    assert config.catalogs["lake"].uri == f"jdbc:sqlite:{tmp_path / 'run'}/catalog/lake.db"
    assert pipeline.policies.on_decode_error is DecodeErrorPolicy.HALT
    assert pipeline.codec.server_time_zone == "UTC"
    assert pipeline.target.wants("shop", "orders")
    assert not pipeline.target.wants("shop", "tmp_1")
    assert not pipeline.target.wants("crm", "orders")
    assert pipeline.target.namespace_for("shop") == "shop"


def test_unknown_key_names_file_pipeline_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("kafka: {topics: [ticdc-orders]}", "kafka: {topics: [x], topcs: [y]}"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert (
        str(err.value)
        == f"{path}: invalid pipeline configuration:\n  pipeline 'orders', key 'kafka.topcs': unknown key"
    )


def test_bad_enum_value_and_zone(tmp_path: Path) -> None:
    text = GOOD.replace("protocol: simple-json", "protocol: simple-xml\n    codec: {server_time_zone: Mars/Base}")
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    message = str(err.value)
    assert "pipeline 'orders', key 'protocol': Input should be 'simple-json'" in message
    assert "pipeline 'orders', key 'codec.server_time_zone': Value error, unknown IANA time zone 'Mars/Base'" in message


def test_unknown_catalog_reference(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("catalog: lake", "catalog: warehouse"))
    with pytest.raises(
        ConfigError, match=r"pipeline 'orders', key 'catalog': unknown catalog 'warehouse' \(defined: lake\)"
    ):
        load_config(path)


def test_duplicate_pipeline_and_missing_file(tmp_path: Path) -> None:
    text = GOOD + GOOD.split("pipelines:")[1]
    with pytest.raises(ConfigError, match="pipeline 'orders', key 'id': defined twice"):
        load_config(write(tmp_path, text))
    with pytest.raises(ConfigError, match="pipeline configuration file not found"):
        load_config(tmp_path / "nope.yaml")


def test_missing_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SECRET_ROOT", raising=False)
    path = write(tmp_path, GOOD.replace("${LANDING_ROOT:-/data/landing}", "${SECRET_ROOT}"))
    with pytest.raises(ConfigError, match="environment variable SECRET_ROOT is not set and has no default"):
        load_config(path)


def test_unknown_pipeline_lists_known_ones(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    with pytest.raises(ConfigError, match=r"no pipeline 'billing' \(configured: orders\)"):
        config.pipeline("billing")


def test_bad_pipeline_id(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pipeline 'Orders-1', key 'id': String should match pattern"):
        load_config(write(tmp_path, GOOD.replace("id: orders", "id: Orders-1")))


@pytest.mark.parametrize(
    ("protocol", "extension", "offset_ordered"),
    [
        ("canal-json", False, True),
        ("avro", False, True),
        ("canal-json", True, False),
        ("avro", True, False),
        ("debezium", False, False),  # TiCDC always writes source.commit_ts for Debezium
        ("simple-json", False, False),
    ],
)
def test_offset_ordered_pipelines_are_the_ones_without_commit_ts(
    tmp_path: Path, protocol: str, extension: bool, offset_ordered: bool
) -> None:
    text = GOOD.replace(
        "protocol: simple-json", f"protocol: {protocol}\n    codec: {{enable_tidb_extension: {str(extension).lower()}}}"
    )
    assert load_config(write(tmp_path, text)).pipeline("orders").offset_ordered is offset_ordered


def test_schedule_uri_and_placeholder_typos_name_the_key_and_suggest_the_fix(tmp_path: Path) -> None:
    text = GOOD.replace("catalog: lake\n", 'catalog: lake\n    schedule: "@hourlyy"\n').replace(
        "file://${LANDING_ROOT:-/data/landing}", "fil:///data/landing"
    )
    text = text.replace('target: {include: ["shop.*"]', 'target: {namespace: "{databse}", include: ["shop.*"]')
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == "\n".join(
        [
            f"{path}: invalid pipeline configuration:",
            "  pipeline 'orders', key 'schedule': Value error, '@hourlyy' is not a cron expression or preset "
            "(@hourly, @daily, @weekly, '30 2 * * *'); did you mean '@hourly'?",
            "  pipeline 'orders', key 'landing_uri': Value error, 'fil:///data/landing': unsupported scheme 'fil' "
            "(supported: /abs/path, file:///abs/path, s3://bucket/prefix); did you mean 'file:///data/landing'?",
            "  pipeline 'orders', key 'target.namespace': Value error, '{databse}': unknown placeholder {databse} "
            "(the only one is {database}); did you mean '{database}'?",
        ]
    )


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("schedule: every hour", "'every hour' is not a cron expression or preset (@hourly, @daily, @weekly, "
         "'30 2 * * *')"),
        ("landing_uri: landing", "'landing': neither an absolute path nor a URI (supported: /abs/path, "
         "file:///abs/path, s3://bucket/prefix)"),
        ("schema_baseline_uri: gs://b/ddl", "'gs://b/ddl': unsupported scheme 'gs' (supported: /abs/path, "
         "file:///abs/path, s3://bucket/prefix)"),
        ("target: {namespace: 'cdc_{database}}'}", "'cdc_{database}}': unbalanced brace; the only placeholder "
         "is {database}"),
        ("target: {namespace: '{table}'}", "'{table}': unknown placeholder {table} (the only one is {database})"),
    ],
)  # fmt: skip
def test_values_without_a_close_match_list_what_is_accepted(tmp_path: Path, setting: str, message: str) -> None:
    lines = [line for line in GOOD.splitlines() if not line.strip().startswith(setting.split(":")[0] + ":")]
    path = write(tmp_path, "\n".join([*lines, f"    {setting}", ""]))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    key = "target.namespace" if setting.startswith("target") else setting.split(":")[0]
    assert str(err.value) == (
        f"{path}: invalid pipeline configuration:\n  pipeline 'orders', key '{key}': Value error, {message}"
    )


@pytest.mark.parametrize(
    "schedule", ["@hourly", "@daily", "@quarterly", "@once", "@continuous", "*/15 * * * *", "0 3 * * 1-5"]
)
def test_schedules_airflow_accepts_are_valid(tmp_path: Path, schedule: str) -> None:
    path = write(tmp_path, GOOD.replace("catalog: lake\n", f"catalog: lake\n    schedule: {schedule!r}\n"))
    assert load_config(path).pipeline("orders").schedule == schedule

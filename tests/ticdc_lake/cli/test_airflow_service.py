"""The local Airflow's environment (what include/scripts/airflow.sh exports) and its login files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ticdc_lake.cli.airflow_runner import PROJECT_ROOT
from ticdc_lake.cli.airflow_service import Login, configured_pools, export_lines, main, service_env, service_login
from ticdc_lake.config import load_config
from ticdc_lake.errors import ServiceError


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "kafka").mkdir(parents=True)
    (home / "kafka" / "bootstrap").write_text("127.0.0.1:19999\n")
    monkeypatch.setenv("TICDC_LAKE_HOME", str(home))
    monkeypatch.delenv("TICDC_LAKE_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("TICDC_LAKE_SCHEMA_REGISTRY_URL", raising=False)
    monkeypatch.delenv("TICDC_LAKE_CONFIG", raising=False)
    return home


def test_the_environment_has_the_project_the_connections_and_the_port(home: Path) -> None:
    (home / "registry").mkdir()
    (home / "registry" / "url").write_text("http://127.0.0.1:18081/apis/ccompat/v7\n")
    env = service_env(home, 18123)
    assert env["AIRFLOW_HOME"] == str(home / "airflow")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(PROJECT_ROOT / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(PROJECT_ROOT / "plugins")
    assert env["PATH"].split(":")[0] == str(PROJECT_ROOT / ".venv" / "bin")  # task processes find `airflow`
    assert env["TICDC_LAKE_CONFIG"] == str(PROJECT_ROOT / "include" / "pipelines.yaml")
    assert json.loads(env["AIRFLOW_CONN_KAFKA_DEFAULT"])["extra"] == {"bootstrap.servers": "127.0.0.1:19999"}
    assert json.loads(env["AIRFLOW_CONN_SCHEMA_REGISTRY_DEFAULT"])["host"] == "http://127.0.0.1:18081/apis/ccompat/v7"
    assert env["AIRFLOW__API__PORT"] == "18123"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18123/execution/"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin"
    assert env["AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE"] == "False"
    assert len(env["AIRFLOW__API_AUTH__JWT_SECRET"]) == 64


def test_the_export_lines_survive_the_shell(home: Path) -> None:
    env = {"A": "plain", "B": 'it\'s "quoted" $HOME `x`', "C": "same"}
    lines = export_lines(env, {"C": "same"})
    assert [line.split("=")[0] for line in lines] == ["export A", "export B"]
    script = "\n".join([*lines, 'printf "%s|%s" "$A" "$B"'])
    assert subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout == (
        "plain|" + env["B"]
    )


def test_env_prints_exports_and_fails_without_a_broker(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["env", "18124"]) == 0
    assert "export AIRFLOW__API__PORT=18124\n" in capsys.readouterr().out
    (home / "kafka" / "bootstrap").unlink()
    assert main(["env", "18124"]) == 1
    assert capsys.readouterr().err == (
        "error: no local Kafka broker is known: run `make services-up` (include/scripts/kafka.sh start)\n"
    )
    assert main(["env"]) == 2


def test_the_login_comes_from_the_files_of_the_script_and_the_api_server(home: Path) -> None:
    with pytest.raises(ServiceError) as missing:
        service_login(home)
    url_file = home / "airflow" / "service" / "url"
    assert str(missing.value) == (
        f"the local Airflow is not running ({url_file} is missing): run `include/scripts/airflow.sh start`"
    )
    url_file.parent.mkdir(parents=True)
    url_file.write_text("http://127.0.0.1:18080\n")
    passwords = home / "airflow" / "simple_auth_manager_passwords.json.generated"
    with pytest.raises(ServiceError, match=r"^no password for 'admin' in .*simple_auth_manager_passwords"):
        service_login(home)
    passwords.write_text(json.dumps({"admin": "s3cret"}) + "\n")
    assert service_login(home) == Login("http://127.0.0.1:18080", "admin", "s3cret")


POOLED_CONFIG = """
catalogs:
  lake:
    type: jdbc
    uri: jdbc:sqlite:{home}/catalog/lake.db
    warehouse: file://{home}/warehouse
    maintenance: {{pool: ticdc_maintenance}}
  archive:
    type: jdbc
    uri: jdbc:sqlite:{home}/catalog/archive.db
    warehouse: file://{home}/archive
    maintenance: {{pool: ticdc_maintenance}}
  scratch:
    type: jdbc
    uri: jdbc:sqlite:{home}/catalog/scratch.db
    warehouse: file://{home}/scratch
pipelines:
  - id: shop
    protocol: simple-json
    kafka: {{topics: [shop]}}
    landing_uri: file://{home}/landing
    catalog: lake
"""


def test_pools_lists_the_pools_the_pipeline_file_names_once(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "pipelines.yaml"
    config.write_text(POOLED_CONFIG.format(home=home))
    monkeypatch.setenv("TICDC_LAKE_CONFIG", str(config))
    assert configured_pools(load_config(config)) == ["ticdc_maintenance"]
    assert main(["pools"]) == 0
    assert capsys.readouterr().out == "ticdc_maintenance\n"
    # The embedded default names none: airflow.sh then creates nothing.
    monkeypatch.delenv("TICDC_LAKE_CONFIG")
    assert main(["pools"]) == 0
    assert capsys.readouterr().out == ""
    config.write_text("catalogs: {}\npipelines: [{id: x}]\n")
    monkeypatch.setenv("TICDC_LAKE_CONFIG", str(config))
    assert main(["pools"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {config}")

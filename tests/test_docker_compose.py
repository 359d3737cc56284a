"""docker-compose.yml, Dockerfile and the deployment's pipeline file, checked statically.

No Docker engine runs here, so these tests read the files (yaml.safe_load, the Dockerfile's
instructions) and check that the pieces fit: pinned images, the services the DAGs need, the
code in the Airflow containers, and every address in a connection or in the pipeline file
pointing at a service that listens there. Connections are parsed by Airflow's own code.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from airflow.sdk import Connection

from ticdc_lake.config import load_config
from ticdc_lake_airflow.hooks import client_config_from_connection

ROOT = Path(__file__).resolve().parents[1]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
AIRFLOW_HOME = PurePosixPath("/opt/airflow")
CODE_FOLDERS = ("dags", "plugins", "include", "spark_jobs")
AIRFLOW_COMMANDS = {"api-server", "scheduler", "dag-processor", "triggerer"}


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def _command(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(c) for c in command]


def _airflow_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in SERVICES.items() if _command(s)[:1] and _command(s)[0] in AIRFLOW_COMMANDS}


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _service_running(fragment: str) -> str:
    matches = [name for name, s in SERVICES.items() if fragment in " ".join(_command(s))]
    assert len(matches) == 1, f"expected one service running {fragment!r}, found {matches}"
    return matches[0]


def _image_tag(image: str) -> str:
    name = image.split("@")[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def _dockerfile_froms() -> list[str]:
    return re.findall(r"^FROM\s+(\S+)", DOCKERFILE, flags=re.MULTILINE)


def _dockerfile_copies() -> dict[str, str]:
    """COPY (from the build context) source → destination."""
    copies = {}
    for line in DOCKERFILE.splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not any(p.startswith("--from") for p in parts):
            args = [p for p in parts[1:] if not p.startswith("--")]
            copies[args[0]] = args[1]
    return copies


def _deploy_config_path() -> Path:
    """TICDC_LAKE_CONFIG of the Airflow services, mapped back into the repository."""
    values = {_env(s)["TICDC_LAKE_CONFIG"] for s in _airflow_services().values()}
    assert len(values) == 1, values
    in_container = PurePosixPath(values.pop())
    relative = in_container.relative_to(AIRFLOW_HOME)
    assert relative.parts[0] in CODE_FOLDERS, f"{in_container} is not inside the code the image holds"
    return ROOT / relative


@pytest.fixture
def deploy_config(monkeypatch: pytest.MonkeyPatch) -> Any:
    env = _env(next(iter(_airflow_services().values())))
    for name in re.findall(r"\$\{([A-Z_][A-Z0-9_]*)\}", _deploy_config_path().read_text(encoding="utf-8")):
        assert name in env, f"the pipeline file needs ${{{name}}} but the Airflow services do not set it"
        monkeypatch.setenv(name, "from-compose")
    return load_config(_deploy_config_path())


def test_every_image_is_pinned() -> None:
    images = [s["image"] for s in SERVICES.values() if "image" in s] + _dockerfile_froms()
    assert all("image" in s or "build" in s for s in SERVICES.values())
    for image in images:
        tag = _image_tag(image)
        assert tag, f"{image} has no tag"
        assert tag != "latest", f"{image} is not pinned to a release"
        assert "$" not in tag, f"{image}: the tag must not come from a variable"


def test_images_match_the_python_pins() -> None:
    pins = _pins()
    assert f"apache/airflow:{pins['apache-airflow']}-python3.11" in _dockerfile_froms()
    master = SERVICES[_service_running("deploy.master.Master")]
    assert _image_tag(master["image"]).startswith(pins["pyspark"] + "-"), master["image"]


def test_the_services_the_dags_need_exist() -> None:
    commands = {" ".join(_command(s)) for s in SERVICES.values()}
    for needed in ("server /data", "deploy.master.Master", "deploy.worker.Worker", "db migrate"):
        assert any(needed in c for c in commands), needed
    assert set(AIRFLOW_COMMANDS) == {_command(s)[0] for s in _airflow_services().values()}
    images = {str(s.get("image", "")).split(":")[0] for s in SERVICES.values()}
    assert {"apache/kafka", "postgres", "minio/minio", "minio/mc", "apache/spark"} <= images
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in SERVICES, f"{name} depends on unknown service {dependency}"


def test_airflow_and_spark_worker_run_the_project_image_with_its_code() -> None:
    copies = _dockerfile_copies()
    for folder in CODE_FOLDERS:
        assert copies.get(folder) == str(AIRFLOW_HOME / folder), f"Dockerfile does not copy {folder}/"
    worker = SERVICES[_service_running("deploy.worker.Worker")]
    spark_service = SERVICES[_service_running("spark_jobs/service.py")]
    for name, service in {**_airflow_services(), "spark-worker": worker, "spark-service": spark_service}.items():
        assert service["build"] == {"context": ".", "dockerfile": "Dockerfile"}, name
        mounts = {str(v).split(":")[0]: str(v).split(":")[1] for v in service["volumes"]}
        for folder in CODE_FOLDERS:
            assert mounts.get(f"./{folder}") == str(AIRFLOW_HOME / folder), f"{name} does not mount {folder}/"


def test_dockerignore_keeps_what_the_dockerfile_copies() -> None:
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    sources = [*_dockerfile_copies(), "include/jvm/spark/pom.xml"]
    for source in sources:
        assert (ROOT / source).exists(), source
        for pattern in patterns:
            assert not fnmatch.fnmatch(source, pattern), f".dockerignore pattern {pattern!r} drops {source}"


def test_kafka_connection_matches_the_advertised_listener() -> None:
    kafka = SERVICES["kafka"]
    advertised = {urlsplit(listener).netloc for listener in _env(kafka)["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    for name, service in _airflow_services().items():
        uri = _env(service)["AIRFLOW_CONN_KAFKA_DEFAULT"]
        config = client_config_from_connection(Connection.from_uri(uri, conn_id="kafka_default"))
        for server in config["bootstrap.servers"].split(","):
            assert server in advertised, f"{name}: {server} is not advertised by kafka ({advertised})"
            assert server.split(":")[0] in {"kafka", kafka.get("hostname")}


def test_spark_connection_points_at_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    master_name = _service_running("deploy.master.Master")
    master_command = _command(SERVICES[master_name])
    host = master_command[master_command.index("--host") + 1]
    port = master_command[master_command.index("--port") + 1]
    assert host == master_name
    worker_command = _command(SERVICES[_service_running("deploy.worker.Worker")])
    assert worker_command[-1] == f"spark://{host}:{port}"
    for service in _airflow_services().values():
        monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", _env(service)["AIRFLOW_CONN_SPARK_DEFAULT"])
        assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == f"spark://{host}:{port}"


def test_s3_connection_and_credentials_are_the_minio_service() -> None:
    minio = _env(SERVICES["minio"])
    assert "server /data" in " ".join(_command(SERVICES["minio"]))  # S3 API on the default port 9000
    for name, service in {**_airflow_services(), "spark-worker": SERVICES["spark-worker"]}.items():
        env = _env(service)
        assert env["AWS_ACCESS_KEY_ID"] == minio["MINIO_ROOT_USER"], name
        assert env["AWS_SECRET_ACCESS_KEY"] == minio["MINIO_ROOT_PASSWORD"], name
        assert urlsplit(env["AWS_ENDPOINT_URL_S3"]).netloc == "minio:9000", name
    for service in _airflow_services().values():
        connection = Connection.from_json(_env(service)["AIRFLOW_CONN_AWS_DEFAULT"], conn_id="aws_default")
        assert connection.conn_type == "aws"
        assert urlsplit(connection.extra_dejson["endpoint_url"]).netloc == "minio:9000"
        assert connection.login == minio["MINIO_ROOT_USER"]


def test_config_env_points_at_a_file_in_the_repository() -> None:
    path = _deploy_config_path()
    assert path.is_file(), path
    assert path == ROOT / "include" / "deploy" / "pipelines.yaml"


def test_the_deployment_runs_the_embedded_default_pipelines(deploy_config: Any) -> None:
    default = load_config(ROOT / "include" / "pipelines.yaml")
    assert [(p.id, p.protocol, p.kafka.topics) for p in deploy_config.pipelines] == [
        (p.id, p.protocol, p.kafka.topics) for p in default.pipelines
    ]


def test_catalog_is_the_postgres_service_with_its_database_created(deploy_config: Any) -> None:
    postgres = SERVICES["postgres"]
    init_scripts = [v.split(":")[0] for v in postgres["volumes"] if "/docker-entrypoint-initdb.d/" in v]
    init_sql = "\n".join((ROOT / s).read_text(encoding="utf-8") for s in init_scripts)
    for name, catalog in deploy_config.catalogs.items():
        assert catalog.uri.startswith("jdbc:postgresql://"), name
        location = urlsplit(catalog.uri.removeprefix("jdbc:"))
        assert location.hostname == "postgres", catalog.uri
        assert location.port == 5432, catalog.uri
        database = location.path.strip("/")
        assert f"CREATE DATABASE {database}" in init_sql
        assert f"CREATE ROLE {catalog.properties['jdbc.user']}" in init_sql
        assert "ICEBERG_JDBC_PASSWORD" in _env(postgres)
        assert catalog.properties["s3.endpoint"] == _env(next(iter(_airflow_services().values())))["AWS_ENDPOINT_URL"]


def test_landing_and_warehouse_buckets_are_created(deploy_config: Any) -> None:
    bucket_job = " ".join(_command(SERVICES["minio-init"]))
    created = set(re.findall(r"mc mb (?:--ignore-existing )?\w+/([a-z0-9.-]+)", bucket_job))
    uris = [p.landing_uri for p in deploy_config.pipelines] + [c.warehouse for c in deploy_config.catalogs.values()]
    for uri in uris:
        location = urlsplit(uri)
        assert location.scheme == "s3", uri
        assert location.netloc in created, f"{uri}: bucket not created by minio-init ({created})"


def test_kafka_topics_are_created(deploy_config: Any) -> None:
    topic_job = " ".join(_command(SERVICES["kafka-init"]))
    created = set(re.findall(r"--topic (\S+)", topic_job))
    for pipeline in deploy_config.pipelines:
        assert set(pipeline.kafka.topics) <= created, pipeline.id


def test_the_image_carries_the_scale_out_jars(deploy_config: Any) -> None:
    """JDBC on PostgreSQL needs a jar the embedded default's pom does not list; S3FileIO's is in it."""
    assert "org.postgresql:postgresql:" in DOCKERFILE
    assert "<artifactId>iceberg-aws-bundle</artifactId>" in (ROOT / "include/jvm/spark/pom.xml").read_text()
    assert "include/jvm/spark/pom.xml" in DOCKERFILE
    assert "postgresql" not in (ROOT / "include/jvm/spark/pom.xml").read_text(encoding="utf-8")
    jars = {_env(s)["TICDC_LAKE_JARS"] for s in _airflow_services().values()}
    assert jars == {"/opt/ticdc-lake/jars"}
    assert "COPY --from=jars --chown=airflow:root /jars /opt/ticdc-lake/jars" in DOCKERFILE


_COMPOSE_VARIABLE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)(?::?-([^}]*))?\}")


def _with_defaults(value: str) -> str:
    """``value`` as Docker Compose interpolates it with no variable set (each ``${NAME:-default}``)."""
    return _COMPOSE_VARIABLE.sub(lambda m: m.group(2) or "", value)


def test_published_ports_listen_on_loopback_unless_the_user_opens_them() -> None:
    """Demo passwords are the defaults: nothing is reachable from other machines out of the box."""
    published = {name: s["ports"] for name, s in SERVICES.items() if "ports" in s}
    assert sorted(published) == ["airflow-apiserver", "kafka", "minio", "spark-master"]
    for name, ports in published.items():
        for port in ports:
            assert isinstance(port, str), f"{name}: {port!r} (use the short form HOST_IP:HOST_PORT:CONTAINER_PORT)"
            assert port.startswith("${TICDC_LAKE_BIND_ADDRESS:-127.0.0.1}:"), f"{name}: {port!r}"
            host_ip, host_port, container_port = _with_defaults(port).split(":")
            assert (host_ip, host_port.isdigit(), container_port.isdigit()) == ("127.0.0.1", True, True), port
    kafka = _env(SERVICES["kafka"])
    assert "EXTERNAL://${TICDC_LAKE_KAFKA_HOST:-localhost}:29092" in kafka["KAFKA_ADVERTISED_LISTENERS"]
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    assert "TICDC_LAKE_BIND_ADDRESS=0.0.0.0" in guide
    assert "TICDC_LAKE_KAFKA_HOST" in guide


def test_airflow_init_creates_the_pools_the_pipeline_file_names() -> None:
    """A maintenance task of a pool that does not exist is never run: the init service creates them."""
    command = SERVICES["airflow-init"]["command"]
    assert command[:2] == ["bash", "-c"]
    script = command[2].replace("$$", "$")  # Compose's escape of a literal $
    assert script.splitlines() == [
        "set -e",
        "airflow db migrate",
        "for pool in $(python -m ticdc_lake.cli.airflow_service pools); do",
        '  airflow pools get "$pool" >/dev/null 2>&1 || airflow pools set "$pool" 1 "TiCDC lake table maintenance"',
        "done",
    ]


def test_the_spark_run_service_serves_the_airflow_connection_with_the_same_code_and_token() -> None:
    """The optional Spark run service (docs/spark-service.md): what the Airflow containers' connection
    names is where it listens, its token is the connection's password (a variable with a demo default,
    as the other secrets), its config is theirs, and its health check asks it with that token."""
    name = _service_running("spark_jobs/service.py")
    service = SERVICES[name]
    assert service["profiles"] == ["spark-service"]  # started only when asked for
    assert "ports" not in service  # reached by the Airflow containers only
    assert service["image"] == next(iter(_airflow_services().values()))["image"]  # same code: same version
    command = _command(service)
    assert command[:2] == ["bash", "-c"]
    script = command[2].replace("$$", "$").splitlines()
    assert script[:4] == [
        "set -e",
        "umask 077",  # the token file is mode 0600
        "printf '%s\\n' \"$TICDC_LAKE_SPARK_SERVICE_TOKEN\" > /tmp/spark-service.token",
        "unset TICDC_LAKE_SPARK_SERVICE_TOKEN",
    ]
    args = shlex.split(script[4])
    assert args[:3] == ["exec", "python", "spark_jobs/service.py"]
    options = dict(zip(args[3::2], args[4::2], strict=True))
    assert options == {
        "--config": "$TICDC_LAKE_CONFIG",
        "--host": "0.0.0.0",
        "--port": "18090",
        "--token-file": "/tmp/spark-service.token",
    }
    env = _env(service)
    assert env["TICDC_LAKE_CONFIG"] == str(AIRFLOW_HOME / "include" / "deploy" / "pipelines.yaml")
    token = env["TICDC_LAKE_SPARK_SERVICE_TOKEN"]
    assert token.startswith("${TICDC_LAKE_SPARK_SERVICE_TOKEN:-"), token
    assert _with_defaults(token) == "ticdc-lake-demo-spark-service-token"
    guide = (ROOT / "docker-compose.yml").read_text(encoding="utf-8").split("x-lake-storage-env")[0]
    assert "TICDC_LAKE_SPARK_SERVICE_TOKEN for anything but a laptop" in " ".join(guide.replace("#", "").split())
    for airflow_name, airflow in _airflow_services().items():
        airflow_env = _env(airflow)
        assert airflow_env["TICDC_LAKE_CONFIG"] == env["TICDC_LAKE_CONFIG"], airflow_name
        connection = Connection.from_json(
            airflow_env["AIRFLOW_CONN_TICDC_SPARK_SERVICE"], conn_id="ticdc_spark_service"
        )
        assert (connection.conn_type, connection.host, connection.port) == ("generic", service["hostname"], 18090)
        assert connection.password == token, airflow_name  # the same variable, the same demo default
        assert connection.host == name
    probe = service["healthcheck"]["test"]
    assert probe[:3] == ["CMD", "python", "-c"]
    assert 'SparkServiceClient("127.0.0.1", 18090, Path("/tmp/spark-service.token")' in probe[3]
    assert probe[3].rstrip().endswith(".health()")

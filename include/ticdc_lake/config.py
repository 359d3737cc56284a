"""Typed pipeline configuration, loaded from YAML.

The file (``TICDC_LAKE_CONFIG``, default ``include/pipelines.yaml``) declares catalogs and
pipelines. Unknown keys are rejected; every error names the file, the pipeline and the key.
Secrets never live here: Kafka, Spark, S3 and schema registries are Airflow connections.

String values may use ``${NAME}`` or ``${NAME:-default}``; ``TICDC_LAKE_HOME`` defaults to the
``run`` folder beside the folder that holds the file.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from ticdc_lake.errors import ConfigError
from ticdc_lake.identifiers import iceberg_namespace_name
from ticdc_lake.maintenance_config import MaintenanceConfig, check_schedule

DEFAULT_CONFIG_PATH = Path(__file__).resolve().parents[1] / "pipelines.yaml"
CONFIG_ENV = "TICDC_LAKE_CONFIG"
HOME_ENV = "TICDC_LAKE_HOME"

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,62}$")]
#: Schedules a pipeline DAG takes besides cron expressions and croniter's presets.
AIRFLOW_SCHEDULES = ("@once", "@continuous", "@quarterly")
#: URI schemes of the landing and baseline folders (ticdc_lake.object_store.open_uri); plus /abs/path.
STORAGE_SCHEMES = ("file", "s3")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def check_storage_uri(value: str) -> str:
    """``/abs/path``, ``file:///abs/path`` or ``s3://bucket/prefix``; a typo'd scheme gets a suggestion."""
    if value.startswith("/"):
        return value
    scheme, sep, rest = value.partition("://")
    if sep and scheme in STORAGE_SCHEMES:
        return value
    what = f"unsupported scheme {scheme!r}" if sep else "neither an absolute path nor a URI"
    close = difflib.get_close_matches(scheme, STORAGE_SCHEMES, n=1, cutoff=0.6) if sep else []
    hint = f"; did you mean '{close[0]}://{rest}'?" if close else ""
    raise ValueError(f"{value!r}: {what} (supported: /abs/path, file:///abs/path, s3://bucket/prefix){hint}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Protocol(StrEnum):
    SIMPLE_JSON = "simple-json"
    SIMPLE_AVRO = "simple-avro"
    DEBEZIUM = "debezium"
    CANAL_JSON = "canal-json"
    AVRO = "avro"
    OPEN = "open"


class Compression(StrEnum):
    NONE = "none"
    SNAPPY = "snappy"
    LZ4 = "lz4"


class DecodeErrorPolicy(StrEnum):
    HALT = "halt"
    SKIP = "skip"


class DropTablePolicy(StrEnum):
    KEEP = "keep"
    DROP = "drop"


class DropColumnPolicy(StrEnum):
    KEEP = "keep"
    DROP = "drop"


class TypeChangePolicy(StrEnum):
    KEEP_AS_STRING = "keep_as_string"
    FAIL = "fail"


class CodecOptions(_Strict):
    """Must match the TiCDC changefeed's sink options exactly: nothing in a message says them."""

    enable_tidb_extension: bool = True
    compression: Compression = Compression.NONE
    #: Where the changefeed's ``claim-check-storage-uri`` is readable from here: ``file:///abs/path``,
    #: ``/abs/path`` or ``s3://bucket/prefix`` (S3 endpoint and credentials from the environment,
    #: e.g. ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``). Only claim-check messages need it.
    claim_check_storage_uri: str | None = None
    #: The changefeed's ``claim-check-raw-value``: objects hold the raw value, not ``{"key", "value"}`` JSON.
    claim_check_raw_value: bool = False
    #: The TiCDC server's time zone (its ``tz`` setting), for TIMESTAMP values sent without a zone.
    server_time_zone: str = "UTC"

    @field_validator("claim_check_storage_uri")
    @classmethod
    def _readable_storage(cls, value: str | None) -> str | None:
        if value is None or value.startswith(("file:///", "s3://", "/")):
            return value
        raise ValueError(
            f"claim-check storage {value!r} is not supported; use file:///abs/path, /abs/path or s3://bucket/prefix"
        )

    @field_validator("server_time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value


class KafkaSource(_Strict):
    #: Airflow connection holding ``bootstrap.servers`` and security settings in its extra.
    connection_id: str = "kafka_default"
    #: Topics to land. With TiCDC's topic-per-table dispatch, use ``topic_pattern`` as well or instead.
    topics: list[str] = Field(default_factory=list)
    #: A regular expression (whole name) for topics to land too, looked up on every run: TiCDC's
    #: topic dispatcher (``topic = "cdc_{schema}_{table}"``) makes a new topic per new table.
    topic_pattern: str | None = None
    #: Where a partition starts when nothing was landed yet: ``earliest`` or an offset.
    start_offset: Literal["earliest"] | int = "earliest"
    #: Airflow connection (type http) of the Confluent schema registry; used only by ``protocol: avro``.
    schema_registry_connection_id: str = "schema_registry_default"
    #: Kafka consumers landing a run's partitions at once, threads of the land task (docs/landing.md,
    #: "Parallel consumers"); never more than the run's partitions. Unset: one per CPU, or one for
    #: a run of fewer than 50,000 offsets.
    consumers: int | None = Field(default=None, ge=1)

    @field_validator("topic_pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"topic_pattern {value!r} is not a regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _some_topic(self) -> KafkaSource:
        if not self.topics and self.topic_pattern is None:
            raise ValueError("kafka needs topics (a list of names), topic_pattern (a regular expression), or both")
        return self

    def wants_topic(self, topic: str) -> bool:
        """True for a listed topic or one whose whole name matches ``topic_pattern`` (never internal ``__`` topics)."""
        if topic in self.topics:
            return True
        return (
            self.topic_pattern is not None
            and not topic.startswith("__")
            and re.fullmatch(self.topic_pattern, topic) is not None
        )

    def describe(self) -> str:
        parts = list(self.topics) + ([f"/{self.topic_pattern}/"] if self.topic_pattern is not None else [])
        return ", ".join(parts)


class TargetTables(_Strict):
    #: Iceberg namespace for an upstream database; ``{database}`` is replaced.
    namespace: str = "{database}"
    include: list[str] = Field(default_factory=lambda: ["*.*"])
    exclude: list[str] = Field(default_factory=list)

    @field_validator("namespace")
    @classmethod
    def _placeholders(cls, value: str) -> str:
        for name in _PLACEHOLDER.findall(value):
            if name != "database":
                close = difflib.get_close_matches(name, ["database"], n=1, cutoff=0.75)
                hint = f"; did you mean {value.replace(f'{{{name}}}', '{database}')!r}?" if close else ""
                raise ValueError(f"{value!r}: unknown placeholder {{{name}}} (the only one is {{database}}){hint}")
        if "{" in _PLACEHOLDER.sub("", value) or "}" in _PLACEHOLDER.sub("", value):
            raise ValueError(f"{value!r}: unbalanced brace; the only placeholder is {{database}}")
        return value

    def wants(self, database: str, table: str) -> bool:
        name = f"{database}.{table}"
        if not any(fnmatch.fnmatchcase(name, p) for p in self.include):
            return False
        return not any(fnmatch.fnmatchcase(name, p) for p in self.exclude)

    def namespace_for(self, database: str) -> str:
        """The Iceberg namespace of an upstream database: the template with the escaped database name.

        Escaped with :func:`~ticdc_lake.identifiers.iceberg_namespace_name` (``docs/identifiers.md``),
        so a ``.`` in a database name cannot turn into a second namespace level.
        """
        return self.namespace.replace("{database}", iceberg_namespace_name(database))


class Policies(_Strict):
    on_decode_error: DecodeErrorPolicy = DecodeErrorPolicy.HALT
    on_drop_table: DropTablePolicy = DropTablePolicy.KEEP
    #: ``drop`` (the default) mirrors upstream; ``keep`` keeps the Iceberg column, NULL in new rows.
    on_drop_column: DropColumnPolicy = DropColumnPolicy.DROP
    #: A MODIFY COLUMN Iceberg cannot do in place (anything but int→long, float→double, decimal
    #: precision up): ``keep_as_string`` turns the column into a string column holding every old
    #: and new value as text; ``fail`` holds the table at that DDL.
    on_incompatible_type_change: TypeChangePolicy = TypeChangePolicy.KEEP_AS_STRING
    #: A row waiting for its table schema (a Simple schema version no BOOTSTRAP or DDL announced,
    #: ENUM/SET numbers without members) is quarantined, under ``on_decode_error``, once its
    #: partition's watermark is this many seconds of TSO time past the row's commit. TiCDC sends
    #: BOOTSTRAP every 120 s by default, so the default leaves room for several.
    pending_schema_timeout_s: int = Field(default=900, ge=1)


class CatalogConfig(_Strict):
    """An Iceberg catalog shared by Spark and pyiceberg."""

    type: Literal["jdbc", "rest"] = "jdbc"
    #: JDBC URL (``jdbc:sqlite:/path/lake.db``, ``jdbc:postgresql://...``) or REST endpoint.
    uri: str
    warehouse: str
    #: Namespace of the product's own tables (change events, schema history, ledgers).
    system_namespace: Identifier = "ticdc_system"
    properties: dict[str, str] = Field(default_factory=dict)
    #: Table maintenance of the catalog (DAG ``ticdc_maintenance_<catalog>``, docs/maintenance.md).
    maintenance: MaintenanceConfig = MaintenanceConfig()


class PipelineConfig(_Strict):
    id: Identifier
    description: str = ""
    owner: str = "data-engineering"
    protocol: Protocol
    kafka: KafkaSource
    codec: CodecOptions = CodecOptions()
    schedule: str | None = "@hourly"
    start_date: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    catchup: bool = False
    landing_uri: str
    catalog: str
    target: TargetTables = TargetTables()
    policies: Policies = Policies()
    #: Optional folder (local path or URI) of ``SHOW CREATE TABLE`` statements, one ``.sql`` file
    #: per table or several statements per file: the schema of tables first met in the middle of
    #: the stream, before any CREATE TABLE, BOOTSTRAP or DDL of theirs (docs/schema-evolution.md).
    schema_baseline_uri: str | None = None
    #: Seconds a stage waits for another run of this pipeline to release the stage's lock before it
    #: fails (retryably) with ConcurrentRunError (docs/crash-safety.md).
    lock_wait_s: int = Field(default=900, ge=0)
    #: Extra Spark settings for this pipeline's jobs.
    spark_conf: dict[str, str] = Field(default_factory=dict)
    #: Airflow connection id of a running Spark run service (docs/spark-service.md) that runs the
    #: transform task's Spark work in its long-lived driver; unset: a ``spark-submit`` per run.
    spark_service: str | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str | None) -> str | None:
        return check_schedule(value, AIRFLOW_SCHEDULES)

    @field_validator("landing_uri")
    @classmethod
    def _landing(cls, value: str) -> str:
        return check_storage_uri(value)

    @field_validator("schema_baseline_uri")
    @classmethod
    def _baseline(cls, value: str | None) -> str | None:
        return check_storage_uri(value) if value is not None else None

    @property
    def offset_ordered(self) -> bool:
        """True when the protocol settings carry no commit TSO or watermark (docs/protocols.md, Ordering)."""
        return self.protocol in (Protocol.CANAL_JSON, Protocol.AVRO) and not self.codec.enable_tidb_extension

    @property
    def dag_id(self) -> str:
        return f"ticdc_{self.id}"


class LakeConfig(_Strict):
    catalogs: dict[Identifier, CatalogConfig]
    pipelines: list[PipelineConfig] = Field(default_factory=list)
    #: The file this came from (set by :func:`load_config`).
    source_path: str = ""

    def pipeline(self, pipeline_id: str) -> PipelineConfig:
        for pipeline in self.pipelines:
            if pipeline.id == pipeline_id:
                return pipeline
        known = ", ".join(p.id for p in self.pipelines) or "none"
        raise ConfigError(
            f"{self.source_path}: no pipeline {pipeline_id!r} (configured: {known}). "
            "Add it under 'pipelines:' or pass one of the configured ids."
        )

    def catalog_for(self, pipeline: PipelineConfig) -> CatalogConfig:
        return self.catalogs[pipeline.catalog]


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(value: Any, env: dict[str, str], where: str) -> Any:
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError(f"{where}: environment variable {name} is not set and has no default")

        return _VAR.sub(replace, value)
    if isinstance(value, list):
        return [_expand(v, env, where) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, env, where) for k, v in value.items()}
    return value


def lake_home(config_file: str | Path) -> Path:
    """``TICDC_LAKE_HOME``, or the ``run`` folder beside the folder that holds ``config_file``."""
    return Path(os.environ.get(HOME_ENV) or Path(config_file).resolve().parent.parent / "run")


def config_path() -> Path:
    return Path(os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG_PATH)


def load_config(path: str | Path | None = None) -> LakeConfig:
    """Load and validate the pipeline file; raise :class:`ConfigError` naming file, pipeline, key."""
    file = Path(path) if path is not None else config_path()
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{file}: pipeline configuration file not found (set {CONFIG_ENV})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: expected a mapping with 'catalogs' and 'pipelines' at the top")
    env = dict(os.environ)
    env.setdefault(HOME_ENV, str(lake_home(file)))
    expanded = _expand(raw, env, str(file))
    try:
        config = LakeConfig.model_validate({**expanded, "source_path": str(file)})
    except ValidationError as exc:
        raise ConfigError(_describe(file, expanded, exc)) from None
    _check_references(file, config)
    return config


def _describe(file: Path, raw: dict[str, Any], exc: ValidationError) -> str:
    lines = [f"{file}: invalid pipeline configuration:"]
    for error in exc.errors():
        loc = list(error["loc"])
        where = "top level"
        if len(loc) >= 2 and loc[0] == "pipelines" and isinstance(loc[1], int):
            pipelines = raw.get("pipelines") or []
            entry = pipelines[loc[1]] if loc[1] < len(pipelines) else {}
            pid = entry.get("id") if isinstance(entry, dict) else None
            where = f"pipeline {pid!r}" if pid else f"pipeline #{loc[1] + 1}"
            loc = loc[2:]
        elif len(loc) >= 2 and loc[0] == "catalogs":
            where = f"catalog {loc[1]!r}"
            loc = loc[2:]
        key = ".".join(str(part) for part in loc) or "(entry)"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        lines.append(f"  {where}, key '{key}': {message}")
    return "\n".join(lines)


def _check_references(file: Path, config: LakeConfig) -> None:
    seen: set[str] = set()
    for pipeline in config.pipelines:
        if pipeline.id in seen:
            raise ConfigError(f"{file}: pipeline {pipeline.id!r}, key 'id': defined twice")
        seen.add(pipeline.id)
        if pipeline.catalog not in config.catalogs:
            known = ", ".join(config.catalogs) or "none"
            raise ConfigError(
                f"{file}: pipeline {pipeline.id!r}, key 'catalog': unknown catalog "
                f"{pipeline.catalog!r} (defined: {known})"
            )

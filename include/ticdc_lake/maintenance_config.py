"""The ``maintenance:`` block of a catalog: schedules and limits of its maintenance DAG.

Kept apart from ``config.py`` (which only adds the field) so that the maintenance settings and
their validation live with the maintenance code. Durations are pydantic ``timedelta`` values: ``90s``,
``30m``, ``12h``, ``7d`` or ``2w``, an ISO 8601 duration (``P7D``, ``PT12H``) or a number of seconds;
schedules are cron expressions or presets (``@daily``), ``null`` turns a job off.
See docs/maintenance.md for what each setting does and why its default is what it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from ticdc_lake.suggest import did_you_mean

#: The short forms (``90s`` ... ``2w``) as the ISO 8601 designators pydantic's timedelta parses.
_ISO_OF_UNIT = {"s": "PT{}S", "m": "PT{}M", "h": "PT{}H", "d": "P{}D", "w": "P{}W"}
_FORMS = "write a number and a unit: 90s, 30m, 12h, 7d or 2w (or an ISO 8601 duration such as P7D, or seconds)"
#: Cron presets of Airflow's cron timetables that croniter also knows (so ``due_jobs`` can match them).
CRON_PRESETS = ("@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight")
#: Orphan files younger than this are never deleted, whatever the setting: a running write (an
#: apply, a compaction) has files that no snapshot references yet.
ORPHAN_AGE_FLOOR = timedelta(hours=1)


def _iso(value: Any) -> Any:
    """``"7d"`` → ``"P7D"``: the short forms in the ISO 8601 form pydantic parses; anything else as is."""
    if isinstance(value, str):
        text = value.strip()
        template, number = _ISO_OF_UNIT.get(text[-1:]), text[:-1].rstrip()  # "10 m" as well as "10m"
        if template is not None and number.replace(".", "", 1).isdigit():
            return template.format(number)
    return value


def _duration(value: Any, handler: ValidatorFunctionWrapHandler) -> timedelta:
    try:
        result: timedelta = handler(_iso(value))
    except ValidationError:
        raise ValueError(f"{value!r} is not a duration; {_FORMS}") from None
    if result < timedelta(0):
        raise ValueError(f"{value!r} is a negative duration; {_FORMS}")
    return result


#: A non-negative duration: pydantic's timedelta (ISO 8601, seconds) plus the short forms ``7d``.
Duration = Annotated[timedelta, WrapValidator(_duration)]
_DURATION = TypeAdapter(Duration)


def parse_duration(text: str | float) -> timedelta:
    """``"7d"`` → 7 days, ``"PT12H"`` → 12 hours, ``90`` → 90 s; raises ValueError naming the accepted forms."""
    try:
        return _DURATION.validate_python(text)
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["ctx"]["error"]) from None


def format_duration(value: timedelta) -> str:
    """The largest exact unit up to days: 7 days → ``7d``, 90 minutes → ``90m``, 1.5 s → ``1.5s``."""
    seconds = value.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def check_schedule(value: str | None, others: Iterable[str] = ()) -> str | None:
    """A cron expression or preset Airflow accepts, or one of ``others`` (``None``: no schedule).

    The error suggests the closest preset (``@hourlyy``: did you mean '@hourly'?).
    """
    if value is None or value in others:
        return value
    from croniter import croniter  # type: ignore[import-untyped]  # Airflow's cron library

    if not croniter.is_valid(value):
        hint = did_you_mean(value, (*CRON_PRESETS, *others)) if value.startswith("@") else ""
        raise ValueError(f"{value!r} is not a cron expression or preset (@hourly, @daily, @weekly, '30 2 * * *'){hint}")
    return value


class MaintenanceSchedules(BaseModel):
    """When each job runs (UTC). Each job is due on its own ticks; ``null`` turns a job off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Compaction of data and delete files: daily, after the night's apply runs piled up files.
    compact: str | None = "30 1 * * *"
    #: Snapshot expiry: daily, after compaction (the files compaction replaced go with it).
    expire: str | None = "30 3 * * *"
    #: Orphan-file removal: weekly (listing the warehouse is the costly part).
    orphans: str | None = "30 4 * * 0"

    @field_validator("compact", "expire", "orphans")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return check_schedule(value)


class MaintenanceConfig(BaseModel):
    """Table maintenance of one catalog: the DAG ``ticdc_maintenance_<catalog>`` (docs/maintenance.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: False: no maintenance DAG for this catalog.
    enabled: bool = True
    schedules: MaintenanceSchedules = MaintenanceSchedules()
    #: Time-travel window: snapshots younger than this are kept (reads as of an older time fail).
    retention: Duration = timedelta(days=7)
    #: Snapshots always kept, however old (the newest snapshot carrying the applied position is
    #: kept in any case).
    min_snapshots: int = Field(default=5, ge=1)
    #: Files in a table's folder that no snapshot references are deleted once older than this
    #: (at least 1h). Must exceed the longest write (apply, compaction) and any clock skew.
    orphan_min_age: Duration = timedelta(days=3)
    #: Compaction output file size (Iceberg's write.target-file-size-bytes default is 512 MiB).
    target_file_size_mb: int = Field(default=512, ge=1)
    #: A group of small data files is compacted once it has this many (Iceberg's default).
    min_input_files: int = Field(default=5, ge=1)
    #: A data file with at least this many delete files is rewritten (its deletes applied), whatever
    #: its size: merge-on-read apply leaves position deletes that every read must merge.
    delete_file_threshold: int = Field(default=1, ge=1)
    #: Sort compacted files by the table's key (tight key ranges: MERGE and point reads skip files);
    #: false, or a table without a key: bin-pack only.
    sort_by_key: bool = True
    #: Also rewrite manifests (hundreds of small merges leave hundreds of manifests to plan over).
    rewrite_manifests: bool = True
    #: Attempts of a maintenance commit that lost a race against another writer (Iceberg
    #: CommitFailedException / ValidationException), with exponential backoff from ``retry_backoff_s``.
    commit_attempts: int = Field(default=4, ge=1)
    retry_backoff_s: float = Field(default=5.0, ge=0)
    #: Airflow pool of the maintenance tasks, opt-in (bounds how many run at once across catalogs).
    #: ``None``: Airflow's ``default_pool``, which always exists. A named pool must exist: the
    #: scheduler never runs a task of a pool that does not exist (the UI shows a DAG warning, the run
    #: waits); include/scripts/airflow.sh and docker-compose's airflow-init create the missing ones
    #: (``cli.airflow_service.configured_pools``), elsewhere `airflow pools set NAME 1 "..."`.
    pool: str | None = None
    #: Extra Spark settings of the maintenance jobs (e.g. more driver memory for big tables).
    spark_conf: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _safe_orphan_age(self) -> MaintenanceConfig:
        if self.orphan_age < ORPHAN_AGE_FLOOR:
            raise ValueError(
                f"orphan_min_age '{format_duration(self.orphan_min_age)}' is below the safe minimum of 1h: files of "
                "a write still running would be deleted and its commit would corrupt the table"
            )
        return self

    @property
    def retention_window(self) -> timedelta:
        return self.retention

    @property
    def orphan_age(self) -> timedelta:
        return self.orphan_min_age

    def schedule_of(self, job: str) -> str | None:
        return str(getattr(self.schedules, job)) if getattr(self.schedules, job) is not None else None

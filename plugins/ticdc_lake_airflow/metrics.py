"""StatsD metrics of a pipeline run, sent through Airflow's own ``stats`` (``[metrics] statsd_on``).

Names (after Airflow's ``[metrics] statsd_prefix``, default ``airflow``), ``<p>`` being the
pipeline id, ``<ns>``/``<t>`` the Iceberg namespace and table (characters StatsD does not allow
become ``_``):

========================================================  =======  ===================================
name                                                      type     value
========================================================  =======  ===================================
``ticdc_lake.<p>.land.messages``                          counter  messages landed by the run
``ticdc_lake.<p>.land.bytes``                             counter  bytes of the raw batch files written
``ticdc_lake.<p>.land.partitions``                        gauge    partitions the run's batch covers
``ticdc_lake.<p>.decode.batches``                         counter  batches decoded
``ticdc_lake.<p>.decode.messages``                        counter  messages decoded
``ticdc_lake.<p>.decode.events``                          counter  change events decoded
``ticdc_lake.<p>.decode.quarantined``                     counter  messages quarantined
``ticdc_lake.<p>.decode.pending``                         gauge    events waiting for their schema
``ticdc_lake.<p>.apply.rows_inserted`` (``updated``, ``deleted``)  counter  rows written by MERGE
``ticdc_lake.<p>.apply.tables_changed`` (``held``, ``failed``)     gauge    tables per apply outcome
``ticdc_lake.<p>.apply.watermark_lag_seconds``            gauge    now minus the watermark's wall time
``ticdc_lake.<p>.table.<ns>.<t>.rows_inserted`` (...)     counter  per changed table
``ticdc_lake.<p>.table.<ns>.<t>.lag_seconds``             gauge    now minus the table's applied TSO
========================================================  =======  ===================================
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from ticdc_lake import tso
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake.run_ledger import LedgerStatus
from ticdc_lake_airflow.run_report import RunReport

log = logging.getLogger(__name__)

PREFIX = "ticdc_lake"
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class Metric:
    kind: Literal["counter", "gauge"]
    name: str
    value: float


def metric_name(pipeline_id: str, *parts: str) -> str:
    """``ticdc_lake.<pipeline>.<part>...``; each part keeps only characters StatsD names allow."""
    return ".".join([PREFIX, *(_NOT_ALLOWED.sub("_", p) or "_" for p in (pipeline_id, *parts))])


def land_metrics(pipeline_id: str, manifest: Manifest | None, reused: bool) -> list[Metric]:
    """What the land task wrote: nothing when it reused an existing batch."""
    fresh = manifest if manifest is not None and not reused else None
    ranges = fresh.ranges if fresh is not None else ()
    return [
        Metric("counter", metric_name(pipeline_id, "land", "messages"), sum(r.count for r in ranges)),
        Metric("counter", metric_name(pipeline_id, "land", "bytes"), sum(r.size_bytes or 0 for r in ranges)),
        Metric("gauge", metric_name(pipeline_id, "land", "partitions"), len(ranges)),
    ]


def transform_metrics(report: RunReport, now: datetime | None = None) -> list[Metric]:
    """The decode and apply metrics of one run, per pipeline and per table."""
    now = now or datetime.now(UTC)
    p = report.pipeline
    result = [
        Metric("counter", metric_name(p, "decode", "batches"), report.batches),
        Metric("counter", metric_name(p, "decode", "messages"), report.messages),
        Metric("counter", metric_name(p, "decode", "events"), report.events),
        Metric("counter", metric_name(p, "decode", "quarantined"), report.quarantined),
        Metric("gauge", metric_name(p, "decode", "pending"), report.pending),
    ]
    for what in ("inserted", "updated", "deleted"):
        result.append(Metric("counter", metric_name(p, "apply", f"rows_{what}"), report.total(what)))
    outcomes = {"changed": len(report.changed)}
    outcomes["held"] = sum(1 for t in report.tables if t.status == LedgerStatus.HELD)
    outcomes["failed"] = sum(1 for t in report.tables if t.status == LedgerStatus.FAILED)
    for outcome, count in outcomes.items():
        result.append(Metric("gauge", metric_name(p, "apply", f"tables_{outcome}"), count))
    lag = report.lag_seconds(now)
    if lag is not None:
        result.append(Metric("gauge", metric_name(p, "apply", "watermark_lag_seconds"), round(lag, 3)))
    for t in report.tables:
        if t.changed:
            for what in ("inserted", "updated", "deleted"):
                name = metric_name(p, "table", t.namespace, t.name, f"rows_{what}")
                result.append(Metric("counter", name, getattr(t, what)))
        if t.applied_ts:
            behind = max(0.0, (now - tso.to_datetime(t.applied_ts)).total_seconds())
            result.append(
                Metric("gauge", metric_name(p, "table", t.namespace, t.name, "lag_seconds"), round(behind, 3))
            )
    return result


def emit(metrics: Iterable[Metric]) -> int:
    """Send the metrics through Airflow's stats backend; returns how many were sent.

    A metrics problem never fails a task: it is logged and skipped.
    """
    try:
        from airflow.sdk.observability import stats

        _ensure_backend()
        sent = 0
        for m in metrics:
            if m.kind == "counter":
                stats.incr(m.name, count=int(m.value))
            else:
                stats.gauge(m.name, m.value)
            sent += 1
        return sent
    except Exception as exc:  # metrics must never fail the run
        log.warning("metrics were not sent: %s", exc)
        return 0


def _ensure_backend() -> None:
    """Configure Airflow's stats backend from ``[metrics]`` when this process has not yet.

    The task runner configures it at start; ``airflow dags test`` runs tasks in its own process
    and may not have, which would drop every metric silently.
    """
    from airflow.sdk._shared.observability.metrics import stats as backend
    from airflow.sdk.configuration import conf
    from airflow.sdk.observability.metrics import stats_utils

    if getattr(backend, "_factory", None) is None:
        backend.initialize(
            factory=stats_utils.get_stats_factory(),
            export_legacy_names=conf.getboolean("metrics", "legacy_names_on", fallback=True),
        )

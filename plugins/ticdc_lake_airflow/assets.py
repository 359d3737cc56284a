"""Airflow assets of a pipeline: one per pipeline, one per target Iceberg table (data-aware scheduling).

URIs (docs/observability.md):

* ``ticdc-lake://pipeline/<pipeline id>``: updated by every successful ``transform`` run;
* ``iceberg://<catalog>/<namespace>/<table>``: updated by a run that applied changes (rows or DDL)
  to that table. The parts are the Iceberg identity (catalog name of the pipeline file, Iceberg
  namespace and table name), percent-encoded where a character is not allowed in a URI path
  segment. Airflow defines no ``iceberg`` scheme, so the URI is kept as written. Airflow creates
  a table's asset with its first event; it is "inactive" (a warning in the task log) until a
  DAG schedules on it.

Tables appear at run time (a CREATE TABLE upstream), so the transform task declares an
:class:`AssetAlias` per pipeline and attaches the table assets to it when it emits their events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from airflow.sdk import Asset, AssetAlias

from ticdc_lake import tso
from ticdc_lake.run_ledger import LedgerStatus

if TYPE_CHECKING:
    from ticdc_lake_airflow.run_report import RunReport, TableOutcome

PIPELINE_SCHEME = "ticdc-lake"
TABLE_SCHEME = "iceberg"
#: Group of the tables alias in the Airflow UI. (The table assets keep Airflow's default group:
#: assets created through an alias event get it anyway.)
TABLE_GROUP = "iceberg"


def pipeline_asset_uri(pipeline_id: str) -> str:
    return f"{PIPELINE_SCHEME}://pipeline/{pipeline_id}"


def table_asset_uri(catalog: str, namespace: str, table: str) -> str:
    parts = (quote(p, safe="") for p in (catalog, namespace, table))
    return f"{TABLE_SCHEME}://" + "/".join(parts)


def pipeline_asset(pipeline_id: str) -> Asset:
    """The pipeline's asset; its name is its URI, so ``Asset("ticdc-lake://pipeline/<id>")`` matches it."""
    return Asset(pipeline_asset_uri(pipeline_id))


def table_asset(catalog: str, namespace: str, table: str) -> Asset:
    """A target table's asset; its name is its URI, so ``Asset("iceberg://lake/shop/orders")`` matches it."""
    return Asset(table_asset_uri(catalog, namespace, table))


def tables_alias(pipeline_id: str) -> AssetAlias:
    """The alias the transform task resolves at run time into the assets of the tables it changed."""
    return AssetAlias(f"ticdc_lake.{pipeline_id}.tables", group=TABLE_GROUP)


def transform_outlets(pipeline_id: str) -> list[Any]:
    """The outlets of a pipeline's transform task: its pipeline asset and its tables alias."""
    return [pipeline_asset(pipeline_id), tables_alias(pipeline_id)]


def table_extra(report: RunReport, table: TableOutcome) -> dict[str, Any]:
    """The extra of a table's asset event. TSOs and snapshot ids are decimal strings: both exceed
    2^53, which JSON readers in JavaScript (the Airflow UI) would round."""
    applied_at = table.applied_at
    return {
        "pipeline": report.pipeline,
        "run_id": report.run_id,
        "catalog": table.catalog,
        "namespace": table.namespace,
        "table": table.name,
        "upstream": f"{table.database}.{table.table}",
        "applied_ts": str(table.applied_ts) if table.applied_ts is not None else None,
        "applied_at": applied_at.isoformat() if applied_at else None,
        "rows_inserted": table.inserted,
        "rows_updated": table.updated,
        "rows_deleted": table.deleted,
        "events": table.events,
        "snapshot_id": str(table.snapshot_id) if table.snapshot_id is not None else None,
    }


def pipeline_extra(report: RunReport) -> dict[str, Any]:
    return {
        "pipeline": report.pipeline,
        "run_id": report.run_id,
        "watermark": str(report.watermark) if report.watermark is not None else None,
        "watermark_at": tso.to_datetime(report.watermark).isoformat() if report.watermark is not None else None,
        "tables_changed": [t.identifier for t in report.changed],
        "tables_held": [t.identifier for t in report.tables if t.status == LedgerStatus.HELD],
        "events_decoded": report.events,
        "quarantined": report.quarantined,
        "rows_inserted": report.total("inserted"),
        "rows_updated": report.total("updated"),
        "rows_deleted": report.total("deleted"),
    }


def emit_asset_events(outlet_events: Any, report: RunReport) -> list[str]:
    """Set the pipeline asset's extra and add one event per changed table to the tables alias.

    ``outlet_events`` is the task context's ``outlet_events``; returns the table asset URIs.
    """
    outlet_events[pipeline_asset(report.pipeline)].extra = pipeline_extra(report)
    alias = outlet_events[tables_alias(report.pipeline)]
    uris = []
    for table in report.changed:
        asset = table_asset(table.catalog, table.namespace, table.name)
        alias.add(asset, extra=table_extra(report, table))
        uris.append(asset.uri)
    return uris

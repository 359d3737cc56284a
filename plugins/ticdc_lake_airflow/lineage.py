"""OpenLineage facets of the land and transform tasks (provider ``apache-airflow-providers-openlineage``).

Dataset names follow the OpenLineage naming spec where it has one:

* a Kafka topic: namespace ``kafka://<first bootstrap host>:<port>``, name the topic;
* the landed raw batches of a pipeline: the landing folder, ``file`` + ``/abs/path/<pipeline>``
  or ``s3://<bucket>`` + ``<prefix>/<pipeline>``;
* an Iceberg table: its location (the warehouse folder ``<namespace>/<table>``, as the
  OpenLineage Spark integration names Iceberg tables), with a ``symlinks`` facet naming the
  table as ``iceberg://<catalog>`` + ``<namespace>.<table>`` (the Airflow asset's identity) and an
  ``outputStatistics`` facet with the rows the run wrote.

The operators call these from ``get_openlineage_facets_on_complete``; nothing here runs unless
an OpenLineage transport is configured.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ticdc_lake.config import CatalogConfig, PipelineConfig
from ticdc_lake.landing.manifest import Manifest
from ticdc_lake_airflow.run_report import RunReport


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://host:port`` of the first broker of a ``bootstrap.servers`` list (no credentials)."""
    first = bootstrap_servers.split(",")[0].strip()
    if "://" in first:  # e.g. SASL_SSL://host:9093
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition("@")[2].partition(":")
    return f"kafka://{host}:{port or '9092'}"


def location_dataset(uri: str) -> tuple[str, str]:
    """(namespace, name) of a storage location: ``("file", "/abs/path")`` or ``("s3://bucket", "key")``."""
    if "://" not in uri:
        return "file", uri.rstrip("/") or "/"
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return "file", parts.path.rstrip("/") or "/"
    netloc = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{netloc}", parts.path.strip("/")


def landing_dataset(pipeline: PipelineConfig) -> tuple[str, str]:
    namespace, name = location_dataset(pipeline.landing_uri)
    return namespace, f"{name.rstrip('/')}/{pipeline.id}" if name else pipeline.id


def table_location(catalog: CatalogConfig, namespace: str, table: str) -> str:
    """Where the catalog puts a new table: ``<warehouse>/<namespace>/<table>`` (the JDBC catalog's rule)."""
    return f"{catalog.warehouse.rstrip('/')}/{namespace}/{table}"


def land_lineage(pipeline: PipelineConfig, bootstrap_servers: str, manifest: Manifest | None) -> Any:
    """Inputs: the pipeline's topics (those the batch covers, else the configured ones); output: the landing folder."""
    from airflow.providers.common.compat.openlineage.facet import InputDataset, OutputDataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    topics = sorted({r.topic for r in manifest.ranges}) if manifest is not None else list(pipeline.kafka.topics)
    namespace = kafka_namespace(bootstrap_servers)
    landing_ns, landing_name = landing_dataset(pipeline)
    return OperatorLineage(
        inputs=[InputDataset(namespace=namespace, name=topic) for topic in topics],
        outputs=[OutputDataset(namespace=landing_ns, name=landing_name)],
    )


def transform_lineage(pipeline: PipelineConfig, catalog: CatalogConfig, report: RunReport | None) -> Any:
    """Input: the landed batches; outputs: the Iceberg tables the run changed."""
    from airflow.providers.common.compat.openlineage.facet import (
        Identifier,
        InputDataset,
        OutputDataset,
        OutputStatisticsOutputDatasetFacet,
        SymlinksDatasetFacet,
    )
    from airflow.providers.openlineage.extractors import OperatorLineage

    landing_ns, landing_name = landing_dataset(pipeline)
    outputs = []
    for t in report.changed if report is not None else []:
        namespace, name = location_dataset(table_location(catalog, t.namespace, t.name))
        symlink = Identifier(namespace=f"iceberg://{t.catalog}", name=f"{t.namespace}.{t.name}", type="TABLE")
        outputs.append(
            OutputDataset(
                namespace=namespace,
                name=name,
                facets={"symlinks": SymlinksDatasetFacet(identifiers=[symlink])},
                outputFacets={
                    "outputStatistics": OutputStatisticsOutputDatasetFacet(rowCount=t.inserted + t.updated + t.deleted)
                },
            )
        )
    return OperatorLineage(inputs=[InputDataset(namespace=landing_ns, name=landing_name)], outputs=outputs)

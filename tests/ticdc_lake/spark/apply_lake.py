"""Test helper: write change_events, schema_history, decoded_batches rows and landed manifests directly.

The apply stage reads only these, so apply tests need no Kafka, decoder or simulator.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from ticdc_lake.config import LakeConfig, PipelineConfig, load_config
from ticdc_lake.landing.manifest import LandedRange, Manifest
from ticdc_lake.landing.store import LandingStore
from ticdc_lake.schema.ddl_parser import apply_alter, parse_create_table, parse_ddl
from ticdc_lake.schema.ddl_statements import AlterTableStatement, RenameTablesStatement
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_lake.spark.system_tables import COLUMNS, SystemTables

TOPIC = "events"


@dataclass
class ApplyLake:
    spark: Any
    lake_home: Path
    folder: Path
    policies: dict[str, str] = field(default_factory=dict)
    partitions: int = 2
    pipeline_id: str = field(default_factory=lambda: f"ddl_{uuid.uuid4().hex[:8]}")
    rows: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    schemas: dict[tuple[str, str], TableSchema] = field(default_factory=dict)
    sequence: int = 0
    offsets: dict[int, int] = field(default_factory=dict)
    #: The pipeline's ``target.namespace``; None: ``<pipeline id>_{database}``, a namespace of its own.
    target_namespace: str | None = None

    def __post_init__(self) -> None:
        pipeline = {
            "id": self.pipeline_id,
            "protocol": "simple-json",
            "kafka": {"topics": [TOPIC]},
            "landing_uri": f"file://{self.folder}/landing",
            "catalog": "lake",
            "target": {"namespace": self.target_namespace or f"{self.pipeline_id}_{{database}}"},
            "policies": self.policies,
        }
        catalogs = {
            "lake": {
                "uri": f"jdbc:sqlite:{self.lake_home}/catalog/lake.db",
                "warehouse": f"file://{self.lake_home}/warehouse",
            }
        }
        path = self.folder / "pipelines.yaml"
        path.write_text(yaml.safe_dump({"catalogs": catalogs, "pipelines": [pipeline]}))
        self.config: LakeConfig = load_config(path)
        self.pipeline: PipelineConfig = self.config.pipeline(self.pipeline_id)
        self.tables = SystemTables.of(self.config, self.pipeline)
        self.tables.ensure(self.spark)

    def namespace(self, database: str) -> str:
        return self.pipeline.target.namespace_for(database)

    # -- events -------------------------------------------------------------------------------

    def ddl(self, ts: int, database: str, table: str | None, kind: str, query: str, **extra: Any) -> None:
        """A DDL event broadcast to every partition; the table schemas follow from the statement."""
        pre = self.schemas.get((database, table)) if table else None
        post: TableSchema | None = None
        statement = parse_ddl(query, database)[0]
        if kind == "CREATE" and table:
            post = parse_create_table(query, database)
        elif isinstance(statement, RenameTablesStatement):
            old = statement.renames[0][0]
            pre = self.schemas.pop((old.database or database, old.table))
            post = apply_alter(pre, statement)
        elif isinstance(statement, AlterTableStatement) and pre is not None:
            post = apply_alter(pre, statement)
        if post is not None and table:
            from dataclasses import replace

            post = replace(post, version=ts)
            self.schemas[(database, table)] = post
            self._history(ts, post, kind, query)
        if kind == "ERASE" and table:
            self.schemas.pop((database, table), None)
        for partition in range(self.partitions):
            self._row(
                partition,
                kind="DDL",
                commit_ts=ts,
                database=database,
                table=table,
                ddl_type=kind,
                ddl_query=query,
                table_schema=post.to_json() if post is not None else None,
                pre_table_schema=pre.to_json() if pre is not None else None,
                **extra,
            )

    def dml(
        self,
        ts: int,
        database: str,
        table: str,
        op: str,
        after: dict[str, Any] | None,
        before: dict[str, Any] | None = None,
    ) -> None:
        def text(image: dict[str, Any] | None) -> dict[str, str | None] | None:
            return None if image is None else {k: None if v is None else str(v) for k, v in image.items()}

        self._row(
            ts % self.partitions,
            kind="DML",
            commit_ts=ts,
            database=database,
            table=table,
            op=op,
            before=text(before),
            after=text(after),
        )

    def _row(self, partition: int, **values: Any) -> None:
        offset = self.offsets.get(partition, 0)
        self.offsets[partition] = offset + 1
        row = {"topic": TOPIC, "partition": partition, "offset": offset, "idx": 0, "status": "READY", **values}
        row["commit_ts"] = Decimal(row["commit_ts"])
        self.rows.append(row)

    def _history(self, ts: int, schema: TableSchema, event: str, query: str) -> None:
        self.history.append(
            {
                "pipeline": self.pipeline_id,
                "database": schema.database,
                "table": schema.table,
                "schema_version": Decimal(ts),
                "commit_ts": Decimal(ts),
                "event": event,
                "ddl_query": query,
                "columns": "[]",
                "handle_key": list(schema.handle_key()),
                "indexes": "[]",
                "iceberg_schema": "{}",
                "table_schema": schema.to_json(),
                "source": "test",
                "run_id": "run-0",
                "recorded_at": datetime.now(UTC),
            }
        )

    # -- landing ------------------------------------------------------------------------------

    def land(self, watermark: int, run_id: str = "run-1") -> None:
        """Publish one batch with every event written since the last one, decoded up to ``watermark``."""
        self.sequence += 1
        batch_id = f"{self.sequence:012d}"
        names = self.spark.createDataFrame([], COLUMNS["change_events"]).columns
        rows = [
            tuple({"pipeline": self.pipeline_id, "batch_id": batch_id, "run_id": run_id, **r}.get(n) for n in names)
            for r in self.rows
        ]
        if rows:
            frame = self.spark.createDataFrame(rows, COLUMNS["change_events"])
            frame.writeTo(self.tables.change_events).append()
        if self.history:
            names = self.spark.createDataFrame([], COLUMNS["schema_history"]).columns
            history = [tuple(h.get(n) for n in names) for h in self.history]
            self.spark.createDataFrame(history, COLUMNS["schema_history"]).writeTo(self.tables.schema_history).append()
        store = LandingStore(self.pipeline.landing_uri, self.pipeline_id)
        previous = {r.key: r.end for m in store.manifests() for r in m.ranges}
        ranges, decoded = [], []
        for partition in range(self.partitions):
            start = previous.get((TOPIC, partition), 0)
            end = max(self.offsets.get(partition, 0), start + 1)
            ranges.append(LandedRange.empty(TOPIC, partition, start, end))
            # What decode counts (decode_worker._count): apply reads DDLs only where ``ddl`` > 0.
            mine = [r for r in self.rows if r.get("partition") == partition]
            dml = sum(1 for r in mine if r.get("kind") == "DML")
            ddl = sum(1 for r in mine if r.get("kind") == "DDL")
            pending = sum(1 for r in mine if r.get("status") == "PENDING")
            counts = (len(mine), len(mine), dml, ddl, 1, Decimal(watermark), 0, pending)
            decoded.append(
                (
                    self.pipeline_id,
                    batch_id,
                    self.sequence,
                    TOPIC,
                    partition,
                    start,
                    end,
                    *counts,
                    run_id,
                    datetime.now(UTC),
                )
            )
            self.offsets[partition] = end
        now = datetime.now(UTC)
        store.publish(
            Manifest(
                pipeline=self.pipeline_id,
                sequence=self.sequence,
                batch_id=batch_id,
                run_id=run_id,
                interval_start=None,
                interval_end=None,
                created_at=now,
                ranges=tuple(ranges),
            )
        )
        self.spark.createDataFrame(decoded, COLUMNS["decoded_batches"]).writeTo(self.tables.decoded_batches).append()
        self.rows, self.history = [], []

    # -- reading ------------------------------------------------------------------------------

    def table(self, database: str, table: str) -> str:
        return f"lake.`{self.namespace(database)}`.`{table}`"

    def exists(self, database: str, table: str) -> bool:
        return bool(self.spark.catalog.tableExists(self.table(database, table)))

    def columns(self, database: str, table: str) -> list[tuple[str, str]]:
        return [
            (f.name, f.dataType.simpleString()) for f in self.spark.table(self.table(database, table)).schema.fields
        ]

    def identifier(self, database: str, table: str) -> str:
        props = {
            r["key"]: r["value"] for r in self.spark.sql(f"SHOW TBLPROPERTIES {self.table(database, table)}").collect()
        }
        return str(props.get("identifier-fields", "[]"))

    def content(self, database: str, table: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in self.spark.table(self.table(database, table)).collect())

    def ledger(self, run_id: str) -> dict[str, tuple[str, str | None]]:
        rows = self.spark.sql(
            f"SELECT `database`, `table`, status, message FROM {self.tables.run_ledger} "
            f"WHERE pipeline = '{self.pipeline_id}' AND run_id = '{run_id}' AND `table` IS NOT NULL"
        ).collect()
        return {f"{r['database']}.{r['table']}": (r["status"], r["message"]) for r in rows}

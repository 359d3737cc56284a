"""``ticdc-lake demo``: a simulated TiCDC stream through the demo DAG, and what it produced.

The simulator's state is kept in ``run/demo/simulator.pkl`` so each demo continues the same
upstream history with new transactions; the first demo (or ``--seed``) starts a fresh history and
clears the demo's landing, catalog and warehouse.
"""

from __future__ import annotations

import os
import pickle
import shutil
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path

from ticdc_lake import tso
from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.airflow_runner import PROJECT_ROOT, AirflowRunner
from ticdc_lake.config import HOME_ENV, config_path, load_config
from ticdc_lake.errors import ServiceError
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_lake.simulator.compare import table_differences
from ticdc_lake.simulator.producer import create_topic, produce
from ticdc_lake.simulator.simulator import TicdcSimulator
from ticdc_lake.simulator.workload import WorkloadConfig
from ticdc_lake.status import applied_snapshot

PIPELINE = "demo"


def kafka_bootstrap(home: Path) -> str:
    """The local broker's address: $TICDC_LAKE_KAFKA_BOOTSTRAP, else what kafka.sh recorded."""
    if os.environ.get("TICDC_LAKE_KAFKA_BOOTSTRAP"):
        return os.environ["TICDC_LAKE_KAFKA_BOOTSTRAP"]
    recorded = home / "kafka" / "bootstrap"
    if recorded.exists():
        return recorded.read_text().strip()
    raise ServiceError("no local Kafka broker is known: run `make services-up` (include/scripts/kafka.sh start)")


def _saved_upstream(state: Path) -> TicdcSimulator | None:
    """The previous demo's simulated upstream; None (start afresh) when there is none or it was
    saved by another version of the simulator."""
    if not state.exists():
        return None
    try:
        saved = pickle.loads(state.read_bytes())
    except (AttributeError, ImportError, TypeError, ValueError, pickle.UnpicklingError) as exc:
        print(f"demo: the saved upstream ({state}) is from another version ({exc}); starting afresh")
        return None
    if not isinstance(saved, TicdcSimulator):
        return None
    config = getattr(getattr(saved, "workload", None), "config", None)
    missing = [f.name for f in fields(WorkloadConfig) if not hasattr(config, f.name)]
    if missing:  # unpickled, but from a version without these settings: it would fail half way
        print(f"demo: the saved upstream ({state}) is from another version (no {', '.join(missing)}); starting afresh")
        return None
    return saved


def run_demo(transactions: int, tables: int, seed: int | None) -> int:
    home = Path(os.environ.get(HOME_ENV) or PROJECT_ROOT / "run")
    cfg_path = config_path()
    config = load_config(cfg_path)
    pipeline = config.pipeline(PIPELINE)
    bootstrap = kafka_bootstrap(home)
    state = home / "demo" / "simulator.pkl"
    topic = pipeline.kafka.topics[0]

    sim: TicdcSimulator | None = _saved_upstream(state) if seed is None else None
    if sim is not None:
        print(f"demo: continuing the simulated upstream from {sim.now.isoformat()}")
    else:
        _reset(home, config.catalogs[pipeline.catalog].warehouse, pipeline.landing_uri, bootstrap, topic)
        sim = TicdcSimulator(
            seed=7 if seed is None else seed,
            topic=topic,
            partitions=3,
            server_time_zone=pipeline.codec.server_time_zone,
            workload=WorkloadConfig(tables=tables, databases=1),
        )
        sim.setup()
        print(f"demo: fresh simulated upstream with {tables} table(s)")
    create_topic(bootstrap, topic, 3)
    sim.run_transactions(transactions)
    sim.advance(2.0)
    watermark = sim.flush_watermark()
    messages = sim.take()
    produce(bootstrap, messages)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_bytes(pickle.dumps(sim))
    print(f"demo: produced {len(messages)} message(s) to topic {topic!r} on {bootstrap} (3 partitions)")

    runner = AirflowRunner(home / "airflow", cfg_path, bootstrap)
    logical = datetime.now(UTC).replace(microsecond=0)
    print(f"demo: running `airflow dags test {pipeline.dag_id} {logical.isoformat()}` (about a minute)...")
    result = runner.test_dag(pipeline.dag_id, logical)
    (home / "demo").mkdir(parents=True, exist_ok=True)
    log_file = home / "demo" / "last-dag-run.log"
    log_file.write_text(result.output)
    if not result.succeeded:
        print(result.output[-6000:])
        print(f"demo: the DAG run failed; full output in {log_file}")
        return 1
    print(f"demo: DAG run succeeded in {result.seconds:.0f}s (output in {log_file})")
    return _show(config, pipeline.catalog, sim, watermark, home)


def _reset(home: Path, warehouse: str, landing_uri: str, bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=10).topics:
        for future in admin.delete_topics([topic]).values():
            future.result()
    for folder in (
        home / "catalog",
        Path(warehouse.removeprefix("file://")),
        Path(landing_uri.removeprefix("file://")) / PIPELINE,
    ):
        if folder.exists():
            shutil.rmtree(folder)
    (home / "catalog").mkdir(parents=True, exist_ok=True)


def _show(config: object, catalog_name: str, sim: TicdcSimulator, watermark: int, home: Path) -> int:
    from ticdc_lake.config import LakeConfig

    assert isinstance(config, LakeConfig)
    catalog = load_catalog(catalog_name, config.catalogs[catalog_name])
    all_equal = True
    print()
    for database, table in sim.model.tables():
        namespace = config.pipeline(PIPELINE).target.namespace_for(database)
        iceberg = catalog.load_table((namespace, iceberg_table_name(table)))
        applied, snapshot_id = applied_snapshot(iceberg, PIPELINE)
        rows = iceberg.scan().to_arrow().to_pylist()
        expected = sim.expected_iceberg_rows(database, table, applied) if applied else []
        diff = table_differences(expected, rows)
        all_equal &= not diff
        print(
            f"{catalog_name}.{namespace}.{table}: {len(rows)} row(s), applied ts {applied}, snapshot {snapshot_id}, "
            f"{'equals the reference model' if not diff else 'DIFFERS from the reference model'}"
        )
        for row in rows[:3]:
            print("    " + ", ".join(f"{k}={v!r}" for k, v in list(row.items())[:6]))
        for line in diff:
            print("    " + line)
    print(f"\nwatermark TSO {watermark} = {tso.to_datetime(watermark).isoformat()} (simulated upstream clock)")
    root = PROJECT_ROOT
    print(
        "\nAirflow UI:\n"
        f"  export AIRFLOW_HOME={home}/airflow AIRFLOW__CORE__DAGS_FOLDER={root}/dags "
        f"AIRFLOW__CORE__PLUGINS_FOLDER={root}/plugins AIRFLOW__CORE__LOAD_EXAMPLES=False\n"
        f"  {root}/.venv/bin/airflow standalone   # then open http://localhost:8080\n"
        "Query:\n"
        f"  {root}/.venv/bin/ticdc-lake status\n"
        f'  {root}/.venv/bin/python -c "from pyiceberg.catalog.sql import SqlCatalog; '
        f"c = SqlCatalog('lake', uri='sqlite:///{home}/catalog/lake.db', warehouse='file://{home}/warehouse'); "
        f'print(c.load_table({_first_table(config, sim)!r}).scan().to_pandas())"\n'
        "  (Spark SQL and DuckDB: see README, 'Query the tables')"
    )
    return 0 if all_equal else 1


def _first_table(config: object, sim: TicdcSimulator) -> tuple[str, str]:
    """The Iceberg identifier of the demo's first table (docs/identifiers.md)."""
    from ticdc_lake.config import LakeConfig

    assert isinstance(config, LakeConfig)
    database, table = sim.model.tables()[0]
    return (config.pipeline(PIPELINE).target.namespace_for(database), iceberg_table_name(table))

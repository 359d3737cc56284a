"""``ticdc-lake-demo`` (``make demo``): a simulated TiCDC stream through the demo DAG, and what it produced.

The demo lives with the simulator, not in the product package: the product (``ticdc_lake``) never
imports ``ticdc_sim`` (tests/test_import_direction.py), so the demo has its own console script.

The simulator's state is kept in ``run/demo/simulator.pkl`` so each demo continues the same
upstream history with new transactions; the first demo (or ``--seed``) starts a fresh history and
clears the demo's landing, catalog and warehouse. The simulated upstream runs on real time: its
transactions end at the moment of the demo, so lag and freshness read in seconds.

The DAG runs in the local Airflow of ``include/scripts/airflow.sh`` (started if it is not up),
triggered through Airflow's REST API, so the run and its task logs stay visible in the UI.
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ticdc_lake import tso
from ticdc_lake.catalog import load_catalog
from ticdc_lake.cli.airflow_runner import PROJECT_ROOT
from ticdc_lake.cli.airflow_service import AirflowApi, Login, kafka_bootstrap, lake_home, service_login
from ticdc_lake.config import CONFIG_ENV, HOME_ENV, config_path, load_config
from ticdc_lake.errors import ServiceError, TicdcLakeError
from ticdc_lake.identifiers import iceberg_table_name
from ticdc_lake.status import applied_snapshot
from ticdc_sim.compare import table_differences
from ticdc_sim.producer import create_topic, produce
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig

PIPELINE = "demo"
#: Simulated seconds per demo transaction, a little above the simulator's mean gap between
#: transactions (5-400 ms): the upstream starts (or resumes) this far before now, so that its
#: last commit falls just before the real time of the demo.
SECONDS_PER_TRANSACTION = 0.21
AIRFLOW_SCRIPT = PROJECT_ROOT / "include" / "scripts" / "airflow.sh"


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
    home = lake_home()
    cfg_path = config_path()
    config = load_config(cfg_path)
    pipeline = config.pipeline(PIPELINE)
    bootstrap = kafka_bootstrap(home)
    state = home / "demo" / "simulator.pkl"
    topic = pipeline.kafka.topics[0]
    resume_at = upstream_start(transactions, datetime.now(UTC))

    sim: TicdcSimulator | None = _saved_upstream(state) if seed is None else None
    if sim is not None:
        print(f"demo: continuing the simulated upstream from {sim.now.isoformat()}")
        if sim.now < resume_at:
            sim.idle_until(resume_at)
            print(f"demo: its clock resumes at {resume_at.isoformat()} (real time, minus the new transactions)")
    else:
        _reset(home, config.catalogs[pipeline.catalog].warehouse, pipeline.landing_uri, bootstrap, topic)
        sim = TicdcSimulator(
            seed=7 if seed is None else seed,
            topic=topic,
            partitions=3,
            server_time_zone=pipeline.codec.server_time_zone,
            workload=WorkloadConfig(tables=tables, databases=1),
            start=resume_at,
        )
        sim.setup()
        print(f"demo: fresh simulated upstream with {tables} table(s)")
    create_topic(bootstrap, topic, 3)
    sim.run_transactions(transactions)
    sim.advance(max(2.0, (datetime.now(UTC) - sim.now).total_seconds()))
    watermark = sim.flush_watermark()
    messages = sim.take()
    produce(bootstrap, messages)
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_bytes(pickle.dumps(sim))
    print(f"demo: produced {len(messages)} message(s) to topic {topic!r} on {bootstrap} (3 partitions)")

    login = start_airflow(home, cfg_path, bootstrap)
    api = AirflowApi(login)
    api.unpause(pipeline.dag_id)
    started = time.monotonic()
    run_id = api.trigger(pipeline.dag_id, datetime.now(UTC).replace(microsecond=0))
    print(f"demo: triggered run {run_id!r} of DAG {pipeline.dag_id!r} through Airflow's REST API (a minute or two)...")
    outcome = api.await_run(pipeline.dag_id, run_id)
    log_file = home / "demo" / "last-dag-run.log"
    logs = _task_logs(api, pipeline.dag_id, run_id)
    log_file.write_text(logs)
    if outcome != "success":
        print(logs[-6000:])
        print(f"demo: the DAG run {outcome}; its task logs are in {log_file}")
        run_url = api.run_url(pipeline.dag_id, run_id)
        print(f"demo: the run in the UI: {run_url} (login {login.username} / {login.password})")
        return 1
    print(f"demo: DAG run succeeded in {time.monotonic() - started:.0f}s (task logs in {log_file})")
    code = _show(config, pipeline.catalog, sim, watermark, home)
    print(
        "\nAirflow UI (running; stop it with `make services-down` or `include/scripts/airflow.sh stop`):\n"
        f"  {login.url}   login: {login.username} / {login.password}\n"
        f"  this run: {api.run_url(pipeline.dag_id, run_id)}"
    )
    return code


def upstream_start(transactions: int, now: datetime) -> datetime:
    """Where the simulated clock starts (or resumes) so that ``transactions`` end just before ``now``."""
    return now - timedelta(seconds=transactions * SECONDS_PER_TRANSACTION + 2)


def start_airflow(home: Path, cfg_path: Path, bootstrap: str) -> Login:
    """``include/scripts/airflow.sh start`` for this home, pipeline file and broker (idempotent)."""
    env = dict(os.environ)
    env.update({HOME_ENV: str(home), CONFIG_ENV: str(cfg_path.resolve()), "TICDC_LAKE_KAFKA_BOOTSTRAP": bootstrap})
    print(f"demo: starting the local Airflow ({AIRFLOW_SCRIPT.relative_to(PROJECT_ROOT)} start)")
    done = subprocess.run([str(AIRFLOW_SCRIPT), "start"], env=env, check=False)
    if done.returncode != 0:
        raise ServiceError(f"{AIRFLOW_SCRIPT} start failed (exit {done.returncode}; its message is above)")
    return service_login(home)


def _task_logs(api: AirflowApi, dag_id: str, run_id: str) -> str:
    """Every task's log of the run (what the UI's Logs tab shows), one after another."""
    parts = []
    for task_id, task_state in api.task_states(dag_id, run_id).items():
        if task_state in ("upstream_failed", "skipped", "removed", "None", "none"):
            parts.append(f"== {task_id}: {task_state}")
            continue
        parts.append(f"== {task_id}: {task_state}\n{api.task_log(dag_id, run_id, task_id)}")
    return "\n".join(parts) + "\n"


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
    behind = (datetime.now(UTC) - tso.to_datetime(watermark)).total_seconds()
    print(
        f"\nwatermark TSO {watermark} = {tso.to_datetime(watermark).isoformat()} (upstream clock, {behind:.0f} s ago)"
    )
    root = PROJECT_ROOT
    print(
        "\nQuery:\n"
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ticdc-lake-demo", description="produce a simulated TiCDC stream, run the demo DAG, show the tables"
    )
    parser.add_argument("--transactions", type=int, default=400)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--seed", type=int, default=None, help="workload seed (default: continue the previous demo)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        return run_demo(transactions=args.transactions, tables=args.tables, seed=args.seed)
    except TicdcLakeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""One table maintenance DAG per Iceberg catalog in the pipeline file: ``ticdc_maintenance_<catalog>``.

Wiring only (see ticdc_lake_airflow.maintenance_dag and docs/maintenance.md). A configuration
error is raised, not swallowed: it becomes this file's import error, naming the file and the key.
"""

from __future__ import annotations

from ticdc_lake.config import config_path
from ticdc_lake_airflow.maintenance_dag import build_maintenance_dags

globals().update(build_maintenance_dags(config_path()))

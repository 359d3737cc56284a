"""One Airflow DAG per pipeline in the pipeline file ($TICDC_LAKE_CONFIG, default include/pipelines.yaml).

Wiring only. A configuration error is raised, not swallowed: it becomes this file's import
error in the UI and in `airflow dags list-import-errors`, naming the file, the pipeline and the key.
"""

from __future__ import annotations

from ticdc_lake.config import config_path
from ticdc_lake_airflow.dag_factory import build_all_dags

globals().update(build_all_dags(config_path()))

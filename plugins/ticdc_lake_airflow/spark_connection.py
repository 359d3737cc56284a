"""The Spark connection of the Spark tasks, checked before ``spark-submit`` starts.

The provider's hook falls back to master ``yarn`` when the connection is missing (or its URI does
not parse, as ``spark://local[4]`` does not), and builds ``spark://`` from a connection without a
host: ``spark-submit`` then fails after its JVM started, with Spark's ``When running with master
'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be set`` or a bad master URL, and Airflow
retries what no retry can fix. :func:`spark_master` fails at the start of the task instead, with a
:class:`~ticdc_lake.errors.ConfigError` (not retryable) that names the connection and how to set it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from ticdc_lake.errors import ConfigError

log = logging.getLogger(__name__)

#: Master URL forms ``spark-submit`` accepts (``local``, ``local[4]``, ``local[*]`` included).
_MASTER_PREFIXES = ("local", "spark://", "yarn", "k8s://", "mesos://")
#: Spark refuses master ``yarn`` unless one of these names the cluster's configuration folder.
_YARN_CONF_VARS = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")


def how_to_set(conn_id: str) -> str:
    """The three ways to define the connection, with the local default as the example."""
    local = json.dumps({"conn_type": "spark", "host": "local[*]"})
    return (
        f"create it in the UI (Admin > Connections: type Spark, host local[*] to run on the Airflow worker, "
        f"or spark://HOST:7077), with `airflow connections add {conn_id} --conn-type spark --conn-host 'local[*]'`, "
        f"or as the environment variable AIRFLOW_CONN_{conn_id.upper()}='{local}' (the JSON form: the URI form "
        f"spark://local[*] does not parse)"
    )


def spark_master(conn_id: str, env: Mapping[str, str] | None = None) -> str:
    """The master ``spark-submit`` will use for ``conn_id``; ConfigError if it cannot work.

    ``env`` is what the task adds to the environment of ``spark-submit`` (over ``os.environ``).
    """
    try:
        BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConfigError(
            f"Airflow connection {conn_id!r} (the Spark master of the transform and maintenance tasks) is not "
            f"defined, or its URI does not parse; {how_to_set(conn_id)}"
        ) from None
    # The provider's own rules (conn_type, host, port, extra) turn the connection into the master.
    master = str(SparkSubmitHook(conn_id=conn_id)._connection["master"])
    where = f"Airflow connection {conn_id!r}"
    if not master.startswith(_MASTER_PREFIXES) or master.rstrip("/").endswith(":"):
        raise ConfigError(
            f"{where} gives no usable Spark master (it resolves to {master!r}): set its host to local[*], "
            f"spark://HOST:7077, yarn or k8s://https://HOST:PORT; {how_to_set(conn_id)}"
        )
    environment = {**os.environ, **(env or {})}
    if master.startswith("yarn") and not any(environment.get(v) for v in _YARN_CONF_VARS):
        raise ConfigError(
            f"{where} gives master 'yarn' (Airflow's example connection does), but neither HADOOP_CONF_DIR nor "
            f"YARN_CONF_DIR is set for the Airflow worker, so spark-submit cannot find the cluster: set one of them "
            f"to the folder of the YARN cluster's configuration, or point the connection at another master "
            f"(local[*] runs on the Airflow worker: `airflow connections delete {conn_id}`, then {how_to_set(conn_id)})"
        )
    log.info("Spark connection %r: master %s", conn_id, master)
    return master

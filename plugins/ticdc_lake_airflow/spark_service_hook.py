"""The Airflow connection of a Spark run service (``docs/spark-service.md``), turned into its client.

A pipeline with ``spark_service: <connection id>`` sends its transform run to the service that
connection names: a connection of type ``generic`` whose host and port are where the service
listens and whose password is its bearer token (the content of the file its ``--token-file``
names, ``<lake home>/spark-service.token`` by default). A connection that is missing, or lacks
the host, the port or the password, fails the task at once (:class:`~ticdc_lake.errors.ConfigError`,
not retryable), naming the connection and the ways to set it: no retry can create it.
"""

from __future__ import annotations

import json
import logging

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk.log import mask_secret

from ticdc_lake.errors import ConfigError
from ticdc_lake.redaction import register_secrets
from ticdc_lake.spark_service_client import DEFAULT_PORT, SparkServiceClient

log = logging.getLogger(__name__)

#: The connection id the local scripts (include/scripts/airflow.sh) and docker-compose.yml define.
DEFAULT_CONN_ID = "ticdc_spark_service"


def how_to_set(conn_id: str) -> str:
    """The ways to define the connection, with the local service as the example."""
    example = json.dumps(
        {"conn_type": "generic", "host": "127.0.0.1", "port": DEFAULT_PORT, "password": "<token file content>"}
    )
    return (
        f"create it in the UI (Admin > Connections: type Generic, host and port of the service, password = its "
        f"token, the content of <lake home>/spark-service.token), with `airflow connections add {conn_id} "
        f"--conn-type generic --conn-host 127.0.0.1 --conn-port {DEFAULT_PORT} "
        f'--conn-password "$(cat run/spark-service.token)"`, or as the environment variable '
        f"AIRFLOW_CONN_{conn_id.upper()}='{example}' (docs/spark-service.md)"
    )


class SparkServiceHook(BaseHook):
    """Reads the connection ``conn_id`` and builds the :class:`SparkServiceClient` of that service."""

    conn_name_attr = "conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "generic"
    hook_name = "TiCDC lake Spark run service"

    def __init__(self, conn_id: str = DEFAULT_CONN_ID) -> None:
        super().__init__()
        self.conn_id = conn_id

    def get_conn(self) -> SparkServiceClient:
        """The client; ConfigError when the connection is missing or lacks host, port or password."""
        try:
            connection = self.get_connection(self.conn_id)
        except AirflowNotFoundException:
            raise ConfigError(
                f"Airflow connection {self.conn_id!r} (the pipeline's spark_service: the Spark run service) is not "
                f"defined; start the service (include/scripts/spark_service.sh start) and {how_to_set(self.conn_id)}"
            ) from None
        if connection.password:
            mask_secret(connection.password)
            register_secrets({"password": connection.password})
        host = (connection.host or "").strip()
        missing = [
            name
            for name, value in (("host", host), ("port", connection.port), ("password", connection.password))
            if not value
        ]
        if missing:
            raise ConfigError(
                f"Airflow connection {self.conn_id!r} (the pipeline's spark_service) has no "
                f"{' and no '.join(missing)}: it needs the host and port the Spark run service listens on "
                f"and its token as the password; "
                f"{how_to_set(self.conn_id)}"
            )
        assert connection.port is not None  # checked above
        assert connection.password is not None
        log.info("Spark run service connection %r: %s:%d", self.conn_id, host, connection.port)
        return SparkServiceClient(host, int(connection.port), connection.password)

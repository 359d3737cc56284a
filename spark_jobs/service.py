"""The Spark run service: one long-lived Spark driver that runs pipelines' Spark stages on request.

Arguments: --config FILE [--host 127.0.0.1] [--port 18090] [--token-file FILE] [--master local[*]].
Start it with ``include/scripts/spark_service.sh start`` (docs/spark-service.md).
"""

import sys

from ticdc_lake.spark.service_main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

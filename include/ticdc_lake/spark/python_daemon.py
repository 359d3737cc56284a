"""The daemon of a pipeline application's Python workers (``spark.python.daemon.module``).

PySpark starts one daemon per pool of Python workers and forks one worker from it per task slot;
each worker then imported the decode path (``decode_worker``, the six decoders, pyarrow) on its
first task, about a second of CPU per worker, paid again by every worker of every run. This
daemon imports them once, before it forks, so every worker starts with them: the same modules,
loaded once per pool instead of once per worker. Otherwise it is PySpark's own daemon
(:func:`pyspark.daemon.manager`); the worker module it forks stays ``pyspark.worker``.

The JVM starts it as ``python -m ticdc_lake.spark.python_daemon pyspark.worker``, so the
executors' Python must import ``ticdc_lake``, as their workers always had to.
"""

from __future__ import annotations

from pyspark import daemon

from ticdc_lake.config import Protocol
from ticdc_lake.protocols.registry import decoder_class


def preload() -> None:
    """Import what a decode task's worker imports: the decode worker, pyarrow and every decoder,
    and pandas with pyarrow's pandas shim, which PySpark's worker imports at the end of its first
    Arrow task (about a second of CPU per worker, measured on the worker's process clock)."""
    import pandas  # type: ignore[import-untyped]  # noqa: F401
    import pyarrow.pandas_compat
    import pyarrow.vendored.version  # noqa: F401

    import ticdc_lake.spark.decode_worker  # noqa: F401  (imported for its side effect: loaded once)

    for protocol in Protocol:
        decoder_class(protocol)


if __name__ == "__main__":
    preload()
    daemon.manager()  # type: ignore[no-untyped-call]

"""``SparkSubmitHook`` whose log lines and error messages never carry a secret.

The provider's hook logs the whole ``spark-submit`` command line (every ``--conf key=value``) and
relays the driver's output line by line. Its own masking only knows keys that contain ``secret``
or ``password``, so catalog properties such as ``s3.session-token`` or ``credential`` would be
printed. Airflow's ``mask_secret`` covers them in a deployed task, but not everywhere (under
``airflow dags test`` the CLI's log output uses another masker instance than the task's). This
hook passes everything it prints through :func:`ticdc_lake.redaction.redact`, which knows the
secrets registered by :func:`ticdc_lake_airflow.hooks.mask_secrets` and masks credential-looking
text, so the guarantee does not depend on how the task is run.

The provider relays every line of ``spark-submit``'s output at INFO. A line that starts with a
level (Spark's ``WARN Utils: ...`` under the task's log4j2 configuration, the job's own
``WARNING [ticdc_lake...] ...``, ``ERROR: transform failed: ...``) is relayed at that level instead,
so the task log's warnings and errors are the real ones.

A hook made with ``on_line`` also hands each line it relays (redacted) to that callable: the
transform task starts loading its run report's imports when the driver says its Spark work is done.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from ticdc_lake.redaction import redact

_LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal"})
#: The level a relayed line starts with, and the logger method that keeps it.
_LINE_LEVEL = re.compile(r"^(?P<level>WARN|WARNING|ERROR|FATAL|CRITICAL)\b")
_LINE_METHODS = {"WARN": "warning", "WARNING": "warning", "ERROR": "error", "FATAL": "critical", "CRITICAL": "critical"}


class _RedactingLog:
    """A logger whose level methods redact the formatted message (other attributes pass through)."""

    def __init__(self, inner: Any, on_line: Callable[[str], None] | None = None) -> None:
        self._inner = inner
        self._on_line = on_line

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        if name not in _LEVELS:
            return method
        if name == "info":
            return _redacting(method, self._inner, self._on_line)
        return _redacting(method)


def _redacting(
    method: Callable[..., Any], relay: Any = None, on_line: Callable[[str], None] | None = None
) -> Callable[..., Any]:
    """``method``, its message redacted; with ``relay``, a line starting with a higher level goes to that level;
    ``on_line`` gets each redacted line."""

    def call(msg: object, *args: object, **kwargs: Any) -> Any:
        text = str(msg)
        if args:
            try:
                text = text % args
            except (TypeError, ValueError):
                text = " ".join([text, *map(str, args)])
        level = _LINE_LEVEL.match(text) if relay is not None else None
        target = getattr(relay, _LINE_METHODS[level.group("level")]) if level else method
        line = redact(text)
        if on_line is not None:
            on_line(line)
        return target("%s", line, **kwargs)

    return call


class RedactingSparkSubmitHook(SparkSubmitHook):
    """The provider's hook, with :func:`redact` applied to its log and its command-line messages."""

    #: Gets each line the hook relays at INFO (the driver's output), redacted; None: nobody.
    on_line: Callable[[str], None] | None = None

    @property
    def log(self) -> Any:
        return _RedactingLog(super().log, self.on_line)

    def _mask_cmd(self, connection_cmd: str | list[str]) -> str:
        return redact(super()._mask_cmd(connection_cmd))


def redacting(hook: SparkSubmitHook, on_line: Callable[[str], None] | None = None) -> SparkSubmitHook:
    """``hook`` turned into a :class:`RedactingSparkSubmitHook` (same state; ``on_line`` set when given)."""
    hook.__class__ = RedactingSparkSubmitHook
    if on_line is not None:
        hook.on_line = on_line  # type: ignore[attr-defined]
    return hook

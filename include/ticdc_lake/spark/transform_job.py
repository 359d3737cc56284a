"""The pipeline's Spark work of one run in one application: decode, schema history, apply.

One ``spark-submit`` per run instead of three saves two JVM and session starts (about 10 s each
here, more on a cluster). The steps stay separate where it matters: each takes its own stage lock
(``stage_lock``), writes its own ledger row and logs its own summary, and a failure
names the step. A step that fails stops the run: the next steps would only wait on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from ticdc_lake.config import LakeConfig, PipelineConfig
from ticdc_lake.spark.apply_job import ApplySummary, run_apply
from ticdc_lake.spark.decode_job import DecodeSummary, run_decode
from ticdc_lake.spark.exit_codes import TRANSFORM_DONE
from ticdc_lake.spark.rebuild_job import run_rebuild
from ticdc_lake.spark.rebuild_scope import parse_request
from ticdc_lake.spark.schema_history_job import run_schema_history

log = logging.getLogger(__name__)

#: The steps of a transform run, in order (also their ledger stage names).
STEPS: tuple[str, ...] = ("decode", "schema_history", "apply")


@dataclass(frozen=True, slots=True)
class TransformSummary:
    decode: DecodeSummary
    versions_added: int
    apply: ApplySummary
    seconds: dict[str, float]


def run_transform(
    spark: SparkSession,
    config: LakeConfig,
    pipeline: PipelineConfig,
    run_id: str,
    rebuild: str | Sequence[str] = (),
) -> TransformSummary:
    """``rebuild``: table names (or ``*``) to rebuild from the landed batches in this run (``docs/rebuild.md``):
    every batch is decoded again and those tables are reset before the apply step."""
    if parse_request(rebuild):
        rebuilt = run_rebuild(spark, config, pipeline, run_id, rebuild)
        assert rebuilt.apply is not None  # run_rebuild raises when apply failed
        return TransformSummary(rebuilt.decode, rebuilt.versions_added, rebuilt.apply, rebuilt.seconds)
    seconds: dict[str, float] = {}

    def step(number: int, name: str) -> float:
        log.info("transform: step %d/%d %s (pipeline %r, run %r)", number, len(STEPS), name, pipeline.id, run_id)
        return time.monotonic()

    started = step(1, "decode")
    decoded = run_decode(spark, config, pipeline, run_id)
    seconds["decode"] = time.monotonic() - started
    started = step(2, "schema_history")
    added = run_schema_history(spark, config, pipeline, run_id)
    seconds["schema_history"] = time.monotonic() - started
    started = step(3, "apply")
    applied = run_apply(spark, config, pipeline, run_id)
    seconds["apply"] = time.monotonic() - started
    log.info(
        TRANSFORM_DONE + "%.1f s (decode %.1f s: %d batch(es), %d event(s), %d quarantined; schema history "
        "%.1f s: %d new version(s); apply %.1f s: watermark %s, %d table(s) applied, %d held, %d failed)",
        sum(seconds.values()),
        seconds["decode"],
        decoded.batches,
        decoded.events,
        decoded.quarantined,
        seconds["schema_history"],
        added,
        seconds["apply"],
        applied.watermark,
        len(applied.applied),
        len(applied.held),
        len(applied.failed),
    )
    return TransformSummary(decoded, added, applied, seconds)

"""The events a JVM decoder returned, as ``change_events`` rows, in the decode workers.

The JVM path hands the workers the landed messages with the decoder's event columns (``contract``:
``kind`` NULL where the Python decoders take the message). Each Arrow batch is split here:
:func:`decided_events` builds the ``change_events`` rows of the decided messages with whole-column
operations (their position from the message, the run's constants, the decoder's values, and the
typed record carrier where the decoder made it), and names the rows left to the Python decoders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ticdc_lake.events import EventStatus
from ticdc_lake.spark.decode_arrow import EVENTS_ARROW_SCHEMA
from ticdc_lake.spark.jvm_decode.contract import JSON_SUFFIX

#: Columns every decided row has from the run, not from the decoder.
_CONSTANTS = {
    "handle_key_only": (False, pa.bool_()),
    "claim_check": (False, pa.bool_()),
    "status": (EventStatus.READY.value, pa.string()),
}


@dataclass(frozen=True)
class DecidedRows:
    #: The ``change_events`` rows of the decided messages (``decode_arrow.EVENTS_ARROW_SCHEMA``), or None.
    events: pa.RecordBatch | None
    #: Indexes of the batch's rows left to the Python decoders, ascending.
    rest: np.ndarray


def decided_events(batch: pa.RecordBatch, pipeline: str, run_id: str) -> DecidedRows:
    """Split ``batch`` (landed messages of one landed batch with the decoder's event columns)."""
    decided = batch.column("kind").is_valid().to_numpy(zero_copy_only=False)
    rest = np.flatnonzero(~decided)
    if not decided.any():
        return DecidedRows(None, rest)
    rows = batch.filter(pa.array(decided)) if len(rest) else batch
    count = rows.num_rows
    names = set(rows.schema.names)
    arrays = []
    for field in EVENTS_ARROW_SCHEMA:
        if field.name in names:
            column = rows.column(field.name)
        elif field.name + JSON_SUFFIX in names:
            column = _maps(rows.column(field.name + JSON_SUFFIX), field.type)
        elif field.name in _CONSTANTS:
            value, kind = _CONSTANTS[field.name]
            column = pa.repeat(pa.scalar(value, kind), count)
        elif field.name in ("pipeline", "run_id"):
            column = pa.repeat(pa.scalar(pipeline if field.name == "pipeline" else run_id, pa.string()), count)
        else:
            column = pa.nulls(count, field.type)
        arrays.append(column if column.type == field.type else column.cast(field.type))
    return DecidedRows(pa.RecordBatch.from_arrays(arrays, schema=EVENTS_ARROW_SCHEMA), rest)


def _maps(texts: pa.Array, kind: pa.DataType) -> pa.Array:
    """JSON object texts (``{"column": text or null, ...}``) as a map column; NULL stays NULL. Few rows
    have one (a column the image lacks, a value its carried type cannot hold), so each is read alone."""
    if texts.null_count == len(texts):
        return pa.nulls(len(texts), kind)
    return pa.array([None if text is None else list(json.loads(text).items()) for text in texts.to_pylist()], type=kind)

"""TiCDC's own test vectors: real encoder output that the golden tests check the decoders and the
simulator's encoders against, so that an encoder and a decoder written together cannot share a
mistake unnoticed.

They are third-party test data (github.com/pingcap/tiflow, Apache License 2.0, commit
``c7b2588ef6c74ef2a42ef35a539251d026de722e``) and this repository does not carry them: the golden
tests read them from the folder named by ``TICDC_LAKE_TIFLOW_VECTORS`` and are skipped, saying so,
when it is not set. ``.ci/run`` sets it to the team's copy. The folder holds:

- ``pkg/sink/codec/debezium/testdata/`` (tiflow's own path): ``datatype.ddl.sql`` (a table with a
  column of every MySQL type family), ``datatype.dml.sql`` (one row of edge values),
  ``datatype.dbz.json`` / ``datatype.dbz.key.json`` (the Kafka value and key TiCDC's Debezium
  encoder must write for it, time zone UTC, no TiDB extension);
- ``examples/java/src/test/resources/data/{key,value}/`` (tiflow's own path): raw Open Protocol
  keys and values in the batched framing (single events, batches, empty batches, resolved events);
- ``_extracted_from_tests/``: the expected outputs written as string literals in tiflow's Go tests
  (``pkg/sink/codec/debezium/codec_test.go``, ``pkg/sink/codec/canal/canal_json_txn_event_decoder_test.go``),
  one per file, named after the Go test file and line (``INDEX.tsv`` lists them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "TICDC_LAKE_TIFLOW_VECTORS"
#: The vectors folder (a path that does not exist when the variable is not set).
ROOT = Path(os.environ.get(ENV) or Path(__file__).parent / f"unset-{ENV}")
OPEN_DATA = ROOT / "examples/java/src/test/resources/data"
DEBEZIUM_DATA = ROOT / "pkg/sink/codec/debezium/testdata"
EXTRACTED = ROOT / "_extracted_from_tests"
AVAILABLE = ROOT.is_dir()
REASON = f"TiCDC's test vectors are not here: set {ENV} to their folder (tests/tiflow_vectors.py says what it holds)"

#: Marks a test (or, as ``pytestmark``, a module) that reads the vectors.
needs_vectors = pytest.mark.skipif(not AVAILABLE, reason=REASON)


def require() -> Path:
    """The vectors folder; skips the calling test when it is not here."""
    if not AVAILABLE:
        pytest.skip(REASON)
    return ROOT

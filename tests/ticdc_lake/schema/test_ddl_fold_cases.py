"""Every DDL kind TiCDC sends as text only (Canal-JSON, Open), folded: each post schema is TiCDC's table info.

The encoded DDL of :mod:`tests.ticdc_lake.protocols.ddl_cases` go through the first pass
(``scanned_facts``) and the fold; Open is broadcast to three partitions (copies fold once).
Compared: column names, type text, nullability and defaults, and the keys.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ticdc_lake.protocols.ddl_cases import CASES
from ticdc_lake.config import CodecOptions
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.registry import decoder_for
from ticdc_lake.protocols.schema_scan import scanned_facts
from ticdc_lake.schema.ddl_fold import DdlFact, fold_ddls
from ticdc_lake.schema.lookup import MemorySchemaLookup
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.encoders import encoder_for


def _shape(schema: TableSchema | None) -> tuple[Any, ...] | None:
    if schema is None:
        return None
    columns = tuple((c.name, c.type_text(), c.nullable, c.default) for c in schema.columns)
    keys = tuple(sorted((i.name.lower(), i.columns, i.primary, i.unique) for i in schema.indexes))
    return (schema.database, schema.table, columns, keys)


@pytest.mark.parametrize("protocol", ["canal-json", "open"])
def test_every_ddl_kind_folds_to_ticdcs_table_info(protocol: str) -> None:
    encoder = encoder_for(protocol, "UTC")
    decoder = decoder_for(protocol, CodecOptions())
    facts: list[DdlFact] = []
    for partition in range(1 if protocol == "canal-json" else 3):
        messages = []
        for offset, case in enumerate(CASES):
            message = encoder.encode_ddl(case.ddl, case.commit_ts, 1_700_000_000_000)
            assert message is not None
            messages.append(RawMessage("shop", partition, offset, 0, message.key, message.value))
        facts.extend(f for f in scanned_facts(decoder, messages) if isinstance(f, DdlFact))
    assert len(facts) == len(CASES) * (1 if protocol == "canal-json" else 3)
    results = fold_ddls(facts, MemorySchemaLookup(), protocol)
    assert len(results) == len(CASES)
    by_case = {(f.commit_ts, f.table, f.ddl_query): results[f.key] for f in facts}
    for case in CASES:
        result = by_case[(case.commit_ts, case.table, case.query)]
        assert result.error is None, case.name
        if case.subtype == "ERASE":
            assert (result.table_schema, _shape(result.pre_table_schema)) == (None, _shape(case.after)), case.name
            continue
        assert _shape(result.table_schema) == _shape(case.after), case.name
        assert _shape(result.pre_table_schema) == _shape(case.before), case.name
        if result.table_schema is not None:
            assert (result.table_schema.version, result.table_schema.source) == (case.commit_ts, f"{protocol}-ddl")

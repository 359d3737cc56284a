"""Schema versions of the row changes the Avro vector decoder reads (:mod:`.avro_batch`), bound as
``schema_facts`` binds the Python decoder's rows: by commit TSO (one version for a group, at its
smallest and largest TSO) or, for rows without one, per row by the offset rule
(``OffsetVersions.version_of``) read from the batch's position columns; upstream names through
``avro_names``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ticdc_lake.errors import DecodeError
from ticdc_lake.events import RawMessage
from ticdc_lake.protocols.avro_names import UpstreamNames
from ticdc_lake.protocols.base import MemorySchemaLookup
from ticdc_lake.protocols.schema_facts import infers_schema
from ticdc_lake.spark.arrow_decode.row_batches import message_positions

#: A missing registry id or version.
NO_ID = -1


#: (upstream table, column mapping, schema version or None: unbound, as the Python decoder leaves a row
#: no version is known for where it infers none).
Bound = tuple[tuple[str, str], dict[str, str], int | None]


def upstream_naming(
    names: UpstreamNames | None, database: str, table: str, sent: list[str], commit_ts: int
) -> tuple[tuple[str, str], dict[str, str]] | None:
    """``avro_names.to_upstream`` of a row at ``commit_ts``: (upstream table, column mapping); None where it raises."""
    if names is None:
        return (database, table), {}
    try:
        upstream = names.table(database, table, "the row")
        if upstream is None:
            return (database, table), {}
        mapping = dict(names.columns(upstream, commit_ts, sent, "the row"))
    except DecodeError:
        return None
    renamed = [mapping.get(name, name) for name in sent]
    return (upstream, mapping) if len(set(renamed)) == len(renamed) else None


def timed_binding(
    lookup: MemorySchemaLookup,
    names: UpstreamNames | None,
    database: str,
    table: str,
    sent: list[str],
    commit: np.ndarray,
) -> Bound | None:
    """Rows with a commit TSO: one upstream naming and one version at the smallest and largest TSO."""
    low, high = int(commit.min()), int(commit.max())
    first, last = (
        upstream_naming(names, database, table, sent, low),
        upstream_naming(names, database, table, sent, high),
    )
    if first is None or first != last:
        return None
    upstream, mapping = first
    schema = lookup.latest(*upstream, low)
    if lookup.latest(*upstream, high) is not schema:
        return None
    if schema is None:  # no version at or before the largest TSO: none before the smallest either
        return (upstream, mapping, None) if not infers_schema(lookup, *upstream) else None
    if schema.version is None:
        return None
    known = {c.name for c in schema.columns}
    if not known.issuperset(mapping.get(name, name) for name in sent):
        return None  # the Python decoder makes the row PENDING, or matches the names without case
    return upstream, mapping, schema.version


def ordered_bindings(
    lookup: MemorySchemaLookup,
    names: UpstreamNames | None,
    database: str,
    table: str,
    sent: list[str],
    picked: np.ndarray,
    rows: np.ndarray,
    messages: Sequence[RawMessage],
    key_id: int,
    value_id: int,
) -> list[tuple[np.ndarray, Bound]]:
    """Rows without a commit TSO: per row the version ``schema_facts._offset_schema`` finds, else the
    one in effect at TSO 0; the rows split by version."""
    naming = upstream_naming(names, database, table, sent, 0)
    if naming is None:
        return []
    upstream, mapping = naming
    rule = lookup.offset_versions
    wanted: np.ndarray | None = np.full(len(rows), NO_ID, dtype=np.int64)
    if rule is not None:
        topics, partitions, offsets = message_positions(messages, picked[rows])
        wanted = offset_versions(rule, upstream, topics, partitions, offsets, key_id, value_id)
    if wanted is None:
        return []
    found: list[tuple[np.ndarray, Bound]] = []
    for version in np.unique(wanted).tolist():
        schema = lookup.get(*upstream, version) if version != NO_ID else None
        if schema is None:
            schema = lookup.latest(*upstream, 0)
        if schema is None and not infers_schema(lookup, *upstream):
            found.append((rows[wanted == version], (upstream, mapping, None)))
        elif schema is not None and schema.version is not None:
            found.append((rows[wanted == version], (upstream, mapping, schema.version)))
    return found


def offset_versions(
    rule: object,
    upstream: tuple[str, str],
    topics: pa.Array,
    partitions: pa.Array,
    offsets: pa.Array,
    key_id: int,
    value_id: int,
) -> np.ndarray | None:
    """``OffsetVersions.version_of`` of each row at these positions (-1 for None), the rule's change
    points searched per partition; None where a change point's version is negative (bisect on tuples
    would differ)."""
    from ticdc_lake.schema.offset_versions import OffsetVersions

    assert isinstance(rule, OffsetVersions)
    database, table = upstream
    count = len(offsets)
    at_offsets = offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    encoded = pc.dictionary_encode(topics)
    names = encoded.dictionary.to_pylist()
    slots = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64) << 32
    slots |= partitions.to_numpy(zero_copy_only=False).astype(np.int64) & 0xFFFFFFFF
    unique_slots, codes = np.unique(slots, return_inverse=True)
    slot_codes = {(names[slot >> 32], slot & 0xFFFFFFFF): code for code, slot in enumerate(unique_slots.tolist())}
    result = np.full(count, NO_ID, dtype=np.int64)
    own = rule.writer.get((database, table, value_id)) if value_id != NO_ID else None
    if value_id != NO_ID and own is None:
        return result
    floor = rule.floor.get((database, table))
    newest = rule.newest.get((database, table))
    if any(v is not None and v < 0 for v in (own, floor, newest)):
        return None
    for (topic, partition), code in slot_codes.items():
        mine = codes == code
        points = rule.points.get((database, table, topic, partition)) or []
        if any(version < 0 for _, version in points):
            return None
        point_offsets = np.array([p[0] for p in points], dtype=np.int64)
        point_versions = np.array([p[1] for p in points], dtype=np.int64)
        at = at_offsets[mine] + (1 if own is not None else 0)
        index = np.searchsorted(point_offsets, at, side="left")
        before = np.where(index > 0, point_versions[np.maximum(index - 1, 0)] if len(points) else NO_ID, NO_ID)
        if floor is not None:
            before = np.where(before == NO_ID, floor, np.maximum(before, floor))
        falsy = (before == NO_ID) | (before == 0)  # ``x or y`` passes over None and 0
        if own is not None:
            result[mine] = np.maximum(own, np.where(falsy, own, before))
        else:
            after = point_versions[np.minimum(index, len(points) - 1)] if len(points) else np.zeros(len(index))
            after = np.where(index < len(points), after, newest if newest is not None else NO_ID)
            result[mine] = np.where(falsy, after, before)
    return result

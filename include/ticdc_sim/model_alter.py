"""An ALTER's effect on a lineage's rows: every live row rewritten at the DDL's TSO.

Rows are transformed spec by spec (:func:`~ticdc_sim.ddl_values.transform_row`),
checked against the post schema the way TiDB's DDL would (NOT NULL, ranges, unique indexes) and
re-keyed when the handle key changed. A rewrite keeps each row's ``origin`` (its last DML write).
"""

from __future__ import annotations

from ticdc_lake.errors import SchemaError
from ticdc_lake.schema.table_schema import TableSchema
from ticdc_sim.column_types import normalize_value
from ticdc_sim.ddl_specs import AlterSpec, apply_spec, check_specs
from ticdc_sim.ddl_values import transform_row
from ticdc_sim.model_lineage import Key, Lineage, Row, RowVersion


def expected_post_schema(pre: TableSchema, specs: tuple[AlterSpec, ...], where: str) -> list[TableSchema]:
    """The schema after each spec (``[pre, after spec 1, ...]``)."""
    check_specs(specs, where)
    steps = [pre]
    for spec in specs:
        steps.append(apply_spec(steps[-1], spec, where))
    return steps


def check_post_schema(computed: TableSchema, announced: TableSchema, where: str) -> None:
    if (computed.columns, computed.indexes) != (announced.columns, announced.indexes):
        raise SchemaError(
            f"{where}: the DDL's table schema does not follow from its specs; build the DdlChange with "
            "ticdc_sim.ddl_changes"
        )


def rewrite_rows(
    lineage: Lineage, steps: list[TableSchema], specs: tuple[AlterSpec, ...], post: TableSchema, ts: int, sql: str
) -> None:
    """Rewrite the live rows of ``lineage`` at ``ts`` for an ALTER whose schemas are ``steps``."""
    where = f"{post.database}.{post.table}"
    label = f"{where}: DDL {sql!r}"
    key_columns = post.handle_key()
    if not key_columns and lineage.key_columns:
        raise SchemaError(f"{label}: the table would have no primary or NOT NULL unique key; the model needs one")
    new_rows: list[tuple[Key, RowVersion, Row]] = []
    for key in lineage.live_keys():
        version = lineage.current_version(key)
        assert version is not None
        assert version.row is not None
        row = dict(version.row)
        for before, after, spec in zip(steps[:-1], steps[1:], specs, strict=True):
            row = transform_row(before, after, spec, row, where)
        if specs:
            row = {c.name: normalize_value(c, row[c.name], label) for c in post.columns}
        elif [c.name for c in lineage.schema.columns] != [c.name for c in post.columns]:
            raise SchemaError(f"{label}: the columns changed but no ALTER specs say how; pass the specs")
        new_rows.append((key, version, row))
    _check_unique(post, [row for _, _, row in new_rows], label)
    staged: dict[Key, RowVersion] = {}
    for old_key, version, row in new_rows:
        # A keyless table keeps its hidden row ids (``model_apply``).
        new_key = tuple(row[name] for name in key_columns) if key_columns else old_key
        if new_key != old_key:
            staged.setdefault(old_key, RowVersion(ts, None, None))
        if new_key != old_key or row != version.row:
            staged[new_key] = RowVersion(ts, row, version.origin)
    for key, staged_version in staged.items():
        lineage.append(key, staged_version)
    lineage.key_columns = key_columns


def _check_unique(schema: TableSchema, rows: list[Row], label: str) -> None:
    """TiDB refuses an index/key change that leaves duplicate values in a unique index."""
    for index in schema.indexes:
        if not (index.unique or index.primary):
            continue
        seen: set[tuple[object, ...]] = set()
        for row in rows:
            values = tuple(row[c] for c in index.columns)
            if any(v is None for v in values):
                if index.primary:
                    raise SchemaError(f"{label}: primary key {index.columns} would hold NULL")
                continue
            if values in seen:
                raise SchemaError(f"{label}: duplicate entry {values!r} for unique index {index.name!r}")
            seen.add(values)

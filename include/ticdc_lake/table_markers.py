"""Names of what apply records on target tables: snapshot summary keys and table properties.

Plain constants, shared by the Spark writers and the pyiceberg readers (status, consistent reads).
"""

from __future__ import annotations

#: Snapshot summary: the TSO up to which the table's events are applied by this commit.
APPLIED_TS = "ticdc.applied-ts"
#: Snapshot summary: the pipeline, run and run watermark of the commit.
PIPELINE = "ticdc.pipeline"
RUN_ID = "ticdc.run-id"
WATERMARK = "ticdc.watermark"
#: Table property: the commit TSO of the last DDL applied (a DDL need not write a snapshot).
DDL_APPLIED_TS = "ticdc.ddl-applied-ts"
#: Table property: the pipeline that created the table or applied a DDL to it last (a table no row
#: was applied to yet carries no snapshot saying whose it is).
DDL_PIPELINE = "ticdc.ddl-pipeline"
#: Table property: the commit TSO of the DROP TABLE that left this table in place (on_drop_table: keep).
DROPPED_AT = "ticdc.dropped-at"

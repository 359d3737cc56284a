"""End-to-end fixtures."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e_support import Pipeline

from ticdc_lake.cli.airflow_runner import AirflowRunner


@pytest.fixture
def e2e_pipeline(tmp_path: Path, kafka_bootstrap: str) -> Callable[..., Pipeline]:
    def make(protocol: str = "simple-json", schema_registry_url: str | None = None) -> Pipeline:
        suffix = uuid.uuid4().hex[:8]
        home = tmp_path / "home"
        (home / "catalog").mkdir(parents=True)
        pipeline = Pipeline(
            id=f"e2e_{suffix}",
            topic=f"e2e-{suffix}",
            config_path=tmp_path / "pipelines.yaml",
            runner=AirflowRunner(
                tmp_path / "airflow",
                tmp_path / "pipelines.yaml",
                kafka_bootstrap,
                schema_registry_url=schema_registry_url,
            ),
            home=home,
            protocol=protocol,
        )
        pipeline.write_config()
        return pipeline

    return make

"""The pipeline DAG's ``rebuild`` parameter reaches the transform job as ``--rebuild JSON``."""

from __future__ import annotations

from pathlib import Path

import pytest

from ticdc_lake.errors import ConfigError
from ticdc_lake.spark.entrypoint import rebuild_names
from ticdc_lake_airflow.dag_factory import build_all_dags
from ticdc_lake_airflow.spark_submit_operator import PipelineSparkSubmitOperator

ROOT = Path(__file__).resolve().parents[3]
DEMO_CONFIG = ROOT / "include" / "pipelines.yaml"


def test_the_dag_has_an_empty_rebuild_param_that_the_transform_task_passes_as_json() -> None:
    dag = next(iter(build_all_dags(DEMO_CONFIG).values()))
    assert dag.params["rebuild"] == []
    # Optional in the trigger form: Airflow marks a parameter required unless its type allows null.
    assert "null" in dag.params.get_param("rebuild").schema["type"]
    transform = dag.get_task("transform")
    assert isinstance(transform, PipelineSparkSubmitOperator)
    args = transform.application_args or []
    assert args[-2:] == ["--rebuild", "{{ (params.rebuild or []) | tojson }}"]
    template = dag.get_template_env().from_string(args[-1])
    rendered = {
        "default": template.render(params={"rebuild": []}),
        "cleared": template.render(params={"rebuild": None}),
        "tables": template.render(params={"rebuild": ["shop.orders", "shop.o'd<d>"]}),
        "star": template.render(params={"rebuild": "*"}),
    }
    assert {k: rebuild_names(v) for k, v in rendered.items()} == {
        "default": [],
        "cleared": [],
        "tables": ["shop.orders", "shop.o'd<d>"],
        "star": ["*"],
    }


def test_rebuild_names_takes_json_or_a_plain_name_and_refuses_other_shapes() -> None:
    assert rebuild_names("") == []
    assert rebuild_names('""') == []
    assert rebuild_names("shop.orders") == ["shop.orders"]
    assert rebuild_names('["a.b", " "]') == ["a.b"]
    with pytest.raises(ConfigError, match="expected a JSON list"):
        rebuild_names('{"a": 1}')

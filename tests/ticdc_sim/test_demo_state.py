"""The demo continues its saved upstream only when that was saved by this version of the simulator."""

from __future__ import annotations

import dataclasses
import pickle
import types
from pathlib import Path

import pytest

from ticdc_sim.demo import _saved_upstream
from ticdc_sim.simulator import TicdcSimulator
from ticdc_sim.workload import WorkloadConfig


def test_a_state_of_this_version_is_continued(tmp_path: Path) -> None:
    state = tmp_path / "simulator.pkl"
    state.write_bytes(pickle.dumps(TicdcSimulator(seed=3, topic="t", partitions=1)))
    saved = _saved_upstream(state)
    assert isinstance(saved, TicdcSimulator)


def test_a_state_whose_workload_lacks_newer_settings_starts_afresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = TicdcSimulator(seed=3, topic="t", partitions=1)
    # What an older version pickled: the workload settings without the ones added since.
    old = {f.name: getattr(sim.workload.config, f.name) for f in dataclasses.fields(WorkloadConfig)}
    del old["burst_probability"]
    sim.workload.config = types.SimpleNamespace(**old)  # type: ignore[assignment]
    state = tmp_path / "simulator.pkl"
    state.write_bytes(pickle.dumps(sim))
    assert _saved_upstream(state) is None
    assert capsys.readouterr().out == (
        f"demo: the saved upstream ({state}) is from another version (no burst_probability); starting afresh\n"
    )

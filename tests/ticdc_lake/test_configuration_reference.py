"""docs/configuration.md documents every key of the pipeline file, with the code's default."""

from __future__ import annotations

import json
import re
import types
import typing
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ticdc_lake import config, maintenance_config
from ticdc_lake.config import LakeConfig
from ticdc_lake.maintenance_config import format_duration

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
#: Set by load_config from the file's path, not by the user.
INTERNAL = {"source_path"}
_ROW = re.compile(r"^\| `([^`]+)` \| (.+?) \| (.+) \|$")


def _model_of(annotation: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds and how its keys are written: ``.`` (one), ``.<name>.`` (a dict), ``[].`` (a list).

    ``X | None`` is read as ``X`` (an optional block is still documented key by key).
    """
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        return _model_of(next(arg for arg in args if arg is not type(None)))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, "."
    if origin is dict and isinstance(args[1], type) and issubclass(args[1], BaseModel):
        return args[1], ".<name>."
    if origin is list and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0], "[]."
    return None, ""


def _keys(model: type[BaseModel], prefix: str = "") -> dict[str, str]:
    """Every key under ``model`` → its default as the reference writes it (``required``, ``see below``)."""
    keys: dict[str, str] = {}
    for name, field in model.model_fields.items():
        if name in INTERNAL:
            continue
        key = prefix + name
        sub, joint = _model_of(field.annotation)
        if field.is_required():
            keys[key] = "required"
        elif sub is not None and joint == ".":
            keys[key] = "see below"
        else:
            keys[key] = _written(field.get_default(call_default_factory=True))
        if sub is not None:
            keys.update(_keys(sub, key + joint))
    return keys


def _written(value: Any) -> str:
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, timedelta):
        return f"`{format_duration(value)}`"
    if isinstance(value, datetime):
        return f"`{value.isoformat()}`"
    if isinstance(value, list | dict) or value == "":
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def _documented() -> dict[str, str]:
    rows = {}
    for line in REFERENCE.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match is not None and match.group(1) != "key":
            assert match.group(1) not in rows, f"{match.group(1)} is documented twice"
            rows[match.group(1)] = match.group(2)
    return rows


def test_every_key_is_documented_with_its_default() -> None:
    expected = _keys(LakeConfig)
    documented = _documented()
    missing = sorted(set(expected) - set(documented))
    assert missing == [], f"keys missing from docs/configuration.md: {missing}"
    stale = sorted(set(documented) - set(expected))
    assert stale == [], f"docs/configuration.md documents keys the code does not have: {stale}"
    wrong = {key: (documented[key], default) for key, default in expected.items() if documented[key] != default}
    assert wrong == {}, "documented default != code's default: " + repr(wrong)


def test_the_walk_sees_nested_and_repeated_models() -> None:
    keys = _keys(LakeConfig)
    assert keys["pipelines[].policies.pending_schema_timeout_s"] == "`900`"
    assert keys["catalogs.<name>.maintenance.schedules.orphans"] == "`30 4 * * 0`"
    assert keys["catalogs.<name>.maintenance.retention"] == "`7d`"
    assert keys["pipelines[].target.include"] == '`["*.*"]`'
    assert keys["pipelines[].kafka"] == "required"
    assert keys["pipelines[].codec"] == "see below"
    assert "source_path" not in keys
    assert keys["pipelines[].kafka.consumers"] == "`null`"
    assert len(keys) == 62


def _walked(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    seen.add(model)
    for field in model.model_fields.values():
        sub, _ = _model_of(field.annotation)
        if sub is not None and sub not in seen:
            _walked(sub, seen)
    return seen


def test_the_walk_reaches_every_model_of_the_configuration() -> None:
    """A model the walk cannot reach (held in a shape _model_of does not read) would go undocumented."""
    defined = {
        value
        for module in (config, maintenance_config)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
        and value.model_fields
    }
    assert defined - _walked(LakeConfig, set()) == set()
    assert _model_of(config.CodecOptions | None) == (config.CodecOptions, ".")

"""JSON strings that hold a lone UTF-16 surrogate escape (``"\\ud800"`` without its pair).

JSON allows such an escape, Python's parser turns it into a lone surrogate code point, but that is
not a Unicode character: it cannot be written as UTF-8, so a row image holding it could never be
stored (the Arrow and Iceberg writers fail on it, and the whole decode task with them). TiCDC's
encoders (Go) never write one; a message that holds one is corrupt and is quarantined like any
other undecodable message, naming where the string is.
"""

from __future__ import annotations

import re

#: A ``\\u`` escape of a UTF-16 surrogate (D800-DFFF), the only way such a code point enters parsed
#: JSON (the raw bytes are decoded as strict UTF-8 first). Cheap to search; only messages that match
#: are walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate(text: str, doc: object) -> str | None:
    """Where ``doc`` (parsed from ``text``) holds a lone surrogate, as a JSON path; None if nowhere."""
    if _SURROGATE_ESCAPE.search(text) is None:
        return None
    return _find(doc, "$")


def _find(value: object, path: str) -> str | None:
    if isinstance(value, str):
        return None if _encodable(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if _encodable(key) else f"{path}.<key {key!a}>"
            if not _encodable(key):
                return where
            found = _find(item, where)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _find(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def lone_surrogate_reason(where: str) -> str:
    """The quarantine reason of a message whose JSON holds a lone surrogate at ``where``."""
    return (
        f"the JSON string at {where} holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its "
        "pair), which is not a Unicode character and cannot be stored; TiCDC never writes one, so the "
        "message is corrupt: check what produced it"
    )

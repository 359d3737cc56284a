"""Keeping secrets out of what the product prints: logs, error messages, the run ledger, manifests.

Secrets reach the product from Airflow connections (Kafka ``sasl.password``, ``ssl.key.password``,
schema registry basic auth) and from the pipeline configuration (catalog properties such as
``s3.secret-access-key`` or ``jdbc.password``, passed to Spark as ``spark.sql.catalog.*``).
Airflow masks what is registered with its ``mask_secret`` in task logs; this module decides
which settings are secret (:func:`is_sensitive_key`) and removes secrets from text the product
writes itself (:func:`redact`), where Airflow's masker does not reach (the ledger, manifests,
messages of errors raised inside Spark jobs).

Two mechanisms, both applied by :func:`redact`:

* values registered with :func:`register_secret` (every value of a sensitive key that
  :func:`register_secrets` sees) are replaced wherever they occur;
* text that *looks* like a credential is masked even when nobody registered it: the value after a
  sensitive ``key=`` / ``key: `` / ``"key": "..."``, and the password of ``scheme://user:password@host``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

#: Key words that make a setting secret (case-insensitive, anywhere in the key): ``sasl.password``,
#: ``ssl.key.password``, ``s3.secret-access-key``, ``basic.auth.user.info``, ``sasl.jaas.config``,
#: ``sasl.oauthbearer.client.secret``, ``token``, ``credential``, ``AWS_SECRET_ACCESS_KEY``...
_SENSITIVE_WORDS = re.compile(
    r"passw(or)?d|secret|token|credential|private|jaas|user[._-]?info|api[._-]?key|access[._-]?key|"
    r"auth[._-]?key|signature|keystore|key[._-]?pem|oauthbearer[._-]?config|connection[._-]?string",
    re.IGNORECASE,
)
#: Keys that match a word above but name a file or a public identifier, not a secret.
_NOT_SECRET = re.compile(
    r"(location|path|file|type|algorithm|mechanism|provider|enabled|access[._-]?key[._-]?id)$", re.IGNORECASE
)

#: ``key=value`` / ``key: value`` / ``"key": "value"`` with a sensitive key (value up to a separator).
_ASSIGNMENT = re.compile(
    r"""(?P<key>["']?[\w.\-]*(?:passw(?:or)?d|secret|token|credential|jaas[\w.\-]*|user[._-]?info)[\w.\-]*["']?)"""
    r"""(?P<sep>\s*[=:]\s*)(?P<quote>["'])?(?P<value>(?(quote)[^"'\n]*|[^\s,;&"'}\]]*))""",
    re.IGNORECASE,
)
#: ``scheme://user:password@host``.
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)(?P<password>[^\s@/]+)(?P<at>@)")

#: Registered secrets shorter than this are not replaced in text (they would mask common words).
MIN_SECRET_LENGTH = 4

_lock = threading.Lock()
_secrets: set[str] = set()


def is_sensitive_key(key: str) -> bool:
    """Whether a setting named ``key`` holds a secret (``sasl.password`` yes, ``ssl.ca.location`` no)."""
    return _SENSITIVE_WORDS.search(key) is not None and _NOT_SECRET.search(key) is None


def register_secret(value: object) -> None:
    """Remember ``value`` as a secret for :func:`redact` (strings of at least MIN_SECRET_LENGTH)."""
    if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(value)


def register_secrets(settings: Mapping[str, Any]) -> list[str]:
    """Register the values of ``settings``' sensitive keys (nested mappings too); returns them."""
    found: list[str] = []
    for key, value in settings.items():
        if isinstance(value, Mapping):
            found.extend(register_secrets(value))
        elif isinstance(value, str):
            for secret in sensitive_values({key: value}):
                register_secret(secret)
                found.append(secret)
    return found


def sensitive_values(settings: Mapping[str, Any]) -> list[str]:
    """The secrets in ``settings``, without registering them: values of sensitive keys, and
    passwords embedded in other values (``jdbc:postgresql://h/db?password=x``, ``s3://u:x@h``)."""
    found: list[str] = []
    for key, value in settings.items():
        if not isinstance(value, str) or not value:
            continue
        if is_sensitive_key(str(key)):
            found.append(value)
        else:
            found.extend(embedded_secrets(value))
    return found


def embedded_secrets(text: str) -> list[str]:
    """Passwords inside ``text``: of ``scheme://user:password@host`` and of sensitive ``key=value`` pairs."""
    found = [m["password"] for m in _URL_PASSWORD.finditer(text)]
    found += [
        m["value"]
        for m in _ASSIGNMENT.finditer(text)
        if m["value"] and m["value"] != MASK and not _NOT_SECRET.search(m["key"].strip("\"'"))
    ]
    return [s for s in found if len(s) >= MIN_SECRET_LENGTH]


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with registered secrets, ``secrets`` and credential-looking values replaced by MASK."""
    with _lock:
        known = set(_secrets)
    known.update(s for s in secrets if len(s) >= MIN_SECRET_LENGTH)
    # Longest first: a secret that contains another is masked whole.
    for secret in sorted(known, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}{m['at']}", text)
    return _ASSIGNMENT.sub(_mask_assignment, text)


def _mask_assignment(match: re.Match[str]) -> str:
    key = match["key"].strip("\"'")
    if _NOT_SECRET.search(key) or not match["value"] or match["value"] == MASK:
        return match.group(0)
    return f"{match['key']}{match['sep']}{match['quote'] or ''}{MASK}"


def redact_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``settings`` with the values of sensitive keys replaced by MASK (for printing)."""
    return {k: (MASK if is_sensitive_key(str(k)) and v not in (None, "") else v) for k, v in settings.items()}

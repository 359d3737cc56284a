"""Create an S3 object only if its key is free: ``PutObject`` with ``If-None-Match: *``.

``pyarrow.fs`` cannot send the header, so a manifest publish on S3 would otherwise be
check-then-write (docs/object-storage.md, "Conditional writes"). AWS S3 (since 2024), MinIO and
S3Proxy answer such a PUT with 412 Precondition Failed when the key exists, atomically. This is
one request signed with AWS Signature Version 4 by the standard library, with the endpoint,
region and addressing style of :mod:`ticdc_lake.object_store` and the key pair of the standard
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (/ ``AWS_SESSION_TOKEN``) variables. The keys are
used to sign and nothing else: never logged, never part of a message.

Without a key pair in the environment (an instance role, a profile) the caller falls back to
check-then-write: :func:`put_if_absent` returns None.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from ticdc_lake.object_store import S3Settings

TIMEOUT_S = 30.0


def put_if_absent(path: str, payload: bytes, settings: S3Settings | None = None) -> bool | None:
    """Create ``bucket/key`` (``path``) with ``payload`` unless it exists.

    True: created. False: the key exists (412), or a concurrent conditional write won (409).
    None: no key pair in the environment to sign with; the caller must fall back. Any other
    answer is an ``OSError`` naming the object and the status (never the credentials).
    """
    access_key = os.environ.get("AWS_ACCESS_KEY_ID")
    secret_key = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not access_key or not secret_key:
        return None
    settings = settings or S3Settings.from_environment()
    bucket, _, key = path.partition("/")
    if not bucket or not key:
        raise ValueError(f"{path!r} is not bucket/key")
    scheme, host, uri = _address(settings, bucket, key)
    now = datetime.now(UTC)
    payload_hash = hashlib.sha256(payload).hexdigest()
    headers = {
        "host": host,
        "if-none-match": "*",
        "x-amz-content-sha256": payload_hash,
        "x-amz-date": now.strftime("%Y%m%dT%H%M%SZ"),
    }
    token = os.environ.get("AWS_SESSION_TOKEN")
    if token:
        headers["x-amz-security-token"] = token
    headers["authorization"] = _authorization(
        "PUT", uri, headers, payload_hash, now, settings.region, access_key, secret_key
    )
    connection_type = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    connection = connection_type(host, timeout=TIMEOUT_S)
    try:
        connection.request("PUT", uri, body=payload, headers={**headers, "content-length": str(len(payload))})
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    if response.status == 200:
        return True
    if response.status in (409, 412):
        return False
    raise OSError(
        f"conditional PUT of s3://{path} at {settings.describe()} failed: HTTP {response.status} {_error_code(body)}"
    )


def _address(settings: S3Settings, bucket: str, key: str) -> tuple[str, str, str]:
    """Scheme, host and request path of ``bucket/key`` (path-style or virtual-host style)."""
    encoded = "/" + quote(key, safe="/~")
    if settings.endpoint is None:
        host = f"s3.{settings.region}.amazonaws.com"
        scheme = "https"
    else:
        parts = urlsplit(settings.endpoint)
        scheme, host = parts.scheme, parts.netloc
    if settings.path_style:
        return scheme, host, f"/{quote(bucket, safe='')}{encoded}"
    return scheme, f"{bucket}.{host}", encoded


def _authorization(
    method: str,
    uri: str,
    headers: dict[str, str],
    payload_hash: str,
    now: datetime,
    region: str,
    access_key: str,
    secret_key: str,
) -> str:
    names = sorted(headers)
    canonical = "\n".join(
        [
            method,
            uri,
            "",  # no query string
            "".join(f"{name}:{headers[name].strip()}\n" for name in names),
            ";".join(names),
            payload_hash,
        ]
    )
    day = now.strftime("%Y%m%d")
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", headers["x-amz-date"], scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"


def _error_code(body: bytes) -> str:
    """The ``<Code>`` of an S3 error document, for the message (the body holds no credentials)."""
    text = body.decode("utf-8", "replace")
    start, end = text.find("<Code>"), text.find("</Code>")
    return text[start + len("<Code>") : end] if 0 <= start < end else "(no S3 error code)"

"""Create an S3 object only if its key is free: ``PutObject`` with ``If-None-Match: *``.

``pyarrow.fs`` cannot send the header, so a manifest publish on S3 would otherwise be
check-then-write (docs/object-storage.md, "Conditional writes"). AWS S3 (since 2024), MinIO and
S3Proxy answer such a PUT with 412 Precondition Failed when the key exists, atomically. The
request goes through boto3 (``put_object(IfNoneMatch="*")``), with the endpoint, region and
addressing style of :mod:`ticdc_lake.object_store` and the AWS SDK's default credential chain
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, a profile, an instance
role). Credentials are never logged and never part of a message.

When the chain finds no credentials the caller falls back to check-then-write:
:func:`put_if_absent` returns None.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from ticdc_lake.object_store import S3Settings

TIMEOUT_S = 30.0


#: Environment variables of the SDK's credential chain: a client is reused while they stay the same.
_CREDENTIAL_ENVS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


def s3_client(settings: S3Settings) -> Any:
    """A boto3 S3 client for ``settings``, made once per settings and credential environment."""
    return _client(settings, tuple(os.environ.get(name) for name in _CREDENTIAL_ENVS))


@functools.lru_cache(maxsize=8)
def _client(settings: S3Settings, credential_env: tuple[str | None, ...]) -> Any:
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    config = Config(
        region_name=settings.region,
        connect_timeout=TIMEOUT_S,
        read_timeout=TIMEOUT_S,
        retries={"mode": "standard", "max_attempts": 3},
        s3={"addressing_style": "path" if settings.path_style else "virtual"},
        # Plain PUTs with Content-MD5-free bodies: S3-compatible servers (S3Proxy, older MinIO)
        # do not all accept the SDK's default trailing CRC checksums.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return boto3.session.Session().client("s3", endpoint_url=settings.endpoint, config=config)


def put_if_absent(path: str, payload: bytes, settings: S3Settings | None = None) -> bool | None:
    """Create ``bucket/key`` (``path``) with ``payload`` unless it exists.

    True: created. False: the key exists (412), or a concurrent conditional write won (409).
    None: no credentials to sign with; the caller must fall back. Any other answer is an
    ``OSError`` naming the object and the status (never the credentials).
    """
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError  # type: ignore[import-untyped]

    settings = settings or S3Settings.from_environment()
    bucket, _, key = path.partition("/")
    if not bucket or not key:
        raise ValueError(f"{path!r} is not bucket/key")
    try:
        s3_client(settings).put_object(Bucket=bucket, Key=key, Body=payload, IfNoneMatch="*")
    except NoCredentialsError:
        return None
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status in (409, 412):
            return False
        code = exc.response.get("Error", {}).get("Code") or "(no S3 error code)"
        raise OSError(f"conditional PUT of s3://{path} at {settings.describe()} failed: HTTP {status} {code}") from None
    except BotoCoreError as exc:
        raise OSError(f"conditional PUT of s3://{path} at {settings.describe()} failed: {exc}") from None
    return True

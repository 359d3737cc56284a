"""The exclusive create of an S3 object (``If-None-Match: *``), on the local S3 server."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from ticdc_lake.conditional_put import put_if_absent, s3_client
from ticdc_lake.object_store import S3Settings


@pytest.fixture
def bucket(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new empty bucket on the local S3 server, with this process's AWS_* pointing at it; removed afterwards."""
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    name = f"cond-{uuid.uuid4().hex[:12]}"
    options = S3Settings.from_environment().pyarrow_options()
    # Its own key pair: a test may change the environment's to check failures.
    keys = {"access_key": s3_env["AWS_ACCESS_KEY_ID"], "secret_key": s3_env["AWS_SECRET_ACCESS_KEY"]}
    s3 = pafs.S3FileSystem(allow_bucket_creation=True, allow_bucket_deletion=True, **keys, **options)
    s3.create_dir(name)
    yield name
    with contextlib.suppress(OSError):  # best effort: S3Proxy's filesystem store can race on its folders
        s3.delete_dir(name)


def _read(path: str) -> bytes:
    with S3Settings.from_environment().pyarrow_filesystem().open_input_stream(path) as stream:
        data: bytes = stream.read()
    return data


def test_only_the_first_put_creates_the_object(bucket: str) -> None:
    path = f"{bucket}/landing/p/manifests/000000000001.json"
    assert put_if_absent(path, b'{"run": 1}') is True
    assert put_if_absent(path, b'{"run": 2}') is False
    assert _read(path) == b'{"run": 1}'
    assert put_if_absent(f"{bucket}/landing/p/manifests/000000000002.json", b"{}") is True


def test_failures_name_the_object_and_status_but_never_the_key(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = S3Settings.from_environment().describe()
    with pytest.raises(OSError, match="NoSuchBucket") as info:
        put_if_absent("no-such-bucket-cond/x.json", b"{}")
    assert (
        str(info.value)
        == f"conditional PUT of s3://no-such-bucket-cond/x.json at {endpoint} failed: HTTP 404 NoSuchBucket"
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-123")
    with pytest.raises(OSError, match="SignatureDoesNotMatch") as info:
        put_if_absent(f"{bucket}/x.json", b"{}")
    assert str(info.value) == (
        f"conditional PUT of s3://{bucket}/x.json at {endpoint} failed: HTTP 403 SignatureDoesNotMatch"
    )


def test_without_credentials_the_caller_falls_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    # Nothing else in the SDK's chain either: no shared files, no instance metadata service.
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert put_if_absent("any-bucket/x.json", b"{}") is None


def test_addressing_styles() -> None:
    aws = s3_client(S3Settings(endpoint=None, region="eu-west-3", path_style=False))
    assert aws.meta.endpoint_url == "https://s3.eu-west-3.amazonaws.com"
    assert aws.meta.region_name == "eu-west-3"
    assert aws.meta.config.s3 == {"addressing_style": "virtual"}
    minio = s3_client(S3Settings(endpoint="http://minio:9000", region="us-east-1", path_style=True))
    assert minio.meta.endpoint_url == "http://minio:9000"
    assert minio.meta.config.s3 == {"addressing_style": "path"}

"""S3 settings for every object-store URI the product reads or writes, in one place.

Landing (``landing_uri``), claim-check objects (``codec.claim_check_storage_uri``), the schema
baseline (``schema_baseline_uri``) and the Iceberg warehouse may all be ``s3://bucket/prefix``.
They are reached through three clients: ``pyarrow.fs`` (landing, claim-check, baseline, and
pyiceberg's FileIO), Iceberg's Java ``S3FileIO`` (Spark) and pyiceberg. This module turns one
set of settings into the options of each, so that the three always talk to the same store.

Where the settings come from: the process environment, with the AWS SDKs' standard names, so
that the Airflow worker, ``spark-submit``, the Spark driver and local executors (which inherit
the environment) and the AWS SDKs themselves all agree without the settings passing through
the pipeline YAML or any command line:

- ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``: the S3 API endpoint (``http://127.0.0.1:19900``
  for the local test server, MinIO's URL, ...); unset means AWS S3 itself.
- ``AWS_REGION`` or ``AWS_DEFAULT_REGION``: the signing region (default ``us-east-1``).
- ``TICDC_LAKE_S3_PATH_STYLE``: ``true``/``false``; path-style requests (``endpoint/bucket/key``)
  instead of virtual-host style (``bucket.endpoint/key``). Default: true when an endpoint is set
  (MinIO, S3Proxy, Ceph need it), false for AWS.
- ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN`` (or any other source of
  the SDKs' default credential chain: profile, instance role). Credentials are secrets: this
  module never reads them, so they cannot end up in a Spark setting, a log line, a command line
  or the run ledger; each SDK picks them up from the environment itself.

Buckets are never created here: a missing bucket is a configuration error of the deployment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

import pyarrow.fs as pafs

ENDPOINT_ENVS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
PATH_STYLE_ENV = "TICDC_LAKE_S3_PATH_STYLE"
DEFAULT_REGION = "us-east-1"
#: Iceberg's Java FileIO for S3 (in ``iceberg-aws-bundle``, fetched with the Spark jars).
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
#: URI schemes served by :class:`S3Settings`.
S3_SCHEMES = ("s3",)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ObjectStoreError(ValueError):
    """The S3 settings in the environment are unusable (a ValueError: callers wrap it in theirs)."""


def is_object_store(uri: str) -> bool:
    """Whether ``uri`` names an object-store location (``s3://...``) rather than a local path."""
    return urlsplit(uri).scheme in S3_SCHEMES


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where the S3 API is and how to address it; never credentials (see the module doc)."""

    #: Full URL with scheme (``http://127.0.0.1:19900``); None for AWS S3.
    endpoint: str | None = None
    region: str = DEFAULT_REGION
    path_style: bool = False

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> S3Settings:
        """The settings of this process (``env`` defaults to ``os.environ``)."""
        source = os.environ if env is None else env
        endpoint = next((source[name] for name in ENDPOINT_ENVS if source.get(name)), None)
        if endpoint is not None:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                names = " or ".join(ENDPOINT_ENVS)
                raise ObjectStoreError(
                    f"{names} is {endpoint!r}: the S3 endpoint must be a URL with scheme and host, "
                    "e.g. http://127.0.0.1:19900 or https://minio.example.com"
                )
            endpoint = endpoint.rstrip("/")
        region = next((source[name] for name in REGION_ENVS if source.get(name)), DEFAULT_REGION)
        text = source.get(PATH_STYLE_ENV, "").strip().lower()
        if text in _TRUE:
            path_style = True
        elif text in _FALSE:
            path_style = False
        elif not text:
            path_style = endpoint is not None
        else:
            raise ObjectStoreError(f"{PATH_STYLE_ENV} is {text!r}: use true or false")
        return cls(endpoint=endpoint, region=region, path_style=path_style)

    def describe(self) -> str:
        """For messages: where requests go (no credentials)."""
        where = self.endpoint or "AWS S3"
        style = "path-style" if self.path_style else "virtual-host style"
        return f"{where} (region {self.region}, {style})"

    # -- pyarrow.fs ----------------------------------------------------------------------------

    def pyarrow_options(self) -> dict[str, object]:
        """Keyword arguments of ``pyarrow.fs.S3FileSystem`` (credentials: the default chain)."""
        options: dict[str, object] = {"region": self.region, "force_virtual_addressing": not self.path_style}
        if self.endpoint is not None:
            parts = urlsplit(self.endpoint)
            options["endpoint_override"] = parts.netloc
            options["scheme"] = parts.scheme
        return options

    def pyarrow_filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(**self.pyarrow_options())

    # -- Iceberg -------------------------------------------------------------------------------

    def iceberg_properties(self) -> dict[str, str]:
        """Catalog properties for an ``s3://`` warehouse, read by Spark's Iceberg and by pyiceberg.

        Java ``S3FileIO`` reads ``io-impl``, ``s3.endpoint``, ``s3.path-style-access`` and
        ``client.region``; pyiceberg's ``PyArrowFileIO`` reads ``s3.endpoint``, ``client.region``
        and ``s3.force-virtual-addressing``. Each ignores the other's keys.
        """
        properties = {
            "io-impl": S3_FILE_IO,
            "client.region": self.region,
            "s3.path-style-access": str(self.path_style).lower(),
            "s3.force-virtual-addressing": str(not self.path_style).lower(),
        }
        if self.endpoint is not None:
            properties["s3.endpoint"] = self.endpoint
        return properties

    def spark_executor_env(self) -> dict[str, str]:
        """``spark.executorEnv.*`` carrying these settings to executors on other hosts.

        Local executors inherit the driver's environment; executors of a cluster do not, and the
        Python code on them (decode workers reading landed batches and claim-check objects) reads
        the settings from its environment. Credentials are not passed this way (a Spark setting
        is visible in the UI and the event log): give the cluster's workers their own.
        """
        env = {"AWS_REGION": self.region, PATH_STYLE_ENV: str(self.path_style).lower()}
        if self.endpoint is not None:
            env["AWS_ENDPOINT_URL_S3"] = self.endpoint
        return {f"spark.executorEnv.{name}": value for name, value in env.items()}


def open_uri(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and base path (no trailing ``/``) of ``/abs/path``, ``file:///abs/path`` or ``s3://bucket/prefix``.

    Raises ``ValueError`` (including :class:`ObjectStoreError`) or ``OSError``; callers turn them
    into their own error naming the setting.
    """
    if uri.startswith("/"):
        return pafs.LocalFileSystem(), uri.rstrip("/") or "/"
    parts = urlsplit(uri)
    if parts.scheme in S3_SCHEMES:
        if not parts.netloc:
            raise ObjectStoreError(f"{uri!r} names no bucket; use s3://bucket/prefix")
        if parts.query or parts.fragment:
            raise ObjectStoreError(
                f"{uri!r}: S3 options do not go into the URI; set them in the environment "
                f"({', '.join((*ENDPOINT_ENVS, *REGION_ENVS, PATH_STYLE_ENV))})"
            )
        path = f"{parts.netloc}/{parts.path.strip('/')}".rstrip("/")
        settings = S3Settings.from_environment()
        filesystem = settings.pyarrow_filesystem()
        # One request up front: a missing bucket would otherwise read as "no files yet".
        try:
            found = filesystem.get_file_info(parts.netloc).type != pafs.FileType.NotFound
        except OSError as exc:
            raise ObjectStoreError(
                f"{exc} (S3 at {settings.describe()}); check the credentials (AWS_ACCESS_KEY_ID, "
                "AWS_SECRET_ACCESS_KEY), the endpoint and the bucket's permissions"
            ) from exc
        if not found:
            raise ObjectStoreError(
                f"bucket {parts.netloc!r} of {uri!r} does not exist at {settings.describe()}: create it (ticdc-lake "
                "never creates buckets) or fix the URI or the endpoint (AWS_ENDPOINT_URL_S3)"
            )
        return filesystem, path
    if parts.scheme == "file":
        filesystem, path = pafs.FileSystem.from_uri(uri)
        return filesystem, path.rstrip("/") or "/"
    raise ObjectStoreError(f"{uri!r}: unsupported scheme {parts.scheme!r}; use /abs/path, file:///abs/path or s3://")


def catalog_properties(warehouse: str, configured: Mapping[str, str]) -> dict[str, str]:
    """The Iceberg catalog properties for ``warehouse``: S3 ones for ``s3://``, then ``configured`` (which win)."""
    base = S3Settings.from_environment().iceberg_properties() if is_object_store(warehouse) else {}
    return {**base, **configured}

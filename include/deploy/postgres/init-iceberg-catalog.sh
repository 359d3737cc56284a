#!/usr/bin/env bash
# Runs once, when the PostgreSQL volume is created (/docker-entrypoint-initdb.d).
# The image creates the Airflow metadata database from POSTGRES_DB; this adds the Iceberg JDBC
# catalog's database and role, with the password from ICEBERG_JDBC_PASSWORD (the same variable
# the pipeline file reads, so the two cannot drift apart).
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$ICEBERG_JDBC_PASSWORD" <<'SQL'
CREATE ROLE iceberg LOGIN PASSWORD :'password';
CREATE DATABASE iceberg OWNER iceberg;
SQL

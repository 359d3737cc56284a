# syntax=docker/dockerfile:1
# The image of the scale-out deployment (docker-compose.yml): Airflow 3.3.2 on Python 3.11,
# Java 17 for spark-submit, the pinned Python dependencies, the project code and the Spark jars.
# The compose file runs the Airflow services and the Spark standalone worker from it, so that
# Spark executors have exactly the driver's Python and library.
#
#   docker build -t ticdc-lake-airflow:0.1.0 .

# --- Spark jars from Maven Central -------------------------------------------------------------
FROM maven:3.9.11-eclipse-temurin-17 AS jars
# The embedded default's jars (Iceberg Spark runtime, SQLite JDBC), exactly as `make jars`.
COPY include/jvm/spark/pom.xml /build/spark/pom.xml
RUN mvn -q -B -f /build/spark/pom.xml dependency:copy-dependencies \
        -DexcludeTransitive=true -DoutputDirectory=/jars/spark
# The project's own JVM decoder, built from source as `make jars` builds it (docs/jvm-decoder.md).
COPY include/jvm/decoder /build/decoder
RUN mvn -q -B -f /build/decoder/pom.xml package -Dbuild.dir=/build/decoder-out \
    && cp /build/decoder-out/ticdc-lake-jvm.jar /jars/spark/
# What only the scale-out deployment needs, kept out of include/jvm/spark/pom.xml: the PostgreSQL
# JDBC driver for the Iceberg JDBC catalog (Iceberg's AWS bundle for S3FileIO is in the pom).
ARG DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.11.0
RUN for artifact in org.postgresql:postgresql:42.7.14; do \
        mvn -q -B "${DEPENDENCY_PLUGIN}:copy" -Dartifact="${artifact}" -DoutputDirectory=/jars/spark || exit 1; \
    done

# --- Java 17 runtime (copied, so the Airflow base image's Debian release does not matter) -------
FROM eclipse-temurin:17.0.15_6-jre AS java

# --- The image ---------------------------------------------------------------------------------
FROM apache/airflow:3.3.2-python3.11

USER root
COPY --from=java /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    PATH=/opt/java/openjdk/bin:${PATH}

USER airflow
# requirements.txt pins apache-airflow==3.3.2 itself, so this cannot move Airflow.
COPY --chown=airflow:root requirements.txt /opt/ticdc-lake/requirements.txt
RUN pip install --no-cache-dir -r /opt/ticdc-lake/requirements.txt

COPY --from=jars --chown=airflow:root /jars /opt/ticdc-lake/jars
COPY --chown=airflow:root include /opt/airflow/include
COPY --chown=airflow:root plugins /opt/airflow/plugins
COPY --chown=airflow:root dags /opt/airflow/dags
COPY --chown=airflow:root spark_jobs /opt/airflow/spark_jobs

# ticdc_lake is imported from its source folder (no install step), by Airflow, by spark-submit
# drivers and by the executors of a worker started from this image.
ENV PYTHONPATH=/opt/airflow/include \
    TICDC_LAKE_CONFIG=/opt/airflow/include/deploy/pipelines.yaml \
    TICDC_LAKE_JARS=/opt/ticdc-lake/jars

"""The Airflow side of ticdc-lake: Kafka connection settings, the land operator, the Spark stage
operators and the DAG factory. Imported by ``dags/``; imports the ``ticdc_lake`` library."""

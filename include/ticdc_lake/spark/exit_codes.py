"""Exit codes of the Spark stage entrypoints, and the line that ends a transform run's Spark work
(plain Python: the Airflow side reads them too)."""

#: A retry can help (a service was down, a commit conflict).
EXIT_RETRYABLE = 1
#: A retry cannot help (a bad configuration): fail the task now.
EXIT_NOT_RETRYABLE = 3

#: The start of the driver's log line once a transform run's Spark work is done (before Spark stops);
#: the ``spark-submit`` task starts loading its run report's imports when it relays this line.
TRANSFORM_DONE = "transform: done in "

"""Exit codes of the Spark stage entrypoints (plain Python: the Airflow side reads them too)."""

#: A retry can help (a service was down, a commit conflict).
EXIT_RETRYABLE = 1
#: A retry cannot help (a bad configuration): fail the task now.
EXIT_NOT_RETRYABLE = 3

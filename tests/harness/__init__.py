"""Model-based randomized harness for exactly-once apply (issue 5): scenarios, runner, soak CLI."""

"""What runs beside the service in every process: the broker, the grading pool, heartbeats, the sweeper,
retries, the archive of submission files."""

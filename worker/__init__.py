"""The grading workers: the Celery app (``worker.app``) and its thin tasks (``worker.tasks``).

Start one with ``kdt-grade worker`` (needs ``KDT_GRADE_BROKER_URL``); see ``grader.service`` for the steps."""

"""The grading workers: the Celery app (``worker.app``), its thin tasks (``worker.tasks``) and the
process's ``Service`` (``worker.process``).

Start one with ``kdt-grade worker`` (needs ``KDT_GRADE_BROKER_URL``); see ``grader.service`` for the steps."""

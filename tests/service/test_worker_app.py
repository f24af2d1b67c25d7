"""The Celery app's reliability settings (worker/app.py) and the task wiring."""
import pytest

from grader.config import load_settings
from grader.broker import COMPILE_TASK, JUDGE_TASK
from worker.app import QUEUE, TASK_TIME_LIMIT, VISIBILITY_TIMEOUT, make_app


def test_the_app_is_configured_for_long_cpu_bound_tasks_that_must_not_be_lost():
    app = make_app(load_settings(broker_url="redis://127.0.0.1:6379/15"))
    conf = app.conf
    assert conf.broker_url == "redis://127.0.0.1:6379/15"
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1
    assert conf.broker_transport_options["visibility_timeout"] == VISIBILITY_TIMEOUT > conf.task_time_limit
    assert conf.task_time_limit == TASK_TIME_LIMIT
    assert conf.task_serializer == "json" and list(conf.accept_content) == ["json"]
    assert conf.task_ignore_result and not conf.result_backend  # results live in SQL
    assert conf.task_track_started and conf.task_default_queue == QUEUE


def test_the_tasks_are_registered_under_the_names_the_service_sends():
    from worker import tasks

    assert tasks.compile_submission.name == COMPILE_TASK and tasks.judge_point.name == JUDGE_TASK
    assert {COMPILE_TASK, JUDGE_TASK} <= set(tasks.app.tasks)


def test_closing_a_channel_whose_connection_is_gone_is_a_connection_error_not_a_crash():
    """The state a broker cut left in the chaos tests: a Redis channel whose connection is None. Closing it
    (restoring unacked messages) must raise only what ``kombu.common.ignore_errors`` ignores, so the
    consumer reconnects instead of the worker exiting with "Unrecoverable error"."""
    import kombu
    from kombu.common import ignore_errors
    from kombu.transport import redis as kombu_redis

    import worker.app  # noqa: F401  (installs the guard)

    with kombu.Connection("redis://127.0.0.1:1/0") as conn:  # nothing listens: no client is ever made
        channel = object.__new__(kombu_redis.Channel)
        channel.connection = None
        with pytest.raises(ConnectionError):
            channel._connparams()
        assert isinstance(ConnectionError(), conn.connection_errors)
        with ignore_errors(conn):  # swallowed, as in Connection.release
            channel._connparams()

"""The Celery app's reliability settings (worker/app.py) and the task wiring."""
import pytest

from grader.config import load_settings
from grader.runtime.broker import COMPILE_TASK, JUDGE_TASK
from tests.grader.service.service_testlib import wait_until
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
    """The states a broker cut left in the chaos tests: a Redis channel whose connection is None, or whose
    connection's client is None (after a broker restart). Closing it
    (restoring unacked messages) must raise only what ``kombu.common.ignore_errors`` ignores, so the
    consumer reconnects instead of the worker exiting with "Unrecoverable error"."""
    import kombu
    from kombu.common import ignore_errors
    from kombu.transport import redis as kombu_redis

    import worker.app  # noqa: F401  (installs the guard)

    class TransportWithoutClient:  # the other state seen: the transport is there, its client is gone
        client = None
        default_port = 6379

    with kombu.Connection("redis://127.0.0.1:1/0") as conn:  # nothing listens: no client is ever made
        for gone in (None, TransportWithoutClient()):
            channel = object.__new__(kombu_redis.Channel)
            channel.connection = gone
            with pytest.raises(ConnectionError):
                channel._connparams()
            assert isinstance(ConnectionError(), conn.connection_errors)
            with ignore_errors(conn):  # swallowed, as in Connection.release
                channel._connparams()


def test_each_task_reaches_exactly_its_own_queue_and_every_worker_consumes_both():
    """The routing contract of the two queues (grader.runtime.broker) on a real Redis: a compile message lands in
    ``kdt-grade-compile`` only and a judge message in ``kdt-grade`` only, also after Redis lost its binding
    tables (restarted empty); a worker's consumer (no ``-Q``) takes from both; a message given back
    (``Reject(requeue=True)``, a dead pool process) returns to its own queue."""
    import redis

    from grader.runtime.broker import COMPILE_QUEUE, QUEUES, Broker, BrokerUnavailable
    from tests.faults import PrivateRedis

    private = PrivateRedis()
    try:
        settings = load_settings(broker_url=private.url)
        client = redis.Redis(port=private.port)
        broker = Broker(settings)

        def lengths():
            return {name: client.llen(name) for name in QUEUES}

        broker.send("compile", 7)
        broker.send("judge", 7, 1, 0)
        assert lengths() == {QUEUE: 1, COMPILE_QUEUE: 1}
        assert broker.waiting() == {("compile", 7, None, None), ("judge", 7, 1, 0)}
        private.restart()  # empty: no `_kombu.binding.*` table left
        broker.close()

        def answers() -> bool:  # as the outbox does: send once the restarted broker takes connections again
            try:
                broker.ping()
                return True
            except BrokerUnavailable:
                return False
        wait_until(answers, 20, "the restarted broker to answer")  # seen once: the first connection reset
        broker.send("judge", 8, 4, 1)
        broker.send("compile", 8)
        assert lengths() == {QUEUE: 1, COMPILE_QUEUE: 1}

        app = make_app(settings)
        assert sorted(app.amqp.queues.consume_from) == sorted(QUEUES)
        received = []
        with app.connection_for_read() as connection:
            consumer = app.amqp.TaskConsumer(connection, callbacks=[lambda body, message: received.append(message)])
            with consumer:
                while len(received) < 2:
                    connection.drain_events(timeout=10)
                assert sorted(m.headers["task"] for m in received) == sorted([COMPILE_TASK, JUDGE_TASK])
                assert lengths() == {QUEUE: 0, COMPILE_QUEUE: 0}
                for message in received:
                    message.reject(requeue=True)
            assert lengths() == {QUEUE: 1, COMPILE_QUEUE: 1}
            assert broker.waiting() == {("compile", 8, None, None), ("judge", 8, 4, 1)}
        broker.close()
    finally:
        private.stop()

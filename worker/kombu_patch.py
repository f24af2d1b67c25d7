"""A guard around a kombu bug that killed whole workers during a broker outage.

When the connection to Redis breaks, Celery's consumer closes the connection (``ignore_errors``:
connection errors are expected there); closing the channel restores its unacknowledged messages and so
asks for a new Redis client, which reads ``channel.connection.client.hostname`` - but the channel's
connection is already gone (None), or its transport's client is (None: seen in the chaos tests after a
broker restart, "Restoring 1 unacknowledged message(s)" then the crash). The ``AttributeError("'NoneType' object has no attribute 'hostname'")`` is not a
connection error, so it escaped ``ignore_errors`` and the worker's main process exited with "Unrecoverable
error" (seen in the chaos tests: the rig's only worker died during a broker cut and nothing graded after).

``install()`` makes ``kombu.transport.redis.Channel._connparams`` raise ``ConnectionError`` (an ``OSError``,
one of the transport's connection errors) in that state instead: the close goes on, the consumer
reconnects as after any outage, and the messages not restored then come back after the visibility
timeout (a judge task skips a point that is done or beating elsewhere; the sweeper covers the rest).
"""
from __future__ import annotations

from kombu.transport import redis as kombu_redis

_ORIGINAL = kombu_redis.Channel._connparams


def _connparams(self, asynchronous: bool = False):
    if getattr(getattr(self, "connection", None), "client", None) is None:
        raise ConnectionError("the broker channel has no connection any more (it was lost)")
    return _ORIGINAL(self, asynchronous)


def install() -> None:
    """Install the guard (idempotent)."""
    kombu_redis.Channel._connparams = _connparams

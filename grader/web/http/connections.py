"""Limits on a connection before any request of it is complete: a connection that sends part of its
headers and then nothing would otherwise be held for ever, and enough of them would take every file
descriptor of the HTTP processes before any authentication.

``HeaderTimeoutProtocol`` is uvicorn's h11 protocol with one more timer: while a connection is waiting for
a request's headers (the peer's h11 state is ``IDLE`` or ``SEND_BODY`` has not started), it is closed after
``header_timeout`` seconds. Bodies have their own time limit (``grader.web.http.limits``), idle keep-alive
connections uvicorn's ``timeout_keep_alive``. The number of connections per HTTP process is uvicorn's
``limit_concurrency`` (past it: 503).
"""
import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def header_timeout_protocol(seconds: float) -> type:
    """An ``H11Protocol`` subclass closing a connection whose request headers take over ``seconds``."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": float(seconds)})


class HeaderTimeoutProtocol(H11Protocol):
    """``H11Protocol`` with a deadline (``header_timeout`` seconds) for the headers of each request."""

    header_timeout = 10.0
    _header_timer = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_headers():
            self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if self._waiting_for_headers() and not self.transport.is_closing():
            self.transport.close()

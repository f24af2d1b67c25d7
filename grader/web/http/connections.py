"""Limits on a connection before any request of it is complete: a connection that sends part of its
headers and then nothing would otherwise be held for ever, and enough of them would take every file
descriptor of the HTTP processes before any authentication.

``HeaderTimeoutProtocol`` is uvicorn's h11 protocol with one more timer: while a connection is waiting for
a request's headers (the peer's h11 state is ``IDLE`` or ``SEND_BODY`` has not started), it is closed after
``header_timeout`` seconds. Bodies have their own time limit (``grader.web.http.limits``), idle keep-alive
connections uvicorn's ``timeout_keep_alive``. The number of connections per HTTP process is uvicorn's
``limit_concurrency`` (past it: 503).

A client that stops reading its answers (a tiny receive window, many pipelined requests, and then
nothing) would hold its connection for ever: the app waits to write and no other limit applies. While
the connection's write buffer is over its high-water mark (asyncio's ``pause_writing``) a timer runs; if
the client takes nothing for ``write_stall_timeout`` seconds, the connection is aborted. A slow client
that does make progress resets it each time the buffer drains (``resume_writing``).

It also closes a connection gently when the client is still sending a body the server will not read (a
413 before the body, a 401 before an upload, a refused chunked body): closing a socket with unread bytes
in it, or with more arriving, makes the kernel send a TCP reset, and a client that receives it loses the
part of the answer it had not read yet (seen: the headers of a 413 arrived, its body did not). Instead
the server sends its end of the stream (FIN) and reads on, dropping what comes, until the client closes
too, for at most ``LINGER_SECONDS`` and ``LINGER_MAX_BYTES`` (the "lingering close" of web servers).
"""
import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

LINGER_SECONDS = 2.0  # a refused body's connection is read (and dropped) this long at most...
LINGER_MAX_BYTES = 16 * 2**20  # ...and this many bytes at most, before it is closed for good


def header_timeout_protocol(seconds: float, write_stall_seconds: float = 30.0) -> type:
    """An ``H11Protocol`` subclass closing a connection whose request headers take over ``seconds``, or
    whose client takes nothing of a pending answer for ``write_stall_seconds``."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,),
                {"header_timeout": float(seconds), "write_stall_timeout": float(write_stall_seconds)})


class HeaderTimeoutProtocol(H11Protocol):
    """``H11Protocol`` with a deadline (``header_timeout`` seconds) for the headers of each request."""

    header_timeout = 10.0
    write_stall_timeout = 30.0
    _header_timer = None
    _write_timer = None

    _lingering = None  # the _LingeringTransport once the connection is lingering

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _LingeringTransport(transport, self)  # what uvicorn's request cycles close
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:
            self._lingering.dropped(len(data))
            return
        super().data_received(data)
        if self._waiting_for_headers():
            self._arm()
        else:
            self._disarm()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.write_stall_timeout, self._write_stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._cancel_write_timer()

    def _cancel_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_stalled(self) -> None:
        self._write_timer = None
        self.transport.abort()  # nothing of the answer can be delivered: no gentle close either

    def connection_lost(self, exc) -> None:
        self._disarm()
        self._cancel_write_timer()
        if self._lingering is not None:
            self._lingering.cancel()
        super().connection_lost(exc)

    def _still_sending(self) -> bool:
        """The client is in the middle of a request body (nothing of it will be read any more)."""
        return self.conn.their_state is h11.SEND_BODY

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


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: ``close()`` lingers (module docstring) while the
    client is still sending a body, and closes at once otherwise; everything else is the transport's."""

    def __init__(self, transport: asyncio.Transport, protocol: HeaderTimeoutProtocol):
        self._transport, self._protocol = transport, protocol
        self._timer: asyncio.TimerHandle | None = None
        self._bytes = 0

    def __getattr__(self, name):
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._protocol._lingering is not None or self._transport.is_closing()

    def close(self) -> None:
        if (self._protocol._lingering is not None or self._transport.is_closing()
                or not self._protocol._still_sending() or not self._transport.can_write_eof()):
            self._close_now()
            return
        self._protocol._lingering = self
        self._protocol._disarm()
        self._transport.write_eof()  # after the answer still buffered: the client reads it, then EOF
        self._transport.resume_reading()  # uvicorn may have paused it: unread bytes are what causes resets
        self._timer = self._protocol.loop.call_later(LINGER_SECONDS, self._close_now)

    def dropped(self, count: int) -> None:
        """``count`` more bytes arrived while lingering (and were dropped)."""
        self._bytes += count
        if self._bytes > LINGER_MAX_BYTES:
            self._close_now()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_now(self) -> None:
        self.cancel()
        self._transport.close()

"""The web server process: uvicorn, whose workers take a new connection only while they have room
(`python -m mailagent.webserver --host H --port P --workers N`; mailagent/server.py builds the line).

Stock uvicorn workers share the listening socket and each accepts every connection it can, whatever it is
already running. Requests then queue inside whichever process happened to accept them: with 20 clients on
2 processes, one often held 10-20 requests while the other held few, and the unlucky ones waited twice as
long (hybrid search on the Enron corpus: p50 214 ms, p95 432 ms with the pooled handler alone). Here a worker
stops accepting while it runs WEB_BUSY_REQUESTS requests (see RequestSlots), so waiting connections stay in
the kernel's accept queue, one queue for all workers, and the first worker with room takes the next one, as
in a pre-fork server (p95 256 ms). Connections already open (keep-alive, websockets) are served as before.

The gate never holds a new connection for long: keep-alive clients that send their next request as soon as
the last is answered keep a process at its limit forever, and a health probe on a fresh connection got no
answer for 60 s with 12 such clients. After ACCEPT_WAIT_SECONDS of waiting the process takes every
connection waiting in the queue anyway (bench/fair_accept.py: max probe latency 15 s -> under 1 s).

Request heads are bounded before the app sees them (BoundedHttpToolsProtocol): a request line longer than
MAX_REQUEST_LINE_BYTES is answered 414, a head (request line and headers) over MAX_HEAD_BYTES or with more
than MAX_HEADERS header fields 431, each with `Connection: close`. uvicorn's httptools protocol has no such
limit: one 64 MB header was read whole (~11 s of CPU) before any check ran.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections import deque
from collections.abc import Callable

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors import multiprocess

ASGI_APPLICATION = "mailagent.asgi:application"  # module:attribute, as uvicorn imports it
logger = logging.getLogger("uvicorn.error")
# A just-accepted connection counts as a request for this long or until its request reaches the handler
# (a client sends it right after connecting; an idle keep-alive or websocket connection stops counting).
ARRIVAL_SECONDS = 0.05
# A request running longer than this no longer holds its slot (see RequestSlots).
LONG_REQUEST_SECONDS = 1.0
# The longest a waiting connection stays in the accept queue while this process has no free slot.
ACCEPT_WAIT_SECONDS = float(os.environ.get("MAILAGENT_WEB_ACCEPT_WAIT_MS", "500")) / 1000
# At most this many connections are taken at once when the wait ran out (the rest: the next round).
OVERDUE_ACCEPT_BATCH = 64


def _env_bytes(name: str, default: int) -> int:
    try:
        return max(1024, int(os.environ.get(name, "") or default))
    except ValueError:
        return default


# Request heads: browsers send a few KB (cookies included); nginx's default buffers allow 4 x 8 KB.
MAX_REQUEST_LINE_BYTES = _env_bytes("MAILAGENT_MAX_REQUEST_LINE_BYTES", 8 * 1024)
MAX_HEAD_BYTES = _env_bytes("MAILAGENT_MAX_HEADER_BYTES", 64 * 1024)
MAX_HEADERS = 100


class RequestSlots:
    """How many requests this process is running that count against `limit` (set by the request handler from
    WEB_BUSY_REQUESTS), and connections it accepted whose request has not reached the handler yet. A request
    stops counting after LONG_REQUEST_SECONDS (it waits on a network call, e.g. testing a mail server): slow
    requests do not stop the process from taking new ones. Used only on the event loop's thread."""

    def __init__(self) -> None:
        self.busy = 0
        self.limit = 0  # 0: not limited (the handler was never loaded)
        self._arriving: deque[asyncio.TimerHandle] = deque()
        self._freed: asyncio.Event | None = None

    def accepted(self) -> None:
        """A new connection: it holds a slot until its request enters, or for ARRIVAL_SECONDS at most."""
        handles: list[asyncio.TimerHandle] = []
        handles.append(asyncio.get_running_loop().call_later(ARRIVAL_SECONDS, lambda: self._expire(handles[0])))
        self._arriving.append(handles[0])

    def _expire(self, handle: asyncio.TimerHandle) -> None:
        if handle in self._arriving:
            self._arriving.remove(handle)
            self._wake()

    def enter(self) -> Callable[[], None]:
        """Count a request that reached the handler; call what this returns when it is done."""
        self.busy += 1
        if self._arriving:
            self._arriving.popleft().cancel()
        counted = True

        def uncount() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.busy -= 1
                self._wake()

        timer = asyncio.get_running_loop().call_later(LONG_REQUEST_SECONDS, uncount)

        def leave() -> None:
            timer.cancel()
            uncount()

        return leave

    def _wake(self) -> None:
        if self._freed is not None and self.busy + len(self._arriving) < self.limit:
            self._freed.set()

    async def wait_for_free(self) -> None:
        while self.limit and self.busy + len(self._arriving) >= self.limit:
            if self._freed is None:
                self._freed = asyncio.Event()
            self._freed.clear()
            await self._freed.wait()

    async def wait_for_free_or_overdue(self, seconds: float) -> bool:
        """Wait for a free slot, at most `seconds`; True when the time ran out with the process still full."""
        try:
            await asyncio.wait_for(self.wait_for_free(), seconds)
        except TimeoutError:
            return True
        return False


request_slots = RequestSlots()


class GatedServer(uvicorn.Server):
    """uvicorn's server with its own accept loop per listening socket, waiting for a free request slot."""

    _accepting: list[asyncio.Task[None]]
    _own_sockets: list[socket.socket]

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)
        config = self.config
        self._own_sockets = []
        if sockets is None:  # one process: bind here (logs "Uvicorn running on ...")
            sockets = [config.bind_socket()]
            self._own_sockets = sockets

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
            )

        loop = asyncio.get_running_loop()
        self.servers = []
        self._accepting = [loop.create_task(self._accept(sock, create_protocol)) for sock in sockets]
        self.started = True

    async def _accept(self, sock: socket.socket, create_protocol: Callable[[], asyncio.Protocol]) -> None:
        loop = asyncio.get_running_loop()
        sock.setblocking(False)
        sock.listen(self.config.backlog)  # what loop.create_server does with a bound socket
        while True:
            if await request_slots.wait_for_free_or_overdue(ACCEPT_WAIT_SECONDS):
                # Still full after the wait: take whatever is queued now, so no connection waits unanswered
                # behind keep-alive clients that keep this process busy (none if another process took them).
                for _ in range(OVERDUE_ACCEPT_BATCH):
                    try:
                        connection, _address = sock.accept()
                    except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                        break
                    except OSError as exc:
                        logger.error("accept failed: %s", exc)
                        break
                    await self._take(connection, create_protocol)
                continue
            try:
                connection, _address = await loop.sock_accept(sock)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as exc:  # e.g. out of file descriptors: wait, do not spin
                logger.error("accept failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            await self._take(connection, create_protocol)

    async def _take(self, connection: socket.socket, create_protocol: Callable[[], asyncio.Protocol]) -> None:
        connection.setblocking(False)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.get_running_loop().connect_accepted_socket(create_protocol, connection, ssl=self.config.ssl)
        except OSError:
            connection.close()
            return
        request_slots.accepted()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for task in getattr(self, "_accepting", []):
            task.cancel()
        await super().shutdown(sockets)
        for sock in getattr(self, "_own_sockets", []):
            sock.close()


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the request head bounded: the parser is fed at most MAX_HEAD_BYTES
    of a head (request line + headers), the URL at most MAX_REQUEST_LINE_BYTES and at most MAX_HEADERS
    fields; past a limit the client gets 414/431 and the connection is closed, before any app code runs."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._in_head = True
        self._head_bytes = 0
        self._url_bytes = 0
        self._header_count = 0
        self._refusal: tuple[int, str] | None = None

    def data_received(self, data: bytes) -> None:
        while data:
            if self._refusal is not None or self.parser is None or self.transport.is_closing():
                return
            if not self._in_head:
                super().data_received(data)
                break
            room = MAX_HEAD_BYTES - self._head_bytes
            if room <= 0:
                self._refuse(431, f"The request's headers are larger than {MAX_HEAD_BYTES} bytes.")
                break
            piece, data = data[:room], data[room:]
            self._head_bytes += len(piece)
            super().data_received(piece)
            if self.transport.get_protocol() is not self:  # upgraded to a websocket: it has the rest
                return
        if self._refusal is not None and not self.transport.is_closing():
            self._send_refusal()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._url_bytes = 0
        self._header_count = 0

    def on_url(self, url: bytes) -> None:
        self._url_bytes += len(url)
        if self._url_bytes > MAX_REQUEST_LINE_BYTES:
            self._refuse(414, f"The request line is longer than {MAX_REQUEST_LINE_BYTES} bytes.")
            return
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > MAX_HEADERS:
            self._refuse(431, f"The request has more than {MAX_HEADERS} header fields.")
            return
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        if self._refusal is not None:
            return  # never reaches the app
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True
        if self._refusal is not None:
            return
        super().on_message_complete()

    def _refuse(self, status: int, message: str) -> None:
        if self._refusal is None:
            self._refusal = (status, message)
            logger.warning("refused a request: %s", message)

    def _send_refusal(self) -> None:
        assert self._refusal is not None
        status, message = self._refusal
        reason = {414: b"414 URI Too Long", 431: b"431 Request Header Fields Too Large"}[status]
        body = message.encode()
        self.transport.write(
            b"HTTP/1.1 " + reason + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
        )
        self.transport.close()


class GatedProcess(multiprocess.Process):
    """A uvicorn worker process running a GatedServer (the class is pickled into the spawned child)."""

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = GatedServer(config=self.config)
        return self._server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="mailagent's web server (uvicorn, gated accepts).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    config = uvicorn.Config(
        ASGI_APPLICATION,
        host=args.host,
        port=args.port,
        workers=args.workers,
        lifespan="off",  # Channels' ProtocolTypeRouter has no lifespan handler
        # httptools, the C parser (llhttp; 1 client, keyword search 27.5 -> 33.6 req/s over h11), with bounded heads
        http=BoundedHttpToolsProtocol,
        ws="websockets-sansio",  # the `websockets` package's sans-I/O protocol (the legacy one is deprecated)
        # X-Forwarded-* only from the proxies FORWARDED_ALLOW_IPS names (uvicorn reads it), else ignored.
        proxy_headers=bool(os.environ.get("FORWARDED_ALLOW_IPS", "").strip()),
        server_header=False,
    )
    if args.workers > 1:
        multiprocess.Process = GatedProcess  # type: ignore[misc]  # the supervisor starts GatedProcess workers
        sock = config.bind_socket()
        with contextlib.suppress(KeyboardInterrupt):
            multiprocess.Multiprocess(config, sockets=[sock]).run()
        return
    config.load()
    server = GatedServer(config=config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)


if __name__ == "__main__":
    # Run as the module mailagent.webserver, not as __main__: the request handler imports request_slots from
    # mailagent.webserver, and uvicorn's spawned workers unpickle GatedProcess by its module's name.
    from mailagent.webserver import main as run_main

    run_main()

"""How the web process is started, shared by `manage.py serve` and the tests that run the real server.

The ASGI server is uvicorn, not Daphne. Daphne (Twisted) hands a request to the application only after
the whole body has arrived: Twisted's Request writes it to a temporary file and, for multipart forms,
parses it in memory first, and Daphne then queues every chunk at once. So no ASGI middleware can refuse
a body in time, and it has no setting for a maximum body size (`request_buffer_size` is only the chunk
size it queues with). A 100 MB anonymous POST to the login page cost ~1.2 GB of RSS. uvicorn streams the
body to the app with back-pressure, so mailagent.request_limits can refuse it from the headers or cut it
off while it streams. Websockets (Channels) run on uvicorn's `websockets-sansio` implementation.

Proxy headers (X-Forwarded-For/-Proto) are trusted only when FORWARDED_ALLOW_IPS names the proxies
(uvicorn reads that variable itself); without it they are ignored.
"""

from __future__ import annotations

import os
import sys

ASGI_APPLICATION = "mailagent.asgi:application"


def web_server_command(*, host: str, port: int, processes: int = 1) -> list[str]:
    """The command line of the web server on host:port: one process, or with `processes` > 1 uvicorn's
    supervisor and that many worker processes sharing the socket (requests run on several cores). Within a
    process each request runs in a thread of its own (Django's ASGIHandler gives every request its own
    thread-sensitive context), so requests overlap where they release the GIL (SQLite, numpy)."""
    proxy = "--proxy-headers" if os.environ.get("FORWARDED_ALLOW_IPS", "").strip() else "--no-proxy-headers"
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        host,
        "--port",
        str(port),
        "--lifespan",  # Channels' ProtocolTypeRouter has no lifespan handler
        "off",
        "--http",
        "httptools",  # the C parser (llhttp): 1 client, keyword search 27.5 -> 33.6 req/s over h11 (pure Python)
        "--ws",
        "websockets-sansio",  # the `websockets` package's sans-I/O protocol (the legacy one is deprecated)
        proxy,
        "--no-server-header",
        *(["--workers", str(processes)] if processes > 1 else []),
        ASGI_APPLICATION,
    ]

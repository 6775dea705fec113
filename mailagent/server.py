"""How the web process is started, shared by `manage.py serve` and the tests that run the real server, and how
`serve` and `worker` hand their children to the standard-library supervisor (mailagent/supervisor.py).

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

import json
import os
import sys
from pathlib import Path
from typing import NoReturn

from django.db import connections


def web_server_command(*, host: str, port: int, processes: int = 1) -> list[str]:
    """The command line of the web server on host:port (mailagent/webserver.py): one process, or with
    `processes` > 1 uvicorn's supervisor and that many worker processes sharing the socket, each taking a new
    connection only while it runs fewer than WEB_BUSY_REQUESTS requests."""
    return [
        sys.executable, "-m", "mailagent.webserver", "--host", host, "--port", str(port), "--workers", str(processes),
    ]  # fmt: skip


def become_supervisor(commands: dict[str, list[str]], *, banner: str) -> NoReturn:
    """Replace this process with mailagent/supervisor.py running `commands` (the same process id, signals and
    terminal): it starts them, waits, and on Ctrl-C or SIGTERM stops them within MAILAGENT_STOP_GRACE_SECONDS,
    then kills whatever each started. The waiting process then holds the standard library alone (~10 MB)."""
    connections.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    supervisor = str(Path(__file__).resolve().parent / "supervisor.py")
    spec = json.dumps({"commands": commands, "banner": banner})
    # -P: the script's folder (this package) is not put on sys.path, where a module could shadow the stdlib's.
    os.execv(sys.executable, [sys.executable, "-P", supervisor, spec])  # noqa: S606 (our own interpreter and script)

"""`make run`: the web server (uvicorn: HTTP + websockets, see mailagent/server.py) and a django-q2 cluster
in the foreground, stopped together."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand

from mailagent.crypto import enforce_secret_storage_policy
from mailagent.server import web_server_command

STOP_GRACE_SECONDS = 10


def stop_grace_seconds() -> float:
    """How long the children get to stop by themselves (MAILAGENT_STOP_GRACE_SECONDS, default 10)."""
    try:
        return max(0.5, float(os.environ.get("MAILAGENT_STOP_GRACE_SECONDS", STOP_GRACE_SECONDS)))
    except ValueError:
        return float(STOP_GRACE_SECONDS)


class Command(BaseCommand):
    help = "Serve the app (uvicorn), the background-job cluster and the mail and library watchers until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--no-worker", action="store_true", help="Serve HTTP only: no qcluster, mail watcher or library watcher."
        )
        parser.add_argument(
            "--web-processes",
            type=int,
            default=settings.WEB_PROCESSES,
            help="Web server processes (default MAILAGENT_WEB_PROCESSES, 1); more than one needs REDIS_URL.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        enforce_secret_storage_policy()
        self._collect_static_files_if_missing()
        manage_py = str(Path(settings.BASE_DIR) / "manage.py")
        processes = max(1, options["web_processes"])
        commands = {"web": web_server_command(host=options["host"], port=options["port"], processes=processes)}
        if not options["no_worker"]:
            commands["worker"] = [sys.executable, manage_py, "qcluster"]
            # IMAP IDLE / short polling: new mail in seconds instead of at the next fetcher cycle.
            commands["watcher"] = [sys.executable, manage_py, "watch_mail"]
            # watchdog on the library roots: a file dropped into a library inbox is suggested within seconds.
            commands["library-watcher"] = [sys.executable, manage_py, "watch_library"]

        children: dict[str, subprocess.Popen[bytes]] = {}
        stopping = False

        def request_stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        exit_code = 0
        try:
            for name, command in commands.items():
                # Each child leads its own process group, so that stopping it reaches everything it started
                # (the cluster's worker processes, uvicorn's workers), not only the child itself.
                children[name] = subprocess.Popen(command, start_new_session=True)
            self.stdout.write(
                self.style.SUCCESS(f"mailagent is up at http://{options['host']}:{options['port']}/  (Ctrl-C stops)")
            )
            while not stopping:
                for name, child in children.items():
                    code = child.poll()
                    if code is not None:
                        self.stderr.write(f"{name} exited with status {code}; stopping everything")
                        exit_code = code or 1
                        stopping = True
                        break
                time.sleep(0.2)
        finally:
            self._stop(children)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if exit_code:
            sys.exit(exit_code)

    def _collect_static_files_if_missing(self) -> None:
        """With DEBUG off, collect (hash and compress) the static files once, when nobody has yet."""
        if settings.DEBUG or not hasattr(staticfiles_storage, "manifest_exists"):
            return
        if not staticfiles_storage.manifest_exists():
            self.stdout.write("Static files are not collected yet: running collectstatic once")
            call_command("collectstatic", interactive=False, verbosity=0)

    def _stop(self, children: dict[str, subprocess.Popen[bytes]]) -> None:
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        grace = stop_grace_seconds()
        deadline = time.monotonic() + grace
        for name, child in children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # A busy or stuck worker (a long task, a child that ignores signals) must not outlive `serve`:
                # the interrupted work is requeued by the sweeper on the next start.
                self.stderr.write(f"{name} did not stop in {grace:g}s; killing it and the processes it started")
            _kill_process_group(child.pid)
            child.wait()
        self.stdout.write("stopped")


def _kill_process_group(pgid: int) -> None:
    """SIGKILL whatever is left of a child's process group (nothing, when it stopped cleanly)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)

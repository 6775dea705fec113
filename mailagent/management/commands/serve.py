"""`make run`: the web server (uvicorn: HTTP + websockets, see mailagent/server.py) and `manage.py background`
(a django-q2 cluster whose main process also runs the mail and library watchers) in the foreground, stopped
together (by mailagent/supervisor.py, which this command becomes once it has built their command lines)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand

from mailagent.crypto import enforce_secret_storage_policy
from mailagent.server import become_supervisor, web_server_command


class Command(BaseCommand):
    help = "Serve the app (uvicorn), the background-job cluster and the mail and library watchers until Ctrl-C."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument(
            "--no-worker", action="store_true", help="Serve HTTP only: no cluster, mail watcher or library watcher."
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
            # The django-q2 cluster with the mail watcher (IMAP IDLE / short polling: new mail in seconds instead
            # of at the next fetcher cycle) and the library watcher (watchdog on the library roots: a dropped
            # file is suggested within seconds) in threads of its main process: one Django process, not three.
            commands["worker"] = [sys.executable, manage_py, "background"]

        banner = f"mailagent is up at http://{options['host']}:{options['port']}/  (Ctrl-C stops)"
        # Django's work is done: this process only waits for the others from here on.
        become_supervisor(commands, banner=banner)

    def _collect_static_files_if_missing(self) -> None:
        """With DEBUG off, collect (hash and compress) the static files once, when nobody has yet."""
        if settings.DEBUG or not hasattr(staticfiles_storage, "manifest_exists"):
            return
        if not staticfiles_storage.manifest_exists():
            self.stdout.write("Static files are not collected yet: running collectstatic once")
            call_command("collectstatic", interactive=False, verbosity=0)

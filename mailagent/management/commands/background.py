"""`manage.py background`: the django-q2 cluster and the watchers (settings.BACKGROUND_WATCHERS: the mail
watcher and the library watcher) in one process, what `manage.py serve` starts beside the web server.

Before (issue 40) `serve` started `qcluster`, `watch_mail` and `watch_library` as three processes, each with
Django and every app loaded (~115 MB RSS apiece) though the cluster's main process and the watchers mostly
wait. Here the cluster's main process runs each watcher in a thread. The cluster's sentinel is forked before
any of those threads exists, so its workers are forked from a single-threaded process, as with `qcluster`.
A watcher that ends by itself (it crashed) stops everything with status 1, as a watcher process exiting made
`serve` stop before.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.module_loading import import_string
from django_q.cluster import Cluster

logger = logging.getLogger(__name__)

WATCHER_STOP_SECONDS = 15.0


class Command(BaseCommand):
    help = "Run the background-job cluster and the mail and library watchers in one process until Ctrl-C / SIGTERM."
    # Django's checks load the URLconf, so every view and API module with what it imports (django-ninja,
    # numpy, the Ask pipeline: ~35 MB), in a process that serves no request and whose forked children would
    # each hold it too. `serve`, which starts this command, has run them.
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        settings.SECRET_KEY  # noqa: B018 - as qcluster: the cluster signs its tasks, so refuse to start without it
        stop = threading.Event()
        cluster = Cluster()
        cluster.start()  # forks the sentinel (and through it the workers) while this process has one thread

        def request_stop(signum: int, frame: Any) -> None:
            stop.set()

        # The cluster's own handlers would join the sentinel inside the signal handler; stop in order instead.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, request_stop)
        failed: list[str] = []

        def watch(name: str, run: Callable[[threading.Event], None]) -> None:
            try:
                run(stop)
            except Exception:
                logger.exception("%s failed", name)
            if not stop.is_set():
                failed.append(name)
                stop.set()

        threads: list[threading.Thread] = []
        try:
            for name, path in settings.BACKGROUND_WATCHERS.items():
                # Imported after the fork: the mail clients and the library watch's modules stay out of the
                # cluster's forked processes.
                thread = threading.Thread(target=watch, args=(name, import_string(path)), name=name)
                thread.start()
                threads.append(thread)
            self.stdout.write(f"background: the cluster and {', '.join(settings.BACKGROUND_WATCHERS)} are running")
            self.stdout.flush()
            while not stop.wait(0.5):
                if cluster.sentinel is None or not cluster.sentinel.is_alive():
                    failed.append("the cluster")
                    stop.set()
        finally:  # whatever happened, the watchers and the cluster stop with this process
            stop.set()
            for thread in threads:
                thread.join(timeout=WATCHER_STOP_SECONDS)
            cluster.stop()
        if failed:
            raise CommandError(f"{', '.join(failed)} stopped by itself; stopping everything")
        self.stdout.write("background stopped")

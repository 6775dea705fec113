"""`manage.py watch_library`: the library watch (watchdog on every library root) so a file dropped into an
inbox gets its suggestion within seconds; the scheduled scan catches whatever it misses."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand

from apps.organization.watcher import SETTLE_SECONDS, run_library_watch


class Command(BaseCommand):
    help = (
        "Watch every library root and ingest new or changed files about a second after they stop changing "
        "(digest, then a folder suggestion for inbox files). Runs until Ctrl-C / SIGTERM."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--settle-seconds",
            type=float,
            default=SETTLE_SECONDS,
            help=f"How long a file must stay unchanged before it is handled (default {SETTLE_SECONDS}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()

        def request_stop(signum: int, frame: Any) -> None:
            stop.set()

        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}

        def ready(roots: int) -> None:
            self.stdout.write(f"watch_library: watching {roots} library roots (Ctrl-C stops)")
            self.stdout.flush()

        try:
            run_library_watch(stop, settle_seconds=options["settle_seconds"], on_ready=ready)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("watch_library stopped")

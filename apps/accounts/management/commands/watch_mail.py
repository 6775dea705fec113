"""`manage.py watch_mail`: IMAP IDLE (and short-interval polling for Gmail/Outlook) so changes arrive in seconds."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand

from apps.accounts.watcher import Watcher

RESCAN_SECONDS = 30


class Command(BaseCommand):
    help = (
        "Watch every enabled mail account and sync it as soon as the server reports a change: IMAP IDLE on "
        "INBOX, Gmail/Outlook polled every MAILAGENT_WATCH_POLL_SECONDS. Runs until Ctrl-C / SIGTERM."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--account", action="append", dest="accounts", help="Only this account (repeatable).")

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()

        def request_stop(signum: int, frame: Any) -> None:
            stop.set()

        previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        watcher = Watcher(account_names=options["accounts"])
        try:
            while not stop.is_set():
                watcher.refresh()
                stop.wait(RESCAN_SECONDS)
        finally:
            watcher.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("watch_mail stopped")

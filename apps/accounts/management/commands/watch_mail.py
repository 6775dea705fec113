"""`manage.py watch_mail`: IMAP IDLE (and short-interval polling for Gmail/Outlook) so changes arrive in seconds."""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand

from apps.accounts.watcher import watch_mail_until


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
        try:
            watch_mail_until(stop, account_names=options["accounts"])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        self.stdout.write("watch_mail stopped")

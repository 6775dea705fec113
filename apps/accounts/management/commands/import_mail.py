from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from apps.accounts.actions import AccountNameTaken, get_or_create_local_account
from apps.accounts.importers import MailImportError, count_files, import_path
from mailagent.owners import resolve_command_owner


class Command(BaseCommand):
    help = "Import an mbox file, a Maildir, a directory tree of raw RFC 822 files, an .eml or a .zip."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path")
        parser.add_argument("--account", required=True, help="Local account name (created when missing).")
        parser.add_argument("--owner", help="Owner's email (default: the first superuser).")
        parser.add_argument("--no-progress", action="store_true")
        parser.add_argument(
            "--route",
            action="store_true",
            help="Route every imported email through the filters, whatever its date (default: only mail dated "
            "after a filter was made is routed).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"]).expanduser()
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        owner = resolve_command_owner(options.get("owner"))
        try:
            account = get_or_create_local_account(owner=owner, name=options["account"])
        except AccountNameTaken as exc:
            raise CommandError(str(exc)) from exc
        total = count_files(path)
        started = time.perf_counter()
        with tqdm(
            total=total, unit="file", desc=f"importing into {account.name}", disable=options["no_progress"]
        ) as bar:
            try:
                summary = import_path(account, path, progress=bar.update, route_through_filters=options["route"])
            except MailImportError as exc:
                raise CommandError(str(exc)) from exc
            bar.update(max(0, total - bar.n))
        seconds = time.perf_counter() - started
        rate = summary.messages / seconds if seconds else 0.0
        self.stdout.write(
            self.style.SUCCESS(
                f"Read {summary.messages} message(s) from {summary.files} file(s) "
                f"in {seconds:.1f}s ({rate:.0f} msg/s): "
                f"imported {summary.imported}, duplicates skipped {summary.duplicates}, "
                f"parse errors {summary.parse_errors}, unreadable {summary.skipped}"
            )
        )
        for error in summary.errors[:20]:
            self.stderr.write(f"  {error}")
        if len(summary.errors) > 20:
            self.stderr.write(f"  … and {len(summary.errors) - 20} more")

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import MailAccount
from apps.accounts.sync import sync_account


class Command(BaseCommand):
    help = "Sync mail now for all enabled accounts, or one with --account NAME."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--account", help="Account name")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = MailAccount.objects.filter(enabled=True).order_by("pk")
        if options.get("account"):
            accounts = MailAccount.objects.filter(name=options["account"])
            if not accounts.exists():
                raise CommandError(f"No account named {options['account']!r}")
        failed = 0
        for account in accounts:
            self.stdout.write(f"{account.name}: syncing…")
            outcome = sync_account(account.pk)
            line = (
                f"{account.name}: {outcome.status} — {outcome.created} new, {outcome.duplicates} duplicates, "
                f"{outcome.parse_errors} parse errors"
            )
            if outcome.status == "error":
                failed += 1
                self.stderr.write(f"{line}; {outcome.error_category}: {outcome.error_message}")
            else:
                self.stdout.write(self.style.SUCCESS(line))
        if failed:
            raise CommandError(f"{failed} account(s) failed to sync")

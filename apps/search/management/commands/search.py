"""`manage.py search "QUERY" [--json] [--limit N] [--mode keyword|semantic|hybrid] [--account NAME]`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.search.backends.base import MODES
from apps.search.selectors import account_ids_by_name, build_filters, normalize_mode, search_messages


class Command(BaseCommand):
    help = "Search the mail index (keyword, semantic or hybrid) and print the ranked messages."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--json", action="store_true", help="Print a JSON list instead of lines.")
        parser.add_argument("--limit", type=int, default=10)
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--account", help="Only this account (its name).")
        parser.add_argument("--folder")
        parser.add_argument("--from", dest="from_address", help="Sender address or part of it.")
        parser.add_argument("--to", dest="to_address", help="Recipient address or part of it.")
        parser.add_argument("--after", help="On or after this date (YYYY-MM-DD) or ISO datetime.")
        parser.add_argument("--before", help="On or before this date (YYYY-MM-DD) or ISO datetime.")
        parser.add_argument("--has-attachment", action="store_true", default=None)
        parser.add_argument("--kind", choices=["message", "attachment"])

    def handle(self, *args: Any, **options: Any) -> None:
        account_ids: tuple[int, ...] | None = None
        if options["account"]:
            account_ids = account_ids_by_name(options["account"])
            if not account_ids:
                raise CommandError(f"No account named {options['account']!r}")
        try:
            filters = build_filters(
                account_ids=account_ids,
                folder=options["folder"],
                date_from=options["after"],
                date_to=options["before"],
                from_address=options["from_address"],
                to_address=options["to_address"],
                has_attachment=options["has_attachment"],
                kind=options["kind"],
            )
            mode = normalize_mode(options["mode"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        results = search_messages(options["query"], mode=mode, limit=options["limit"], filters=filters)
        if options["json"]:
            self.stdout.write(json.dumps([r.as_json() for r in results], ensure_ascii=False, indent=2))
            return
        if not results:
            self.stdout.write("No matches.")
            return
        for rank, result in enumerate(results, start=1):
            date = result.date.date().isoformat() if result.date else "----------"
            sources = "+".join(result.sources)
            self.stdout.write(f"{rank:>3}. {result.score:.4f} [{sources}] {date} {result.sender} — {result.subject}")
            self.stdout.write(f"     <{result.message_id}>")

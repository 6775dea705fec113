"""`manage.py search "QUERY" [--json] [--limit N] [--page N] [--mode keyword|semantic|hybrid] [--account NAME]`.

QUERY takes the search page's syntax: words, "phrases", -excluded words and operators (from: to: cc: bcc:
subject: has:attachment filename: is:unread in: account: before: after: date: kind:). --limit takes up to
selectors.MAX_PER_PAGE (1000) results; more is refused."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.search.backends import serve_one_query
from apps.search.backends.base import MODES
from apps.search.selectors import MAX_PER_PAGE, account_ids_by_name, build_filters, normalize_mode, search_page


class Command(BaseCommand):
    help = (
        "Search the index (mail and library files) with the search page's syntax, e.g."
        ' `search "from:lena is:unread invoice date:2024-03"`. Text output groups mail by thread;'
        " --json prints one entry per matching message or file, best first; copies of a mail (other folders or"
        " accounts) are listed in its entry."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--json", action="store_true", help="Print a JSON list instead of lines.")
        parser.add_argument("--limit", type=int, default=10, help=f"Results per page (at most {MAX_PER_PAGE}).")
        parser.add_argument("--page", type=int, default=1)
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--account", help="Only this account (its name); same as account:NAME.")
        parser.add_argument("--folder")
        parser.add_argument("--from", dest="from_address", help="Sender address or part of it.")
        parser.add_argument("--to", dest="to_address", help="Recipient address or part of it.")
        parser.add_argument("--after", help="On or after this date (YYYY-MM-DD) or ISO datetime.")
        parser.add_argument("--before", help="On or before this date (YYYY-MM-DD) or ISO datetime.")
        parser.add_argument("--has-attachment", action="store_true", default=None)
        parser.add_argument("--kind", choices=["message", "attachment", "mail", "file"])

    def handle(self, *args: Any, **options: Any) -> None:
        with serve_one_query():  # one question, then the process exits
            self._handle(options)

    def _handle(self, options: dict[str, Any]) -> None:
        if options["account"] and not account_ids_by_name(options["account"]):
            raise CommandError(f"No account named {options['account']!r}")
        if options["limit"] < 1 or options["page"] < 1:
            raise CommandError("--limit and --page must be 1 or more")
        if options["limit"] > MAX_PER_PAGE:
            raise CommandError(f"--limit {options['limit']} is more than {MAX_PER_PAGE}; page with --page instead")
        query = options["query"] + (f" kind:{options['kind']}" if options["kind"] else "")
        try:
            base = build_filters(
                account_ids=None,
                folder=options["folder"],
                date_from=options["after"],
                date_to=options["before"],
                from_address=options["from_address"],
                to_address=options["to_address"],
                has_attachment=options["has_attachment"],
            )
            result = search_page(
                query,
                mode=normalize_mode(options["mode"]),
                page=options["page"],
                per_page=options["limit"],
                account=options["account"],
                base=base,
                group=not options["json"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps([row.as_json() for row in result.rows], ensure_ascii=False, indent=2))
            if result.truncated and not result.has_next:
                self.stderr.write(f"{result.count} matches; only the best {result.threads} were ranked")
            return
        if result.suggestion:
            self.stdout.write(f"Did you mean: {result.suggestion}")
        if not result.rows:
            self.stdout.write("No matches.")
            return
        more = " (showing the best)" if result.truncated else ""
        self.stdout.write(
            f"{result.count} matches in {result.threads} results{more}; page {result.page} of {result.pages}"
        )
        start = (result.page - 1) * result.per_page
        for rank, row in enumerate(result.rows, start=start + 1):
            date = row.date.date().isoformat() if row.date else "----------"
            sources = "+".join(row.sources) or "filter"
            if row.kind == "file":
                self.stdout.write(f"{rank:>3}. {row.score:.4f} [{sources}] {date} file {row.path}")
                continue
            matches = f" ({row.matches} messages)" if row.matches > 1 else ""
            self.stdout.write(f"{rank:>3}. {row.score:.4f} [{sources}] {date} {row.sender} — {row.title}{matches}")
            self.stdout.write(f"     <{row.message_id}>")

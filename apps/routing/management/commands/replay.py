"""Shadow replay: route the last N stored emails through the current filters.

manage.py replay --last 200 --dry-run              # which director would fire for which email
manage.py replay --director Support --last 50       # create (idempotent) runs for that director
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from apps.routing import actions, selectors
from mailagent.owners import resolve_command_owner


class Command(BaseCommand):
    help = "Route the last N stored emails through the current filters (--dry-run: only list the matches)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--director", help="Only this director (by name); default: every director")
        parser.add_argument("--last", type=int, default=50, help="How many of the newest emails (default 50)")
        parser.add_argument("--dry-run", action="store_true", help="Print what would be routed; create nothing")
        parser.add_argument("--owner", help="Whose mail and directors (email; default: the first superuser)")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_command_owner(options.get("owner"))
        last = int(options["last"])
        if last <= 0:
            raise CommandError("--last must be a positive number")
        director_ids: set[int] | None = None
        if options.get("director"):
            director = selectors.find_director(user=owner, name=options["director"])
            if director is None:
                names = ", ".join(d.name for d in selectors.list_directors_for_user(user=owner)) or "none"
                raise CommandError(f"No director named {options['director']!r} (directors: {names})")
            director_ids = {director.pk}
        message_ids = selectors.last_message_ids_for_user(user=owner, last=last)
        routes: list[tuple[int, Any]] = []
        errors = 0
        created = 0
        batch = 200
        with tqdm(total=len(message_ids), unit="msg", desc="replay", disable=None, file=self.stderr) as bar:
            for start in range(0, len(message_ids), batch):
                chunk = message_ids[start : start + batch]
                if options["dry_run"]:
                    outcome = selectors.evaluate_messages(
                        message_ids=chunk, respect_creation=False, director_ids=director_ids
                    )
                else:
                    outcome = actions.route_messages(
                        message_ids=chunk, respect_creation=False, director_ids=director_ids, trigger="replay"
                    )
                    created += len(outcome.created_run_ids)
                routes.extend(outcome.routes)
                errors += len(outcome.errors)
                bar.update(len(chunk))
        subjects = selectors.message_subjects(message_ids=[m for m, _ in routes])
        for message_id, match in routes:
            subject = (subjects.get(message_id) or "(no subject)").replace("\n", " ")[:70]
            self.stdout.write(
                f"{match.director_name} ← #{message_id} {subject!r}  "
                f"[{match.field} ~ /{match.regex}/ matched {match.matched_text[:60]!r}]"
            )
        matched_messages = len({m for m, _ in routes})
        summary = (
            f"{len(message_ids)} emails checked, {matched_messages} matched, {len(routes)} routes, "
            f"{errors} filter errors"
        )
        if options["dry_run"]:
            summary += " (dry run: nothing created)"
        else:
            summary += f", {created} new runs ({len(routes) - created} already existed)"
        self.stdout.write(self.style.SUCCESS(summary))

"""`manage.py ask "QUESTION" [--json] [--account NAME] [--user EMAIL] [--conversation ID]`."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import MailAccount
from apps.ask import actions, selectors
from apps.ask.events import AskEvent
from apps.search.backends import serve_one_query


class Command(BaseCommand):
    help = "Ask your mailbox a question (runs the Ask Inbox pipeline here and prints the answer)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--json", action="store_true", help="Print {answer, evidence, scope, timings}.")
        parser.add_argument("--account", help="Only this account (its name); also picks the user.")
        parser.add_argument("--user", help="Ask as this user (email or username); default: the only owner.")
        parser.add_argument("--conversation", help="Continue this conversation (id from an earlier --json).")

    def _owner(self, options: dict[str, Any]) -> Any:
        users = get_user_model().objects.all()
        if options["user"]:
            owner = users.filter(email=options["user"]).first() or users.filter(username=options["user"]).first()
            if owner is None:
                raise CommandError(f"No user {options['user']!r}")
            return owner
        accounts = MailAccount.objects.select_related("owner")
        if options["account"]:
            accounts = accounts.filter(name=options["account"])
            if not accounts.exists():
                raise CommandError(f"No account named {options['account']!r}")
        owners = {account.owner_id: account.owner for account in accounts}
        if len(owners) != 1:
            raise CommandError("Several users have mail accounts: pick one with --user or --account")
        return next(iter(owners.values()))

    def handle(self, *args: Any, **options: Any) -> None:
        with serve_one_query():  # one question, then the process exits
            self._handle(options)

    def _handle(self, options: dict[str, Any]) -> None:
        owner = self._owner(options)
        conversation = None
        if options["conversation"]:
            conversation = selectors.access_conversation(user=owner, conversation_id=options["conversation"])
        try:
            run = actions.create_ask_run(
                owner=owner,
                question=options["question"],
                conversation=conversation,
                account_name=options["account"] or "",
            )
        except actions.AskInputError as exc:
            raise CommandError(str(exc)) from exc

        def progress(event: AskEvent) -> None:
            if not options["json"] and event["type"] == "step_completed":
                sys.stderr.write(f"  ✓ {event['label']}: {event['detail']}\n")

        finished = actions.execute_ask_run(run_id=run.pk, emit=progress)
        if finished is None:
            raise CommandError("The run vanished")
        data = selectors.run_json(finished)
        if options["json"]:
            output = {
                "answer": data["answer"],
                "evidence": [
                    {key: row[key] for key in ("message_id", "sources", "score", "snippet", "attachment") if key in row}
                    for row in data["evidence"]
                ],
                "scope": data["scope"],
                "timings": data["timings"],
                "runId": data["runId"],
                "conversationId": data["conversationId"],
                "answerMode": data["answerMode"],
            }
            self.stdout.write(json.dumps(output, ensure_ascii=False, indent=2))
            return
        if data["error"]:
            raise CommandError(data["error"])
        self.stdout.write(data["answer"])
        files = data["scope"].get("files") or []
        if files:
            self.stdout.write("\nLibrary files:")
            for card in files:
                first = card["lines"].splitlines()[0] if card["lines"] else ""
                self.stdout.write(f"  - {card['path']}" + (f" — {first}" if first else ""))
        suggestions = data["scope"].get("suggestions") or []
        if suggestions:
            self.stdout.write("\nFolder suggestions (decide with `organize respond ID accept|reject`):")
            for row in suggestions:
                target = row["target"] or "no confident folder"
                self.stdout.write(f"  {row['suggestion_id']}: {row['path']} → {target} ({row['status']} when shown)")
        if data["evidence"]:
            self.stdout.write("\nEvidence:")
            for rank, row in enumerate(data["evidence"], start=1):
                sources = "+".join(row["sources"])
                self.stdout.write(
                    f"{rank:>3}. {row['score']:.3f} [{sources}] {row['date'] or ''} {row['from']} — {row['subject']}"
                )
                self.stdout.write(
                    f"     <{row['message_id']}>" + (f" · {row['attachment']}" if row.get("attachment") else "")
                )

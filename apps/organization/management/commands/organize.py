"""`manage.py organize configure|scan|respond|undo`: the library from the command line (paths relative to
the library root in every output)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.organization import actions
from apps.organization.decisions import respond, undo_move
from apps.organization.library import OrganizationDecisionError, OrganizationError, get_library
from apps.organization.models import Library, Move, Suggestion
from apps.organization.serializers import suggestion_brief


def _owner(email: str | None) -> Any:
    users = get_user_model().objects.order_by("pk")
    if email:
        owner = users.filter(email__iexact=email).first()
        if owner is None:
            raise CommandError(f"No user with the email {email}.")
        return owner
    if users.count() != 1:
        raise CommandError("There is not exactly one user: say whose library with --owner EMAIL.")
    return users.first()


class Command(BaseCommand):
    help = "Organize library inbox files into folders: configure, scan, respond, undo."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        configure = sub.add_parser("configure", help="Set the library root and thresholds.")
        configure.add_argument("--root", required=True)
        configure.add_argument("--suggest-threshold", type=float)
        configure.add_argument("--auto-move", action="store_true")
        configure.add_argument("--owner")
        scan = sub.add_parser("scan", help="Digest new inbox files and suggest folders.")
        scan.add_argument("--json", action="store_true")
        scan.add_argument("--force", action="store_true", help="Suggest again even where suggestions were rejected.")
        scan.add_argument("--owner")
        answer = sub.add_parser("respond", help="Accept, reject or choose a folder for a suggestion.")
        answer.add_argument("id", type=int)
        answer.add_argument("decision", choices=["accept", "reject", "choose"])
        answer.add_argument("--folder", default="")
        answer.add_argument("--json", action="store_true")
        undo = sub.add_parser("undo", help="Move a file back where it was before a move.")
        undo.add_argument("move_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        handler = getattr(self, f"_{options['action']}")
        try:
            handler(options)
        except (OrganizationError, OrganizationDecisionError) as exc:
            raise CommandError(str(exc)) from exc

    def _configure(self, options: dict[str, Any]) -> None:
        owner = _owner(options.get("owner"))
        changes: dict[str, Any] = {"root": options["root"]}
        if options.get("suggest_threshold") is not None:
            changes["suggest_threshold"] = options["suggest_threshold"]
        if options.get("auto_move"):
            changes["auto_move"] = True
        settings = actions.update_settings(owner=owner, changes=changes)
        library = get_library(owner=owner)
        self.stdout.write(
            f"Library {library.root} (inbox: {library.inbox_path}); suggest at ≥ {settings.suggest_threshold:.2f}, "
            f"auto-move {f'on at ≥ {settings.auto_move_threshold:.2f}' if settings.auto_move else 'off'}."
        )

    def _scan(self, options: dict[str, Any]) -> None:
        owner = _owner(options.get("owner"))
        library = get_library(owner=owner)
        result = actions.scan_library(library=library, force=options["force"])
        rows = [suggestion_brief(s) for s in result.suggestions]
        if options["json"]:
            self.stdout.write(json.dumps(rows, ensure_ascii=False))
            return
        self.stdout.write(
            f"{len(result.new_files)} new, {len(result.changed_files)} changed, {result.missing} gone; "
            f"{len(rows)} pending suggestions."
        )
        for row in rows:
            where = row["folder"] or "no confident folder"
            alternatives = ", ".join(f"{a['folder']} {a['confidence']:.2f}" for a in row["alternatives"])
            self.stdout.write(f"  #{row['id']} {row['file']} → {where} ({row['confidence']:.2f}) [{alternatives}]")
        for error in result.errors:
            self.stderr.write(error)

    def _respond(self, options: dict[str, Any]) -> None:
        suggestion = Suggestion.objects.select_related("file__library").filter(pk=options["id"]).first()
        if suggestion is None:
            raise CommandError(f"No suggestion #{options['id']}.")
        decided = respond(suggestion=suggestion, action=options["decision"], folder=options["folder"])
        decided.refresh_from_db()
        move = Move.objects.filter(suggestion=decided, undone_at__isnull=True).first()
        out = {
            "id": decided.pk,
            "status": decided.status,
            "action": decided.action,
            "folder": decided.final_folder or None,
            "file": decided.file.path,
            "move": move.pk if move else None,
        }
        if options["json"]:
            self.stdout.write(json.dumps(out, ensure_ascii=False))
        else:
            moved = f" → {decided.file.path} (undo: organize undo {move.pk})" if move else ""
            self.stdout.write(f"Suggestion #{decided.pk} {decided.status}{moved}")

    def _undo(self, options: dict[str, Any]) -> None:
        move = Move.objects.select_related("library").filter(pk=options["move_id"]).first()
        if move is None or not Library.objects.filter(pk=move.library_id).exists():
            raise CommandError(f"No move #{options['move_id']}.")
        undone = undo_move(move=move)
        self.stdout.write(f"Moved {undone.to_path} back to {undone.from_path}.")

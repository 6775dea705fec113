"""`manage.py workspace create --label L [--owner EMAIL] [--json]`: a workspace for an outside agent."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.workspaces import actions


class Command(BaseCommand):
    help = "Create a workspace for an outside agent (Claude Desktop, a coding agent, a script)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a workspace")
        create.add_argument("--label", required=True, help="the name that heads its Inbox entries")
        create.add_argument("--owner", help="owner's email (default: the only user, or the only superuser)")
        create.add_argument("--json", action="store_true", help='print {"id": ...}')

    def handle(self, *args: Any, **options: Any) -> None:
        owner = owner_from_option(options.get("owner"))
        try:
            workspace = actions.create_user_workspace(owner=owner, label=options["label"])
        except actions.WorkspaceError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            url = f"/mcp/{workspace.pk}/"
            self.stdout.write(json.dumps({"id": workspace.pk, "label": workspace.label, "mcpUrl": url}))
        else:
            self.stdout.write(f"Workspace {workspace.pk} “{workspace.label}” for {owner.email}")
            self.stdout.write(f"MCP endpoint: /mcp/{workspace.pk}/")
            self.stdout.write(f"Create its token with: manage.py mcp_token {workspace.pk}")


def owner_from_option(email: str | None) -> Any:
    users = get_user_model().objects.filter(is_active=True)
    if email:
        owner = users.filter(email__iexact=email.strip()).first()
        if owner is None:
            raise CommandError(f"no active user with email {email}")
        return owner
    if users.count() == 1:
        return users.get()
    superusers = users.filter(is_superuser=True)
    if superusers.count() == 1:
        return superusers.get()
    raise CommandError("there is more than one user: say whose workspace it is with --owner EMAIL")

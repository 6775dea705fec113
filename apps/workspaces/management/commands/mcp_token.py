"""`manage.py mcp_token WORKSPACE_ID [--name N] [--json]`: a bearer token for /mcp/WORKSPACE_ID/ (shown once);
`--revoke TOKEN_ID` revokes one, `--list` lists them (prefixes only)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.workspaces import actions, selectors
from apps.workspaces.models import Workspace, WorkspaceToken


class Command(BaseCommand):
    help = "Create (or list, or revoke) a workspace's MCP bearer token. The token is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace_id", type=int)
        parser.add_argument("--name", default="", help="what the token is for (e.g. Claude Desktop)")
        parser.add_argument("--json", action="store_true", help='print {"token": ...}')
        parser.add_argument("--revoke", type=int, metavar="TOKEN_ID", help="revoke this token instead")
        parser.add_argument("--list", action="store_true", help="list the workspace's tokens instead")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(pk=options["workspace_id"]).first()
        if workspace is None:
            raise CommandError(f"no workspace {options['workspace_id']}")
        if options["list"]:
            rows = [
                {
                    "id": t.pk,
                    "name": t.name,
                    "prefix": t.prefix,
                    "created": t.created_at.isoformat(),
                    "lastUsed": t.last_used_at.isoformat() if t.last_used_at else None,
                    "revoked": t.revoked_at is not None,
                }
                for t in selectors.workspace_tokens(workspace=workspace)
            ]
            self.stdout.write(json.dumps({"tokens": rows}, indent=None if options["json"] else 2))
            return
        if options["revoke"] is not None:
            token = WorkspaceToken.objects.filter(pk=options["revoke"], workspace=workspace).first()
            if token is None:
                raise CommandError(f"workspace {workspace.pk} has no token {options['revoke']}")
            actions.revoke_token(token=token)
            self.stdout.write(json.dumps({"revoked": token.pk}) if options["json"] else f"Token {token.pk} revoked.")
            return
        token, raw = actions.issue_token(workspace=workspace, name=options["name"])
        if options["json"]:
            self.stdout.write(json.dumps({"token": raw, "id": token.pk, "url": f"/mcp/{workspace.pk}/"}))
        else:
            self.stdout.write(f"Token for workspace {workspace.pk} (/mcp/{workspace.pk}/), shown only this once:")
            self.stdout.write(raw)

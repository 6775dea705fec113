"""`manage.py mcp_token WORKSPACE_ID [--name N] [--json]`: a bearer token for /mcp/WORKSPACE_ID/ (shown once);
`--revoke TOKEN_ID` revokes one, `--list` lists them (prefixes only).

`manage.py mcp_token --mailbox --scope read,draft [--user U] [--name N] [--expires-days D] [--json]`: a scoped
token for the user's mailbox endpoint /mcp/mailbox/ (the same --list and --revoke work with --mailbox)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from apps.accounts.models import MailAccount
from apps.workspaces import actions, selectors
from apps.workspaces.models import MailboxToken, Workspace, WorkspaceToken


class Command(BaseCommand):
    help = "Create (or list, or revoke) a workspace's MCP bearer token. The token is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace_id", type=int, nargs="?", help="the workspace (not with --mailbox)")
        parser.add_argument("--mailbox", action="store_true", help="a token for /mcp/mailbox/ instead")
        parser.add_argument("--scope", default="read", help="mailbox scopes, comma separated: read,draft,act")
        parser.add_argument("--user", default="", help="the owner (username or email); default: the only user")
        parser.add_argument("--expires-days", type=int, default=None, help="the mailbox token expires after D days")
        parser.add_argument("--calls-per-minute", type=int, default=120, help="the mailbox token's rate limit")
        parser.add_argument("--account", default="", help="restrict the mailbox token to this account (by name)")
        parser.add_argument(
            "--folder",
            action="append",
            default=[],
            help="with --account: only mail in this folder (and its subfolders); repeat for several",
        )
        parser.add_argument("--name", default="", help="what the token is for (e.g. Claude Desktop)")
        parser.add_argument("--json", action="store_true", help='print {"token": ...}')
        parser.add_argument("--revoke", type=int, metavar="TOKEN_ID", help="revoke this token instead")
        parser.add_argument("--list", action="store_true", help="list the workspace's tokens instead")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["mailbox"]:
            self._mailbox(options)
            return
        if options["workspace_id"] is None:
            raise CommandError("give a workspace id, or --mailbox for a mailbox token")
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

    def _owner(self, name: str) -> Any:
        users = get_user_model().objects.filter(is_active=True)
        if name:
            found = users.filter(username=name).first() or users.filter(email__iexact=name).first()
            if found is None:
                raise CommandError(f"no active user {name!r}")
            return found
        if users.count() != 1:
            raise CommandError("there is more than one user: say whose mailbox with --user")
        return users.get()

    def _mailbox(self, options: dict[str, Any]) -> None:
        owner = self._owner(options["user"])
        if options["list"]:
            rows = [
                {
                    "id": t.pk,
                    "name": t.name,
                    "prefix": t.prefix,
                    "scopes": t.scopes,
                    "account": t.account.name if t.account else None,
                    "folders": t.folders,
                    "created": t.created_at.isoformat(),
                    "expires": t.expires_at.isoformat() if t.expires_at else None,
                    "lastUsed": t.last_used_at.isoformat() if t.last_used_at else None,
                    "revoked": t.revoked_at is not None,
                }
                for t in selectors.mailbox_tokens(user=owner)
            ]
            self.stdout.write(json.dumps({"tokens": rows}, indent=None if options["json"] else 2))
            return
        if options["revoke"] is not None:
            token = MailboxToken.objects.filter(pk=options["revoke"], owner=owner).first()
            if token is None:
                raise CommandError(f"{owner} has no mailbox token {options['revoke']}")
            actions.revoke_mailbox_token(token=token)
            self.stdout.write(json.dumps({"revoked": token.pk}) if options["json"] else f"Token {token.pk} revoked.")
            return
        account = None
        if options["account"]:
            account = MailAccount.objects.filter(owner=owner, name=options["account"]).first()
            if account is None:
                raise CommandError(f"{owner} has no account {options['account']!r}")
        days = options["expires_days"]
        expires = timezone.now() + dt.timedelta(days=days) if days is not None else None
        try:
            token, raw = actions.issue_mailbox_token(
                owner=owner,
                name=options["name"] or "manage.py mcp_token",
                scopes=options["scope"],
                expires_at=expires,
                calls_per_minute=options["calls_per_minute"],
                account=account,
                folders=options["folder"],
            )
        except actions.TokenError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(
                json.dumps({"token": raw, "id": token.pk, "url": "/mcp/mailbox/", "scopes": token.scopes})
            )
        else:
            self.stdout.write(f"Mailbox token ({', '.join(token.scopes)}) for /mcp/mailbox/, shown only this once:")
            self.stdout.write(raw)

"""mail_organize: an agent proposes a change to the run's email on the mail server (read, flag, archive, move,
Trash, a tag). It never acts by itself: the proposal is an approval the user sees in the Inbox and on the run, and
only "Approve" hands it to the mail accounts' write-back ledger (apps.accounts.writeback)."""

from __future__ import annotations

from typing import Any

from apps.accounts.labels import InvalidTag, clean_tag_name
from apps.accounts.models import MailFolder, MessageLocation, Provider
from apps.llm import ToolFailure
from apps.orchestration.approvals import request_mail_approval
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import MailOrganizeArgs


def can_organize(ctx: RunContext) -> bool:
    """Only mail that is on a server (a synced account, not a local archive) can be organized there."""
    message = ctx.message
    return message.account.provider != Provider.LOCAL and MessageLocation.objects.filter(message_id=message.pk).exists()


def mail_organize(ctx: RunContext, actor: Actor, args: MailOrganizeArgs) -> dict[str, Any]:
    message = ctx.message
    if args.action == "move":
        folders = list(MailFolder.objects.filter(account_id=message.account_id).values_list("name", "display_name"))
        wanted = args.folder.strip().casefold()
        match = next((name for name, display in folders if wanted in {name.casefold(), display.casefold()}), None)
        if match is None:
            names = ", ".join(sorted(display or name for name, display in folders if name))
            raise ToolFailure(f"No folder {args.folder!r} in {message.account.name}; its folders: {names}")
        folder = match
    else:
        folder = ""
    tag = ""
    if args.action in ("tag", "untag"):
        try:
            tag = clean_tag_name(args.tag)
        except InvalidTag as exc:
            raise ToolFailure(f"{exc}: give the tag's name in `tag`") from None
    approval = request_mail_approval(
        run=ctx.run, workspace=ctx.workspace, message=message, action=args.action, folder=folder, tag=tag
    )
    return {
        "approval": {"id": approval.pk, "status": approval.status},
        "note": "Waiting for the user's approval: nothing changed on the server yet. Do not propose it again.",
    }

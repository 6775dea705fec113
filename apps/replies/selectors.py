"""Reads for reply drafts: permission-checked access (404 for anyone else's), the Drafts page lists, the
sources a reply can start from, the confirmation token, and the exact message a draft would send."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.http import Http404
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from apps.accounts import oauth
from apps.accounts.models import MailAccount, Provider
from apps.accounts.sending import sending_problem
from apps.ask.models import Draft as AskDraft
from apps.replies import compose
from apps.replies.models import DraftStatus, ReplyAttachment, ReplyDraft
from apps.workspaces.models import Encoding, WorkspaceItem

CONFIRM_SALT = "replies.confirm-send"
CONFIRM_MAX_AGE_SECONDS = 60 * 60
# A send that has not finished after this long died with its process: the draft can be sent again.
STALE_SENDING_AFTER = dt.timedelta(minutes=5)


def access_draft(*, user: Any, draft_id: int) -> ReplyDraft:
    draft = (
        ReplyDraft.objects.select_related("account", "original", "original__thread", "sent_message")
        .filter(pk=draft_id, owner=user)
        .first()
    )
    if draft is None:
        raise Http404("No such draft")
    return draft


def list_drafts(*, user: Any) -> dict[str, list[ReplyDraft]]:
    """Open drafts (draft, failed, sending) and sent ones, newest first, in one query."""
    groups: dict[str, list[ReplyDraft]] = {"open": [], "sent": []}
    rows = ReplyDraft.objects.filter(owner=user).select_related("account", "original").order_by("-updated_at", "-pk")
    for draft in rows[:500]:
        groups["sent" if draft.status == DraftStatus.SENT else "open"].append(draft)
    return groups


def is_replyable_item(item: WorkspaceItem) -> bool:
    return item.encoding == Encoding.UTF8 and item.mime_type.split(";")[0].strip().lower().startswith("text/")


def access_item_for_reply(*, user: Any, item_id: int) -> WorkspaceItem:
    item = (
        WorkspaceItem.objects.select_related("workspace", "workspace__message", "workspace__message__account")
        .filter(pk=item_id, workspace__owner=user, deleted=False)
        .first()
    )
    if item is None:
        raise Http404("No such item")
    return item


def access_ask_draft(*, user: Any, ask_draft_id: int) -> AskDraft:
    draft = AskDraft.objects.select_related("account", "in_reply_to").filter(pk=ask_draft_id, owner=user).first()
    if draft is None:
        raise Http404("No such draft")
    return draft


def open_draft_for(*, user: Any, item_id: int | None = None, ask_draft_id: int | None = None) -> ReplyDraft | None:
    """An unsent draft already made from this source (opening "Reply…" twice continues it)."""
    drafts = ReplyDraft.objects.filter(owner=user).exclude(status=DraftStatus.SENT)
    if item_id is not None:
        drafts = drafts.filter(workspace_item_id=item_id)
    elif ask_draft_id is not None:
        drafts = drafts.filter(ask_draft_id=ask_draft_id)
    else:
        return None
    return drafts.order_by("-updated_at").first()


def is_stale_sending(draft: ReplyDraft, *, now: dt.datetime | None = None) -> bool:
    started = draft.send_started_at
    return (
        draft.status == DraftStatus.SENDING
        and started is not None
        and (now or timezone.now()) - started > STALE_SENDING_AFTER
    )


# --- confirmation ---------------------------------------------------------------------------------------


def confirm_token(draft: ReplyDraft) -> str:
    """Signed proof that the user saw this revision of this draft on the confirmation page."""
    return signing.dumps({"draft": draft.pk, "revision": draft.revision, "owner": draft.owner_id}, salt=CONFIRM_SALT)


def confirmation_matches(draft: ReplyDraft, token: str) -> bool:
    if not token:
        return False
    try:
        data = signing.loads(token, salt=CONFIRM_SALT, max_age=CONFIRM_MAX_AGE_SECONDS)
    except signing.BadSignature:
        return False
    return (
        isinstance(data, dict)
        and data.get("draft") == draft.pk
        and data.get("revision") == draft.revision
        and data.get("owner") == draft.owner_id
    )


# --- what would be sent ----------------------------------------------------------------------------------


@dataclass(slots=True)
class SendReadiness:
    problem: str = ""  # the account cannot send at all (local import, no SMTP server, disabled)
    needs_consent: bool = False  # the OAuth grant lacks the send scope: one click to the provider and back
    setup_smtp: bool = False

    @property
    def ready(self) -> bool:
        return not self.problem and not self.needs_consent


def send_readiness(account: MailAccount) -> SendReadiness:
    problem = sending_problem(account)
    if problem:
        return SendReadiness(problem=problem, setup_smtp=account.provider == "imap" and not account.smtp_host)
    return SendReadiness(needs_consent=not oauth.can_send(account))


def account_signature(account: MailAccount) -> str:
    return account.signature or ""


def outgoing_for(
    draft: ReplyDraft, *, message_id: str | None = None, now: dt.datetime | None = None, with_files: bool = True
) -> compose.Outgoing:
    """The message as it goes out; `with_files=False` leaves the attachments' bytes unread (a preview)."""
    account = draft.account
    signature = account_signature(account) if draft.include_signature else ""
    return compose.Outgoing(
        from_name=account.display_name,
        from_address=account.address,
        to=compose.people(draft.to),
        cc=compose.people(draft.cc),
        subject=draft.subject,
        rendered=compose.render_body(body=draft.body, body_format=draft.body_format, signature=signature),
        message_id=message_id or draft.message_id or "pending",
        in_reply_to=draft.in_reply_to_header,
        references=draft.references_header,
        date=now or timezone.now(),
        attachments=[
            compose.OutgoingAttachment(filename=a.filename, content_type=a.content_type, data=bytes(a.data))
            for a in ReplyAttachment.objects.filter(draft=draft).order_by("created_at", "pk")
        ]
        if with_files
        else [],
    )


def draft_attachments(draft: ReplyDraft) -> list[ReplyAttachment]:
    """The draft's files without their bytes."""
    return list(ReplyAttachment.objects.filter(draft=draft).defer("data").order_by("created_at", "pk"))


def attachable_items(draft: ReplyDraft) -> list[WorkspaceItem]:
    """The live items of the workspace (the run) the reply came from, except the one whose text the reply is,
    without their data, newest first."""
    if draft.workspace_item_id is None:
        return []
    workspace_id = WorkspaceItem.objects.filter(pk=draft.workspace_item_id).values("workspace_id")
    return list(
        WorkspaceItem.objects.filter(workspace_id__in=workspace_id, workspace__owner=draft.owner_id, deleted=False)
        .exclude(pk=draft.workspace_item_id)
        .only("pk", "label", "path", "mime_type", "encoding", "created")
        .order_by("-created", "-pk")
    )


def items_to_attach(draft: ReplyDraft, item_ids: list[int]) -> list[WorkspaceItem]:
    """Those of `item_ids` that are live items of the reply's workspace (others are ignored), with their data."""
    allowed = {item.pk for item in attachable_items(draft)}
    return list(WorkspaceItem.objects.filter(pk__in=[pk for pk in item_ids if pk in allowed]).order_by("pk"))


# Microsoft Graph answers 413 to a request over 4 MB. A MIME sendMail carries the message base64-encoded, and
# the files inside it are base64 already: about 2 MB of files fit. Larger needs upload sessions on a draft
# message, which are not implemented.
GRAPH_REQUEST_LIMIT = 4 * 1024 * 1024
GRAPH_ATTACHMENTS_HINT = 2 * 1024 * 1024  # what the editor's file picker lets through for Outlook accounts


def graph_attachment_problem(draft: ReplyDraft) -> str:
    """For Outlook accounts with files: the exact sendMail request size (the MIME, base64) against Graph's limit."""
    if draft.account.provider != Provider.OUTLOOK or not ReplyAttachment.objects.filter(draft=draft).exists():
        return ""
    request = 4 * math.ceil(len(compose.build_mime(outgoing_for(draft))) / 3)
    if request <= GRAPH_REQUEST_LIMIT:
        return ""
    return (
        f"With its attachments this reply is a {filesizeformat(request)} request to Microsoft Graph, over the "
        "4 MB one send can carry (files travel base64-encoded twice, so about 2 MB of files fit). Larger "
        "attachments need Graph upload sessions, which mailagent does not use yet. Remove some files, or share "
        "a link instead."
    )


def draft_problems(draft: ReplyDraft) -> list[str]:
    """What stops this draft from being sent as it is (shown on the confirmation page, checked on send)."""
    problems = []
    recipients = compose.people(draft.to) + compose.people(draft.cc)
    if not compose.people(draft.to):
        problems.append("Add at least one recipient in To.")
    bad = [person["address"] for person in recipients if not compose.is_valid_address(person["address"])]
    if bad:
        problems.append("These addresses are not valid: " + ", ".join(bad))
    if not draft.account.address:
        problems.append("The account has no email address to send from.")
    if not draft.body.strip():
        problems.append("The reply is empty.")
    graph = graph_attachment_problem(draft)
    if graph:
        problems.append(graph)
    return problems

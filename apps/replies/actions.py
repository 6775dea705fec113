"""Writes for reply drafts: start one from a workspace item or an Ask draft, edit, switch reply / reply all,
discard, send (only with the confirmation token of the revision the user saw), and SMTP settings.

Sending is the one path that reaches other people, so it is here and only here: no agent tool, Ask step or
task calls `send_draft`; the views call it after the user's Send + Confirm.
"""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import Http404
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone

from apps.accounts.identity import dedupe_key_for_parsed
from apps.accounts.models import ImapSecurity, MailAccount, Message, Provider
from apps.accounts.parsing import parse_message
from apps.accounts.providers.base import ProviderError, RemoteMessage
from apps.accounts.sending import PartiallySent, SendPermissionMissing, SentMessage, send_message
from apps.accounts.store import store_remote_messages
from apps.ask.models import Draft as AskDraft
from apps.orchestration.approvals import ApprovalError, request_approval
from apps.orchestration.models import Approval, ApprovalStatus
from apps.replies import compose, selectors
from apps.replies.models import BodyFormat, DraftSource, DraftStatus, ReplyAttachment, ReplyDraft, ReplyMode
from apps.workspaces.models import Encoding, WorkspaceItem

logger = logging.getLogger(__name__)

MAX_ATTACHMENTS = 50
MAX_DRAFT_BODY_CHARS = 100_000
MAX_DRAFT_RECIPIENTS = 50
REPLY_SEND = "reply_send"


class CannotReply(Exception):
    """The source cannot become a reply (no email behind it, not text); the message says why."""


class SendRefused(Exception):
    """Nothing was sent: not confirmed, already sent or being sent, or the draft is incomplete."""


class ConsentNeeded(Exception):
    """The provider's send scope is missing: the user must grant it (incremental consent), then confirm again."""


def _threading(draft: ReplyDraft, original: Message) -> None:
    draft.in_reply_to_header, draft.references_header = compose.threading_headers(original)
    thread = original.thread
    draft.provider_thread_id = thread.provider_thread_id if thread is not None else ""


@transaction.atomic
def create_draft_from_item(*, owner: Any, item: WorkspaceItem, reply_all: bool = False) -> ReplyDraft:
    """A reply to the email the item's run worked on, pre-filled with the item's text."""
    existing = selectors.open_draft_for(user=owner, item_id=item.pk)
    if existing is not None:
        return existing
    if not selectors.is_replyable_item(item):
        raise CannotReply(
            f"“{item.label or item.mime_type}” is not text ({item.mime_type}); only text items become replies."
        )
    original = item.workspace.message
    if original is None:
        raise CannotReply("This item's workspace was not made from an email, so there is nothing to reply to.")
    account = original.account
    mime = item.mime_type.split(";")[0].strip().lower()
    to, cc = compose.reply_recipients(original=original, account=account, reply_all=reply_all)
    draft = ReplyDraft(
        owner=owner,
        account=account,
        original=original,
        source=DraftSource.WORKSPACE_ITEM,
        workspace_item=item,
        mode=ReplyMode.REPLY_ALL if reply_all else ReplyMode.REPLY,
        to=to,
        cc=cc,
        subject=compose.reply_subject(original.subject),
        body=compose.strip_signature(item.data).strip("\n"),
        body_format=BodyFormat.HTML if mime == "text/html" else BodyFormat.PLAIN,
    )
    _threading(draft, original)
    draft.save()
    return draft


@transaction.atomic
def create_draft_from_ask_draft(*, owner: Any, ask_draft: AskDraft) -> ReplyDraft:
    """A copy of an Ask draft to edit and send (the Ask draft itself stays as Ask wrote it)."""
    existing = selectors.open_draft_for(user=owner, ask_draft_id=ask_draft.pk)
    if existing is not None:
        return existing
    original = ask_draft.in_reply_to
    draft = ReplyDraft(
        owner=owner,
        account=ask_draft.account,
        original=original,
        source=DraftSource.ASK_DRAFT,
        ask_draft=ask_draft,
        mode=ReplyMode.AS_DRAFTED,
        to=compose.people(ask_draft.to),
        cc=compose.people(ask_draft.cc),
        subject=ask_draft.subject or (compose.reply_subject(original.subject) if original else ""),
        # Ask writes the signature into the text; the account's signature is added when sending instead.
        body=compose.strip_signature(ask_draft.body),
    )
    if original is not None:
        _threading(draft, original)
    draft.save()
    return draft


def _clean_people(entries: list[dict[str, str]], field: str) -> list[dict[str, str]]:
    persons = compose.people(entries)
    if len(persons) > MAX_DRAFT_RECIPIENTS:
        raise CannotReply(f"{field} has {len(persons)} addresses; the limit is {MAX_DRAFT_RECIPIENTS}")
    bad = [person["address"] for person in persons if not compose.is_valid_address(person["address"])]
    if bad:
        raise CannotReply(f"{field}: these addresses are not valid: {', '.join(bad)}")
    return persons


@transaction.atomic
def create_outside_draft(
    *,
    owner: Any,
    account: MailAccount,
    original: Message | None,
    to: list[dict[str, str]],
    cc: list[dict[str, str]],
    subject: str,
    body: str,
) -> ReplyDraft:
    """A draft an outside agent wrote (the mailbox MCP endpoint): a reply to `original` (its sender, or `to`
    when given) or a new email to `to`. It is only a draft, in the Drafts page: sending it needs the user's
    confirmation there, or their approval of a send request."""
    if original is not None and original.account_id != account.pk:
        raise CannotReply("the email answered is in another account")
    if not isinstance(body, str) or not body.strip():
        raise CannotReply("the body is empty")
    if len(body) > MAX_DRAFT_BODY_CHARS:
        raise CannotReply(f"the body is {len(body)} characters; the limit is {MAX_DRAFT_BODY_CHARS}")
    if len(subject) > 998:
        raise CannotReply("the subject is longer than 998 characters")
    to_people, cc_people = _clean_people(to, "to"), _clean_people(cc, "cc")
    if original is not None and not to_people:
        to_people, default_cc = compose.reply_recipients(original=original, account=account, reply_all=False)
        cc_people = cc_people or default_cc
    if not to_people:
        raise CannotReply("give at least one recipient in to (or reply in a thread)")
    draft = ReplyDraft(
        owner=owner,
        account=account,
        original=original,
        source=DraftSource.MCP,
        mode=ReplyMode.AS_DRAFTED,
        to=to_people,
        cc=cc_people,
        subject=subject.strip() or (compose.reply_subject(original.subject) if original is not None else ""),
        body=body.strip("\n"),
    )
    if original is not None:
        _threading(draft, original)
    draft.save()
    return draft


def request_send_approval(*, draft: ReplyDraft, workspace: Any) -> Approval:
    """Ask the user, in their Inbox, to approve sending this revision of the draft. Nothing is sent now;
    approving sends exactly this revision (an edit after the request makes the approval fail: ask again)."""
    if not draft.is_editable:
        state = "was already sent" if draft.status == DraftStatus.SENT else "is being sent"
        raise SendRefused(f"This draft {state}.")
    problems = selectors.draft_problems(draft)
    readiness = selectors.send_readiness(draft.account)
    if readiness.problem:
        problems.append(readiness.problem)
    if problems:
        raise SendRefused("It cannot be sent as it is: " + " ".join(problems))
    for waiting in Approval.objects.filter(owner_id=draft.owner_id, kind=REPLY_SEND, status=ApprovalStatus.PENDING):
        if (waiting.request or {}).get("draft_id") == draft.pk and waiting.request.get("revision") == draft.revision:
            return waiting  # asked twice: one approval waits, not two
    recipients = ", ".join(person["address"] for person in [*draft.to, *draft.cc])
    subject = draft.subject or "(no subject)"
    request = {
        "draft_id": draft.pk,
        "revision": draft.revision,
        "to": draft.to,
        "cc": draft.cc,
        "subject": draft.subject,
        "body": draft.body[:20_000],
    }
    comments = (
        f"**Approval needed:** send “{subject}” from {draft.account.name} to {recipients}.\n\n"
        f"Nothing has been sent. [Open the draft]({reverse('replies:edit', args=[draft.pk])})."
    )
    return request_approval(
        owner=draft.owner,
        workspace=workspace,
        account=draft.account,
        kind=REPLY_SEND,
        summary=f"Send “{subject}” to {recipients}",
        request=request,
        comments=comments,
    )


def perform_send_approval(approval: Approval) -> dict[str, Any]:
    """The approved send (orchestration calls it from `approve`): the draft as it was when requested."""
    request = dict(approval.request or {})
    draft = ReplyDraft.objects.filter(pk=int(request.get("draft_id") or 0), owner_id=approval.owner_id).first()
    if draft is None:
        raise ApprovalError("the draft no longer exists; nothing was sent")
    if draft.status == DraftStatus.SENT:
        raise ApprovalError("this draft was already sent")
    if draft.revision != request.get("revision"):
        raise ApprovalError("the draft was edited after the send was requested, so nothing was sent: ask again")
    try:
        result = send_draft(owner=approval.owner, draft_id=draft.pk, token=selectors.confirm_token(draft))
    except (SendRefused, Http404) as exc:
        raise ApprovalError(str(exc)) from None
    except ConsentNeeded:
        raise ApprovalError("the account needs your permission to send: open the draft and send it there") from None
    if not result.sent:
        raise ApprovalError(result.error)
    sent = result.draft.sent_message
    return {"draft_id": draft.pk, "sent_message_id": sent.pk if sent else None, "warning": result.warning}


def _editable(draft: ReplyDraft) -> None:
    if not draft.is_editable and not selectors.is_stale_sending(draft):
        state = "was already sent" if draft.status == DraftStatus.SENT else "is being sent"
        raise SendRefused(f"This reply {state}; it can no longer be changed.")


@transaction.atomic
def update_draft(
    *,
    draft: ReplyDraft,
    to: list[dict[str, str]],
    cc: list[dict[str, str]],
    subject: str,
    body: str,
    include_signature: bool,
) -> ReplyDraft:
    locked = ReplyDraft.objects.select_for_update().get(pk=draft.pk)
    _editable(locked)
    changed = (locked.to, locked.cc, locked.subject, locked.body, locked.include_signature) != (
        to,
        cc,
        subject,
        body,
        include_signature,
    )
    if changed:
        locked.to, locked.cc, locked.subject, locked.body = to, cc, subject, body
        locked.include_signature = include_signature
        locked.revision += 1
        locked.updated_at = timezone.now()
        locked.save(update_fields=["to", "cc", "subject", "body", "include_signature", "revision", "updated_at"])
    return locked


@transaction.atomic
def set_reply_mode(*, draft: ReplyDraft, mode: str) -> ReplyDraft:
    """Recompute To/Cc from the original for reply or reply all (typed recipients are replaced)."""
    # Lock the draft row only: PostgreSQL cannot lock the nullable side of the join to the original.
    locked = ReplyDraft.objects.select_for_update(of=("self",)).select_related("account", "original").get(pk=draft.pk)
    _editable(locked)
    if locked.original is None:
        raise SendRefused("The email this draft answers is gone, so its recipients cannot be recomputed.")
    if mode not in (ReplyMode.REPLY, ReplyMode.REPLY_ALL):
        raise SendRefused("Choose reply or reply all.")
    locked.to, locked.cc = compose.reply_recipients(
        original=locked.original, account=locked.account, reply_all=mode == ReplyMode.REPLY_ALL
    )
    locked.mode = mode
    locked.revision += 1
    locked.updated_at = timezone.now()
    locked.save(update_fields=["to", "cc", "mode", "revision", "updated_at"])
    return locked


@transaction.atomic
def discard_draft(*, draft: ReplyDraft) -> None:
    locked = ReplyDraft.objects.select_for_update().get(pk=draft.pk)
    if locked.status == DraftStatus.SENDING and not selectors.is_stale_sending(locked):
        raise SendRefused("This reply is being sent right now; it cannot be discarded.")
    locked.delete()


# --- attachments -----------------------------------------------------------------------------------------


class AttachmentRefused(Exception):
    """The files were not attached (too large, too many, not the user's); the message says why."""


@dataclass(frozen=True, slots=True)
class NewAttachment:
    filename: str
    content_type: str
    data: bytes
    workspace_item_id: int | None = None


def clean_filename(name: str, *, fallback: str = "attachment") -> str:
    """The last path component, without control characters, at most 255 characters."""
    base = str(name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(char for char in base if char.isprintable()).strip().strip(".")
    if len(base) > 255:
        stem, dot, extension = base.rpartition(".")
        base = (stem[: 250 - len(extension)] + dot + extension) if dot and len(extension) < 10 else base[:255]
    return base or fallback


def attachment_from_item(item: WorkspaceItem) -> NewAttachment:
    """A workspace item as a file: its bytes (base64 items decoded), named after its path or label."""
    if item.encoding == Encoding.BASE64:
        try:
            data = base64.b64decode(item.data, validate=False)
        except (binascii.Error, ValueError) as exc:
            raise AttachmentRefused(f"“{item.label or item.path}” could not be decoded ({exc}).") from exc
    else:
        data = item.data.encode("utf-8")
    content_type = item.mime_type.split(";")[0].strip().lower() or "application/octet-stream"
    name = clean_filename(item.path or item.label or "", fallback=f"item-{item.pk}")
    if "." not in name:
        name += mimetypes.guess_extension(content_type) or ""
    return NewAttachment(filename=name, content_type=content_type, data=data, workspace_item_id=item.pk)


def max_attachment_bytes() -> int:
    """A reply's attachments together: what one logged-in request may carry (MAILAGENT_MAX_REQUEST_BYTES)."""
    return int(settings.MAILAGENT_MAX_REQUEST_BYTES)


@transaction.atomic
def change_attachments(
    *, draft: ReplyDraft, add: list[NewAttachment], remove_ids: list[int]
) -> tuple[ReplyDraft, list[ReplyAttachment]]:
    """Remove and add a draft's attachments in one go (a new revision: a confirmation covers the files too).
    All or nothing: over the size or count limit, nothing changes and the error names the limit."""
    locked = ReplyDraft.objects.select_for_update(of=("self",)).get(pk=draft.pk)
    _editable(locked)
    kept = ReplyAttachment.objects.filter(draft=locked).exclude(pk__in=remove_ids)
    current = list(kept.values_list("size", flat=True))
    limit = max_attachment_bytes()
    total = sum(current) + sum(len(new.data) for new in add)
    if total > limit:
        names = ", ".join(new.filename for new in add)
        raise AttachmentRefused(
            f"Not attached: {names}. A reply's attachments may total {filesizeformat(limit)}; these would make "
            f"{filesizeformat(total)}. Attach fewer or smaller files (or share a link in the text)."
        )
    if len(current) + len(add) > MAX_ATTACHMENTS:
        raise AttachmentRefused(f"A reply can carry at most {MAX_ATTACHMENTS} files.")
    removed, _ = ReplyAttachment.objects.filter(draft=locked, pk__in=remove_ids).delete()
    made = ReplyAttachment.objects.bulk_create(
        ReplyAttachment(
            draft=locked,
            filename=new.filename,
            content_type=new.content_type,
            size=len(new.data),
            data=new.data,
            workspace_item_id=new.workspace_item_id,
        )
        for new in add
    )
    if removed or made:
        locked.revision += 1
        locked.updated_at = timezone.now()
        locked.save(update_fields=["revision", "updated_at"])
    return locked, made


# --- sending ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SendResult:
    draft: ReplyDraft
    sent: bool
    error: str = ""
    warning: str = ""


def _claim_for_sending(*, owner: Any, draft_id: int, token: str) -> ReplyDraft:
    """Check everything and mark the draft as sending, in one locked transaction (a second Confirm click
    finds it sending and is refused)."""
    with transaction.atomic():
        draft = (
            ReplyDraft.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=draft_id, owner=owner)
            .first()
        )
        if draft is None:
            raise Http404("No such draft")
        if draft.status == DraftStatus.SENT:
            raise SendRefused("This reply was already sent.")
        if draft.status == DraftStatus.SENDING and not selectors.is_stale_sending(draft):
            raise SendRefused("This reply is being sent right now.")
        if not selectors.confirmation_matches(draft, token):
            raise SendRefused(
                "Nothing was sent: a reply goes out only after you confirm it on the confirmation page "
                "(and the confirmation is for the version you saw; edits need a new one)."
            )
        problems = selectors.draft_problems(draft)
        if problems:
            raise SendRefused("Nothing was sent: " + " ".join(problems))
        readiness = selectors.send_readiness(draft.account)
        if readiness.problem:
            raise SendRefused(f"Nothing was sent: {readiness.problem}")
        if readiness.needs_consent:
            raise ConsentNeeded
        now = timezone.now()
        draft.message_id = draft.message_id or compose.new_message_id(draft.account)
        draft.status = DraftStatus.SENDING
        draft.send_started_at = now
        draft.updated_at = now
        draft.save(update_fields=["message_id", "status", "send_started_at", "updated_at"])
    return draft


def _mark(draft: ReplyDraft, **fields: Any) -> ReplyDraft:
    fields.setdefault("updated_at", timezone.now())
    ReplyDraft.objects.filter(pk=draft.pk).update(**fields)
    for name, value in fields.items():
        setattr(draft, name, value)
    return draft


def store_sent_copy(*, account: MailAccount, raw: bytes, sent: SentMessage, message_id: str) -> Message | None:
    """The sent message in the local mailbox, once: keyed by its Message-ID, so the copy a later sync
    fetches from the Sent folder is recognised as the same message (and takes over the provider id)."""
    labels = sent.labels or ([sent.folder] if sent.folder else [])
    store_remote_messages(
        account=account,
        messages=[
            RemoteMessage(
                provider_id=sent.provider_id or f"sent:{message_id}",
                raw=raw,
                folder=sent.folder,
                labels=labels,
                seen=True,
                provider_thread_id=sent.provider_thread_id,
                provisional=not sent.provider_id,
            )
        ],
    )
    return Message.objects.filter(account=account, dedupe_key=dedupe_key_for_parsed(parse_message(raw))).first()


def append_to_imap_sent(*, account: MailAccount, raw: bytes, sent: SentMessage) -> str:
    """After an SMTP send: the same bytes into the IMAP account's Sent folder (\\Seen). On success `sent`
    names that copy, so the local copy stored next is the one the next sync of the folder finds (stored once).
    Returns why it failed, or "": the mail is out either way."""
    from apps.accounts.providers.imap.provider import ImapProvider

    try:
        copy = ImapProvider(account).append_sent_copy(raw)
    except ProviderError as exc:
        return str(exc)
    except Exception as exc:
        logger.exception("account %s: APPEND to the Sent folder crashed", account.pk)
        return f"{type(exc).__name__}: {exc}"
    sent.folder = copy.folder
    if copy.provider_id:
        sent.provider_id = copy.provider_id
    return ""


def send_draft(*, owner: Any, draft_id: int, token: str) -> SendResult:
    """Send a confirmed draft through its account's provider and keep the sent copy locally.

    Raises SendRefused / ConsentNeeded before anything leaves; a provider failure marks the draft failed
    with the reason (its text is kept) and returns sent=False."""
    draft = _claim_for_sending(owner=owner, draft_id=draft_id, token=token)
    account = draft.account
    now = timezone.now()
    outgoing = selectors.outgoing_for(draft, message_id=draft.message_id, now=now)
    raw = compose.build_mime(outgoing)
    recipients = [person["address"] for person in [*outgoing.to, *outgoing.cc]]
    warning = ""
    try:
        sent = send_message(
            account=account,
            raw=raw,
            envelope_from=account.address,
            recipients=recipients,
            thread_id=draft.provider_thread_id,
        )
    except PartiallySent as partial:
        sent, warning = partial.sent, str(partial)
    except SendPermissionMissing as exc:
        _mark(draft, status=DraftStatus.FAILED, last_error=str(exc))
        raise ConsentNeeded from exc
    except ProviderError as exc:
        logger.warning("reply draft %s: sending failed: %s", draft.pk, exc)
        _mark(draft, status=DraftStatus.FAILED, last_error=str(exc))
        return SendResult(draft=draft, sent=False, error=str(exc))
    except Exception as exc:
        logger.exception("reply draft %s: sending crashed", draft.pk)
        error = f"Sending failed unexpectedly ({type(exc).__name__}: {exc}); the reply was probably not sent."
        _mark(draft, status=DraftStatus.FAILED, last_error=error)
        return SendResult(draft=draft, sent=False, error=error)
    if account.provider == Provider.IMAP:
        problem = append_to_imap_sent(account=account, raw=raw, sent=sent)
        if problem:
            logger.warning("reply draft %s: sent, but the copy in the IMAP Sent folder failed: %s", draft.pk, problem)
            warning = (warning + " " if warning else "") + (
                f"Sent, but the copy in the account's Sent folder could not be saved ({problem}); "
                "other mail clients will not show it there."
            )
    stored: Message | None = None
    try:
        stored = store_sent_copy(account=account, raw=raw, sent=sent, message_id=draft.message_id)
    except Exception as exc:  # the mail is out; the next sync of the Sent folder brings the copy in
        logger.exception("reply draft %s: sent, but storing the local copy failed", draft.pk)
        warning = (warning + " " if warning else "") + f"Sent, but the local copy could not be stored ({exc})."
    _mark(
        draft,
        status=DraftStatus.SENT,
        sent_at=timezone.now(),
        sent_message=stored,
        last_error=warning,
    )
    logger.info("reply draft %s sent through %s", draft.pk, account.provider)
    return SendResult(draft=draft, sent=True, warning=warning)


# --- SMTP settings ---------------------------------------------------------------------------------------


@transaction.atomic
def save_smtp_settings(
    *,
    account: MailAccount,
    host: str,
    port: int | None,
    security: str,
    username: str,
    password: str | None,
) -> MailAccount:
    """`password=None` keeps the stored one (the form never shows it back)."""
    account.smtp_host = host.strip()
    account.smtp_port = port
    account.smtp_security = ImapSecurity(security)
    account.smtp_username = username.strip()
    fields = ["smtp_host", "smtp_port", "smtp_security", "smtp_username"]
    if password is not None:
        account.smtp_password = password
        fields.append("smtp_password")
    account.save(update_fields=fields)
    return account

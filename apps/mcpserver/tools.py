"""The mailbox MCP tools' work, synchronous (the server runs each through database_sync_to_async). Every
read goes through the owning app's permission-checked `access_*` selector, so another user's id is "not
found" exactly like a missing one; every write is the owning app's action. Nothing here sends mail or
changes the server: request_send and request_action only create approvals the user decides in the Inbox."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from email.utils import getaddresses
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.http import Http404
from django.urls import reverse
from mcp.server.mcpserver.exceptions import ToolError

from apps.accounts import selectors as account_selectors
from apps.accounts.labels import InvalidTag, clean_tag_name
from apps.accounts.models import MailAccount, Message, MessageLocation
from apps.accounts.writeback import MailActionRefused, target_folder_for
from apps.ask import actions as ask_actions
from apps.ask import selectors as ask_selectors
from apps.ask.extraction import extract_attachment_texts
from apps.mcpserver import schemas
from apps.orchestration import selectors as orchestration_selectors
from apps.orchestration.approvals import ApprovalError, mail_approval_summary, request_approval
from apps.orchestration.models import Approval
from apps.organization.selectors import access_library_file
from apps.replies import actions as reply_actions
from apps.replies import selectors as reply_selectors
from apps.replies.models import ReplyDraft
from apps.search.documents import message_body_text, split_own_text
from apps.search.models import DocumentKind
from apps.search.selectors import build_filters, folders_condition, search_page
from apps.workspaces.models import Workspace
from apps.workspaces.selectors import MailboxPrincipal

MAX_TEXT_CHARS = 100_000  # one message's or one file's text
MAX_THREAD_CHARS = 300_000  # a whole thread
MAX_PAGE = 100
_TAGS = re.compile(r"<[^>]+>")


def owner(principal: MailboxPrincipal) -> Any:
    user = get_user_model().objects.filter(pk=principal.owner_id, is_active=True).first()
    if user is None:
        raise ToolError("the token's owner no longer exists")
    return user


def in_reach(principal: MailboxPrincipal, account_id: int | None) -> bool:
    """Whether the token may see mail of this account (a token restricted to one account sees only it)."""
    return principal.account_id is None or account_id == principal.account_id


def visible(principal: MailboxPrincipal, messages: list[Message]) -> set[int]:
    """The ids of `messages` the token may see: its account's, and with folders, only mail placed in one of
    them or below (a message moved out of them on the server is out of reach with its next sync)."""
    ids = [m.pk for m in messages if in_reach(principal, m.account_id)]
    if not principal.folders or principal.account_id is None:
        return set(ids)
    return account_selectors.messages_in_folders(
        account_id=principal.account_id, folders=principal.folders, message_ids=ids
    )


def _plain(snippet: str) -> str:
    return html.unescape(_TAGS.sub("", snippet or ""))


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def _people(entries: Any) -> list[schemas.Person]:
    found = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("address"):
            found.append(schemas.Person(name=str(entry.get("name") or ""), address=str(entry["address"])))
    return found


def _sender(message: Message) -> str:
    if message.from_name and message.from_address:
        return f"{message.from_name} <{message.from_address}>"
    return message.from_address or message.from_name


def _folders(message_ids: list[int]) -> dict[int, list[str]]:
    folders: dict[int, list[str]] = {pk: [] for pk in message_ids}
    rows = MessageLocation.objects.filter(message_id__in=message_ids).values_list("message_id", "folder__name")
    for message_id, name in rows.order_by("folder__name"):
        if name not in folders[message_id]:
            folders[message_id].append(name)
    return folders


def _cursor(cursor: str | None) -> int:
    if cursor is None or cursor == "":
        return 1
    if not cursor.isdigit() or not 1 <= int(cursor) <= MAX_PAGE:
        raise ToolError("cursor is not one this server gave: pass next_cursor from the previous result unchanged")
    return int(cursor)


MAIL_KINDS = (DocumentKind.MESSAGE.value, DocumentKind.ATTACHMENT.value)


def _page(
    user: Any,
    query: str,
    kinds: tuple[str, ...],
    limit: int,
    cursor: str | None,
    account_id: int | None = None,
    folders: tuple[str, ...] = (),
) -> Any:
    base = replace(build_filters(account_ids=None), kinds=kinds)
    if account_id is not None:  # the token's one account (search narrows it further by account: operators)
        base = replace(base, account_ids=(account_id,))
        if folders:  # and its folders: a condition ANDed with whatever the query says (an in: cannot widen it)
            base = replace(base, conditions=(folders_condition(folders, (account_id,)),))
    try:
        return search_page(
            query,
            user=user,
            page=_cursor(cursor),
            per_page=limit,
            base=base,
        )
    except ValueError as exc:  # an unknown operator or account: the message says what to write instead
        raise ToolError(str(exc)) from None


def search_mail(principal: MailboxPrincipal, query: str, limit: int, cursor: str | None) -> schemas.SearchMailResult:
    user = owner(principal)
    page = _page(user, query, MAIL_KINDS, limit, cursor, principal.account_id, principal.folders)
    rows = [row for row in page.rows if row.kind == "mail"]
    ids = [row.pk for row in rows]
    found = list(Message.objects.filter(pk__in=ids, account__owner=user).select_related("account"))
    shown = visible(principal, found)
    messages = {m.pk: m for m in found if m.pk in shown}
    folders = _folders(ids)
    results = []
    for row in rows:
        message = messages.get(row.pk)
        if message is None:
            continue
        results.append(
            schemas.MailHit(
                message_id=message.pk,
                thread_id=message.thread_id,
                rfc_message_id=message.message_id or message.dedupe_key,
                subject=message.subject,
                sender=_sender(message),
                to=_people(message.to),
                date=_iso(message.date),
                snippet=_plain(row.snippet) or message.snippet,
                folders=folders.get(message.pk, []),
                account=message.account.name,
                unread=not message.seen,
                matches=row.matches,
            )
        )
    return schemas.SearchMailResult(
        query=query,
        count=page.count,
        results=results,
        next_cursor=str(page.page + 1) if page.has_next and page.page < MAX_PAGE else None,
        did_you_mean=page.suggestion or None,
    )


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def _message_out(message: Message, folders: list[str], limit: int = MAX_TEXT_CHARS) -> schemas.MessageOut:
    own, quoted = split_own_text(message_body_text(message))
    own, cut_own = _cut(own, limit)
    quoted, cut_quoted = _cut(quoted, max(0, limit - len(own)))
    return schemas.MessageOut(
        message_id=message.pk,
        thread_id=message.thread_id,
        rfc_message_id=message.message_id or message.dedupe_key,
        account=message.account.name,
        sender=_sender(message),
        to=_people(message.to),
        cc=_people(message.cc),
        date=_iso(message.date),
        subject=message.subject,
        folders=folders,
        unread=not message.seen,
        flagged=message.flagged,
        text=own,
        quoted=quoted,
        truncated=cut_own or cut_quoted,
        attachments=[
            schemas.AttachmentInfo(attachment_id=a.pk, filename=a.filename, mime_type=a.mime_type, size=a.size)
            for a in message.attachments.all()
        ],
    )


def read_message(principal: MailboxPrincipal, message_id: int) -> schemas.MessageOut:
    try:
        message = account_selectors.access_message(user=owner(principal), message_id=message_id)
    except Http404:
        message = None
    if message is None or not visible(principal, [message]):
        raise ToolError(f"no message {message_id} in your mailbox")
    return _message_out(message, _folders([message.pk])[message.pk])


def read_thread(principal: MailboxPrincipal, thread_id: int) -> schemas.ThreadOut:
    try:
        thread = account_selectors.access_thread(user=owner(principal), thread_id=thread_id)
    except Http404:
        thread = None
    if thread is None or not in_reach(principal, thread.account_id):
        raise ToolError(f"no thread {thread_id} in your mailbox")
    messages = account_selectors.thread_messages(thread=thread)
    if principal.folders:  # only the thread's messages in the token's folders (a reply in Sent is not)
        reachable = visible(principal, messages)
        messages = [m for m in messages if m.pk in reachable]
        if not messages:
            raise ToolError(f"no thread {thread_id} in your mailbox")
    folders = _folders([m.pk for m in messages])
    out: list[schemas.MessageOut] = []
    budget = MAX_THREAD_CHARS
    for message in messages:
        if budget <= 0:
            break
        message.account = thread.account  # one account per thread: no query per message
        shown = _message_out(message, folders[message.pk], limit=min(MAX_TEXT_CHARS, budget))
        budget -= len(shown.text) + len(shown.quoted)
        out.append(shown)
    return schemas.ThreadOut(
        thread_id=thread.pk,
        subject=thread.subject,
        account=thread.account.name,
        message_count=len(messages),
        messages=out,
        truncated=len(out) < len(messages),
    )


def list_folders(principal: MailboxPrincipal) -> schemas.FoldersResult:
    accounts = [a for a in account_selectors.list_accounts_for_user(user=owner(principal)) if in_reach(principal, a.pk)]
    return schemas.FoldersResult(
        accounts=[
            schemas.AccountFolders(
                account=entry.account.name,
                address=entry.account.address,
                folders=[
                    schemas.FolderOut(name=f.name, label=f.label, role=f.role, total=f.total, unread=f.unread)
                    for f in entry.folders
                    if not principal.folders or account_selectors.in_folders(f.name, principal.folders)
                ],
            )
            for entry in account_selectors.folder_entries(accounts)
        ]
    )


def get_attachment_text(principal: MailboxPrincipal, message_id: int, attachment_id: int) -> schemas.AttachmentText:
    try:
        attachment = account_selectors.access_attachment(user=owner(principal), attachment_id=attachment_id)
    except Http404:
        attachment = None
    if attachment is None or attachment.message_id != message_id or not visible(principal, [attachment.message]):
        raise ToolError(f"no attachment {attachment_id} on message {message_id} in your mailbox")
    error = ""
    if attachment.extracted_text is None:  # not extracted yet: extract and cache it now (Ask does the same)
        _count, failed = extract_attachment_texts(attachments=[attachment])
        error = failed[0]["error"] if failed else ""
    text, truncated = _cut(attachment.extracted_text or "", MAX_TEXT_CHARS)
    return schemas.AttachmentText(
        message_id=message_id,
        attachment_id=attachment.pk,
        filename=attachment.filename,
        mime_type=attachment.mime_type,
        text=text,
        truncated=truncated,
        error=error,
    )


def search_files(principal: MailboxPrincipal, query: str, limit: int, cursor: str | None) -> schemas.SearchFilesResult:
    page = _page(owner(principal), query, (DocumentKind.FILE.value,), limit, cursor)
    return schemas.SearchFilesResult(
        query=query,
        count=page.count,
        results=[
            schemas.FileHit(
                file_id=row.pk,
                path=row.path,
                title=row.title,
                mime_type=row.mime_type,
                snippet=_plain(row.snippet),
                date=_iso(row.date),
            )
            for row in page.rows
            if row.kind == "file"
        ],
        next_cursor=str(page.page + 1) if page.has_next and page.page < MAX_PAGE else None,
    )


def read_file_text(principal: MailboxPrincipal, file_id: int) -> schemas.FileText:
    try:
        file = access_library_file(user=owner(principal), file_id=file_id)
    except Http404:
        raise ToolError(f"no file {file_id} in your library") from None
    text, truncated = _cut(file.digest_text or "", MAX_TEXT_CHARS)
    error = file.digest_error or ("" if file.digested_at else "the file has not been read yet; try again shortly")
    return schemas.FileText(
        file_id=file.pk, path=file.path, mime_type=file.mime_type, text=text, truncated=truncated, error=error
    )


def start_ask(principal: MailboxPrincipal, question: str, conversation_id: str | None) -> str:
    """A pending Ask run (the server then runs it on the Ask runner, which bounds concurrent runs)."""
    user = owner(principal)
    if principal.folders:
        raise ToolError(
            "ask reads the whole account, and this token is limited to some of its folders: use search_mail and "
            "read_thread, or a token for the whole account"
        )
    conversation = None
    if conversation_id:
        try:
            conversation = ask_selectors.access_conversation(user=user, conversation_id=conversation_id)
        except Http404:
            raise ToolError(f"no conversation {conversation_id}: omit conversation_id to start one") from None
    try:
        account_name = ""
        if principal.account_id is not None:  # Ask reads only the token's account
            account_name = MailAccount.objects.get(pk=principal.account_id, owner=user).name
        run = ask_actions.create_ask_run(
            owner=user, question=question, conversation=conversation, account_name=account_name
        )
    except ask_actions.AskInputError as exc:
        raise ToolError(str(exc)) from None
    return str(run.pk)


def ask_result(principal: MailboxPrincipal, run_id: str) -> schemas.AskResult:
    user = owner(principal)
    done = ask_selectors.access_run(user=user, run_id=run_id)
    shown = ask_selectors.run_json(done)
    rfc_ids = [str(row.get("message_id") or "") for row in shown["evidence"] if row.get("message_id")]
    by_rfc: dict[str, tuple[int, int | None]] = {}
    rows = (
        Message.objects.filter(account__owner=user)
        .filter(Q(message_id__in=rfc_ids) | Q(dedupe_key__in=rfc_ids))
        .values_list("pk", "thread_id", "message_id", "dedupe_key")
    )
    for pk, thread_id, message_id, dedupe_key in rows:
        for key in (message_id, dedupe_key):
            if key:
                by_rfc.setdefault(key, (pk, thread_id))
    evidence = []
    for row in shown["evidence"]:
        found = by_rfc.get(str(row.get("message_id") or ""))
        evidence.append(
            schemas.Evidence(
                message_id=found[0] if found else None,
                thread_id=found[1] if found else None,
                subject=str(row.get("subject") or ""),
                sender=str(row.get("from") or ""),
                date=str(row["date"]) if row.get("date") else None,
                snippet=_plain(str(row.get("snippet") or "")),
                attachment=row.get("attachment"),
            )
        )
    return schemas.AskResult(
        run_id=shown["runId"],
        conversation_id=shown["conversationId"],
        status=shown["status"],
        answer=shown["answer"],
        answer_mode=shown["answerMode"] or "",
        evidence=evidence,
        error=shown["error"],
    )


def _draft_out(draft: ReplyDraft) -> schemas.DraftOut:
    return schemas.DraftOut(
        draft_id=draft.pk,
        account=draft.account.name,
        to=_people(draft.to),
        cc=_people(draft.cc),
        subject=draft.subject,
        status=draft.status,
        source=draft.source,
        in_reply_to_message_id=draft.original_id,
        updated=draft.updated_at.isoformat(),
        url=reverse("replies:edit", args=[draft.pk]),
    )


def _addresses(values: list[str], field: str) -> list[dict[str, str]]:
    people = []
    for name, address in getaddresses(values):
        if not address:
            raise ToolError(f"{field}: {', '.join(values)} has an entry that is not an email address")
        people.append({"name": name, "address": address})
    return people


def _account(principal: MailboxPrincipal, user: Any, name: str | None) -> MailAccount:
    accounts = [a for a in account_selectors.list_accounts_for_user(user=user) if in_reach(principal, a.pk)]
    if name:
        found = [a for a in accounts if a.name == name or a.address.lower() == name.lower()]
        if not found:
            raise ToolError(f"no account {name!r}: list_folders shows your accounts")
        return found[0]
    if len(accounts) != 1:
        raise ToolError("you have several accounts: say which one sends it (account)" if accounts else "no accounts")
    return accounts[0]


def create_draft(
    principal: MailboxPrincipal,
    thread_id: int | None,
    to: list[str],
    cc: list[str],
    subject: str,
    body: str,
    account: str | None,
) -> schemas.DraftOut:
    user = owner(principal)
    original = None
    if thread_id is not None:
        try:
            thread = account_selectors.access_thread(user=user, thread_id=thread_id)
        except Http404:
            thread = None
        if thread is None or not in_reach(principal, thread.account_id):
            raise ToolError(f"no thread {thread_id} in your mailbox")
        messages = account_selectors.thread_messages(thread=thread)
        if principal.folders:
            shown = visible(principal, messages)
            messages = [m for m in messages if m.pk in shown]
            if not messages:
                raise ToolError(f"no thread {thread_id} in your mailbox")
        if not messages:
            raise ToolError(f"thread {thread_id} has no messages left to reply to")
        original = messages[-1]
        sending = thread.account
    else:
        sending = _account(principal, user, account)
    try:
        draft = reply_actions.create_outside_draft(
            owner=user,
            account=sending,
            original=original,
            to=_addresses(to, "to"),
            cc=_addresses(cc, "cc"),
            subject=subject,
            body=body,
        )
    except reply_actions.CannotReply as exc:
        raise ToolError(str(exc)) from None
    return _draft_out(draft)


def list_drafts(principal: MailboxPrincipal, limit: int) -> schemas.DraftsResult:
    groups = reply_selectors.list_drafts(user=owner(principal))
    drafts = [d for d in [*groups["open"], *groups["sent"]] if in_reach(principal, d.account_id)]
    return schemas.DraftsResult(drafts=[_draft_out(d) for d in drafts[:limit]])


def _approval_out(approval: Approval) -> schemas.ApprovalOut:
    return schemas.ApprovalOut(
        approval_id=approval.pk,
        kind=approval.kind,
        status=approval.status,
        summary=approval.summary,
        error=approval.error,
        created=approval.created_at.isoformat(),
        decided=_iso(approval.decided_at),
        performed=_iso(approval.performed_at),
        url=reverse("runs:approval", args=[approval.pk]),
    )


def _workspace(principal: MailboxPrincipal) -> Workspace:
    workspace = None
    if principal.workspace_id is not None:
        workspace = Workspace.objects.filter(pk=principal.workspace_id, owner_id=principal.owner_id).first()
    if workspace is None:
        raise ToolError("this token's Inbox workspace was deleted: create a new token in Settings → MCP tokens")
    return workspace


def request_send(principal: MailboxPrincipal, draft_id: int) -> schemas.ApprovalOut:
    user = owner(principal)
    try:
        draft = reply_selectors.access_draft(user=user, draft_id=draft_id)
    except Http404:
        draft = None
    if draft is None or not in_reach(principal, draft.account_id):
        raise ToolError(f"no draft {draft_id}: list_drafts shows yours")
    try:
        approval = reply_actions.request_send_approval(draft=draft, workspace=_workspace(principal))
    except (reply_actions.SendRefused, ApprovalError) as exc:
        raise ToolError(str(exc)) from None
    return _approval_out(approval)


def request_action(
    principal: MailboxPrincipal, kind: str, message_ids: list[int], folder: str | None, tag: str | None = None
) -> schemas.ActionRequested:
    user = owner(principal)
    wanted = list(dict.fromkeys(message_ids))
    candidates = list(Message.objects.filter(pk__in=wanted, account__owner=user).select_related("account"))
    shown = visible(principal, candidates)
    found = {m.pk: m for m in candidates if m.pk in shown}
    missing = [str(pk) for pk in wanted if pk not in found]
    if missing:
        raise ToolError(f"no message {', '.join(missing)} in your mailbox; nothing was requested")
    if kind == "move" and not folder:
        raise ToolError("move needs folder (list_folders shows them)")
    if kind in ("tag", "untag"):
        try:
            tag = clean_tag_name(tag or "")
        except InvalidTag as exc:
            raise ToolError(f"{exc}; nothing was requested") from None
    else:
        tag = ""
    by_account: dict[int, list[Message]] = {}
    for pk in wanted:
        by_account.setdefault(found[pk].account_id, []).append(found[pk])
    for group in by_account.values():  # check every account before asking for anything
        try:
            if kind in ("move", "archive", "trash"):
                target_folder_for(account=group[0].account, kind=kind, folder=folder or "")
        except MailActionRefused as exc:
            raise ToolError(f"{exc} Nothing was requested.") from None
    workspace = _workspace(principal)
    approvals = []
    for group in by_account.values():
        account = group[0].account
        subject = group[0].subject if len(group) == 1 else f"{len(group)} emails"
        summary = mail_approval_summary(action=kind, subject=subject, folder=folder or "", tag=tag)
        subjects = "\n".join(f"- {m.subject or '(no subject)'} — {_sender(m)}" for m in group[:20])
        approvals.append(
            request_approval(
                owner=user,
                workspace=workspace,
                account=account,
                kind="mail_action",
                summary=summary,
                request={
                    "action": kind,
                    "folder": folder or "",
                    "message_ids": [m.pk for m in group],
                    **({"tag": tag} if tag else {}),
                },
                comments=(
                    f"**Approval needed:** {summary} in {account.name}.\n\n{subjects}\n\n"
                    "Nothing has changed on the server."
                ),
            )
        )
    return schemas.ActionRequested(approvals=[_approval_out(a) for a in approvals])


def approval_status(principal: MailboxPrincipal, approval_id: int) -> schemas.ApprovalOut:
    try:
        approval = orchestration_selectors.access_approval(user=owner(principal), approval_id=approval_id)
    except Http404:
        approval = None
    if approval is None or not in_reach(principal, approval.account_id):
        raise ToolError(f"no approval {approval_id}")
    return _approval_out(approval)

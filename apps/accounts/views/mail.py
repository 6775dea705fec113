"""Mail pages: mailbox, thread and message, thread actions and tags, undo, attachment download.

Thin function views: parse → `access_*` selector (404 for other users' rows) → one action → render.
Login is enforced for every path here by mailagent.middleware.LoginRequiredMiddleware.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST
from django_htmx.middleware import HtmxDetails

from apps.accounts import actions, oauth, selectors
from apps.accounts.models import MailAccount, Message, Provider, Thread
from apps.accounts.providers.base import ProviderError
from apps.accounts.writeback import MailActionRefused

# --- mailbox and threads --------------------------------------------------------------------------


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _search_available() -> bool:
    try:
        reverse("search:results")
    except NoReverseMatch:
        return False
    return True


@require_GET
def mailbox(request: HtmxHttpRequest) -> HttpResponse:
    selection = selectors.select_mailbox(
        user=request.user, account_id=request.GET.get("account"), folder=request.GET.get("folder")
    )
    page = None
    if selection.account is not None:
        page = selectors.paginate_threads(
            account=selection.account, folder=selection.folder, page=request.GET.get("page")
        )
    # A history restore after a cache miss wants the whole page, not the fragment.
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    context = {
        "selection": selection,
        "page": page,
        "page_query": _page_query(selection),
        "is_partial": partial,
        "search_available": _search_available(),
    }
    template = "accounts/partials/thread_list.html" if partial else "accounts/pages/mailbox.html"
    return render(request, template, context)


def _page_query(selection: selectors.MailboxSelection) -> str:
    """Query string (without `page`) that keeps the current account and folder."""
    if selection.account is None:
        return ""
    return urlencode({"account": selection.account.pk, "folder": selection.folder or ""})


EMAIL_FRAME_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src {images}; form-action 'none'; "
    "frame-src 'none'; script-src 'none'; object-src 'none'"
)
EMAIL_FRAME_STYLE = (
    "body{margin:0;padding:.25rem;font:15px/1.5 system-ui,sans-serif;overflow-wrap:anywhere;color:#1b1d21;"
    "background:#fff}img{max-width:100%;height:auto}table{max-width:100%}"
)


def email_frame_document(body_html: str, *, remote_images: bool) -> str:
    """The srcdoc of the sandboxed iframe: the (already nh3-sanitized) HTML under its own CSP.

    The iframe has no allow-scripts and no allow-same-origin, so even markup that slipped past the
    sanitizer cannot run code or reach this site's cookies; remote images (tracking pixels) stay
    blocked unless the reader asks for them.
    """
    images = "data: https: http:" if remote_images else "data:"
    csp = EMAIL_FRAME_CSP.format(images=images)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="referrer" content="no-referrer"><base target="_blank">'
        f"<style>{EMAIL_FRAME_STYLE}</style></head><body>{body_html}</body></html>"
    )


@require_GET
def thread(request: HttpRequest, thread_id: int) -> HttpResponse:
    mail_thread = selectors.access_thread(user=request.user, thread_id=thread_id)
    thread_messages = selectors.thread_messages(thread=mail_thread)
    # Opening a conversation reads it, here and on the server (see `read_state_note`).
    actions.set_messages_seen(messages=thread_messages, seen=True, requested_by=request.user)
    return _render_conversation(
        request,
        title=mail_thread.subject,
        account=mail_thread.account,
        thread_messages=thread_messages,
        mail_thread=mail_thread,
    )


@require_POST
def thread_mark_unread(request: HttpRequest, thread_id: int) -> HttpResponse:
    mail_thread = selectors.access_thread(user=request.user, thread_id=thread_id)
    changed = actions.mark_thread_unread(thread=mail_thread, requested_by=request.user)
    plural = "" if changed == 1 else "s"
    messages.success(request, f"“{mail_thread.subject or '(no subject)'}” marked unread ({changed} message{plural}).")
    return HttpResponseRedirect(_mailbox_url(account=mail_thread.account, folder=request.POST.get("folder")))


def _mailbox_url(*, account: MailAccount, folder: str | None) -> str:
    query: dict[str, Any] = {"account": account.pk}
    if folder is not None:
        query["folder"] = folder
    return f"{reverse('mail:mailbox')}?{urlencode(query)}"


THREAD_ACTIONS = {"flag", "unflag", "archive", "trash", "move"}
ACTION_DONE = {
    "flag": "flagged",
    "unflag": "unflagged",
    "archive": "archived",
    "trash": "moved to Trash",
    "move": "moved",
}


@require_POST
def thread_action(request: HttpRequest, thread_id: int) -> HttpResponse:
    """Flag, unflag, archive, trash or move a conversation: recorded here, then done on the server."""
    mail_thread = selectors.access_thread(user=request.user, thread_id=thread_id)
    kind = request.POST.get("kind", "")
    if kind not in THREAD_ACTIONS:
        return HttpResponseBadRequest(f"Unknown action {kind!r}: use one of {', '.join(sorted(THREAD_ACTIONS))}.")
    source = request.POST.get("folder") or None
    try:
        done = actions.act_on_thread(
            thread=mail_thread,
            kind=kind,
            folder=request.POST.get("target", ""),
            source_folder=source,
            requested_by=request.user,
        )
    except MailActionRefused as exc:
        messages.error(request, str(exc))
        return HttpResponseRedirect(_thread_url(mail_thread, folder=source))
    subject = mail_thread.subject or "(no subject)"
    if not done:
        messages.info(request, f"“{subject}”: nothing to change.")
    else:
        plural = "" if len(done) == 1 else "s"
        messages.success(
            request, f"“{subject}” {ACTION_DONE[kind]} ({len(done)} message{plural}); see Server changes below."
        )
    if kind in {"archive", "trash", "move"}:
        return HttpResponseRedirect(_mailbox_url(account=mail_thread.account, folder=source))
    return HttpResponseRedirect(_thread_url(mail_thread, folder=source))


def _thread_url(mail_thread: Thread, *, folder: str | None) -> str:
    url = reverse("mail:thread", args=[mail_thread.pk])
    return f"{url}?{urlencode({'folder': folder})}" if folder else url


@require_POST
def mail_action_undo(request: HttpRequest, action_id: int) -> HttpResponse:
    action = selectors.access_mail_action(user=request.user, action_id=action_id)
    try:
        actions.undo_mail_action(action=action, requested_by=request.user)
        messages.success(request, f"Undoing “{action.get_kind_display()}”.")
    except MailActionRefused as exc:
        messages.error(request, str(exc))
    message = action.message
    if message is not None and message.thread_id is not None:
        return HttpResponseRedirect(reverse("mail:thread", args=[message.thread_id]))
    return HttpResponseRedirect(reverse("mail:mailbox"))


def read_state_note(account: MailAccount) -> str:
    """Where read/unread lives, said plainly."""
    if account.provider == Provider.LOCAL:
        return "Read and unread are stored in mailagent (this is a local archive)."
    provider = account.get_provider_display()
    if account.provider == Provider.IMAP:
        return (
            f"Read, unread, flags and moves are written back to the {provider} server; a change made there "
            "meanwhile wins at the next sync."
        )
    if not oauth.can_write_back(account):
        return (
            f"Read and unread are stored in mailagent only: this account was connected without permission to "
            f"change mail, so {provider} is not told until you connect it again."
        )
    return (
        f"Read, unread, flags and moves are written back to {provider}; a change made there meanwhile wins at the "
        "next sync."
    )


@require_GET
def message(request: HttpRequest, message_id: int) -> HttpResponse:
    """One message (search results link here): its conversation, scrolled to it."""
    mail_message = selectors.access_message(user=request.user, message_id=message_id)
    if mail_message.thread_id is not None:
        url = reverse("mail:thread", args=[mail_message.thread_id])
        return HttpResponseRedirect(f"{url}#message-{mail_message.pk}")
    actions.set_messages_seen(messages=[mail_message], seen=True, requested_by=request.user)
    return _render_conversation(
        request, title=mail_message.subject, account=mail_message.account, thread_messages=[mail_message]
    )


def _render_conversation(
    request: HttpRequest,
    *,
    title: str,
    account: MailAccount,
    thread_messages: list[Message],
    mail_thread: Thread | None = None,
) -> HttpResponse:
    remote_images = request.GET.get("images") == "1"
    entries = [_message_entry(item, remote_images=remote_images) for item in thread_messages]
    tags = selectors.tags_by_message(message_ids=[item.pk for item in thread_messages])
    for entry in entries:
        entry["tags"] = tags[entry["message"].pk]
    context = {
        "title": title,
        "account": account,
        "thread": mail_thread,
        "entries": entries,
        "remote_images": remote_images,
        "has_html": any(entry["frame"] for entry in entries),
        "back_url": _mailbox_url(account=account, folder=request.GET.get("folder")),
        "read_state_note": read_state_note(account),
        "folders": selectors.move_targets(account=account),
        "server_changes": selectors.recent_mail_actions(messages=thread_messages),
        "current_folder": request.GET.get("folder") or "",
        "ask_url": _ask_url(mail_thread),
        "thread_tags": sorted({name for entry in entries for name in entry["tags"]}, key=str.casefold),
    }
    return render(request, "accounts/pages/thread.html", context)


@require_POST
def thread_tags(request: HtmxHttpRequest, thread_id: int) -> HttpResponse:
    """Add (`tag=…`) or take off (`remove=…`) a tag on every message of the thread; htmx gets the chips back."""
    mail_thread = selectors.access_thread(user=request.user, thread_id=thread_id)
    thread_messages = selectors.thread_messages(thread=mail_thread)
    error = ""
    if request.POST.get("remove"):
        actions.remove_tag(owner=request.user, messages=thread_messages, name=request.POST["remove"])
    else:
        try:
            actions.add_tag(owner=request.user, messages=thread_messages, name=request.POST.get("tag", ""))
        except actions.InvalidTag as exc:
            error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        url = reverse("mail:thread", args=[mail_thread.pk])
        folder = request.POST.get("folder")
        return HttpResponseRedirect(f"{url}?{urlencode({'folder': folder})}" if folder is not None else url)
    context = {
        "thread": mail_thread,
        "thread_tags": selectors.tags_of_messages(message_ids=[item.pk for item in thread_messages]),
        "tag_error": error,
        "current_folder": request.POST.get("folder") or "",
    }
    return render(request, "accounts/partials/thread_tags.html", context)  # htmx swaps 2xx only: the error is shown


def _ask_url(mail_thread: Thread | None) -> str:
    """The Ask page with this conversation as context (`?thread=`), when the Ask app is mounted."""
    if mail_thread is None:
        return ""
    try:
        return f"{reverse('ask:panel')}?{urlencode({'thread': mail_thread.pk})}"
    except NoReverseMatch:
        return ""


def _message_entry(message: Message, *, remote_images: bool) -> dict[str, Any]:
    frame = email_frame_document(message.body_html, remote_images=remote_images) if message.body_html else ""
    return {"message": message, "frame": frame, "attachments": list(message.attachments.all())}


# --- attachments ----------------------------------------------------------------------------------

_SAFE_MIME = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$")
_FILENAME_UNSAFE = re.compile(r'[\x00-\x1f\x7f"\\/:*?<>|;]+')


def safe_download_name(filename: str, *, fallback: str) -> str:
    """A file name that is only a name: no path parts, controls, quotes or leading dots."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    name = _FILENAME_UNSAFE.sub("_", name)
    name = " ".join(name.split()).strip(" .")[:200]
    return name or fallback


def download_content_type(mime_type: str) -> str:
    mime = (mime_type or "").strip().lower()
    return mime if _SAFE_MIME.match(mime) else "application/octet-stream"


@require_GET
def attachment_download(request: HttpRequest, attachment_id: int) -> HttpResponse:
    attachment = selectors.access_attachment(user=request.user, attachment_id=attachment_id)
    try:
        payload = actions.fetch_attachment_bytes(attachment=attachment)
    except ProviderError as exc:
        context = {"attachment": attachment, "error": str(exc), "category": exc.category}
        return render(request, "accounts/pages/attachment_error.html", context, status=502)
    name = safe_download_name(attachment.filename, fallback=f"attachment-{attachment.pk}")
    response = HttpResponse(payload, content_type=download_content_type(attachment.mime_type))
    response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
    response["Content-Length"] = str(len(payload))
    response["X-Content-Type-Options"] = "nosniff"
    # Were a browser ever to render it anyway, it gets no scripts and no origin.
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, no-store"
    return response

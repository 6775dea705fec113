"""Mail pages: accounts, account detail, mailbox, thread, attachment download.

Thin function views: parse → `access_*` selector (404 for other users' rows) → one action → render.
Login is enforced for every path here by mailagent.middleware.LoginRequiredMiddleware.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from apps.accounts import actions, import_jobs, oauth, removal, selectors
from apps.accounts.forms import (
    EnabledForm,
    ImapAccountForm,
    ImportUploadForm,
    SignatureForm,
    max_upload_bytes,
    upload_too_large_message,
)
from apps.accounts.models import ErrorCategory, MailAccount, Message, Provider, Thread
from apps.accounts.providers.base import ProviderError
from apps.accounts.writeback import MailActionRefused

GMAIL_SETUP_SCOPES = tuple(oauth.GMAIL_SCOPES)
OUTLOOK_SETUP_SCOPES = (*oauth.OUTLOOK_CONNECT_SCOPES, "offline_access")


# --- accounts page --------------------------------------------------------------------------------


def _oauth_setup(request: HttpRequest) -> dict[str, Any]:
    """What the Gmail/Outlook connect panel needs: configured or not, and the values to register."""
    return {
        "gmail_configured": bool(getattr(settings, "GMAIL_CLIENT_ID", "")),
        "outlook_configured": bool(getattr(settings, "OUTLOOK_CLIENT_ID", "")),
        "gmail_redirect_uri": request.build_absolute_uri(reverse("mail:mail_oauth:gmail_callback")),
        "outlook_redirect_uri": request.build_absolute_uri(reverse("mail:mail_oauth:outlook_callback")),
        "gmail_scopes": GMAIL_SETUP_SCOPES,
        "outlook_scopes": OUTLOOK_SETUP_SCOPES,
    }


def _error_labels() -> dict[str, str]:
    """Category → label for the connection-test script (the API answers with the category only)."""
    return {str(choice.value): str(choice.label) for choice in ErrorCategory if choice.value}


def _render_accounts_page(
    request: HttpRequest,
    *,
    imap_form: ImapAccountForm | None = None,
    import_form: ImportUploadForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "accounts": selectors.list_accounts_for_user(user=request.user),
        "imap_form": imap_form or ImapAccountForm(owner=request.user),
        "import_form": import_form or ImportUploadForm(owner=request.user),
        "max_upload_bytes": max_upload_bytes(),
        "open_imap_form": imap_form is not None,
        "open_import_form": import_form is not None,
        "error_labels": _error_labels(),
        "import_jobs": import_jobs.jobs_for_user(owner=request.user),
        **_oauth_setup(request),
    }
    return render(request, "accounts/pages/accounts.html", context, status=status)


@require_GET
def accounts(request: HttpRequest) -> HttpResponse:
    return _render_accounts_page(request)


@require_POST
def account_add_imap(request: HttpRequest) -> HttpResponse:
    form = ImapAccountForm(request.POST, owner=request.user)
    if not form.is_valid():
        return _render_accounts_page(request, imap_form=form)
    data = form.cleaned_data
    if not data["skip_check"]:
        problem = actions.check_imap_settings(
            host=data["host"],
            port=data["port"],
            security=data["security"],
            username=data["username"] or data["address"],
            password=data["password"],
        )
        if problem:
            form.add_error(
                None,
                f"Could not connect: {problem}. Check the server, port, security and password and try again; "
                "nothing was saved. (Tick “Save without checking the connection” to add it anyway.)",
            )
            return _render_accounts_page(request, imap_form=form)
    try:
        account = actions.create_imap_account(
            owner=request.user,
            name=data["name"],
            address=data["address"],
            host=data["host"],
            port=data["port"],
            security=data["security"],
            username=data["username"] or data["address"],
            password=data["password"],
        )
    except actions.AccountNameTaken as exc:
        form.add_error("name", str(exc))
        return _render_accounts_page(request, imap_form=form)
    messages.success(request, f"IMAP account “{account.name}” added. Use “Sync now” to fetch its mail.")
    return redirect("mail:account_detail", account_id=account.pk)


def _upload_too_large(request: HttpRequest) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return False
    return length > max_upload_bytes()


_UNSAFE_STEM = re.compile(r"[^A-Za-z0-9 ._-]+")


def _stored_upload_name(upload: UploadedFile) -> str:
    """A file name for the temp copy. A single mbox becomes a folder named after the file's stem."""
    original = Path((upload.name or "upload").replace("\\", "/")).name
    suffix = Path(original).suffix.lower()
    if suffix == ".eml":
        return "Imported.eml"
    ascii_name = unicodedata.normalize("NFKD", Path(original).stem).encode("ascii", "ignore").decode()
    stem = _UNSAFE_STEM.sub("_", ascii_name).strip(" ._")[:80] or "Imported"
    return f"{stem}{suffix or '.mbox'}"


def _save_upload(upload: UploadedFile) -> Path:
    directory = import_jobs.new_upload_dir()
    target = directory / _stored_upload_name(upload)
    if isinstance(upload, TemporaryUploadedFile):
        # Already on disk next to us (FILE_UPLOAD_TEMP_DIR): move it instead of writing a second copy.
        try:
            os.replace(upload.temporary_file_path(), target)
            return target
        except OSError:
            pass
    with target.open("wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    return target


# Bodies well over the limit never get here (mailagent/request_limits.py refuses them unread); this says
# "too large" in the page for the last stretch, before CsrfViewMiddleware would parse the form.
@csrf_exempt
@require_POST
def account_import(request: HttpRequest) -> HttpResponse:
    if _upload_too_large(request):
        messages.error(request, upload_too_large_message())
        return redirect("mail:accounts")
    return _account_import(request)


@csrf_protect
def _account_import(request: HttpRequest) -> HttpResponse:
    """Save the upload and queue its import (apps/accounts/import_jobs.py); the worker imports it and the
    Accounts page shows its progress and outcome."""
    form = ImportUploadForm(request.POST, request.FILES, owner=request.user)
    if not form.is_valid():
        return _render_accounts_page(request, import_form=form)
    account: MailAccount | None = form.cleaned_data["account"]
    upload = form.cleaned_data["file"]
    upload_name = Path((upload.name or "the upload").replace("\\", "/")).name
    path = _save_upload(upload)
    import_jobs.start_import(
        owner=request.user,
        upload_dir=path.parent,
        file_name=path.name,
        upload_name=upload_name,
        account=account,
        new_account_name=form.cleaned_data["new_account_name"],
        route_through_filters=form.cleaned_data["route_through_filters"],
    )
    target = account.name if account is not None else form.cleaned_data["new_account_name"]
    messages.info(
        request, f"Importing {upload_name} into “{target}” in the background: see Imports on the Accounts page."
    )
    return _after_import(request)


@require_GET
def import_jobs_partial(request: HttpRequest) -> HttpResponse:
    """The user's recent imports with their progress (the Accounts page polls it while one runs)."""
    then = request.GET.get("then", "")
    jobs = import_jobs.jobs_for_user(owner=request.user, limit=1 if then else 5)
    response = render(request, "accounts/partials/import_jobs.html", {"import_jobs": jobs, "then": then})
    if then and not any(job.active for job in jobs) and url_has_allowed_host_and_scheme(then, {request.get_host()}):
        response["HX-Redirect"] = then  # the page that asked (the setup wizard) moves on once the import is done
    return response


def _after_import(request: HttpRequest) -> HttpResponse:
    """Back to the page of this site the upload came from (`next`: the setup wizard's own import form), else
    the Accounts page."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect("mail:accounts")


# --- account detail -------------------------------------------------------------------------------


@require_GET
def account_detail(request: HttpRequest, account_id: int) -> HttpResponse:
    account = selectors.access_account(user=request.user, account_id=account_id)
    return _render_account_detail(request, account)


def _render_account_detail(
    request: HttpRequest, account: MailAccount, *, signature_form: SignatureForm | None = None
) -> HttpResponse:
    form = signature_form or SignatureForm(initial={"mode": account.signature_mode, "text": account.signature_text})
    context = {
        "account": selectors.account_with_facts(account=account),
        "folders": selectors.folders_for_account(account=account),
        "signature_form": form,
        "is_oauth": account.provider in (Provider.GMAIL, Provider.OUTLOOK),
        "error_labels": _error_labels(),
    }
    return render(request, "accounts/pages/account_detail.html", context)


@require_POST
def account_signature(request: HttpRequest, account_id: int) -> HttpResponse:
    account = selectors.access_account(user=request.user, account_id=account_id)
    form = SignatureForm(request.POST)
    if not form.is_valid():
        return _render_account_detail(request, account, signature_form=form)
    actions.update_signature(account=account, mode=form.cleaned_data["mode"], text=form.cleaned_data["text"])
    messages.success(request, "Signature saved.")
    return redirect("mail:account_detail", account_id=account.pk)


@require_POST
def account_set_enabled(request: HttpRequest, account_id: int) -> HttpResponse:
    account = selectors.access_account(user=request.user, account_id=account_id)
    form = EnabledForm(request.POST)
    enabled = bool(form.is_valid() and form.cleaned_data["enabled"])
    actions.set_account_enabled(account=account, enabled=enabled)
    messages.success(request, f"“{account.name}” {'enabled' if enabled else 'disabled'}.")
    return _back(request, default=reverse("mail:account_detail", args=[account.pk]))


@require_http_methods(["GET", "POST"])
def account_remove(request: HttpRequest, account_id: int) -> HttpResponse:
    """GET: what removing the account deletes, counted; POST (the confirmation): delete exactly that."""
    account = selectors.access_account(user=request.user, account_id=account_id)
    if request.method == "POST" and request.POST.get("confirm") == account.name:
        try:
            result = removal.remove_account(account=account)
        except removal.AccountBusy as exc:
            messages.error(request, str(exc))
            return redirect("mail:account_remove", account_id=account.pk)
        messages.success(
            request,
            f"“{result.account_name}” removed: {result.messages} messages, {result.attachments} attachments and "
            f"{result.files} cached attachment files deleted, with their runs and search index entries.",
        )
        return redirect("mail:accounts")
    error = ""
    if request.method == "POST":
        error = f"Type the account name “{account.name}” exactly to confirm."
    context = {
        "account": account,
        "items": removal.removal_inventory(account=account),
        "error": error,
    }
    return render(request, "accounts/pages/account_remove.html", context, status=422 if error else 200)


@require_POST
def account_sync(request: HttpRequest, account_id: int) -> HttpResponse:
    account = selectors.access_account(user=request.user, account_id=account_id)
    actions.request_sync(account=account)
    messages.success(request, f"Sync of “{account.name}” queued.")
    return _back(request, default=reverse("mail:accounts"))


def _back(request: HttpRequest, *, default: str) -> HttpResponseRedirect:
    """Return to the page the form was on (only our own account pages), else `default`."""
    candidate = request.POST.get("next", "")
    allowed = (reverse("mail:accounts"),)
    if candidate.startswith(allowed) and "//" not in candidate and "\\" not in candidate:
        return HttpResponseRedirect(candidate)
    return HttpResponseRedirect(default)


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

"""Account pages: the accounts list (add an IMAP account, connect Gmail or Outlook, import mail files),
account detail (signature, enabled, sync, remove).

Thin function views: parse → `access_*` selector (404 for other users' rows) → one action → render.
Login is enforced for every path here by mailagent.middleware.LoginRequiredMiddleware.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts import actions, import_jobs, oauth, removal, selectors
from apps.accounts.forms import (
    EnabledForm,
    ImapAccountForm,
    ImportUploadForm,
    SignatureForm,
    max_upload_bytes,
    upload_too_large_message,
)
from apps.accounts.models import ErrorCategory, MailAccount, Provider

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

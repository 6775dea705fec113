"""Reply drafts: the Drafts page, the editor, the confirmation step, send, discard, the send-permission
(incremental consent) hop, and SMTP settings for IMAP accounts. Thin views: parse → access selector (404
for other users' rows) → one action → page or redirect.

Send is two requests on purpose: the editor's Send only leads to the confirmation page, which shows exactly
what will go out and carries a signed token for that revision; only the confirmation's POST sends.
"""

from __future__ import annotations

import mimetypes

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from apps.accounts import oauth
from apps.accounts.models import MailAccount, Provider
from apps.replies import actions, compose, selectors
from apps.replies.forms import DraftForm, SmtpSettingsForm, format_people
from apps.replies.models import DraftStatus, ReplyDraft, ReplyMode
from mailagent.crypto import get_keyring


@require_GET
def drafts(request: HttpRequest) -> HttpResponse:
    groups = selectors.list_drafts(user=request.user)
    return render(request, "replies/pages/drafts.html", {"open_drafts": groups["open"], "sent_drafts": groups["sent"]})


def _go(request: HttpRequest, url: str) -> HttpResponse:
    """A redirect, or htmx's client-side one when the "Reply…" button posted through htmx."""
    return HttpResponseClientRedirect(url) if request.headers.get("HX-Request") else redirect(url)


@require_POST
def from_item(request: HttpRequest, item_id: int) -> HttpResponse:
    item = selectors.access_item_for_reply(user=request.user, item_id=item_id)
    try:
        draft = actions.create_draft_from_item(
            owner=request.user, item=item, reply_all=request.POST.get("mode") == ReplyMode.REPLY_ALL
        )
    except actions.CannotReply as exc:
        messages.error(request, str(exc))
        return _go(request, reverse("replies:drafts"))
    return _go(request, reverse("replies:edit", args=[draft.pk]))


@require_POST
def from_ask_draft(request: HttpRequest, ask_draft_id: int) -> HttpResponse:
    ask_draft = selectors.access_ask_draft(user=request.user, ask_draft_id=ask_draft_id)
    draft = actions.create_draft_from_ask_draft(owner=request.user, ask_draft=ask_draft)
    return _go(request, reverse("replies:edit", args=[draft.pk]))


def _initial(draft: ReplyDraft) -> dict[str, object]:
    return {
        "to": format_people(draft.to),
        "cc": format_people(draft.cc),
        "subject": draft.subject,
        "body": draft.body,
        "include_signature": draft.include_signature,
    }


def _editor(request: HttpRequest, draft: ReplyDraft, form: DraftForm, *, status: int = 200) -> HttpResponse:
    signature = selectors.account_signature(draft.account)
    context = {
        "draft": draft,
        "form": form,
        "signature": signature,
        "signature_text": compose.signature_text(signature),
        "readiness": selectors.send_readiness(draft.account),
        "stale": selectors.is_stale_sending(draft),
        "attachments": selectors.draft_attachments(draft),
        "attachable": selectors.attachable_items(draft),
        "max_attachment_bytes": actions.max_attachment_bytes(),
        "graph_limit": selectors.GRAPH_ATTACHMENTS_HINT if draft.account.provider == Provider.OUTLOOK else None,
    }
    return render(request, "replies/pages/draft_edit.html", context, status=status)


def _attachment_changes(request: HttpRequest, draft: ReplyDraft) -> tuple[list[actions.NewAttachment], list[int]]:
    """The editor's files to add (uploads, and ticked workspace items of the reply's run) and to remove."""

    def numbers(name: str) -> list[int]:
        return [int(raw) for raw in request.POST.getlist(name) if raw.isdigit()]

    added = [
        actions.NewAttachment(
            filename=actions.clean_filename(upload.name or ""),
            content_type=upload.content_type
            or mimetypes.guess_type(upload.name or "")[0]
            or "application/octet-stream",
            data=upload.read(),
        )
        for upload in request.FILES.getlist("attachment_file")
    ]
    added += [actions.attachment_from_item(item) for item in selectors.items_to_attach(draft, numbers("attach_item"))]
    return added, numbers("remove_attachment")


@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    if request.method == "GET":
        return _editor(request, draft, DraftForm(initial=_initial(draft)))
    form = DraftForm(request.POST)
    if not form.is_valid():
        return _editor(request, draft, form, status=400)
    try:
        draft = actions.update_draft(
            draft=draft,
            to=form.cleaned_data["to"],
            cc=form.cleaned_data["cc"],
            subject=form.cleaned_data["subject"],
            body=form.cleaned_data["body"],
            include_signature=form.cleaned_data["include_signature"],
        )
    except actions.SendRefused as exc:
        messages.error(request, str(exc))
        return redirect("replies:edit", draft_id=draft.pk)
    try:
        added, removed = _attachment_changes(request, draft)
        if added or removed:
            draft, _ = actions.change_attachments(draft=draft, add=added, remove_ids=removed)
    except (actions.AttachmentRefused, actions.SendRefused) as exc:  # the text is saved; the files say why not
        messages.error(request, str(exc))
        return redirect(f"{reverse('replies:edit', args=[draft.pk])}#attachments")
    if request.POST.get("action") == "send":
        return redirect("replies:confirm", draft_id=draft.pk)
    messages.success(request, "Draft saved. Nothing was sent.")
    return redirect("replies:edit", draft_id=draft.pk)


@require_POST
def set_mode(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    try:
        actions.set_reply_mode(draft=draft, mode=request.POST.get("mode", ""))
    except actions.SendRefused as exc:
        messages.error(request, str(exc))
    return redirect("replies:edit", draft_id=draft.pk)


@require_GET
def confirm(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    if draft.status == DraftStatus.SENT:
        messages.info(request, "This reply was already sent.")
        return redirect("replies:drafts")
    outgoing = selectors.outgoing_for(draft, with_files=False)
    context = {
        "draft": draft,
        "outgoing": outgoing,
        "attachments": selectors.draft_attachments(draft),
        "problems": selectors.draft_problems(draft),
        "readiness": selectors.send_readiness(draft.account),
        "token": selectors.confirm_token(draft),
        "busy": draft.status == DraftStatus.SENDING and not selectors.is_stale_sending(draft),
    }
    return render(request, "replies/pages/draft_confirm.html", context)


def _consent_redirect(request: HttpRequest, draft: ReplyDraft) -> HttpResponse:
    """To the provider's consent screen for the send scope, and back to this draft's confirmation."""
    account = draft.account
    next_url = reverse("replies:confirm", args=[draft.pk])
    if account.provider == Provider.GMAIL:
        start, callback = oauth.start_gmail_connect, "gmail_callback"
    elif account.provider == Provider.OUTLOOK:
        start, callback = oauth.start_outlook_connect, "outlook_callback"
    else:
        return HttpResponseBadRequest("This account does not use OAuth")
    try:
        url = start(
            session=request.session,
            redirect_uri=request.build_absolute_uri(oauth.oauth_path(callback)),
            account=account,
            next_url=next_url,
            extra_scopes=[oauth.send_scope(account.provider)],
        )
    except (oauth.OAuthNotConfigured, oauth.OAuthCallbackError) as exc:
        messages.error(request, f"Could not ask {account.get_provider_display()} for permission to send: {exc}")
        return redirect("replies:confirm", draft_id=draft.pk)
    return HttpResponseRedirect(url)


@require_POST
def consent(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    return _consent_redirect(request, draft)


@require_POST
def send(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    try:
        result = actions.send_draft(owner=request.user, draft_id=draft.pk, token=request.POST.get("confirm_token", ""))
    except actions.ConsentNeeded:
        return _consent_redirect(request, draft)
    except actions.SendRefused as exc:
        messages.error(request, str(exc))
        target = "replies:drafts" if draft.status == DraftStatus.SENT else "replies:confirm"
        return redirect(target, draft_id=draft.pk) if target == "replies:confirm" else redirect(target)
    if not result.sent:
        messages.error(request, f"Sending failed: {result.error} Your draft is kept; fix the problem and send again.")
        return redirect("replies:edit", draft_id=draft.pk)
    sent = result.draft.sent_message
    note = f" {result.warning}" if result.warning else ""
    messages.success(request, f"Reply sent to {', '.join(p['address'] for p in result.draft.to)}.{note}")
    if sent is not None and sent.thread_id:
        return redirect(f"{reverse('mail:thread', args=[sent.thread_id])}#message-{sent.pk}")
    return redirect("replies:drafts")


@require_POST
def discard(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = selectors.access_draft(user=request.user, draft_id=draft_id)
    try:
        actions.discard_draft(draft=draft)
    except actions.SendRefused as exc:
        messages.error(request, str(exc))
        return redirect("replies:edit", draft_id=draft.pk)
    messages.success(request, "Draft discarded.")
    return redirect("replies:drafts")


@require_http_methods(["GET", "POST"])
def smtp_settings(request: HttpRequest, account_id: int) -> HttpResponse:
    account = get_object_or_404(MailAccount, pk=account_id, owner=request.user)
    is_imap = account.provider == Provider.IMAP
    if request.method == "POST" and is_imap:
        form = SmtpSettingsForm(request.POST)
        if form.is_valid():
            password = form.cleaned_data["password"]
            actions.save_smtp_settings(
                account=account,
                host=form.cleaned_data["host"],
                port=form.cleaned_data["port"],
                security=form.cleaned_data["security"],
                username=form.cleaned_data["username"],
                password=password if password else None,
            )
            messages.success(request, f"Outgoing mail for {account.name} saved.")
            back = request.POST.get("next", "")
            if back.startswith("/replies/") and "//" not in back:
                return redirect(back)
            return redirect("replies:smtp_settings", account_id=account.pk)
        status = 400
    else:
        initial = {
            "host": account.smtp_host or _guess_smtp_host(account.imap_host),
            "port": account.smtp_port,
            "security": account.smtp_security,
            "username": account.smtp_username or account.imap_username or account.address,
        }
        form = SmtpSettingsForm(initial=initial)
        status = 200 if request.method == "GET" else 400
    context = {
        "account": account,
        "form": form,
        "is_imap": is_imap,
        "has_password": bool(account.smtp_password),
        "encrypted": get_keyring().enabled,
        "next": request.GET.get("next") or request.POST.get("next", ""),
    }
    return render(request, "replies/pages/smtp_settings.html", context, status=status)


def _guess_smtp_host(imap_host: str) -> str:
    """imap.example.com → smtp.example.com, as most providers name them; only a suggestion in the form."""
    return "smtp." + imap_host[len("imap.") :] if imap_host.startswith("imap.") else imap_host

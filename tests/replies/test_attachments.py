"""Reply attachments: files uploaded in the editor and items of the run's workspace go out with the reply as
multipart/mixed through SMTP (a real aiosmtpd server), the fake Gmail and the fake Graph, byte for byte; the
original's attachments are not included; the size limit says what happened and keeps the text; the local
copy is stored once with its attachments; Outlook refuses a send over Graph's 4 MB request limit before
sending, saying so."""

from __future__ import annotations

import base64
import email
from email import policy
from email.message import EmailMessage
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.accounts.models import MailAccount, Message
from apps.accounts.oauth_connect import connect_oauth_account
from apps.accounts.oauth_settings import GMAIL_SEND_SCOPE
from apps.accounts.sync import sync_account
from apps.replies import selectors
from apps.replies.models import DraftStatus, ReplyAttachment, ReplyDraft
from apps.workspaces import actions as workspace_actions
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer, connect_outlook, follow_consent
from tests.replies.conftest import confirm_and_send, item_for, original_raw, start_reply
from tests.replies.test_smtp_send import imap_account, store_original

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]

PDF = b"%PDF-1.4\n" + bytes(range(256)) * 8 + b"\n%%EOF\n"
CSV = b"quarter,revenue\nQ3,1200\n"


def original_with_attachment(**kwargs: Any) -> bytes:
    message = email.message_from_bytes(original_raw(**kwargs), policy=policy.default)
    assert isinstance(message, EmailMessage)
    message.add_attachment(b"secret original bytes", maintype="application", subtype="zip", filename="original.zip")
    return bytes(message)


def _post_editor(client: Any, draft: ReplyDraft, *, action: str = "save", **extra: Any) -> Any:
    return client.post(
        f"/replies/{draft.pk}/",
        {
            "to": "alice@example.com",
            "cc": "",
            "subject": draft.subject,
            "body": "Hi Alice,\n\nThe numbers are attached.",
            "include_signature": "on",
            "action": action,
            **extra,
        },
    )


def _attach(client: Any, user: Any, draft: ReplyDraft) -> None:
    """Upload a CSV and tick the run's PDF report, the way the editor's form sends them."""
    source = draft.workspace_item
    assert source is not None
    report = workspace_actions.add_item(
        workspace=source.workspace,
        label="Q3 report",
        path="reports/q3.pdf",
        mime_type="application/pdf",
        encoding="base64",
        data=base64.b64encode(PDF).decode(),
    )
    page = client.get(f"/replies/{draft.pk}/").content.decode()
    assert 'data-testid="attachable-items"' in page and "reports/q3.pdf" in page
    assert f'name="attach_item" value="{source.pk}"' not in page  # the reply's own text is not offered
    assert "does not carry the original email's attachments" in page
    upload = SimpleUploadedFile("numbers.csv", CSV, content_type="text/csv")
    saved = _post_editor(client, draft, attachment_file=upload, attach_item=[str(report.pk)])
    assert saved.status_code == 302
    files = {a.filename: (a.content_type, bytes(a.data)) for a in ReplyAttachment.objects.filter(draft=draft)}
    assert files == {"numbers.csv": ("text/csv", CSV), "q3.pdf": ("application/pdf", PDF)}


def _files(raw: bytes) -> dict[str, tuple[str, bytes]]:
    mime = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(mime, EmailMessage)
    assert mime.get_content_type() == "multipart/mixed"
    found = {}
    for part in mime.iter_attachments():
        assert isinstance(part, EmailMessage)
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        found[str(part.get_filename())] = (part.get_content_type(), payload)
    return found


EXPECTED = {"numbers.csv": ("text/csv", CSV), "q3.pdf": ("application/pdf", PDF)}


def test_smtp_reply_carries_uploaded_and_workspace_files_not_the_originals_and_is_stored_with_them(
    logged_in_client: Any, user: Any, smtp_server: Any
) -> None:
    account = imap_account(user, smtp_server)
    original = store_original(account, original_with_attachment())
    draft = start_reply(logged_in_client, item_for(user, original, "Hi Alice"))
    _attach(logged_in_client, user, draft)
    confirm = logged_in_client.get(f"/replies/{draft.pk}/confirm/").content.decode()
    assert 'data-testid="confirm-attachments"' in confirm and "numbers.csv" in confirm and "q3.pdf" in confirm

    assert confirm_and_send(logged_in_client, draft).status_code == 302
    (delivered,) = smtp_server.received
    assert _files(delivered["data"]) == EXPECTED  # byte for byte; original.zip is not there
    draft.refresh_from_db()
    assert draft.status == DraftStatus.SENT
    stored = Message.objects.get(account=account, message_id=draft.message_id)
    assert sorted(stored.attachments.values_list("filename", flat=True)) == ["numbers.csv", "q3.pdf"]
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1


def test_too_large_is_refused_with_the_limit_and_the_text_is_kept_and_removal_works(
    logged_in_client: Any, user: Any, smtp_server: Any, settings: Any
) -> None:
    settings.MAILAGENT_MAX_REQUEST_BYTES = 4000
    account = imap_account(user, smtp_server)
    draft = start_reply(logged_in_client, item_for(user, store_original(account, original_raw()), "Hi"))
    big = SimpleUploadedFile("big.bin", b"x" * 5000, content_type="application/octet-stream")
    answer = _post_editor(logged_in_client, draft, attachment_file=big)
    assert answer.status_code == 302 and answer["Location"].endswith("#attachments")
    page = logged_in_client.get(answer["Location"]).content.decode()
    assert "Not attached: big.bin" in page and "may total 3.9\xa0KB" in page
    draft.refresh_from_db()
    assert draft.body == "Hi Alice,\n\nThe numbers are attached." and not draft.attachments.exists()

    small = SimpleUploadedFile("note.txt", b"ok", content_type="text/plain")
    _post_editor(logged_in_client, draft, attachment_file=small)
    (attached,) = ReplyAttachment.objects.filter(draft=draft)
    revision = ReplyDraft.objects.get(pk=draft.pk).revision
    # A foreign or unknown item id adds nothing; ticking Remove removes (a new revision to confirm).
    _post_editor(logged_in_client, draft, attach_item=["999999"], remove_attachment=[str(attached.pk)])
    assert not ReplyAttachment.objects.filter(draft=draft).exists()
    assert ReplyDraft.objects.get(pk=draft.pk).revision == revision + 1


def test_gmail_reply_sends_the_files_in_its_raw_mime(
    logged_in_client: Any, user: Any, google: FakeGoogleServer
) -> None:
    google.add_message(original_with_attachment(to=f"Owner <{google.address}>"), thread_id="thread-q3")
    account, _ = connect_oauth_account(
        owner=user, provider="gmail", address=google.address, display_name="Owner", credentials=google.token_set()
    )
    sync_account(account.pk)
    credentials = dict(MailAccount.objects.get(pk=account.pk).credentials or {})
    credentials["scopes"] = [*credentials["scopes"], GMAIL_SEND_SCOPE]
    for token in (credentials["token"], credentials["refresh_token"]):
        google.token_scopes[token] = list(credentials["scopes"])
    MailAccount.objects.filter(pk=account.pk).update(credentials=credentials)
    original = Message.objects.get(account=account, message_id="q3-numbers@example.com")
    draft = start_reply(logged_in_client, item_for(user, original, "Hi Alice"))
    _attach(logged_in_client, user, draft)

    assert confirm_and_send(logged_in_client, draft).status_code == 302
    (sent,) = google.sent
    assert sent["threadId"] == "thread-q3" and _files(sent["raw"]) == EXPECTED
    draft.refresh_from_db()
    sync_account(account.pk)
    assert Message.objects.filter(account=account, message_id=draft.message_id).count() == 1


def test_graph_reply_sends_the_files_and_over_graphs_4_mb_request_is_refused_before_sending(
    logged_in_client: Any, user: Any, graph: FakeGraphServer
) -> None:
    graph.add_message(graph.folder_id("inbox"), original_with_attachment(to=f"Owner <{graph.address}>"))
    account = connect_outlook(logged_in_client, graph)
    sync_account(account.pk)
    original = Message.objects.get(account=account, message_id="q3-numbers@example.com")
    draft = start_reply(logged_in_client, item_for(user, original, "Hi Alice"))
    _attach(logged_in_client, user, draft)
    draft.refresh_from_db()  # attaching made a new revision: the confirmation is for that one
    consent = logged_in_client.post(f"/replies/{draft.pk}/send/", {"confirm_token": selectors.confirm_token(draft)})
    logged_in_client.get(follow_consent(graph, consent["Location"]))

    assert confirm_and_send(logged_in_client, draft).status_code == 302
    (mime,) = graph.sent
    assert _files(mime) == EXPECTED

    # Over Graph's limit: the confirmation says so and a send attempt sends nothing.
    second = start_reply(logged_in_client, item_for(user, original, "Another"))
    # 2.5 MB of files: base64 inside the MIME, and the MIME base64 again in the request, make ~4.5 MB.
    big = SimpleUploadedFile("scan.tif", b"\0" * (5 * 1024 * 1024 // 2), content_type="image/tiff")
    _post_editor(logged_in_client, second, attachment_file=big)
    page = logged_in_client.get(f"/replies/{second.pk}/").content.decode()
    assert "about 2.0\xa0MB (one Graph send carries at most 4 MB; larger is not supported yet)" in page
    confirm = logged_in_client.get(f"/replies/{second.pk}/confirm/").content.decode()
    assert "request to Microsoft Graph, over the 4 MB one send can carry" in confirm
    assert 'name="confirm_token"' not in confirm
    second.refresh_from_db()
    refused = logged_in_client.post(f"/replies/{second.pk}/send/", {"confirm_token": selectors.confirm_token(second)})
    assert refused.status_code == 302
    assert len(graph.sent) == 1
    assert ReplyDraft.objects.get(pk=second.pk).status == DraftStatus.DRAFT


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_attach_in_the_browser_at_two_widths(asgi_server: str, chromium: Any, user: Any, smtp_server: Any) -> None:
    from apps.replies import actions as reply_actions
    from tests.browser import console_errors, horizontal_overflow, login, screenshot

    account = imap_account(user, smtp_server)
    original = store_original(account, original_with_attachment())
    for index, width in enumerate((1280, 390)):
        item = item_for(user, original, f"Hi Alice, take {index}")
        report = workspace_actions.add_item(
            workspace=item.workspace,
            label="Q3 report",
            path="reports/quarterly-report-for-the-board-with-a-very-long-file-name-2026-q3.pdf",
            mime_type="application/pdf",
            encoding="base64",
            data=base64.b64encode(PDF).decode(),
        )
        draft = reply_actions.create_draft_from_item(owner=user, item=item)
        context = chromium.new_context(viewport={"width": width, "height": 900}, permissions=["notifications"])
        page = context.new_page()
        errors = console_errors(page)
        login(page, asgi_server, user)
        page.goto(f"{asgi_server}/replies/{draft.pk}/")
        files = page.locator("#reply-attachment-file")
        if index == 0:  # over the limit: refused in the browser before anything is sent, with the reason
            files.set_input_files(
                {"name": "huge.bin", "mimeType": "application/octet-stream", "buffer": b"\0" * (17 << 20)}
            )
            assert "at most 16.0 MB" in page.locator("[data-testid=attachment-too-large]").inner_text()
            assert page.evaluate("document.getElementById('reply-attachment-file').files.length") == 0
        files.set_input_files({"name": "numbers.csv", "mimeType": "text/csv", "buffer": CSV})
        assert page.locator("[data-testid=attachment-too-large]").is_hidden()
        page.locator("[data-testid=attachable-items] summary").click()
        page.locator(f"input[name=attach_item][value='{report.pk}']").check()
        page.click("button[name=action][value=save]")
        page.wait_for_selector("[data-testid=attachment] >> nth=1")
        assert page.locator("[data-testid=attachment]").count() == 2
        assert horizontal_overflow(page) == 0, f"editor with attachments scrolls sideways at {width}px"
        screenshot(page, f"replies-attachments-{width}")
        page.click("[data-testid=send]")
        page.wait_for_selector("[data-testid=confirm-attachments]")
        assert horizontal_overflow(page) == 0, f"confirmation scrolls sideways at {width}px"
        screenshot(page, f"replies-attachments-confirm-{width}")
        page.click("[data-testid=confirm-send]")
        page.wait_for_url(f"{asgi_server}/mail/threads/**")
        assert _files(smtp_server.received[index]["data"]) == {
            "numbers.csv": ("text/csv", CSV),
            "quarterly-report-for-the-board-with-a-very-long-file-name-2026-q3.pdf": ("application/pdf", PDF),
        }
        assert errors == []
        context.close()

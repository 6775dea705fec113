"""Mail pages: accounts, account detail, mailbox, thread, attachment download, and their admin."""

from __future__ import annotations

import mailbox
import re
from collections.abc import Sequence
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from apps.accounts import actions
from apps.accounts.importers import import_path
from apps.accounts.models import Attachment, MailAccount, Message, Provider, SignatureMode, Thread

pytestmark = pytest.mark.django_db

BROKEN_DATE_MESSAGE = (
    b"From: Dee <dee@example.com>\nTo: owner@example.com\nSubject: Broken date\n"
    b"Date: not a date at all\nMessage-ID: <broken-1@example.com>\n\nThe date above is nonsense.\n"
)
LONG_SUBJECT = "Quarterly planning " + "with a very long subject that keeps going " * 12 + "END"


def make_message(
    subject: str,
    message_id: str,
    *,
    body: str = "Plain body text.",
    html: str | None = None,
    sender: str = "Ada Lovelace <ada@example.com>",
    date: str = "Mon, 02 Nov 2026 10:00:00 +0100",
    in_reply_to: str | None = None,
    attachment: tuple[str, bytes, str] | None = None,
    unread: bool = False,
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "Owner <owner@example.com>"
    message["Cc"] = "Carol <carol@example.com>"
    message["Subject"] = subject
    message["Date"] = date
    message["Message-ID"] = f"<{message_id}>"
    if in_reply_to:
        message["In-Reply-To"] = f"<{in_reply_to}>"
        message["References"] = f"<{in_reply_to}>"
    message["Status"] = "O" if unread else "RO"
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    if attachment is not None:
        filename, payload, mime = attachment
        maintype, subtype = mime.split("/")
        message.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return message


def write_mbox(path: Path, messages: Sequence[EmailMessage | bytes]) -> Path:
    box = mailbox.mbox(str(path), create=True)
    try:
        for message in messages:
            box.add(message if isinstance(message, bytes) else message.as_bytes())
    finally:
        box.flush()
        box.close()
    return path


def import_messages(
    account: MailAccount, tmp_path: Path, messages: Sequence[EmailMessage | bytes], folder: str = "INBOX"
) -> None:
    directory = tmp_path / f"src-{account.pk}-{folder}"
    directory.mkdir(parents=True, exist_ok=True)
    summary = import_path(account, write_mbox(directory / f"{folder}.mbox", messages))
    assert summary.imported == len(messages), summary


@pytest.fixture
def mail(user: Any, tmp_path: Path) -> dict[str, Any]:
    """One local account: a two-message thread with a PDF, an HTML newsletter, a long subject, a broken date."""
    account = actions.create_local_account(owner=user, name="Archive")
    import_messages(
        account,
        tmp_path,
        [
            make_message(
                "Budget review",
                "budget-1@example.com",
                body="Here are the numbers.",
                attachment=('../numbers "q4".pdf', b"%PDF-1.4 fake but fine", "application/pdf"),
            ),
            make_message(
                "Re: Budget review",
                "budget-2@example.com",
                body="Thanks, looks right.",
                sender="Bob <bob@example.com>",
                date="Tue, 03 Nov 2026 09:00:00 +0100",
                in_reply_to="budget-1@example.com",
                unread=True,
            ),
            make_message(
                "Newsletter: autumn edition",
                "news-1@example.com",
                body="Autumn news in plain text.",
                html='<p>Autumn <b>news</b></p><img src="https://tracker.example/pixel.gif"><script>alert(1)</script>',
                date="Wed, 04 Nov 2026 08:00:00 +0100",
            ),
            make_message(LONG_SUBJECT, "long-1@example.com", date="Thu, 05 Nov 2026 08:00:00 +0100"),
            BROKEN_DATE_MESSAGE,
        ],
    )
    budget = Thread.objects.get(account=account, subject="Budget review")
    return {
        "account": account,
        "thread": budget,
        "attachment": Attachment.objects.get(message__thread=budget),
        "newsletter": Message.objects.get(account=account, message_id="news-1@example.com"),
        "broken": Message.objects.get(account=account, message_id="broken-1@example.com"),
    }


@pytest.fixture
def stranger_mail(db: Any, tmp_path: Path) -> dict[str, Any]:
    stranger = get_user_model().objects.create_user(username="stranger", email="s@example.com", password="x" * 20)
    account = actions.create_local_account(owner=stranger, name="Theirs")
    import_messages(
        account,
        tmp_path,
        [make_message("Private", "private-1@example.com", attachment=("secret.txt", b"top secret", "text/plain"))],
    )
    message = Message.objects.get(account=account)
    assert message.thread is not None
    return {
        "account": account,
        "thread": message.thread,
        "message": message,
        "attachment": Attachment.objects.get(message=message),
    }


# --- rendering and permissions --------------------------------------------------------------------


def test_every_page_renders_for_the_owner(logged_in_client: Client, mail: dict[str, Any]) -> None:
    account = mail["account"]
    response = logged_in_client.get(reverse("mail:accounts"))
    assert response.status_code == 200
    assert b"Archive" in response.content and b'data-testid="accounts-table"' in response.content

    response = logged_in_client.get(reverse("mail:account_detail", args=[account.pk]))
    assert response.status_code == 200
    assert b'data-testid="folder-list"' in response.content and b"INBOX" in response.content

    response = logged_in_client.get(reverse("mail:mailbox"))
    assert response.status_code == 200
    assert b"Budget review" in response.content and b'id="mailbox-nav"' in response.content

    response = logged_in_client.get(reverse("mail:thread", args=[mail["thread"].pk]))
    assert response.status_code == 200
    assert b"Here are the numbers." in response.content and b"Thanks, looks right." in response.content

    message = mail["newsletter"]
    response = logged_in_client.get(reverse("mail:message", args=[message.pk]))
    assert response.status_code == 302
    assert response["Location"].endswith(f"/mail/threads/{message.thread_id}/#message-{message.pk}")


def test_nav_entries_point_at_the_mail_pages(logged_in_client: Client) -> None:
    response = logged_in_client.get(reverse("home"))
    assert b'href="/mail/"' in response.content
    assert b'href="/mail/accounts/"' in response.content


def test_another_users_objects_are_404(
    logged_in_client: Client, mail: dict[str, Any], stranger_mail: dict[str, Any]
) -> None:
    account = stranger_mail["account"]
    gets = [
        reverse("mail:account_detail", args=[account.pk]),
        reverse("mail:thread", args=[stranger_mail["thread"].pk]),
        reverse("mail:message", args=[stranger_mail["message"].pk]),
        reverse("mail:attachment_download", args=[stranger_mail["attachment"].pk]),
        f"{reverse('mail:mailbox')}?account={account.pk}",
        f"{reverse('mail:mailbox')}?account=not-a-number",
    ]
    for url in gets:
        assert logged_in_client.get(url).status_code == 404, url
    posts = [
        (reverse("mail:account_sync", args=[account.pk]), {}),
        (reverse("mail:account_signature", args=[account.pk]), {"mode": "custom", "text": "hijacked"}),
        (reverse("mail:account_set_enabled", args=[account.pk]), {}),
    ]
    for url, data in posts:
        assert logged_in_client.post(url, data).status_code == 404, url
    account.refresh_from_db()
    assert account.enabled and account.signature_text == ""
    # The stranger's mail never shows up in the owner's pages either.
    assert b"Theirs" not in logged_in_client.get(reverse("mail:accounts")).content
    assert b"Private" not in logged_in_client.get(reverse("mail:mailbox")).content


def test_anonymous_visitors_are_sent_to_login(client: Client, mail: dict[str, Any]) -> None:
    urls = [
        reverse("mail:mailbox"),
        reverse("mail:accounts"),
        reverse("mail:account_detail", args=[mail["account"].pk]),
        reverse("mail:thread", args=[mail["thread"].pk]),
        reverse("mail:attachment_download", args=[mail["attachment"].pk]),
    ]
    login = reverse("account_login")
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(login), url
    response = client.post(reverse("mail:account_add_imap"), {"name": "x"})
    assert response.status_code == 302 and response["Location"].startswith(login)
    assert not MailAccount.objects.filter(name="x").exists()


# --- accounts page: IMAP form, OAuth panel, sync, connection test ---------------------------------


def imap_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "Work",
        "address": "me@work.example",
        "host": "imap.work.example",
        "port": "993",
        "security": "ssl",
        "username": "",
        "password": "s3cret-password",
    }
    data.update(overrides)
    return data


def test_imap_form_errors_are_shown_and_nothing_is_saved(logged_in_client: Client, user: Any) -> None:
    url = reverse("mail:account_add_imap")
    response = logged_in_client.post(url, imap_data(address="not-an-email", host="", port="70000", security="tls9"))
    assert response.status_code == 200
    content = response.content.decode()
    assert "Enter a valid email address." in content
    assert "This field is required." in content
    assert "Ensure this value is less than or equal to 65535." in content
    assert "Select a valid choice." in content
    assert "s3cret-password" not in content  # the password is never echoed back
    assert 'id="add-imap" open' in content
    assert not MailAccount.objects.filter(owner=user).exists()

    actions.create_local_account(owner=user, name="Work")
    response = logged_in_client.post(url, imap_data())
    assert "You already have an account with this name." in response.content.decode()
    assert MailAccount.objects.filter(owner=user).count() == 1


def test_imap_form_creates_an_account_with_encrypted_password(logged_in_client: Client, user: Any) -> None:
    # imap.work.example does not exist: saved only because the user asked to skip the connection check.
    response = logged_in_client.post(reverse("mail:account_add_imap"), imap_data(skip_check="on"))
    account = MailAccount.objects.get(owner=user, name="Work")
    assert response.status_code == 302
    assert response["Location"] == reverse("mail:account_detail", args=[account.pk])
    assert account.provider == Provider.IMAP
    assert account.imap_host == "imap.work.example" and account.imap_port == 993
    assert account.imap_username == "me@work.example"
    assert account.credentials == {"password": "s3cret-password"}
    page = logged_in_client.get(response["Location"]).content.decode()
    assert "imap.work.example:993" in page
    assert "s3cret-password" not in page


@pytest.mark.services
def test_imap_form_checks_the_connection_before_saving(logged_in_client: Client, user: Any, imap_mailbox: Any) -> None:
    url = reverse("mail:account_add_imap")
    server = {
        "address": imap_mailbox.username,
        "host": "127.0.0.1",
        "port": str(imap_mailbox.server.port),
        "security": "none",
        "username": imap_mailbox.username,
    }
    wrong = logged_in_client.post(url, imap_data(**server, password="not-the-password"))
    content = wrong.content.decode()
    assert wrong.status_code == 200 and "Could not connect:" in content and "nothing was saved" in content
    assert "not-the-password" not in content and 'id="add-imap" open' in content
    closed_port = logged_in_client.post(url, imap_data(**{**server, "port": "1"}, password=imap_mailbox.password))
    assert "Could not connect: Cannot talk to IMAP server 127.0.0.1:1" in closed_port.content.decode()
    assert not MailAccount.objects.filter(owner=user).exists()
    right = logged_in_client.post(url, imap_data(**server, password=imap_mailbox.password))
    assert right.status_code == 302
    account = MailAccount.objects.get(owner=user, name="Work")
    assert account.imap_port == imap_mailbox.server.port
    assert account.credentials == {"password": imap_mailbox.password}


@override_settings(GMAIL_CLIENT_ID="", OUTLOOK_CLIENT_ID="")
def test_oauth_setup_instructions_when_not_configured(logged_in_client: Client) -> None:
    content = logged_in_client.get(reverse("mail:accounts")).content.decode()
    assert 'data-testid="oauth-setup"' in content
    assert "http://testserver/mail/oauth/gmail/callback/" in content
    assert "http://testserver/mail/oauth/outlook/callback/" in content
    assert "https://www.googleapis.com/auth/gmail.readonly" in content
    assert "https://www.googleapis.com/auth/gmail.settings.basic" in content
    for scope in ("Mail.Read", "offline_access", "User.Read"):
        assert f"<code>{scope}</code>" in content
    assert "GMAIL_CLIENT_ID" in content and "OUTLOOK_CLIENT_ID" in content
    assert 'data-testid="connect-gmail"' not in content


@override_settings(GMAIL_CLIENT_ID="gmail-client", OUTLOOK_CLIENT_ID="outlook-client")
def test_connect_buttons_when_configured(logged_in_client: Client) -> None:
    content = logged_in_client.get(reverse("mail:accounts")).content.decode()
    assert 'href="/mail/oauth/gmail/connect/" data-testid="connect-gmail"' in content
    assert 'href="/mail/oauth/outlook/connect/" data-testid="connect-outlook"' in content
    assert 'data-testid="oauth-setup"' not in content


def test_accounts_table_shows_status_errors_and_connection_test(logged_in_client: Client, user: Any) -> None:
    imap = actions.create_imap_account(
        owner=user,
        name="Work",
        address="me@work.example",
        host="imap.work.example",
        port=993,
        security="ssl",
        username="me",
        password="pw",
    )
    actions.record_connection_test(account=imap, error_category="auth", message="LOGIN failed: bad password")
    actions.create_local_account(owner=user, name="Old archive")
    content = logged_in_client.get(reverse("mail:accounts")).content.decode()
    assert "Login failed" in content and "LOGIN failed: bad password" in content
    assert f'hx-get="/api/accounts/{imap.pk}/test"' in content
    assert f'data-connection-test="connection-result-{imap.pk}"' in content
    assert 'id="connection-error-labels"' in content  # the labels the result script shows
    assert content.count('hx-get="/api/accounts/') == 1  # local archives have nothing to test
    assert "Never synced" in content and "Local archive" in content


def test_sync_now_enqueues_the_task_on_commit(
    logged_in_client: Client, user: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    import django_q.tasks

    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(django_q.tasks, "async_task", lambda *args, **kwargs: queued.append(args))
    imap = actions.create_imap_account(
        owner=user, name="Work", address="me@work.example", host="h", port=993, security="ssl", username="", password=""
    )
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = logged_in_client.post(reverse("mail:account_sync", args=[imap.pk]), {"next": "/mail/accounts/"})
    assert response.status_code == 302 and response["Location"] == "/mail/accounts/"
    assert len(callbacks) == 1
    assert queued == [("apps.accounts.tasks.sync_account_task", imap.pk)]
    assert logged_in_client.get(reverse("mail:account_sync", args=[imap.pk])).status_code == 405
    # An off-site "next" is ignored.
    response = logged_in_client.post(reverse("mail:account_sync", args=[imap.pk]), {"next": "https://evil.example/"})
    assert response["Location"] == "/mail/accounts/"


# --- uploads --------------------------------------------------------------------------------------


def _import_then_accounts_page(client: Client, capture: Any, data: dict[str, Any]) -> str:
    """Upload, run the queued import job (inline: django-q2's sync mode in tests; on commit), then the
    Accounts page, which lists the job's outcome."""
    with capture(execute=True):
        assert client.post(reverse("mail:account_import"), data).status_code == 302
    return client.get(reverse("mail:accounts")).content.decode()


def test_upload_single_eml_into_a_new_local_account(
    logged_in_client: Client, user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    eml = make_message("Uploaded letter", "upload-eml-1@example.com").as_bytes()
    content = _import_then_accounts_page(
        logged_in_client,
        django_capture_on_commit_callbacks,
        {"file": SimpleUploadedFile("letter.eml", eml, "message/rfc822"), "new_account_name": "Uploads"},
    )
    assert "Imported into “Uploads”: 1 new, 0 duplicates, 0 with parse errors, from 1 file(s)." in content
    account = MailAccount.objects.get(owner=user, name="Uploads")
    assert account.provider == Provider.LOCAL
    assert Message.objects.get(account=account).subject == "Uploaded letter"
    left = [p.name for job in (Path(settings.DATA_DIR) / "uploads").glob("import-*") for p in job.iterdir()]
    assert set(left) <= {"job.json"}, "temp upload left behind"


def test_upload_mbox_into_an_existing_account_counts_duplicates(
    logged_in_client: Client, user: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    account = actions.create_local_account(owner=user, name="Archive")
    messages = [make_message(f"Archived {n}", f"mbox-{n}@example.com") for n in range(3)]
    data = write_mbox(tmp_path / "old.mbox", messages).read_bytes()
    upload = {"file": SimpleUploadedFile("old.mbox", data), "account": str(account.pk)}
    page = _import_then_accounts_page(logged_in_client, django_capture_on_commit_callbacks, upload)
    assert "Imported into “Archive”: 3 new, 0 duplicates" in page
    assert Message.objects.filter(account=account, folder="old").count() == 3
    upload = {"file": SimpleUploadedFile("old.mbox", data), "account": str(account.pk)}
    page = _import_then_accounts_page(logged_in_client, django_capture_on_commit_callbacks, upload)
    assert "Imported into “Archive”: 0 new, 3 duplicates" in page
    assert Message.objects.filter(account=account).count() == 3


def test_upload_validation(logged_in_client: Client, user: Any, stranger_mail: dict[str, Any]) -> None:
    url = reverse("mail:account_import")
    eml = make_message("x", "validation@example.com").as_bytes()
    response = logged_in_client.post(url, {"file": SimpleUploadedFile("notes.pdf", b"%PDF"), "new_account_name": "A"})
    assert "Upload an .mbox, .eml or .zip file." in response.content.decode()
    response = logged_in_client.post(url, {"file": SimpleUploadedFile("a.eml", eml)})
    assert "Choose a local account or name a new one." in response.content.decode()
    # Someone else's account is not a valid choice.
    response = logged_in_client.post(
        url, {"file": SimpleUploadedFile("a.eml", eml), "account": str(stranger_mail["account"].pk)}
    )
    assert "Select a valid choice." in response.content.decode()
    imap = actions.create_imap_account(
        owner=user, name="Work", address="me@work.example", host="h", port=993, security="ssl", username="", password=""
    )
    response = logged_in_client.post(url, {"file": SimpleUploadedFile("a.eml", eml), "new_account_name": "Work"})
    assert "imports go into local accounts" in response.content.decode()
    response = logged_in_client.post(url, {"file": SimpleUploadedFile("a.eml", eml), "account": str(imap.pk)})
    assert "Select a valid choice." in response.content.decode()
    assert not Message.objects.filter(account__owner=user).exists()
    assert list(MailAccount.objects.filter(owner=user).values_list("name", flat=True)) == ["Work"]


@override_settings(MAILAGENT_MAX_UPLOAD_BYTES=1024)
def test_upload_over_the_limit_is_rejected(logged_in_client: Client, user: Any) -> None:
    big = make_message("Big", "big@example.com", body="x" * 4000).as_bytes()
    response = logged_in_client.post(
        reverse("mail:account_import"),
        {"file": SimpleUploadedFile("big.eml", big), "new_account_name": "Big"},
        follow=True,
    )
    content = response.content.decode()
    assert "larger than 1.0\xa0KB" in content
    assert not MailAccount.objects.filter(owner=user).exists()
    assert not Message.objects.exists()


# --- account detail: signature and enable toggle --------------------------------------------------


def test_signature_editor_saves(logged_in_client: Client, mail: dict[str, Any]) -> None:
    account = mail["account"]
    url = reverse("mail:account_signature", args=[account.pk])
    response = logged_in_client.post(url, {"mode": "custom", "text": "Best,\nAda\n-- \nsent from mailagent"})
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.signature_mode == SignatureMode.CUSTOM
    assert account.signature_text == "Best,\nAda\n-- \nsent from mailagent"
    page = logged_in_client.get(reverse("mail:account_detail", args=[account.pk])).content.decode()
    assert "sent from mailagent" in page and "Signature saved." in page

    response = logged_in_client.post(url, {"mode": "provider", "text": ""})
    account.refresh_from_db()
    assert account.signature_mode == SignatureMode.PROVIDER

    response = logged_in_client.post(url, {"mode": "psychic", "text": "nope"})
    assert response.status_code == 200
    assert "Select a valid choice." in response.content.decode()
    account.refresh_from_db()
    assert account.signature_mode == SignatureMode.PROVIDER and account.signature_text == ""


def test_enable_toggle(logged_in_client: Client, mail: dict[str, Any]) -> None:
    account = mail["account"]
    url = reverse("mail:account_set_enabled", args=[account.pk])
    assert logged_in_client.post(url, {}).status_code == 302
    account.refresh_from_db()
    assert not account.enabled
    # A local archive is never synced, so its page offers no enable/disable toggle (the endpoint still works).
    assert account.provider == Provider.LOCAL
    page = logged_in_client.get(reverse("mail:account_detail", args=[account.pk])).content.decode()
    assert "Enable account" not in page and "Included in scheduled syncs" not in page
    assert 'data-testid="local-archive-note"' in page
    logged_in_client.post(url, {"enabled": "on"})
    account.refresh_from_db()
    assert account.enabled


# --- mailbox list ---------------------------------------------------------------------------------


@pytest.fixture
def busy_account(user: Any, tmp_path: Path) -> MailAccount:
    """60 single-message threads (more than one page), every third unread, some with attachments."""
    account = actions.create_local_account(owner=user, name="Busy")
    messages = [
        make_message(
            f"Topic {n:02d}",
            f"busy-{n}@example.com",
            sender=f"Sender {n} <s{n}@example.com>",
            date=f"Mon, {1 + n % 28:02d} Jun 2026 {n % 24:02d}:00:00 +0000",
            unread=n % 3 == 0,
            attachment=("a.txt", f"attachment {n}".encode(), "text/plain") if n % 5 == 0 else None,
        )
        for n in range(60)
    ]
    import_messages(account, tmp_path, messages)
    return account


def thread_rows(content: str) -> list[str]:
    return re.findall(r'<a class="thread-row[^"]*"', content)


def test_mailbox_paginates_fifty_threads_per_page(logged_in_client: Client, busy_account: MailAccount) -> None:
    url = f"{reverse('mail:mailbox')}?account={busy_account.pk}&folder=INBOX"
    first = logged_in_client.get(url).content.decode()
    assert len(thread_rows(first)) == 50
    assert "1\N{EN DASH}50 of 60" in first and "Page 1 of 2" in first
    assert "page=2" in first
    second = logged_in_client.get(url + "&page=2").content.decode()
    assert len(thread_rows(second)) == 10
    assert "51\N{EN DASH}60 of 60" in second
    # Unread rows are marked (bold via CSS), attachments get the paperclip.
    assert 'class="thread-row is-unread' in first
    assert "Has attachments" in first
    # Out-of-range page numbers land on the last page instead of failing.
    assert len(thread_rows(logged_in_client.get(url + "&page=99").content.decode())) == 10


def test_htmx_requests_get_only_the_thread_list_partial(logged_in_client: Client, busy_account: MailAccount) -> None:
    url = f"{reverse('mail:mailbox')}?account={busy_account.pk}&folder=INBOX&page=2"
    response = logged_in_client.get(url, headers={"HX-Request": "true"})
    content = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in content and '<header class="topbar"' not in content
    assert content.lstrip().startswith('<section class="mailbox-main" id="thread-list"')
    assert len(thread_rows(content)) == 10
    # The folder nav follows along out of band.
    assert 'id="mailbox-nav" aria-label="Accounts and folders" hx-swap-oob="true"' in content
    # Links in the list and the nav swap the list, not the page.
    assert 'hx-target="#thread-list"' in content
    # A history restore (cache miss) needs the whole page.
    restore = logged_in_client.get(url, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in restore.content.decode()


def test_folder_switching_and_all_mail(logged_in_client: Client, mail: dict[str, Any], tmp_path: Path) -> None:
    account = mail["account"]
    import_messages(account, tmp_path, [make_message("Filed away", "filed-1@example.com")], folder="Projects")
    base = f"{reverse('mail:mailbox')}?account={account.pk}"
    default = logged_in_client.get(base).content.decode()  # the inbox by default
    assert "Budget review" in default and "Filed away" not in default
    projects = logged_in_client.get(base + "&folder=Projects", headers={"HX-Request": "true"}).content.decode()
    assert "Filed away" in projects and "Budget review" not in projects
    assert 'class="folder-link is-active"' in projects
    everything = logged_in_client.get(base + "&folder=").content.decode()
    assert "Filed away" in everything and "Budget review" in everything


def test_mailbox_query_count_does_not_grow_with_threads(
    logged_in_client: Client, busy_account: MailAccount, django_assert_max_num_queries: Any
) -> None:
    url = f"{reverse('mail:mailbox')}?account={busy_account.pk}&folder=INBOX"
    logged_in_client.get(url)  # warm the session/user caches
    # 10 for the list and folders, 1 for the threads' tags, 2 for the sidebar's tags and saved searches (then one
    # count per saved search: none here), and on the whole page 1 for the navigation's pending approvals.
    with django_assert_max_num_queries(14):
        response = logged_in_client.get(url)
    assert len(thread_rows(response.content.decode())) == 50
    with django_assert_max_num_queries(13):
        logged_in_client.get(url, headers={"HX-Request": "true"})


def test_long_subject_rows_keep_the_grid_structure(logged_in_client: Client, mail: dict[str, Any]) -> None:
    content = logged_in_client.get(reverse("mail:mailbox")).content.decode()
    rows = re.findall(r'<a class="thread-row[^"]*"[^>]*>(.*?)</a>\s*</div>', content, re.S)
    assert len(rows) == len(thread_rows(content)) >= 4
    expected = ["thread-senders", "thread-subject", "thread-count", "thread-attachment", "thread-date"]
    for row in rows:
        # Every row has exactly the same five cells in the same order, however long its text.
        assert re.findall(r'<span class="thread-cell (thread-[a-z]+)"', row) == expected
    long_row = next(row for row in rows if "Quarterly planning" in row)
    assert f'<span class="thread-cell thread-subject" title="{LONG_SUBJECT}">' in long_row
    css = (Path(settings.BASE_DIR) / "static" / "mailagent" / "app.css").read_text()
    grid = re.search(r"\.thread-row \{[^}]*\}", css)
    assert grid and "display: grid;" in grid.group(0) and "minmax(0, 1fr)" in grid.group(0)
    cell = re.search(r"\.thread-cell \{[^}]*\}", css)
    assert cell
    for rule in ("min-width: 0;", "overflow: hidden;", "text-overflow: ellipsis;", "white-space: nowrap;"):
        assert rule in cell.group(0)


# --- thread view and attachments ------------------------------------------------------------------


def test_thread_shows_messages_oldest_first_with_headers(logged_in_client: Client, mail: dict[str, Any]) -> None:
    content = logged_in_client.get(reverse("mail:thread", args=[mail["thread"].pk])).content.decode()
    assert content.index("Here are the numbers.") < content.index("Thanks, looks right.")
    assert "Ada Lovelace" in content and "Carol" in content and "owner@example.com" in content
    assert '<pre class="mail-text">Here are the numbers.' in content
    assert "Show raw headers" in content and "Message-ID: &lt;budget-1@example.com&gt;" in content
    attachment = mail["attachment"]
    assert reverse("mail:attachment_download", args=[attachment.pk]) in content


def test_html_bodies_render_in_a_sandboxed_iframe(logged_in_client: Client, mail: dict[str, Any]) -> None:
    message = mail["newsletter"]
    content = logged_in_client.get(reverse("mail:thread", args=[message.thread_id])).content.decode()
    iframe = re.search(r"<iframe [^>]*>", content)
    assert iframe
    tag = iframe.group(0)
    assert 'sandbox="allow-popups allow-popups-to-escape-sandbox"' in tag
    assert "allow-scripts" not in tag and "allow-same-origin" not in tag
    srcdoc = re.search(r'srcdoc="([^"]*)"', tag)
    assert srcdoc
    document = srcdoc.group(1)
    assert "Content-Security-Policy" in document and "img-src data:;" in document
    assert "script-src &#x27;none&#x27;" in document
    assert "Autumn &lt;b&gt;news&lt;/b&gt;" in document  # escaped once for the attribute
    assert "alert(1)" not in document  # nh3 dropped the script at import
    assert "Show remote images" in content
    relaxed = logged_in_client.get(reverse("mail:thread", args=[message.thread_id]) + "?images=1").content.decode()
    assert "img-src data: https: http:;" in relaxed


def test_parse_error_notice(logged_in_client: Client, mail: dict[str, Any]) -> None:
    broken = mail["broken"]
    assert broken.parse_error
    content = logged_in_client.get(reverse("mail:thread", args=[broken.thread_id])).content.decode()
    assert "was not parsed cleanly" in content


def test_attachment_download_headers(logged_in_client: Client, mail: dict[str, Any]) -> None:
    attachment = mail["attachment"]
    response = logged_in_client.get(reverse("mail:attachment_download", args=[attachment.pk]))
    assert response.status_code == 200
    assert response.content == b"%PDF-1.4 fake but fine"
    assert response["Content-Type"] == "application/pdf"
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "/" not in disposition and ".." not in disposition.replace("filename", "")
    assert re.search(r'filename="numbers _q4_\.pdf"', disposition), disposition
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


def test_attachment_fetch_failure_is_a_clear_502(logged_in_client: Client, user: Any, tmp_path: Path) -> None:
    account = actions.create_local_account(owner=user, name="Lost")
    unique = f"only here {tmp_path}".encode()
    lost = make_message("Lost", "lost@example.com", attachment=("l.bin", unique, "application/octet-stream"))
    import_messages(account, tmp_path, [lost])
    attachment = Attachment.objects.get(message__account=account)
    (Path(settings.ATTACHMENT_CACHE_DIR) / attachment.cache_path).unlink()
    response = logged_in_client.get(reverse("mail:attachment_download", args=[attachment.pk]))
    assert response.status_code == 502
    content = response.content.decode()
    assert 'data-testid="attachment-error"' in content and "Cached attachment file is missing" in content


# --- admin ----------------------------------------------------------------------------------------


def test_admin_never_shows_credentials(staff_client: Client, staff_user: Any, tmp_path: Path) -> None:
    account = actions.create_imap_account(
        owner=staff_user,
        name="Work",
        address="me@work.example",
        host="imap.work.example",
        port=993,
        security="ssl",
        username="me",
        password="hunter2-very-secret",
    )
    import_messages(
        actions.create_local_account(owner=staff_user, name="Local"),
        tmp_path,
        [make_message("Admin view", "admin-1@example.com", attachment=("x.txt", b"x", "text/plain"))],
    )
    change = staff_client.get(reverse("admin:mail_mailaccount_change", args=[account.pk])).content.decode()
    assert "hunter2-very-secret" not in change and 'name="credentials"' not in change
    assert "stored encrypted (AES-256-GCM)" in change
    listing = staff_client.get(reverse("admin:mail_mailaccount_changelist")).content.decode()
    assert "hunter2-very-secret" not in listing and "stored encrypted (AES-256-GCM)" in listing
    message = Message.objects.get(message_id="admin-1@example.com")
    assert staff_client.get(reverse("admin:mail_message_changelist") + "?q=Admin").status_code == 200
    detail = staff_client.get(reverse("admin:mail_message_change", args=[message.pk])).content.decode()
    assert "Admin view" in detail and "x.txt" in detail
    assert 'name="subject"' not in detail  # read-only
    assert staff_client.get(reverse("admin:mail_message_add")).status_code == 403


def test_import_still_checks_csrf(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    eml = make_message("x", "csrf@example.com").as_bytes()
    response = client.post(
        reverse("mail:account_import"), {"file": SimpleUploadedFile("a.eml", eml), "new_account_name": "CSRF"}
    )
    assert response.status_code == 403
    assert not MailAccount.objects.filter(owner=user).exists()

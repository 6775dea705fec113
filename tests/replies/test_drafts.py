"""The Drafts page and the editor: drafts from workspace items and Ask drafts, reply / reply all, subject and
threading headers, discard, tenancy (another user's draft, item or Ask draft is 404), and the rule that
nothing an agent or Ask runs can reach the send path."""

from __future__ import annotations

import ast
import email
from email import policy
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from apps.accounts.actions import create_local_account
from apps.accounts.models import MailAccount, Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.ask.models import Draft as AskDraft
from apps.replies import compose, selectors
from apps.replies.models import DraftStatus, ReplyDraft
from apps.workspaces import actions as workspace_actions
from tests.replies.conftest import item_for, original_raw, start_reply

pytestmark = pytest.mark.django_db


def stored(account: MailAccount, raw: bytes, provider_id: str) -> Message:
    result = store_remote_messages(account=account, messages=[RemoteMessage(provider_id=provider_id, raw=raw)])
    return Message.objects.get(pk=result.created_ids[0])


@pytest.fixture
def mailbox(user: Any) -> MailAccount:
    account = create_local_account(owner=user, name="box", address="owner@example.com")
    account.signature_text = "Owner"
    account.save(update_fields=["signature_text"])
    return account


def test_reply_and_reply_all_recipients_subject_and_references(
    logged_in_client: Any, user: Any, mailbox: MailAccount
) -> None:
    original = stored(
        mailbox,
        original_raw(
            subject="RE: Quarterly numbers",
            sender="Alice <alice@example.com>",
            reply_to="Team <team@example.com>",
            to="Owner <owner@example.com>, Bob <bob@example.com>",
            cc="Carol <carol@example.com>, bob@example.com, OWNER@example.com",
            references="<a@example.com> <b@example.com>",
        ),
        "1",
    )
    draft = start_reply(logged_in_client, item_for(user, original, "Thanks!"))

    assert draft.to == [{"name": "Team", "address": "team@example.com"}]  # Reply-To wins over From
    assert draft.cc == []
    assert draft.subject == "RE: Quarterly numbers"  # no second prefix
    assert draft.in_reply_to_header == "q3-numbers@example.com"
    assert draft.references_header == "a@example.com b@example.com q3-numbers@example.com"

    logged_in_client.post(f"/replies/{draft.pk}/mode/", {"mode": "reply_all"})
    draft.refresh_from_db()
    assert [p["address"] for p in draft.to] == ["team@example.com", "bob@example.com"]
    assert [p["address"] for p in draft.cc] == ["carol@example.com"]  # me and the duplicate Bob left out
    assert draft.mode == "reply_all" and draft.revision == 2

    # Opening "Reply…" on the same item again continues the same draft.
    assert start_reply(logged_in_client, item_for(user, original, "Thanks!")).pk != draft.pk
    again = logged_in_client.post(f"/replies/new/item/{draft.workspace_item_id}/")
    assert again["Location"] == f"/replies/{draft.pk}/"


def test_replying_to_my_own_message_goes_to_its_recipients() -> None:
    account = MailAccount(address="owner@example.com")
    mine = Message(
        from_address="owner@example.com",
        to=[{"name": "Alice", "address": "alice@example.com"}],
        cc=[{"name": "", "address": "carol@example.com"}],
    )
    assert compose.reply_recipients(original=mine, account=account, reply_all=False) == (
        [{"name": "Alice", "address": "alice@example.com"}],
        [],
    )
    assert compose.reply_recipients(original=mine, account=account, reply_all=True)[1] == [
        {"name": "", "address": "carol@example.com"}
    ]
    assert compose.reply_subject("") == "Re:" and compose.reply_subject(" Hello ") == "Re: Hello"


def test_signature_conversion_and_mime() -> None:
    html_signature = '<div dir="ltr">Best,<br><b>Owner</b><br><a href="https://example.com">example.com</a></div>'
    plain = compose.render_body(body="Hi.\r\n\r\nSee you.", body_format="plain", signature=html_signature)
    assert plain.html == "" and plain.text == "Hi.\n\nSee you.\n\n-- \nBest,\nOwner\nexample.com\n"
    html = compose.render_body(body="<p>Hi.</p>", body_format="html", signature="Owner\nExample Ltd")
    assert html.html.endswith('<div class="signature">-- <br>\nOwner<br>\nExample Ltd</div>')
    assert html.text == "Hi.\n\n-- \nOwner\nExample Ltd\n"
    assert compose.render_body(body="Hi.", body_format="plain", signature="").text == "Hi.\n"
    assert compose.strip_signature("Hello\n\n-- \nOld signature") == "Hello"
    assert compose.strip_signature("a -- b\n--\nnot a delimiter") == "a -- b\n--\nnot a delimiter"

    raw = compose.build_mime(
        compose.Outgoing(
            from_name="Öwner Ü",
            from_address="owner@example.com",
            to=[{"name": "Zoë, the second", "address": "zoe@example.com"}],
            cc=[],
            subject="Re: Straße ✓",
            rendered=html,
            message_id="abc@example.com",
            in_reply_to="q@example.com",
            references="p@example.com q@example.com",
            date=compose.dt.datetime(2026, 11, 24, 10, 0, tzinfo=compose.dt.UTC),
        )
    )
    parsed = email.message_from_bytes(raw, policy=policy.default)
    assert parsed["Subject"] == "Re: Straße ✓" and parsed["To"].addresses[0].display_name == "Zoë, the second"
    assert parsed["Message-ID"] == "<abc@example.com>" and parsed["References"] == "<p@example.com> <q@example.com>"
    assert parsed.get_content_type() == "multipart/alternative"
    assert max(len(line) for line in raw.split(b"\r\n")) <= 998


def test_ask_draft_becomes_an_editable_reply_with_its_recipients(
    logged_in_client: Any, user: Any, mailbox: MailAccount
) -> None:
    mine = stored(mailbox, original_raw(sender="Owner <owner@example.com>", to="Dan <dan@example.com>"), "2")
    ask_draft = AskDraft.objects.create(
        owner=user,
        account=mailbox,
        thread=mine.thread,
        in_reply_to=mine,
        to=[{"name": "Dan", "address": "dan@example.com"}],
        subject="Re: Quarterly numbers",
        body="Hi Dan,\n\nAny news?\n\n-- \nOwner",
    )
    response = logged_in_client.post(f"/replies/new/ask-draft/{ask_draft.pk}/", HTTP_HX_REQUEST="true")
    draft = ReplyDraft.objects.get(ask_draft=ask_draft)
    assert response.status_code == 200 and response["HX-Redirect"] == f"/replies/{draft.pk}/"
    assert draft.to == [{"name": "Dan", "address": "dan@example.com"}] and draft.mode == "as_drafted"
    assert draft.body == "Hi Dan,\n\nAny news?"  # Ask's signature copy is dropped; the account's is added
    assert draft.in_reply_to_header == "q3-numbers@example.com"
    page = logged_in_client.get(f"/replies/{draft.pk}/").content.decode()
    assert "Any news?" in page and "dan@example.com" in page

    # A local import cannot send: the confirmation page says so and offers no send button.
    confirm = logged_in_client.get(f"/replies/{draft.pk}/confirm/").content.decode()
    assert "local import" in confirm and 'name="confirm_token"' not in confirm
    refused = logged_in_client.post(f"/replies/{draft.pk}/send/", {"confirm_token": selectors.confirm_token(draft)})
    assert refused.status_code == 302
    draft.refresh_from_db()
    assert draft.status == DraftStatus.DRAFT and not draft.message_id

    drafts_page = logged_in_client.get("/replies/").content.decode()
    assert "Re: Quarterly numbers" in drafts_page and "Ask draft" in drafts_page

    assert logged_in_client.post(f"/replies/{draft.pk}/discard/").status_code == 302
    assert not ReplyDraft.objects.filter(pk=draft.pk).exists()
    assert AskDraft.objects.filter(pk=ask_draft.pk).exists()  # Ask's own draft stays
    empty = logged_in_client.get("/replies/").content.decode()
    assert 'data-testid="no-drafts"' in empty


def test_items_that_cannot_become_replies_say_why(logged_in_client: Any, user: Any, mailbox: MailAccount) -> None:
    workspace = workspace_actions.create_user_workspace(owner=user, label="outside agent")
    loose = workspace_actions.add_item(workspace=workspace, data="text without an email")
    response = logged_in_client.post(f"/replies/new/item/{loose.pk}/", follow=True)
    assert "not made from an email" in response.content.decode()
    original = stored(mailbox, original_raw(), "3")
    chart = item_for(user, original, "eyJ9", mime_type="application/json")
    response = logged_in_client.post(f"/replies/new/item/{chart.pk}/", follow=True)
    assert "only text items become replies" in response.content.decode()
    assert not ReplyDraft.objects.exists()


def test_editor_rejects_bad_addresses_and_keeps_the_text(
    logged_in_client: Any, user: Any, mailbox: MailAccount
) -> None:
    original = stored(mailbox, original_raw(), "4")
    draft = start_reply(logged_in_client, item_for(user, original, "Hello"))
    response = logged_in_client.post(
        f"/replies/{draft.pk}/", {"to": "alice@example.com, not an address", "subject": "Re: x", "body": "Edited"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Not an email address" in page and "Edited" in page
    draft.refresh_from_db()
    assert draft.body == "Hello" and draft.revision == 1


def test_another_users_drafts_items_and_ask_drafts_are_404(client: Any, user: Any, mailbox: MailAccount) -> None:
    original = stored(mailbox, original_raw(), "5")
    item = item_for(user, original, "Mine")
    owner_client = client
    owner_client.force_login(user)
    draft = start_reply(owner_client, item)
    ask_draft = AskDraft.objects.create(owner=user, account=mailbox, subject="x", body="y")
    other = get_user_model().objects.create_user(username="mallory", password="mallory-password-42")
    client.force_login(other)
    for method, url in [
        ("get", f"/replies/{draft.pk}/"),
        ("post", f"/replies/{draft.pk}/"),
        ("get", f"/replies/{draft.pk}/confirm/"),
        ("post", f"/replies/{draft.pk}/send/"),
        ("post", f"/replies/{draft.pk}/mode/"),
        ("post", f"/replies/{draft.pk}/consent/"),
        ("post", f"/replies/{draft.pk}/discard/"),
        ("post", f"/replies/new/item/{item.pk}/"),
        ("post", f"/replies/new/ask-draft/{ask_draft.pk}/"),
        ("get", f"/replies/accounts/{mailbox.pk}/smtp/"),
        ("post", f"/replies/accounts/{mailbox.pk}/smtp/"),
    ]:
        assert getattr(client, method)(url).status_code == 404, (method, url)
    assert "Mine" not in client.get("/replies/").content.decode()
    assert ReplyDraft.objects.filter(owner=user).count() == 1


def test_agents_and_ask_have_no_way_to_send() -> None:
    """No module of the agent side (orchestration and its tools, workspaces' MCP tools, Ask, routing) imports
    the send path: only the replies views, after the user's Send and confirmation, call it."""
    send_modules = {"apps.accounts.sending", "apps.replies.actions", "apps.replies.views", "apps.replies"}
    offenders = []
    for app in ("orchestration", "workspaces", "ask", "routing", "organization"):
        for path in (Path(settings.BASE_DIR) / "apps" / app).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
                offenders += [f"{path}: {name}" for name in names if name in send_modules]
    assert offenders == []


def test_a_draft_from_an_account_without_an_address_never_shows_an_empty_sender(
    logged_in_client: Any, user: Any
) -> None:
    imported = create_local_account(owner=user, name="Old archive", address="")
    original = stored(imported, original_raw(), "9")
    draft = start_reply(logged_in_client, item_for(user, original, "Thanks!"))
    page = logged_in_client.get(f"/replies/{draft.pk}/").content.decode()
    assert "&lt;&gt;" not in page
    assert "From <strong>Old archive</strong> (this account has no email address)" in page
    confirm = logged_in_client.get(f"/replies/{draft.pk}/confirm/").content.decode()
    assert "&lt;&gt;" not in confirm and "(no email address)" in confirm

"""Mail changes Ask offers and only the owner's click makes (apps/ask/proposals.py): an instruction in any
language lists the named sender's conversations and changes nothing; the click moves the ticked ones on the
real Dovecot through the mailbox's write-back, and the whole server state is compared afterwards."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.models import MailAction, Message
from apps.ask import actions
from apps.ask.models import AskRun, RunStatus
from tests.accounts.test_imap_mirror import assert_mirrors, connect, mail, synced
from tests.accounts.test_imap_writeback import server_flags
from tests.fakes.dovecot import Mailbox

PARCELPOINT = "ParcelPoint <noreply@parcelpoint.example>"


def ask(user: Any, question: str) -> AskRun:
    run = actions.create_ask_run(owner=user, question=question)
    done = actions.execute_ask_run(run_id=run.pk)
    assert done is not None and done.status == RunStatus.DONE, done and done.error
    return done


def thread_id(account: Any, message_id: str) -> int:
    thread_pk = Message.objects.get(account=account, message_id=message_id).thread_id
    assert thread_pk is not None
    return int(thread_pk)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_german_delete_lists_the_senders_mail_and_only_the_click_moves_it_to_trash(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client
) -> None:
    box = imap_mailbox
    for n in (1, 2, 3):
        box.append("INBOX", mail(n, sender=PARCELPOINT))
    for n in (4, 5):
        box.append("INBOX", mail(n))
    account = connect(box, user)
    synced(account)
    before = box.doveadm_state()

    run = ask(user, "Lösche alle Mails von ParcelPoint")
    assert run.intent == "unsupported" and run.scope["refused"] == "delete mail"
    proposal = run.scope["proposal"]
    assert proposal["status"] == "pending" and proposal["changes"] == ["trash"]
    assert sorted(t["subject"] for t in proposal["threads"]) == ["Message 1", "Message 2", "Message 3"]
    assert "Nothing in your mailbox was changed" in run.answer
    # Asking changed nothing, here or on the server.
    assert box.doveadm_state() == before and not MailAction.objects.exists()
    page = logged_in_client.get(f"{reverse('ask:panel')}?c={run.conversation_id}").content.decode()
    assert page.count('data-testid="ask-proposal-thread"') == 3 and 'data-testid="ask-proposal-trash"' in page

    # Another user cannot click it.
    stranger = get_user_model().objects.create_user(username="stranger", email="s@example.com", password="pw-12345678")
    other = Client()
    other.force_login(stranger)
    url = reverse("ask:run_proposal", args=[run.pk])
    assert other.post(url, {"change": "trash", "thread": [thread_id(account, "m1@mirror.test")]}).status_code == 404

    # The owner unticks Message 3 and clicks "Move to Trash": two conversations go, on the server too.
    ticked = [thread_id(account, "m1@mirror.test"), thread_id(account, "m2@mirror.test")]
    answer = logged_in_client.post(url, {"change": "trash", "thread": ticked}, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    assert 'data-testid="ask-proposal-done"' in answer.content.decode()
    # The footer no longer says "Nothing was changed" once the click changed something.
    assert "Changed on your click: 2 of 2 conversations moved to Trash" in answer.content.decode()
    assert server_flags(box, "m1@mirror.test") == {"Trash": (False, False)}
    assert server_flags(box, "m2@mirror.test") == {"Trash": (False, False)}
    for kept in ("m3@mirror.test", "m4@mirror.test", "m5@mirror.test"):
        assert set(server_flags(box, kept)) == {"INBOX"}
    assert_mirrors(box, account)
    done = MailAction.objects.filter(kind="trash")
    assert done.count() == 2 and {(a.requested_by_id, a.origin) for a in done} == {(user.pk, "user")}
    run.refresh_from_db()
    assert run.scope["proposal"]["status"] == "done"
    assert run.scope["proposal"]["summary"] == "2 of 2 conversations moved to Trash"

    # A second click makes nothing: the proposal is spent.
    again = logged_in_client.post(url, {"change": "trash", "thread": [thread_id(account, "m3@mirror.test")]},
                                  HTTP_HX_REQUEST="true")  # fmt: skip
    assert again.status_code == 409 and "already made" in again.content.decode()
    assert set(server_flags(box, "m3@mirror.test")) == {"INBOX"}
    assert MailAction.objects.filter(kind="trash").count() == 2


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "request_text",
    ["Verschiebe alle Mails von ParcelPoint in einen anderen Ordner", "move all mail from ParcelPoint to Receipts"],
)
def test_a_move_offers_the_accounts_folders_and_the_click_moves_to_the_chosen_one(
    imap_mailbox: Mailbox, user: Any, logged_in_client: Client, request_text: str
) -> None:
    box = imap_mailbox
    box.create_folder("Receipts")
    for n in (1, 2):
        box.append("INBOX", mail(n, sender=PARCELPOINT))
    box.append("INBOX", mail(3))
    account = connect(box, user)
    synced(account)
    before = box.doveadm_state()

    run = ask(user, request_text)
    proposal = run.scope["proposal"]
    # English names the action; the German request sits between move, archive and delete for the examples
    # (no model here), so all three are offered and only the click decides.
    if request_text.startswith("move"):
        assert run.scope["refused"] == "move mail" and proposal["changes"] == ["move"]
    else:
        assert run.scope["refused"] == "change your mailbox" and "move" in proposal["changes"], proposal["changes"]
    assert sorted(t["subject"] for t in proposal["threads"]) == ["Message 1", "Message 2"]
    # The destination is the user's choice among the account's own folders, not a word read from the request.
    [target] = proposal["targets"]
    assert target["account_id"] == account.pk and {"INBOX", "Receipts"} <= {f["name"] for f in target["folders"]}
    assert box.doveadm_state() == before and not MailAction.objects.exists()
    page = logged_in_client.get(f"{reverse('ask:panel')}?c={run.conversation_id}").content.decode()
    assert 'data-testid="ask-proposal-folder"' in page and 'data-testid="ask-proposal-move"' in page

    url = reverse("ask:run_proposal", args=[run.pk])
    ticked = [thread_id(account, "m1@mirror.test"), thread_id(account, "m2@mirror.test")]
    # Without a folder nothing moves, and the proposal stays open.
    unchosen = logged_in_client.post(url, {"change": "move", "thread": ticked}, HTTP_HX_REQUEST="true")
    assert unchosen.status_code == 409 and "Choose the folder" in unchosen.content.decode()
    # A folder the account does not have moves nothing either.
    bogus = logged_in_client.post(
        url, {"change": "move", "thread": ticked[:1], f"folder-{account.pk}": "Nowhere"}, HTTP_HX_REQUEST="true"
    )
    assert "no folder &#x27;Nowhere&#x27; in its account" in bogus.content.decode()
    assert box.doveadm_state() == before
    run = ask(user, request_text)  # that click spent the proposal: ask again
    url = reverse("ask:run_proposal", args=[run.pk])
    answer = logged_in_client.post(
        url, {"change": "move", "thread": ticked, f"folder-{account.pk}": "Receipts"}, HTTP_HX_REQUEST="true"
    )
    assert answer.status_code == 200, answer.content.decode()[:2000]
    assert "Changed on your click: 2 of 2 conversations moved to Receipts" in answer.content.decode()
    assert set(server_flags(box, "m1@mirror.test")) == {"Receipts"}
    assert set(server_flags(box, "m2@mirror.test")) == {"Receipts"}
    assert set(server_flags(box, "m3@mirror.test")) == {"INBOX"}
    assert_mirrors(box, account)


@pytest.mark.django_db
def test_a_request_that_names_no_sender_gets_the_plain_refusal(ask_mailbox_text: Any) -> None:
    run = ask(ask_mailbox_text.user, "delete all newsletters from last month")
    assert run.intent == "unsupported" and "proposal" not in run.scope
    assert run.answer.startswith("I can't delete mail")


@pytest.mark.django_db
def test_an_english_archive_offers_the_senders_conversations_and_nothing_else(ask_mailbox_text: Any) -> None:
    run = ask(ask_mailbox_text.user, "please archive everything from CodeHarbor")
    proposal = run.scope["proposal"]
    assert proposal["changes"] == ["archive"] and proposal["threads"]
    senders = {t["from"] for t in proposal["threads"]}
    assert all("codeharbor" in sender.casefold() for sender in senders), senders
    assert run.answer.startswith("I can't archive mail on my own")


@pytest.mark.django_db
def test_an_offered_change_must_be_one_of_the_buttons(ask_mailbox_text: Any) -> None:
    from apps.ask.proposals import ProposalError

    run = ask(ask_mailbox_text.user, "please archive everything from CodeHarbor")
    first = run.scope["proposal"]["threads"][0]["thread_id"]
    with pytest.raises(ProposalError, match="not offered"):
        actions.confirm_mail_proposal(run=run, owner=ask_mailbox_text.user, change="trash", thread_ids=[first])
    with pytest.raises(ProposalError, match="No conversation was ticked"):
        actions.confirm_mail_proposal(run=run, owner=ask_mailbox_text.user, change="archive", thread_ids=[999999])


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_offered_change_in_chromium_at_1280_and_390(transactional_db: Any, asgi_server: str, browser_page: Any):
    from tests.ask.conftest import build_ask_mailbox
    from tests.browser import console_errors, horizontal_overflow, login, screenshot
    from tests.conftest import USER_PASSWORD

    mailbox = build_ask_mailbox(embeddings=False)
    mailbox.user.set_password(USER_PASSWORD)
    mailbox.user.save(update_fields=["password"])
    run = ask(mailbox.user, "Markiere alle Mails von CodeHarbor als gelesen")
    assert run.scope["proposal"]["changes"] == ["read", "unread"]
    page = browser_page
    errors = console_errors(page)
    login(page, asgi_server, mailbox.user)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_server}/ask/?c={run.conversation_id}")
        page.wait_for_selector("[data-testid=ask-proposal]")
        assert horizontal_overflow(page) == 0, width
        screenshot(page, f"ask-proposal-{width}")
    boxes = page.locator("[data-testid=ask-proposal-thread]")
    total = boxes.count()
    assert total >= 1
    page.click("[data-testid=ask-proposal-read]")
    page.wait_for_selector("[data-testid=ask-proposal-done]")
    assert f"{total} of {total} conversation" in page.locator("[data-testid=ask-proposal-done]").inner_text()
    screenshot(page, "ask-proposal-done-390")
    assert errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_move_in_chromium_chooses_the_folder_at_1280_and_390(
    transactional_db: Any, asgi_server: str, browser_page: Any
):
    from tests.ask.conftest import build_ask_mailbox
    from tests.browser import console_errors, horizontal_overflow, login, screenshot
    from tests.conftest import USER_PASSWORD

    mailbox = build_ask_mailbox(embeddings=False)
    mailbox.user.set_password(USER_PASSWORD)
    mailbox.user.save(update_fields=["password"])
    run = ask(mailbox.user, "move all mail from CodeHarbor to another folder")
    proposal = run.scope["proposal"]
    assert proposal["changes"] == ["move"] and proposal["targets"], proposal
    folders = [f["name"] for f in proposal["targets"][0]["folders"]]
    current = {t["folder"] for t in proposal["threads"]}
    destination = next(name for name in folders if name not in current)
    page = browser_page
    errors = console_errors(page)
    login(page, asgi_server, mailbox.user)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{asgi_server}/ask/?c={run.conversation_id}")
        page.wait_for_selector("[data-testid=ask-proposal-folder]")
        assert horizontal_overflow(page) == 0, width
        screenshot(page, f"ask-proposal-move-{width}")
    total = page.locator("[data-testid=ask-proposal-thread]").count()
    page.select_option("[data-testid=ask-proposal-folder]", destination)
    page.click("[data-testid=ask-proposal-move]")
    page.wait_for_selector("[data-testid=ask-proposal-done]")
    done = page.locator("[data-testid=ask-proposal-done]").inner_text()
    assert f"{total} of {total} conversation" in done and "moved to" in done, done
    screenshot(page, "ask-proposal-move-done-390")
    assert errors == []

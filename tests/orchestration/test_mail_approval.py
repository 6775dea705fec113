"""Agents never change mail on the server by themselves: a director's mail_organize becomes an approval; only the
user's "Approve" hands it to the write-back ledger, which does it in Dovecot; "Reject" changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from apps.accounts.models import MailAction, MailActionStatus, Message
from apps.accounts.sync import sync_account
from apps.orchestration.models import Approval, ApprovalStatus, Director, Run
from apps.workspaces.models import InboxEntry
from tests.accounts.test_imap_mirror import connect
from tests.fakes.dovecot import Mailbox, make_message
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def server(box: Mailbox, message_id: str) -> dict[str, tuple[bool, bool]]:
    return {
        folder: (seen, flagged)
        for folder, rows in box.doveadm_state().items()
        for mid, seen, flagged in rows
        if mid == message_id
    }


def routed_run(box: Mailbox, user: Any, subject: str, capture: Any) -> tuple[Run, Message]:
    box.append(
        "INBOX", make_message(subject=subject, sender="Client <client7@domain.com>", message_id=f"<{subject}@t>")
    )
    account = connect(box, user)
    with capture(execute=True):
        assert sync_account(account.pk).status == "ok"
    message = Message.objects.get(account=account, message_id=f"{subject}@t")
    return Run.objects.get(message=message), message


def test_an_agents_archive_waits_for_approval_then_reaches_the_server(
    client_manager: Director,
    fake_llm: FakeOpenAI,
    imap_mailbox: Mailbox,
    user: Any,
    logged_in_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    fake_llm.script(Reply.calls(("mail_organize", {"action": "archive"})), Reply.text("Proposed archiving."))
    run, message = routed_run(imap_mailbox, user, "done-deal", django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == "completed"
    # The model was offered the tool, and told that nothing happened yet.
    offered = {tool["function"]["name"] for tool in fake_llm.chat_requests()[0]["tools"]}
    assert "mail_organize" in offered
    answer = next(m for m in fake_llm.chat_requests()[-1]["messages"] if m["role"] == "tool")
    assert "nothing changed on the server" in answer["content"]

    approval = Approval.objects.get(run=run)
    assert (approval.kind, approval.status) == ("mail_action", ApprovalStatus.PENDING)
    assert server(imap_mailbox, "done-deal@t") == {"INBOX": (False, False)}
    assert not MailAction.objects.exists()
    assert approval.inbox_entry_id is not None
    entry = InboxEntry.objects.get(pk=approval.inbox_entry_id)
    assert "Archive “done-deal”" in entry.comments and "Nothing has changed on the server" in entry.comments
    page = logged_in_client.get(reverse("runs:approval", args=[approval.pk])).content.decode()
    assert "Change on the mail server" in page and 'data-testid="approve"' in page

    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.post(reverse("runs:approval_approve", args=[approval.pk]))
    assert response.status_code == 302
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.DONE
    action = MailAction.objects.get(message=message)
    assert (action.kind, action.origin, action.requested_by_id) == ("archive", "approval", user.pk)
    assert action.status == MailActionStatus.DONE
    assert server(imap_mailbox, "done-deal@t") == {"Archive": (False, False)}


def test_a_rejected_proposal_changes_nothing(
    client_manager: Director,
    fake_llm: FakeOpenAI,
    imap_mailbox: Mailbox,
    user: Any,
    logged_in_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    fake_llm.script(Reply.calls(("mail_organize", {"action": "trash"})), Reply.text("Proposed Trash."))
    run, _ = routed_run(imap_mailbox, user, "keep-me", django_capture_on_commit_callbacks)
    approval = Approval.objects.get(run=run)
    logged_in_client.post(reverse("runs:approval_reject", args=[approval.pk]))
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.REJECTED
    assert server(imap_mailbox, "keep-me@t") == {"INBOX": (False, False)}
    assert not MailAction.objects.exists()


def test_an_agents_tag_waits_for_approval_then_is_a_keyword_on_the_server(
    client_manager: Director,
    fake_llm: FakeOpenAI,
    imap_mailbox: Mailbox,
    user: Any,
    logged_in_client: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from apps.accounts.models import MessageTag
    from tests.accounts.test_imap_keywords import server_keywords

    fake_llm.script(
        # A tag that cannot be one is refused with the reason, so the model can correct it; then a good one.
        Reply.calls(("mail_organize", {"action": "tag", "tag": "two words"})),
        Reply.calls(("mail_organize", {"action": "tag", "tag": "invoices"})),
        Reply.text("Proposed the tag."),
    )
    run, message = routed_run(imap_mailbox, user, "bill-42", django_capture_on_commit_callbacks)
    run.refresh_from_db()
    assert run.status == "completed"
    refused = [m for m in fake_llm.chat_requests()[1]["messages"] if m["role"] == "tool"][-1]
    assert "cannot be a tag" in refused["content"]
    approval = Approval.objects.get(run=run)
    assert approval.summary == "Tag “bill-42” with “invoices”"
    assert approval.request["tag"] == "invoices"
    # Nothing changed yet, here or on the server.
    assert not MessageTag.objects.exists()
    assert server_keywords(imap_mailbox)["INBOX"]["bill-42@t"] == set()

    with django_capture_on_commit_callbacks(execute=True):
        logged_in_client.post(reverse("runs:approval_approve", args=[approval.pk]))
    approval.refresh_from_db()
    assert approval.status == ApprovalStatus.DONE and approval.result == {"tag": "invoices", "messages": 1}
    assert list(MessageTag.objects.filter(message=message).values_list("tag__name", flat=True)) == ["invoices"]
    action = MailAction.objects.get(message=message)
    assert (action.kind, action.origin, action.status) == ("tag", "approval", MailActionStatus.DONE)
    assert server_keywords(imap_mailbox)["INBOX"]["bill-42@t"] == {"invoices"}

"""The mailbox MCP endpoint (/mcp/mailbox/) through the official `mcp` SDK client (streamable HTTP) against
the production web server in a subprocess: every tool, scopes, other users' ids, bad arguments, tokens that
are revoked, expired or for a workspace, the protocol's edges (-32602, 405, 415, RFC 9728 metadata, 401
challenges, rate limit), the audit ledger, an approval round trip that ends in the SMTP sink and Dovecot, and
the official TypeScript SDK as a second client."""

from __future__ import annotations

import asyncio
import datetime as dt
import email
import json
import shutil
import subprocess
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.test import Client as DjangoClient
from django.utils import timezone

from apps.accounts.actions import create_imap_account
from apps.accounts.models import MailAccount, MailAction, Message
from apps.accounts.providers.base import RemoteMessage
from apps.accounts.store import store_remote_messages
from apps.accounts.sync import sync_account
from apps.orchestration.models import Approval
from apps.organization.actions import register_file
from apps.organization.library import get_library
from apps.replies.models import ReplyDraft
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import InboxEntry, McpCall
from tests.fakes.dovecot import Mailbox
from tests.replies.conftest import smtp_server  # noqa: F401 -- the SMTP sink fixture
from tests.services import missing_service
from tests.workspaces.mcp_client import mailbox_client, tool_text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]

TOOLS = {
    "search_mail",
    "read_message",
    "read_thread",
    "list_folders",
    "get_attachment_text",
    "search_files",
    "read_file_text",
    "ask",
    "create_draft",
    "list_drafts",
    "request_send",
    "request_action",
    "approval_status",
}


def raw_mail(
    *,
    subject: str,
    body: str,
    message_id: str,
    sender: str = "Alice Example <alice@example.com>",
    to: str = "Owner <owner@example.com>",
    references: str | None = None,
    attachment: tuple[str, str] | None = None,
    date: str = "Mon, 23 Nov 2026 09:00:00 +0000",
) -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, to, subject
    message["Date"], message["Message-ID"] = date, f"<{message_id}>"
    if references:
        message["References"] = message["In-Reply-To"] = references
    message.set_content(body)
    if attachment:
        message.add_attachment(attachment[1].encode(), maintype="text", subtype="plain", filename=attachment[0])
    return bytes(message)


def seed(user: Any, box: Mailbox, smtp_port: int = 1) -> dict[str, Any]:
    """Three emails in a real Dovecot INBOX (one with an attachment, a reply quoting it), synced into an IMAP
    account whose SMTP server is `smtp_port`; a text file in the library."""
    account = create_imap_account(
        owner=user,
        name="work",
        address="owner@example.com",
        display_name="Owner Person",
        host="127.0.0.1",
        port=box.server.port,
        security="none",
        username=box.username,
        password=box.password,
    )
    account.smtp_host, account.smtp_port, account.smtp_security = "127.0.0.1", smtp_port, "none"
    account.smtp_username, account.smtp_password = "owner@example.com", "smtp-secret-42"
    account.save()
    mails = [
        raw_mail(
            subject="Quarterly numbers",
            body="Could you send me the Q3 numbers by Friday?\n",
            message_id="q3@example.com",
            attachment=("budget.txt", "Budget total: 4200 EUR for the harbour project.\n"),
        ),
        raw_mail(
            subject="Re: Quarterly numbers",
            sender="Owner Person <owner@example.com>",
            to="Alice Example <alice@example.com>",
            body="Hi Alice,\n\nThe Q3 revenue was 1.2 million, up from the second quarter.\n\n"
            "On Mon, Alice Example wrote:\n> Could you send me the Q3 numbers by Friday?\n",
            message_id="q3-reply@example.com",
            references="<q3@example.com>",
            date="Tue, 24 Nov 2026 09:00:00 +0000",
        ),
        raw_mail(
            subject="Lunch on Thursday",
            body="Pizza at noon?\n",
            message_id="lunch@example.com",
            sender="Bob Builder <bob@example.com>",
        ),
    ]
    for raw in mails:
        box.append("INBOX", raw)
    assert sync_account(account.pk).status == "ok"
    messages = {m.message_id: m for m in Message.objects.filter(account=account)}
    library = get_library(owner=user)
    path = Path(library.root_path) / "inbox" / "harbour-contract.txt"
    path.write_text("Harbour contract: the crane rental ends in March 2027.\n")
    library_file, _ = register_file(library=library, path=path)
    assert library_file is not None
    return {
        "account": account,
        "question": messages["q3@example.com"],
        "reply": messages["q3-reply@example.com"],
        "lunch": messages["lunch@example.com"],
        "file": library_file,
    }


def token(user: Any, scopes: str, **extra: Any) -> str:
    _token, raw = workspace_actions.issue_mailbox_token(owner=user, name=f"test {scopes}", scopes=scopes, **extra)
    return raw


def call_all(base: str, raw: str | None, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def run() -> list[Any]:
        async with mailbox_client(base, raw) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(run())


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, tool_text(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


def post(base: str, raw: str | None, body: Any, method: str = "POST", **headers: str) -> httpx2.Response:
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream", **headers}
    if raw is not None:
        sent["authorization"] = f"Bearer {raw}"
    return httpx2.request(method, f"{base}/mcp/mailbox/", json=body, headers=sent, timeout=30)


def test_every_tool_with_a_read_and_draft_token(live_server_url: str, user: Any, imap_mailbox: Mailbox) -> None:
    mail = seed(user, imap_mailbox)
    raw = token(user, "read,draft")
    thread_id = mail["question"].thread_id
    assert thread_id and thread_id == mail["reply"].thread_id
    attachment = mail["question"].attachments.get()

    async def session() -> tuple[Any, Any, list[Any]]:
        async with mailbox_client(live_server_url, raw) as client:
            tools = await client.list_tools()
            calls = [
                ("search_mail", {"query": "from:alice subject:quarterly numbers", "limit": 5}),
                ("read_thread", {"thread_id": thread_id}),
                ("read_message", {"message_id": mail["reply"].pk}),
                ("list_folders", {}),
                ("get_attachment_text", {"message_id": mail["question"].pk, "attachment_id": attachment.pk}),
                ("search_files", {"query": "crane rental"}),
                ("read_file_text", {"file_id": mail["file"].pk}),
                ("ask", {"question": "What was the Q3 revenue?"}),
                ("create_draft", {"thread_id": thread_id, "body": "Thanks, Alice: numbers attached."}),
                ("list_drafts", {}),
            ]
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return tools, client.server_info, results

    tools, info, results = asyncio.run(session())
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == TOOLS
    assert info is not None and info.name == "mailagent-mailbox" and info.version
    for tool in tools.tools:
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
        assert tool.output_schema and tool.output_schema.get("properties"), tool.name
    assert by_name["search_mail"].input_schema["properties"]["query"]["maxLength"] == 1000
    assert by_name["request_action"].input_schema["properties"]["message_ids"]["maxItems"] == 100

    search, thread, message, folders, attachment_text, files, file_text, answer, draft, drafts = map(data, results)
    assert [hit["thread_id"] for hit in search["results"]] == [thread_id]
    hit = search["results"][0]
    assert hit["folders"] == ["INBOX"] and hit["account"] == "work" and "alice@example.com" in hit["sender"]

    assert [m["message_id"] for m in thread["messages"]] == [mail["question"].pk, mail["reply"].pk]
    assert "1.2 million" in thread["messages"][1]["text"]
    assert "> Could you send me" not in thread["messages"][1]["text"]  # the history is apart, marked quoted
    assert "Could you send me the Q3 numbers" in thread["messages"][1]["quoted"]
    assert thread["messages"][0]["attachments"][0]["filename"] == "budget.txt"
    assert message["message_id"] == mail["reply"].pk and message["to"][0]["address"] == "alice@example.com"

    (work,) = folders["accounts"]
    assert work["account"] == "work" and "INBOX" in [f["name"] for f in work["folders"]]
    assert "4200 EUR" in attachment_text["text"] and attachment_text["error"] == ""
    assert [f["file_id"] for f in files["results"]] == [mail["file"].pk]
    assert "crane rental ends in March 2027" in file_text["text"]

    assert answer["status"] == "done", answer
    assert answer["answer"] and answer["conversation_id"]
    assert mail["reply"].pk in [e["message_id"] for e in answer["evidence"]], answer

    assert draft["to"] == [{"name": "Alice Example", "address": "alice@example.com"}]
    assert draft["subject"] == "Re: Quarterly numbers" and draft["status"] == "draft"
    stored = ReplyDraft.objects.get(pk=draft["draft_id"])
    assert stored.source == "mcp" and stored.original_id == mail["reply"].pk
    assert stored.in_reply_to_header == "q3-reply@example.com"
    assert [d["draft_id"] for d in drafts["drafts"]] == [stored.pk]

    browser = DjangoClient()
    browser.force_login(user)
    page = browser.get("/replies/").content.decode()
    assert "Re: Quarterly numbers" in page  # in the Drafts page

    ledger = list(McpCall.objects.order_by("at", "pk").values_list("tool", "ok", "argument_ids"))
    assert [row[0] for row in ledger] == [name for name, _ in [
        ("search_mail", 0), ("read_thread", 0), ("read_message", 0), ("list_folders", 0),
        ("get_attachment_text", 0), ("search_files", 0), ("read_file_text", 0), ("ask", 0),
        ("create_draft", 0), ("list_drafts", 0),
    ]]  # fmt: skip
    assert all(ok for _, ok, _ in ledger)
    assert ledger[1][2] == {"thread_id": thread_id}
    assert ledger[0][2] == {}  # the query text is not kept
    assert McpCall.objects.filter(tool="read_thread").get().result_bytes > 100


def test_scopes_other_users_bad_arguments_and_tokens(live_server_url: str, user: Any, imap_mailbox: Mailbox) -> None:
    mail = seed(user, imap_mailbox)
    other = get_user_model().objects.create_user(username="other", email="other@example.com", password="x" * 20)
    theirs = create_imap_account(
        owner=other, name="theirs", address="other@example.com", display_name="", host="127.0.0.1", port=1,
        security="none", username="other@example.com", password="p",
    )  # fmt: skip
    their_mail = store_remote_messages(
        account=theirs,
        messages=[RemoteMessage(provider_id="INBOX:1:1", folder="INBOX",
                                raw=raw_mail(subject="Secret plans", body="Hush.\n", message_id="secret@example.com"))],
    )  # fmt: skip
    secret = Message.objects.get(pk=their_mail.created_ids[0])
    read, draft = token(user, "read"), token(user, "read,draft")
    thread_id = mail["question"].thread_id

    refused = call_all(
        live_server_url,
        read,
        [
            ("create_draft", {"thread_id": thread_id, "body": "hello"}),
            ("request_send", {"draft_id": 1}),
            ("read_message", {"message_id": secret.pk}),
            ("read_thread", {"thread_id": secret.thread_id}),
            ("get_attachment_text", {"message_id": secret.pk, "attachment_id": 99999}),
            ("read_file_text", {"file_id": 99999}),
            ("search_mail", {"query": "Secret plans"}),
            ("search_mail", {"query": "is:maybe"}),
            ("search_mail", {"query": ""}),
            ("search_mail", {"query": "x", "limit": 500}),
            ("search_mail", {"query": "x", "cursor": "abc"}),
            ("read_message", {"message_id": "12"}),
            ("read_message", {}),
            ("ask", {"question": "q", "conversation_id": "not-a-conversation"}),
        ],
    )
    texts = [tool_text(r) for r in refused]
    assert all(r.is_error for i, r in enumerate(refused) if i != 6), texts
    assert "does not have the 'draft' scope" in texts[0]
    assert "does not have the 'act' scope" in texts[1]
    assert texts[2].endswith(f"no message {secret.pk} in your mailbox")  # another user's id: as if missing
    assert texts[3].endswith(f"no thread {secret.thread_id} in your mailbox")
    assert "no attachment 99999" in texts[4] and "no file 99999" in texts[5]
    assert data(refused[6])["results"] == []  # another user's mail is not searched
    assert "is:maybe" in texts[7] or "is:" in texts[7]
    assert "query" in texts[8] and "limit" in texts[9] and "cursor" in texts[10]
    assert "message_id" in texts[11] and "message_id" in texts[12]
    assert "no conversation" in texts[13]

    bad = call_all(
        live_server_url,
        draft,
        [
            ("create_draft", {"body": "   ", "thread_id": thread_id}),
            ("create_draft", {"body": "hi", "to": ["not an address"]}),
            ("create_draft", {"body": "hi"}),
            ("create_draft", {"body": "hi", "thread_id": secret.thread_id}),
            ("create_draft", {"body": "x" * 100_001, "thread_id": thread_id}),
            ("request_action", {"kind": "archive", "message_ids": [mail["lunch"].pk]}),
            ("approval_status", {"approval_id": 123456}),
        ],
    )
    texts = [tool_text(r) for r in bad]
    assert all(r.is_error for r in bad), texts
    assert "the body is empty" in texts[0]
    assert "not valid" in texts[1] or "not an email address" in texts[1]
    assert "at least one recipient" in texts[2]
    assert f"no thread {secret.thread_id}" in texts[3]
    assert "100000" in texts[4]
    assert "does not have the 'act' scope" in texts[5]
    assert "no approval 123456" in texts[6]
    assert ReplyDraft.objects.count() == 0 and Approval.objects.count() == 0 and MailAction.objects.count() == 0

    # A token restricted to one account sees nothing of the user's other account.
    private = create_imap_account(
        owner=user, name="private", address="me@private.example", display_name="", host="127.0.0.1", port=1,
        security="none", username="me", password="p",
    )  # fmt: skip
    stored = store_remote_messages(
        account=private,
        messages=[RemoteMessage(provider_id="INBOX:1:1", folder="INBOX",
                                raw=raw_mail(subject="Quarterly diary", body="Private.\n", message_id="diary@x"))],
    )  # fmt: skip
    diary = Message.objects.get(pk=stored.created_ids[0])
    _work_only, work_only = workspace_actions.issue_mailbox_token(
        owner=user, name="work only", scopes="read,draft", account=mail["account"]
    )
    narrowed = call_all(
        live_server_url,
        work_only,
        [
            ("read_message", {"message_id": diary.pk}),
            ("read_thread", {"thread_id": diary.thread_id}),
            ("search_mail", {"query": "quarterly"}),
            ("search_mail", {"query": "quarterly account:private"}),
            ("list_folders", {}),
            ("create_draft", {"thread_id": diary.thread_id, "body": "hi"}),
            ("read_message", {"message_id": mail["lunch"].pk}),
        ],
    )
    assert tool_text(narrowed[0]).endswith(f"no message {diary.pk} in your mailbox")
    assert tool_text(narrowed[1]).endswith(f"no thread {diary.thread_id} in your mailbox")
    assert diary.pk not in [hit["message_id"] for hit in data(narrowed[2])["results"]]
    assert data(narrowed[2])["results"] and data(narrowed[3])["results"] == []
    assert [a["account"] for a in data(narrowed[4])["accounts"]] == ["work"]
    assert narrowed[5].is_error and data(narrowed[6])["message_id"] == mail["lunch"].pk
    assert ReplyDraft.objects.count() == 0

    # The protocol's edges.
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    unknown = post(live_server_url, read, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                          "params": {"name": "delete_everything", "arguments": {}}})  # fmt: skip
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32602, unknown.text
    assert post(live_server_url, read, listing, method="GET").status_code == 405
    assert post(live_server_url, read, listing, method="DELETE").status_code == 405
    wrong_type = httpx2.post(
        f"{live_server_url}/mcp/mailbox/",
        content=json.dumps(listing),
        headers={"authorization": f"Bearer {read}", "content-type": "text/plain", "accept": "application/json"},
    )
    assert wrong_type.status_code == 415, wrong_type.text
    metadata = httpx2.get(f"{live_server_url}/.well-known/oauth-protected-resource/mcp/mailbox/")
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == f"{live_server_url}/mcp/mailbox/"
    assert metadata.json()["bearer_methods_supported"] == ["header"]

    revoked_token, revoked = workspace_actions.issue_mailbox_token(owner=user, name="old", scopes="read")
    workspace_actions.revoke_mailbox_token(token=revoked_token)
    expired_token, expired = workspace_actions.issue_mailbox_token(
        owner=user, name="short", scopes="read", expires_at=timezone.now() + dt.timedelta(days=1)
    )
    type(expired_token).objects.filter(pk=expired_token.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    workspace = workspace_actions.create_user_workspace(owner=user, label="desk")
    _ws, workspace_token = workspace_actions.issue_token(workspace=workspace)
    for bad_token in (revoked, expired, workspace_token, "mcpmb_wrong", None):
        answer = post(live_server_url, bad_token, listing)
        assert answer.status_code == 401, (bad_token, answer.text)
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="mailagent"')
        assert f'resource_metadata="{live_server_url}/.well-known/oauth-protected-resource/mcp/mailbox/"' in challenge
        assert ('error="invalid_request"' if bad_token is None else 'error="invalid_token"') in challenge
    assert post(live_server_url, read, listing).status_code == 200

    # A mailbox token does not open a workspace endpoint.
    workspace_answer = httpx2.post(
        f"{live_server_url}/mcp/{workspace.pk}/", json=listing,
        headers={"authorization": f"Bearer {read}", "accept": "application/json, text/event-stream"},
    )  # fmt: skip
    assert workspace_answer.status_code == 401

    # Rate limit: the third call in a minute is refused with a Retry-After, as a tool error.
    _slow, slow = workspace_actions.issue_mailbox_token(owner=user, name="slow", scopes="read", calls_per_minute=2)
    limited = call_all(live_server_url, slow, [("list_folders", {})] * 3)
    assert [r.is_error for r in limited] in ([False, False, True], [False, True, True])  # a minute may turn
    assert "429 Too Many Requests" in tool_text(limited[-1]) and "Retry-After: " in tool_text(limited[-1])
    assert McpCall.objects.filter(tool="list_folders", ok=False, error__startswith="429").exists()


def server_flags(box: Mailbox) -> dict[str, tuple[str, bool]]:
    """{Message-ID: (folder, seen)} as Dovecot has it."""
    return {mid: (folder, seen) for folder, rows in box.doveadm_state().items() for mid, seen, _flagged in rows}


def test_sends_and_changes_wait_for_approval_then_reach_the_smtp_sink_and_dovecot(
    live_server_url: str,
    user: Any,
    imap_mailbox: Mailbox,
    smtp_server: Any,  # noqa: F811
) -> None:
    mail = seed(user, imap_mailbox, smtp_port=smtp_server.port)
    raw = token(user, "read,draft,act")
    thread_id = mail["question"].thread_id

    (created,) = call_all(
        live_server_url, raw, [("create_draft", {"thread_id": thread_id, "body": "Hi Alice,\n\nAttached soon."})]
    )
    draft_id = data(created)["draft_id"]
    requested, twice, mark_read, archive = call_all(
        live_server_url,
        raw,
        [
            ("request_send", {"draft_id": draft_id}),
            ("request_send", {"draft_id": draft_id}),
            ("request_action", {"kind": "read", "message_ids": [mail["lunch"].pk, mail["question"].pk]}),
            ("request_action", {"kind": "archive", "message_ids": [mail["lunch"].pk]}),
        ],
    )
    approval = data(requested)
    assert approval["status"] == "pending" and approval["kind"] == "reply_send"
    assert data(twice)["approval_id"] == approval["approval_id"]  # asked twice: one approval waits
    assert "alice@example.com" in approval["summary"]
    (read_approval,) = data(mark_read)["approvals"]
    (archive_approval,) = data(archive)["approvals"]
    assert read_approval["kind"] == "mail_action" and read_approval["status"] == "pending"
    # Nothing reached anyone before the user decided.
    assert smtp_server.received == [] and MailAction.objects.count() == 0
    before = server_flags(imap_mailbox)
    assert before["lunch@example.com"] == ("INBOX", False) and before["q3@example.com"] == ("INBOX", False)

    # All three wait in the owner's Inbox, under the token's workspace.
    entries = list(InboxEntry.objects.filter(owner=user).order_by("created"))
    assert len(entries) == 3 and all(e.workspace_label == "test read,draft,act (mailbox MCP)" for e in entries)
    assert f"/runs/approvals/{approval['approval_id']}/" in entries[0].comments

    browser = DjangoClient()
    browser.force_login(user)
    page = browser.get(f"/runs/approvals/{approval['approval_id']}/").content.decode()
    assert "Hi Alice," in page and "alice@example.com" in page and 'data-testid="approve"' in page
    assert browser.post(f"/runs/approvals/{approval['approval_id']}/approve/").status_code == 302
    (received,) = smtp_server.received
    assert received["to"] == ["alice@example.com"]
    sent = email.message_from_bytes(received["data"], policy=policy.default)
    assert sent["Subject"] == "Re: Quarterly numbers" and sent["In-Reply-To"] == "<q3-reply@example.com>"
    body = sent.get_body(("plain",))
    assert body is not None and "Attached soon." in body.get_content()

    assert browser.post(f"/runs/approvals/{read_approval['approval_id']}/approve/").status_code == 302
    assert browser.post(f"/runs/approvals/{archive_approval['approval_id']}/reject/").status_code == 302
    after = server_flags(imap_mailbox)
    assert after["lunch@example.com"] == ("INBOX", True) and after["q3@example.com"] == ("INBOX", True)  # \Seen
    assert after["q3-reply@example.com"] == ("INBOX", False)

    status_send, status_read, status_archive, again = call_all(
        live_server_url,
        raw,
        [
            ("approval_status", {"approval_id": approval["approval_id"]}),
            ("approval_status", {"approval_id": read_approval["approval_id"]}),
            ("approval_status", {"approval_id": archive_approval["approval_id"]}),
            ("request_send", {"draft_id": draft_id}),
        ],
    )
    assert data(status_send)["status"] == "done" and data(status_send)["performed"]
    assert data(status_read)["status"] == "done"
    assert data(status_archive)["status"] == "rejected"
    assert again.is_error and "already sent" in tool_text(again)
    assert len(smtp_server.received) == 1 and ReplyDraft.objects.get(pk=draft_id).status == "sent"
    assert sorted(MailAction.objects.values_list("kind", flat=True)) == ["read", "read"]


TS_CLIENT_DIR = Path(__file__).resolve().parent / "ts"  # the official TypeScript SDK: make install-test


def test_a_tag_requested_by_an_outside_agent_waits_for_approval_then_is_a_keyword_in_dovecot(
    live_server_url: str, user: Any, imap_mailbox: Mailbox
) -> None:
    from apps.accounts.models import MessageTag
    from tests.accounts.test_imap_keywords import server_keywords

    mail = seed(user, imap_mailbox)
    raw = token(user, "read,act")
    bad, missing, tagged = call_all(
        live_server_url,
        raw,
        [
            ("request_action", {"kind": "tag", "message_ids": [mail["lunch"].pk], "tag": "two words"}),
            ("request_action", {"kind": "tag", "message_ids": [mail["lunch"].pk]}),
            ("request_action", {"kind": "tag", "message_ids": [mail["lunch"].pk], "tag": "social"}),
        ],
    )
    assert bad.is_error and "cannot be a tag" in tool_text(bad)
    assert missing.is_error and "A tag needs a name" in tool_text(missing)
    (approval,) = data(tagged)["approvals"]
    assert approval["status"] == "pending" and approval["summary"] == "Tag “Lunch on Thursday” with “social”"
    assert not MessageTag.objects.exists() and server_keywords(imap_mailbox)["INBOX"]["lunch@example.com"] == set()

    browser = DjangoClient()
    browser.force_login(user)
    assert browser.post(f"/runs/approvals/{approval['approval_id']}/approve/").status_code == 302
    assert list(MessageTag.objects.values_list("message__message_id", "tag__name")) == [("lunch@example.com", "social")]
    assert server_keywords(imap_mailbox)["INBOX"]["lunch@example.com"] == {"social"}


def test_a_token_limited_to_folders_reaches_only_mail_placed_there(
    live_server_url: str, user: Any, imap_mailbox: Mailbox
) -> None:
    imap_mailbox.create_folder("Receipts")
    imap_mailbox.create_folder("Receipts/2026")
    imap_mailbox.append(
        "Receipts/2026",
        raw_mail(subject="Receipt for the crane rental", body="Paid: 900 EUR.\n", message_id="receipt@example.com"),
    )
    mail = seed(user, imap_mailbox)
    receipt = Message.objects.get(message_id="receipt@example.com")
    account = mail["account"]
    with pytest.raises(workspace_actions.TokenError, match="choose the account too"):
        workspace_actions.issue_mailbox_token(owner=user, name="x", scopes="read", folders=["Receipts"])
    with pytest.raises(workspace_actions.TokenError, match="has no folder 'Taxes'"):
        workspace_actions.issue_mailbox_token(owner=user, name="x", scopes="read", account=account, folders=["Taxes"])
    _token, raw = workspace_actions.issue_mailbox_token(
        owner=user, name="receipts agent", scopes="read,draft,act", account=account, folders=["Receipts"]
    )
    found, inbox_mail, receipt_mail, inbox_thread, folders, asked, action = call_all(
        live_server_url,
        raw,
        [
            ("search_mail", {"query": "crane OR Quarterly OR Lunch OR Receipt", "limit": 20}),
            ("read_message", {"message_id": mail["lunch"].pk}),
            ("read_message", {"message_id": receipt.pk}),
            ("read_thread", {"thread_id": mail["question"].thread_id}),
            ("list_folders", {}),
            ("ask", {"question": "What did the crane rental cost?"}),
            ("request_action", {"kind": "archive", "message_ids": [mail["lunch"].pk]}),
        ],
    )
    # Found: the receipt in a subfolder of Receipts; not the INBOX mail the same words find for the account.
    assert [r["message_id"] for r in data(found)["results"]] == [receipt.pk], data(found)
    assert inbox_mail.is_error and f"no message {mail['lunch'].pk}" in tool_text(inbox_mail)
    assert data(receipt_mail)["subject"] == "Receipt for the crane rental"
    assert inbox_thread.is_error
    names = {f["name"] for a in data(folders)["accounts"] for f in a["folders"]}
    assert names == {"Receipts", "Receipts/2026"}, names
    assert asked.is_error and "limited to some of its folders" in tool_text(asked)
    assert action.is_error and "nothing was requested" in tool_text(action)
    assert not Approval.objects.exists()

    # The same limit through Settings → MCP tokens.
    browser = DjangoClient()
    browser.force_login(user)
    page = browser.post(
        "/settings/mcp/",
        {"name": "page token", "scopes": ["read"], "account": account.pk, "folders": "Receipts, Nowhere"},
    )
    assert page.status_code == 400 and "has no folder &#x27;Nowhere&#x27;" in page.content.decode()
    page = browser.post(
        "/settings/mcp/", {"name": "page token", "scopes": ["read"], "account": account.pk, "folders": "Receipts"}
    )
    assert page.status_code == 200 and 'data-testid="token-folder">Receipts<' in page.content.decode()


def test_the_typescript_sdk_lists_searches_reads_drafts_and_is_refused_what_its_scope_lacks(
    live_server_url: str, user: Any, imap_mailbox: Mailbox
) -> None:
    node = shutil.which("node")
    if node is None or not (TS_CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        missing_service("node and the MCP TypeScript SDK are not installed (make install-test)")
    mail = seed(user, imap_mailbox)
    thread_id = mail["question"].thread_id
    done = subprocess.run(
        [str(node), "client.mjs", f"{live_server_url}/mcp/mailbox/", token(user, "read,draft"), str(thread_id)],
        cwd=TS_CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["server"]["name"] == "mailagent-mailbox" and seen["server"]["version"]
    assert set(seen["tools"]) == TOOLS
    assert [hit["thread_id"] for hit in seen["search"]["results"]] == [thread_id]
    assert [m["message_id"] for m in seen["thread"]["messages"]] == [mail["question"].pk, mail["reply"].pk]
    assert seen["draft"]["status"] == "draft" and seen["draft"]["to"][0]["address"] == "alice@example.com"
    assert seen["refused"]["isError"] and "does not have the 'act' scope" in seen["refused"]["text"]
    assert seen["unknown"]["code"] == -32602


def test_manage_py_mcp_token_makes_a_scoped_mailbox_token(user: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("mcp_token", "--mailbox", "--scope", "read,draft", "--json", stdout=out)
    made = json.loads(out.getvalue())
    assert made["url"] == "/mcp/mailbox/" and made["scopes"] == ["read", "draft"]
    assert made["token"].startswith("mcpmb_")
    listed = StringIO()
    call_command("mcp_token", "--mailbox", "--list", "--json", stdout=listed)
    assert [t["id"] for t in json.loads(listed.getvalue())["tokens"]] == [made["id"]]
    assert MailAccount.objects.count() == 0  # nothing but the token (and its Inbox workspace)

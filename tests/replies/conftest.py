"""Helpers for the reply tests: an original email, a workspace item made from it, and the two-step send
(confirmation page → its token → send) the way a browser does it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import pytest

from apps.accounts.models import Message
from apps.replies.models import ReplyDraft
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import WorkspaceItem

TOKEN_FIELD = re.compile(r'name="confirm_token" value="([^"]+)"')


def original_raw(
    *,
    subject: str = "Quarterly numbers",
    sender: str = "Alice Example <alice@example.com>",
    to: str = "Owner <owner@example.com>",
    cc: str | None = None,
    reply_to: str | None = None,
    message_id: str = "q3-numbers@example.com",
    references: str | None = None,
    body: str = "Could you send me the Q3 numbers by Friday?\n",
) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    if cc:
        message["Cc"] = cc
    if reply_to:
        message["Reply-To"] = reply_to
    message["Subject"] = subject
    message["Date"] = "Mon, 23 Nov 2026 09:00:00 +0000"
    message["Message-ID"] = f"<{message_id}>"
    if references:
        message["References"] = references
        message["In-Reply-To"] = references.split()[-1]
    message.set_content(body)
    return bytes(message)


def part_text(mime: Any, kind: str) -> str:
    """The decoded text of the message's text/<kind> body, line ends normalised."""
    part = mime.get_body((kind,))
    assert part is not None, f"no text/{kind} part"
    return str(part.get_content()).replace("\r\n", "\n")


def item_for(owner: Any, message: Message, data: str, *, mime_type: str = "text/plain") -> WorkspaceItem:
    workspace = workspace_actions.open_workspace(
        owner=owner,
        run_id=None,
        message_id=message.pk,
        director_id=None,
        director_name="Triage",
        title=message.subject,
    )
    return workspace_actions.add_item(workspace=workspace, data=data, label="Suggested reply", mime_type=mime_type)


def start_reply(client: Any, item: WorkspaceItem, *, mode: str = "reply") -> ReplyDraft:
    response = client.post(f"/replies/new/item/{item.pk}/", {"mode": mode})
    assert response.status_code == 302, response.content
    draft = ReplyDraft.objects.get(workspace_item=item)
    assert response["Location"] == f"/replies/{draft.pk}/"
    return draft


def confirm_token(client: Any, draft: ReplyDraft) -> str:
    page = client.get(f"/replies/{draft.pk}/confirm/")
    assert page.status_code == 200, page.content
    found = TOKEN_FIELD.search(page.content.decode())
    assert found, page.content.decode()
    return found.group(1)


def confirm_and_send(client: Any, draft: ReplyDraft) -> Any:
    return client.post(f"/replies/{draft.pk}/send/", {"confirm_token": confirm_token(client, draft)})


@pytest.fixture
def smtp_server() -> Iterator[Any]:
    """A real SMTP server (aiosmtpd) on loopback in this process: AUTH PLAIN/LOGIN over plain TCP (the
    account's "None" security), every accepted message kept in `server.received`."""
    from aiosmtpd.smtp import AuthResult, LoginPassword

    class Handler:
        def __init__(self) -> None:
            self.received: list[dict[str, Any]] = []
            self.refuse: set[str] = set()
            self.logins: list[str] = []  # the logins of successful AUTH commands

        async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
            if address in self.refuse:
                return "550 5.1.1 No such user here"
            envelope.rcpt_tos.append(address)
            return "250 OK"

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            self.received.append(
                {
                    "from": envelope.mail_from,
                    "to": list(envelope.rcpt_tos),
                    "data": bytes(envelope.original_content or envelope.content),
                    "login": handler.logins[-1] if handler.logins else None,
                }
            )
            return "250 Message accepted for delivery"

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
            b"owner@example.com",
            b"smtp-secret-42",
        )
        if ok:
            handler.logins.append(auth_data.login.decode())
        return AuthResult(success=ok, handled=False)

    handler = Handler()
    controller = _controller(handler, authenticator)
    controller.start()
    controller.received = handler.received
    controller.refuse = handler.refuse
    try:
        yield controller
    finally:
        controller.stop()


def _controller(handler: Any, authenticator: Any) -> Any:
    from aiosmtpd.controller import Controller

    from tests.services import free_port

    return Controller(
        handler,
        hostname="127.0.0.1",
        port=free_port(),
        authenticator=authenticator,
        auth_require_tls=False,
        auth_required=True,
    )

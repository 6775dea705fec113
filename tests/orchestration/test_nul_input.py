"""A model that writes NUL characters (U+0000): the run completes on every database alike. A NUL inside tool
arguments is refused with the call, naming the argument, so that the model can correct it; a raw NUL in the
model's text is shown as U+FFFD. PostgreSQL cannot store NUL at all, so before this the same run crashed there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.orchestration.models import Conversation, Run, RunStatus, ThreadKind
from apps.workspaces.models import WorkspaceItem
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_director

pytestmark = pytest.mark.django_db


def test_nul_in_tool_arguments_is_refused_and_nul_in_text_is_replaced(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(
        is_director,
        Reply.calls(("workspace_add_item", {"label": "Sum\x00mary", "data": "plain"})),
        Reply.calls(("workspace_add_item", {"label": "Summary", "data": "plain"})),
        Reply.text("Filed the summary.\x00"),
    )
    message = store_mail(subject="nul", sender="Client Seven <client7@domain.com>")
    run = Run.objects.get(message=message)
    assert run.status == RunStatus.COMPLETED, run.status_reason
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    results = [json.loads(m["content"]) for m in thread.messages if m["role"] == "tool"]
    assert results[0]["error"] == (
        "invalid arguments: label: text cannot contain the NUL character (U+0000); remove it, or send binary "
        "content base64-encoded"
    )
    assert "error" not in results[1]
    assert list(WorkspaceItem.objects.filter(workspace__message=run.message).values_list("label", flat=True)) == [
        "Summary"
    ]
    assert thread.messages[-1]["content"] == "Filed the summary.\ufffd"

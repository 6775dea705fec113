"""Live tools inside a run: filesystem confinement, memory cascade, calendar/to-do per provider."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from apps.llm import ToolFailure
from apps.orchestration.engine import RunEngine
from apps.orchestration.models import Conversation, FilesystemRoot, Memory, OrchestrationSettings, Run, ThreadKind
from apps.orchestration.selectors import filesystem_root_for_owner
from apps.orchestration.tools import calendar, filesystem, memory
from apps.orchestration.tools.context import Actor
from apps.orchestration.tools.registry import available_live_tools
from apps.orchestration.tools.schemas import (
    CalendarAddArgs,
    CalendarReadArgs,
    FilesystemRetrieveArgs,
    FilesystemSearchArgs,
    MemoryAddArgs,
    MemoryEditArgs,
    MemorySearchArgs,
    TodoAddArgs,
)
from tests.fakes.google_server import FakeGoogleServer
from tests.fakes.graph_server import FakeGraphServer, connect_outlook
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def engine(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> RunEngine:
    fake_llm.default = Reply.text("ok")
    run = Run.objects.get(message=store_mail(subject="tools", sender="client1@domain.com"))
    fake_llm.default = None
    engine = RunEngine(run)
    engine.ctx.director_thread = Conversation.objects.create(run=run, kind=ThreadKind.DIRECTOR, director=run.director)
    return engine


def director_actor(engine: RunEngine) -> Actor:
    assert engine.ctx.director_thread is not None
    return Actor(kind="director", thread=engine.ctx.director_thread)


def agent_actor(engine: RunEngine, slug: str) -> Actor:
    agent = engine.agents[slug]
    thread = Conversation.objects.create(run=engine.run, kind=ThreadKind.AGENT, director=engine.director, agent=agent)
    return Actor(kind="agent", thread=thread, agent=agent)


@pytest.fixture
def documents(tmp_path: Path, engine: RunEngine) -> Path:
    root = tmp_path / "client_docs"
    (root / "contracts").mkdir(parents=True)
    (root / "contracts" / "acme-contract.txt").write_text("Delivery within 10 days. Penalty: 2% per week.")
    (root / "notes.md").write_text("# Notes\nClient Seven prefers phone calls.")
    (root / "big.log").write_bytes(b"x" * 5000)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as docx:
        docx.writestr(
            "word/document.xml",
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
            "<w:p><w:r><w:t>Service level agreement</w:t></w:r></w:p>"
            "<w:p><w:r><w:t>Response within 4 hours.</w:t></w:r></w:p></w:body></w:document>",
        )
    (root / "sla.docx").write_bytes(buffer.getvalue())
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the root")
    os.symlink(secret, root / "escape.txt")
    os.symlink(tmp_path, root / "escape-dir")
    settings, _ = OrchestrationSettings.objects.get_or_create(pk=1)
    settings.max_file_bytes = 4096
    settings.save()
    FilesystemRoot.objects.update_or_create(owner_id=engine.director.owner_id, defaults={"path": str(root)})
    engine.ctx.settings = settings
    engine.ctx.virtual_root = filesystem_root_for_owner(owner_id=engine.director.owner_id)
    engine.ctx.cache.clear()
    return root


def test_filesystem_stays_inside_the_virtual_root(engine: RunEngine, documents: Path) -> None:
    actor = director_actor(engine)
    assert "filesystem_search" in available_live_tools(engine.ctx)
    found = filesystem.search(engine.ctx, actor, FilesystemSearchArgs(query="contract"))
    assert [f["filePath"] for f in found["files"]] == ["contracts/acme-contract.txt"]
    by_text = filesystem.search(engine.ctx, actor, FilesystemSearchArgs(query="phone calls"))
    assert by_text["files"] == [{"filePath": "notes.md", "size": 41, "match": "content"}]
    assert filesystem.search(engine.ctx, actor, FilesystemSearchArgs(query="secret"))["files"] == []

    text = filesystem.retrieve(engine.ctx, actor, FilesystemRetrieveArgs(filePath="contracts/acme-contract.txt"))
    assert text["text"].startswith("Delivery within 10 days") and text["kind"] == "text"
    docx = filesystem.retrieve(engine.ctx, actor, FilesystemRetrieveArgs(filePath="sla.docx"))
    assert docx["text"] == "Service level agreement\nResponse within 4 hours." and docx["kind"] == "docx"

    refusals = {
        "../../etc/passwd": "access denied: '..' is not allowed",
        "contracts/../../secret.txt": "access denied: '..' is not allowed",
        "/etc/passwd": "access denied: paths are relative to the virtual root",
        "escape.txt": "access denied: the path leads outside the virtual root",
        "escape-dir/secret.txt": "access denied: the path leads outside the virtual root",
        "big.log": "the file is 5000 bytes; the limit is 4096",
        "missing.txt": "no file 'missing.txt' under the virtual root",
    }
    for path, message in refusals.items():
        with pytest.raises(ToolFailure) as caught:
            filesystem.retrieve(engine.ctx, actor, FilesystemRetrieveArgs(filePath=path))
        assert str(caught.value) == message, path


def test_filesystem_tools_are_off_without_a_root(engine: RunEngine) -> None:
    # The owner's default root (DATA_DIR/files/<id>) was never created: no tools, and a clear refusal.
    assert not Path(engine.ctx.virtual_root).exists()
    assert "filesystem_search" not in available_live_tools(engine.ctx)
    with pytest.raises(ToolFailure, match="not an existing absolute directory"):
        filesystem.search(engine.ctx, director_actor(engine), FilesystemSearchArgs(query="x"))


def test_memory_search_cascades_local_shared_global(engine: RunEngine, user: Any) -> None:
    psychologist = agent_actor(engine, "psychologist")
    response = agent_actor(engine, "response")
    memory.add(engine.ctx, psychologist, MemoryAddArgs(scope="global", content="Company tone: formal"))
    memory.add(engine.ctx, psychologist, MemoryAddArgs(scope="shared", content="Client Seven: frustrated"))
    mine = memory.add(
        engine.ctx, psychologist, MemoryAddArgs(scope="local", content="Client Seven sighs a lot", tags=["mood"])
    )
    memory.add(engine.ctx, response, MemoryAddArgs(scope="local", content="Response drafts in English"))

    found = memory.search(engine.ctx, psychologist, MemorySearchArgs())["memories"]
    assert [(m["scope"], m["content"]) for m in found] == [
        ("local", "Client Seven sighs a lot"),
        ("shared", "Client Seven: frustrated"),
        ("global", "Company tone: formal"),
    ]
    assert [
        m["content"] for m in memory.search(engine.ctx, response, MemorySearchArgs(query="client seven"))["memories"]
    ] == ["Client Seven: frustrated"]  # the psychologist's local memory is not the response agent's
    assert memory.search(engine.ctx, psychologist, MemorySearchArgs(tag="mood"))["total"] == 1
    with pytest.raises(ToolFailure, match="no memory"):
        memory.edit(engine.ctx, response, MemoryEditArgs(id=mine["memory"]["id"], content="hijack"))
    edited = memory.edit(engine.ctx, psychologist, MemoryEditArgs(id=mine["memory"]["id"], scope="shared"))
    assert edited["memory"]["scope"] == "shared"

    engine.director.memory_access = False
    with pytest.raises(ToolFailure, match="no access to global memories"):
        memory.add(engine.ctx, psychologist, MemoryAddArgs(scope="global", content="x"))
    assert [m["scope"] for m in memory.search(engine.ctx, response, MemorySearchArgs())["memories"]] == ["local"]
    assert Memory.objects.filter(owner=user).count() == 4


def test_calendar_and_todo_use_graph_and_refuse_what_cannot_work(
    engine: RunEngine, graph: FakeGraphServer, logged_in_client: Any, account: Any
) -> None:
    outlook = connect_outlook(logged_in_client, graph)
    engine.ctx.cache.clear()
    actor = director_actor(engine)
    assert {"calendar_read", "calendar_add", "todo_add"} <= set(available_live_tools(engine.ctx))
    added = calendar.calendar_add(
        engine.ctx,
        actor,
        CalendarAddArgs.model_validate(
            {
                "accountId": outlook.pk,
                "event": {
                    "title": "Call Client Seven",
                    "start": "2026-12-02T10:00:00Z",
                    "end": "2026-12-02T10:30:00Z",
                },
            }
        ),
    )
    assert added["event"]["title"] == "Call Client Seven"
    read = calendar.calendar_read(
        engine.ctx,
        actor,
        CalendarReadArgs.model_validate(
            {"accountId": outlook.pk, "dateRange": {"start": "2026-12-02", "end": "2026-12-02"}}
        ),
    )
    assert [e["title"] for e in read["events"]] == ["Call Client Seven"]
    todo = calendar.todo_add(
        engine.ctx, actor, TodoAddArgs.model_validate({"accountId": outlook.pk, "task": {"title": "Send the invoice"}})
    )
    assert todo["task"]["list"] == "Tasks" and graph.tasks["list-tasks"][0]["title"] == "Send the invoice"

    with pytest.raises(ToolFailure) as local:
        calendar.todo_add(
            engine.ctx, actor, TodoAddArgs.model_validate({"accountId": account.pk, "task": {"title": "x"}})
        )
    assert local.value.extra["reason"] == "unsupported_provider"
    graph.tools_forbidden = True
    with pytest.raises(ToolFailure) as forbidden:
        calendar.todo_add(
            engine.ctx, actor, TodoAddArgs.model_validate({"accountId": outlook.pk, "task": {"title": "x"}})
        )
    assert forbidden.value.extra["reason"] == "missing_scope"
    with pytest.raises(ToolFailure) as unknown:
        calendar.todo_add(engine.ctx, actor, TodoAddArgs.model_validate({"accountId": 99999, "task": {"title": "x"}}))
    assert unknown.value.extra["reason"] == "unknown_account"


def test_calendar_and_todo_on_gmail_use_google_calendar_and_tasks(
    engine: RunEngine, google: FakeGoogleServer, user: Any
) -> None:
    from apps.accounts.oauth_connect import connect_oauth_account

    gmail, _ = connect_oauth_account(
        owner=user, provider="gmail", address=google.address, display_name="", credentials=google.token_set()
    )
    engine.ctx.cache.clear()
    actor = director_actor(engine)
    calendar.calendar_add(
        engine.ctx,
        actor,
        CalendarAddArgs.model_validate(
            {
                "accountId": gmail.pk,
                "event": {
                    "title": "Review",
                    "start": "2026-12-03T09:00:00+01:00",
                    "end": "2026-12-03T10:00:00+01:00",
                },
            }
        ),
    )
    read = calendar.calendar_read(
        engine.ctx,
        actor,
        CalendarReadArgs.model_validate(
            {"accountId": gmail.pk, "dateRange": {"start": "2026-12-03", "end": "2026-12-04"}}
        ),
    )
    assert [(e["title"], e["start"]) for e in read["events"]] == [("Review", "2026-12-03T08:00:00+00:00")]
    added = calendar.todo_add(
        engine.ctx,
        actor,
        TodoAddArgs.model_validate({"accountId": gmail.pk, "task": {"title": "Pay", "due": "2026-12-05"}}),
    )
    assert added["task"]["list"] == "My Tasks"
    assert google.tasks[0]["title"] == "Pay" and google.tasks[0]["due"] == "2026-12-05T00:00:00.000Z"

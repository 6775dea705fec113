"""The director run end to end against the scripted OpenAI-compatible server over HTTP."""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any

import pytest
from django.db import close_old_connections
from django.utils import timezone

from apps.llm import ToolFailure
from apps.orchestration import actions
from apps.orchestration.engine import RunEngine
from apps.orchestration.models import (
    Conversation,
    Memory,
    OrchLog,
    PromptMessage,
    ProviderEvent,
    Run,
    RunStatus,
    ThreadKind,
    ThreadStatus,
)
from apps.orchestration.tools.schemas import AgentCallArgs
from apps.workspaces.models import Workspace, WorkspaceItem
from tests.fakes.graph_server import FakeGraphServer, connect_outlook
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_agent, is_director

pytestmark = pytest.mark.django_db

CLIENT = "Client Seven <client7@domain.com>"


def assert_canonical(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool_calls message is followed by exactly one tool message per call id."""
    index = 0
    while index < len(messages):
        message = messages[index]
        if message["role"] == "assistant" and message.get("tool_calls"):
            ids = [call["id"] for call in message["tool_calls"]]
            following = messages[index + 1 : index + 1 + len(ids)]
            assert [m["role"] for m in following] == ["tool"] * len(ids)
            assert [m["tool_call_id"] for m in following] == ids
            index += len(ids)
        index += 1


def test_psychologist_and_response_agents_complete_the_client_workflow(
    fake_llm: FakeOpenAI,
    graph: FakeGraphServer,
    logged_in_client: Any,
    client_manager: Any,
    store_mail: Any,
) -> None:
    account = connect_outlook(logged_in_client, graph)
    fake_llm.when(
        is_agent("Psychologist"),
        Reply.calls(
            (
                "memory_add",
                {
                    "scope": "shared",
                    "content": "Client Seven is frustrated by the late delivery",
                    "tags": ["mood", "client7"],
                },
            ),
        ),
        Reply.text("Mood: frustrated and impatient (negative). I saved this to shared memory."),
    )
    fake_llm.when(
        is_agent("Response"),
        Reply.calls(
            (
                "todo_add",
                {
                    "accountId": account.pk,
                    "task": {"title": "Call Client Seven about the delivery", "due": "2026-12-01"},
                },
            ),
            (
                "workspace_add_item",
                {
                    "label": "Draft reply",
                    "mimeType": "text/markdown",
                    "tags": ["draft"],
                    "data": "Dear Client Seven,\n\nI am sorry about the delay…",
                },
            ),
        ),
        Reply.text("I drafted a reply (workspace) and created a follow-up task."),
    )
    fake_llm.when(
        is_director,
        Reply.calls(("list_agents", {}), ("agent__psychologist", {"input": "What is the sender's mood?"})),
        Reply.calls(("agent__response", {"input": "Draft a calm reply and add a follow-up task."})),
        Reply.calls(
            (
                "workspace_add_item",
                {
                    "label": "Mood analysis",
                    "mimeType": "text/markdown",
                    "data": "**Mood:** frustrated",
                    "tags": ["analysis"],
                },
            ),
        ),
        Reply.text("Done: mood analysed, reply drafted, follow-up task created."),
    )

    message = store_mail(subject="Where is my order?", body="It is two weeks late. Fix it.\n", sender=CLIENT)

    run = Run.objects.get(message=message)
    assert run.status == RunStatus.COMPLETED, (run.status_reason, run.error)
    assert run.prompt_tokens > 0 and run.completion_tokens > 0

    director_thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    assert director_thread.finalized and director_thread.status == ThreadStatus.COMPLETED
    assert_canonical(director_thread.messages)
    user_prompt = director_thread.messages[2]["content"]
    assert user_prompt.startswith("A client wrote:\nFrom: Client Seven <client7@domain.com>")
    assert "It is two weeks late." in user_prompt
    agents = Conversation.objects.filter(run=run, kind=ThreadKind.AGENT).order_by("pk")
    assert [(a.agent_name, a.status, a.finalized, a.ended_at is not None) for a in agents] == [
        ("Psychologist", ThreadStatus.COMPLETED, False, True),
        ("Response", ThreadStatus.COMPLETED, False, True),
    ]
    for agent_thread in agents:
        assert_canonical(agent_thread.messages)

    # The psychologist's tool result went back to the director as the agent tool's output.
    psych_result = json.loads(director_thread.messages[5]["content"])
    assert psych_result["output"].startswith("Mood: frustrated")
    assert psych_result["toolCalls"] == [
        {
            "name": "memory_add",
            "args": {
                "scope": "shared",
                "content": "Client Seven is frustrated by the late delivery",
                "tags": ["mood", "client7"],
            },
            "success": True,
        }
    ]
    assert psych_result["done"] is True and psych_result["sessionId"] == agents[0].session_id

    memory = Memory.objects.get()
    assert (memory.scope, memory.director_id, memory.agent_id) == ("shared", client_manager.pk, None)

    (task,) = graph.tasks["list-tasks"]
    assert task["title"] == "Call Client Seven about the delivery"
    assert task["dueDateTime"]["dateTime"].startswith("2026-12-01")

    workspace = Workspace.objects.get(run_id=run.pk)
    items = {item.label: item for item in WorkspaceItem.objects.filter(workspace=workspace)}
    assert set(items) == {"Draft reply", "Mood analysis"}
    draft = items["Draft reply"]
    assert draft.created_by == "agent" and draft.context["agent"]["name"] == "Response"
    assert draft.context["email"]["subject"] == "Where is my order?"
    assert items["Mood analysis"].context["createdBy"] == "director"

    # Provider events: one request and one response per model call, nothing else.
    calls = len(fake_llm.chat_requests())
    assert calls == 8
    kinds = list(ProviderEvent.objects.filter(run=run).values_list("kind", flat=True))
    assert kinds.count("request") == calls and kinds.count("response") == calls and "error" not in kinds
    assert "sk-fake-key" not in json.dumps([e.payload for e in ProviderEvent.objects.filter(run=run)])

    logs = list(OrchLog.objects.filter(run=run))
    tools_logged = [(log.detail or {})["tool"] for log in logs if log.phase == "tool"]
    assert (
        tools_logged.count("agent__psychologist") == 1 and "todo_add" in tools_logged and "memory_add" in tools_logged
    )
    assert all((log.detail or {}).get("request") is not None for log in logs if log.phase == "tool")
    actions_logged = [(log.detail or {}).get("action") for log in logs]
    assert actions_logged[0] == "director_start" and actions_logged[-1] == "director_complete"
    assert actions_logged.count("agent_output") == 2
    assert all(log.email_summary.startswith("Where is my order?") for log in logs)
    assert {log.fetch_cycle_id for log in logs} == {run.fetch_cycle_id}


def _engine_in_progress(run: Run) -> RunEngine:
    """An engine whose director thread is open, as it is while the director's loop runs."""
    engine = RunEngine(run)
    engine.ctx.director_thread = Conversation.objects.create(run=run, kind=ThreadKind.DIRECTOR, director=run.director)
    return engine


@pytest.fixture
def queued_run(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> Run:
    fake_llm.default = Reply.text("ok")
    message = store_mail(subject="hello", sender=CLIENT)
    run = Run.objects.get(message=message)
    fake_llm.default = None
    return run


def test_agent_sessions_are_reused_expire_and_close(queued_run: Run, fake_llm: FakeOpenAI, settings: Any) -> None:
    engine = _engine_in_progress(queued_run)
    psychologist = engine.agents["psychologist"]
    fake_llm.script(Reply.text("first answer"), Reply.text("second answer"))
    first = engine.call_agent(psychologist, AgentCallArgs(input="one"))
    second = engine.call_agent(psychologist, AgentCallArgs(input="two", sessionId=first["sessionId"]))
    assert second["sessionId"] == first["sessionId"] and second["output"] == "second answer"
    thread = Conversation.objects.get(session_id=first["sessionId"])
    assert [m["content"] for m in thread.messages if m["role"] == "user"] == ["one", "two"]
    assert thread.expires_at is not None and thread.last_active_at <= thread.expires_at

    Conversation.objects.filter(pk=thread.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    with pytest.raises(ToolFailure) as expired:
        engine.call_agent(psychologist, AgentCallArgs(input="three", sessionId=first["sessionId"]))
    assert expired.value.extra["reason"] == "expired"
    assert Conversation.objects.get(pk=thread.pk).status == ThreadStatus.EXPIRED

    with pytest.raises(ToolFailure) as unknown:
        engine.call_agent(engine.agents["response"], AgentCallArgs(input="x", sessionId=first["sessionId"]))
    assert unknown.value.extra["reason"] == "unknown_session"

    assert engine.ctx.director_thread is not None
    engine.ctx.director_thread.finalized = True
    with pytest.raises(ToolFailure) as completed:
        engine.call_agent(psychologist, AgentCallArgs(input="after the end"))
    assert completed.value.extra["reason"] == "completed"


def test_step_limit_stops_the_director_and_malformed_arguments_reach_the_model(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    client_manager.step_limit = 3
    client_manager.save(update_fields=["step_limit"])
    fake_llm.when(
        is_director,
        Reply.calls(("workspace_add_item", '{"label": "broken",')),
        Reply.calls(("workspace_get_item", {"id": "abc"}), ("agent__psychologist", {"sessionId": "x"})),
        Reply.calls(("list_tools", {})),
        Reply.text("never reached"),
    )
    message = store_mail(subject="loop", sender=CLIENT)
    run = Run.objects.get(message=message)
    # The last step offered only `finish` (issue 39); a model that calls something else anyway still stops,
    # and the run says it did not finish by itself.
    assert run.status == RunStatus.COMPLETED
    assert run.status_reason == "stopped at the step limit (3) without finishing"
    last_request = [r for r in fake_llm.chat_requests() if is_director(r)][-1]
    assert [tool["function"]["name"] for tool in last_request["tools"]] == ["finish"]
    assert last_request["messages"][-1]["content"].startswith("This is your last step")
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    tool_results = [json.loads(m["content"]) for m in thread.messages if m["role"] == "tool"]
    assert tool_results[0]["error"].startswith("invalid arguments: arguments are not valid JSON")
    assert tool_results[1]["error"].startswith("no item 'abc'")
    assert tool_results[2]["error"].startswith("invalid arguments: input: Field required")
    listed = {tool["name"] for tool in tool_results[3]["tools"]}
    assert {"agent__psychologist", "agent__response", "workspace_add_item", "memory_search"} <= listed
    assert "filesystem_search" not in listed  # no virtual root configured
    assert "todo_add" not in listed  # no account with a calendar
    errors = OrchLog.objects.filter(run=run, phase="tool").exclude(error="")
    assert errors.count() == 3 and all("request" in (log.detail or {}) for log in errors)


def test_429_twice_then_success(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> None:
    fake_llm.script(Reply.failure(429, retry_after="0"), Reply.failure(429, retry_after="0"), Reply.text("fine"))
    run = Run.objects.get(message=store_mail(subject="rate", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED
    events = list(ProviderEvent.objects.filter(run=run).values_list("kind", "attempt", "category"))
    assert events == [
        ("request", 1, ""),
        ("error", 1, "rate_limited"),
        ("request", 2, ""),
        ("error", 2, "rate_limited"),
        ("request", 3, ""),
        ("response", 3, ""),
    ]


def test_provider_500_fails_the_run_and_keeps_everything(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    client_manager.api_config.max_retries = 1
    client_manager.api_config.save(update_fields=["max_retries"])
    fake_llm.script(
        Reply.calls(("workspace_add_item", {"label": "partial", "data": "kept"})),
        Reply.failure(500),
        Reply.failure(500),
    )
    run = Run.objects.get(message=store_mail(subject="boom", sender=CLIENT))
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("model call failed (server)")
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    assert thread.status == ThreadStatus.FAILED and not thread.finalized
    assert thread.messages[-1]["role"] == "tool"  # the transcript up to the failure is kept
    assert WorkspaceItem.objects.get(workspace__run_id=run.pk).data == "kept"
    assert ProviderEvent.objects.filter(run=run, kind="error", status=500).count() == 2
    failure = OrchLog.objects.get(run=run, phase="director", error__contains="failed with HTTP 500")
    assert (failure.detail or {})["action"] == "director_failed"


def test_a_director_without_api_config_is_skipped(client_manager: Any, store_mail: Any) -> None:
    client_manager.api_config = None
    client_manager.save(update_fields=["api_config"])
    run = Run.objects.get(message=store_mail(subject="no model", sender=CLIENT))
    assert run.status == RunStatus.SKIPPED and run.status_reason.startswith("Director has no API config")


def test_a_failure_before_the_first_model_call_fails_the_run_and_stores_nothing_of_it(
    client_manager: Any, account: Any, fake_llm: FakeOpenAI, monkeypatch: Any
) -> None:
    # Claim, workspace and director thread are one transaction: a failure in it (here the opening
    # messages) rolls all three back, and the run is failed, not left running or queued.
    from apps.accounts.models import Message

    message = Message.objects.create(
        account=account, provider_id="p0", dedupe_key="p0", subject="broken", from_address="client7@domain.com"
    )
    run = Run.objects.create(message=message, director=client_manager)

    def broken(self: RunEngine) -> Any:
        raise RuntimeError("prompt rendering broke")

    monkeypatch.setattr(RunEngine, "initial_messages", broken)
    finished = actions.process_run(run_id=run.pk)
    assert finished is not None
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error == "RuntimeError: prompt rendering broke"
    assert not Conversation.objects.filter(run=run).exists() and not Workspace.objects.filter(run_id=run.pk).exists()
    assert fake_llm.chat_requests() == []
    assert actions.process_run(run_id=run.pk) is None  # failed is final until retried


@pytest.mark.django_db(transaction=True)
def test_two_runs_in_parallel_do_not_interfere(client_manager: Any, fake_llm: FakeOpenAI, account: Any) -> None:
    from apps.accounts.models import Message
    from apps.orchestration.models import Director

    second = Director.objects.create(owner=client_manager.owner, name="Second", api_config=client_manager.api_config)
    message = Message.objects.create(
        account=account, provider_id="p1", dedupe_key="p1", subject="parallel", from_address="client7@domain.com"
    )
    # Queued runs made directly (not through routing, whose synchronous test queue would run them in turn).
    runs = [Run.objects.create(message=message, director=director) for director in (client_manager, second)]

    def mine(name: str) -> Any:
        return lambda body: (
            f"You manage client mail for {name}" in json.dumps(body["messages"][:3])
            or (name == "Second" and "Client Manager" not in json.dumps(body["messages"][:3]))
        )

    # Each director writes an item naming itself over two model calls, so the two loops interleave.
    for name, label in (("Client Manager", "from manager"), ("Second", "from second")):
        fake_llm.when(
            mine(name),
            Reply(content=None, tool_calls=[("workspace_add_item", {"label": label, "data": label})], delay=0.05),
            Reply(content=f"{label} done", delay=0.05),
        )
    failures: list[BaseException] = []

    def work(run_id: int) -> None:
        try:
            actions.process_run(run_id=run_id)
        except BaseException as exc:
            failures.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=work, args=(run.pk,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.COMPLETED, run.error
        labels = list(WorkspaceItem.objects.filter(workspace__run_id=run.pk).values_list("label", flat=True))
        assert labels == (["from manager"] if run.director_id == client_manager.pk else ["from second"])
        final = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR).messages[-1]["content"]
        assert final == f"{labels[0]} done"


def test_a_run_left_running_by_a_dead_worker_is_requeued_and_completes(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI, django_capture_on_commit_callbacks: Any
) -> None:
    fake_llm.default = Reply.text("ok")
    run = Run.objects.get(message=store_mail(subject="crash", sender=CLIENT))
    # As if a worker took it an hour ago and was killed mid-run, leaving its director thread open.
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, started_at=timezone.now() - dt.timedelta(hours=1), finished_at=None
    )
    Conversation.objects.filter(run=run).update(status=ThreadStatus.ONGOING, finalized=False)
    with django_capture_on_commit_callbacks(execute=True):
        assert actions.requeue_stalled_runs(older_than_seconds=600) == [run.pk]
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    statuses = list(Conversation.objects.filter(run=run, kind=ThreadKind.DIRECTOR).values_list("status", flat=True))
    assert statuses == [ThreadStatus.FAILED, ThreadStatus.COMPLETED]
    assert actions.requeue_stalled_runs(older_than_seconds=600) == []


def test_director_describes_and_validates_tools_before_calling_them(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(
        is_director,
        Reply.calls(("describe_tool", {"name": "workspace_add_item"}), ("describe_tool", {"name": "no_such_tool"})),
        Reply.calls(
            ("validate_tool_params", {"name": "workspace_get_item", "params": {}}),
            ("validate_tool_params", {"name": "workspace_get_item", "params": {"id": "7"}}),
            ("validate_tool_params", {"name": "agent__psychologist", "params": {"input": "hi", "bogus": 1}}),
        ),
        Reply.text("done"),
    )
    message = store_mail(subject="tools", sender=CLIENT)
    run = Run.objects.get(message=message)
    first_request = next(r for r in fake_llm.chat_requests() if is_director(r))
    offered = {tool["function"]["name"] for tool in first_request["tools"]}
    assert {"describe_tool", "validate_tool_params"} <= offered
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    results = [json.loads(m["content"]) for m in thread.messages if m["role"] == "tool"]
    described = results[0]
    assert described["name"] == "workspace_add_item" and described["description"].startswith("Add an item")
    assert {"label", "mimeType", "data"} <= set(described["parameters"]["properties"])
    assert "no tool named 'no_such_tool'" in results[1]["error"]
    assert results[2]["valid"] is False and [e["field"] for e in results[2]["errors"]] == ["id"]
    assert results[3] == {"name": "workspace_get_item", "valid": True, "errors": []}
    assert results[4]["valid"] is False and [e["field"] for e in results[4]["errors"]] == ["bogus"]
    assert not WorkspaceItem.objects.filter(workspace__run_id=run.pk).exists()  # validating called nothing


def test_director_reads_the_api_docs(client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI) -> None:
    fake_llm.when(
        is_director,
        Reply.calls(("read_api_docs", {"path": "/api/workspaces"}), ("read_api_docs", {"path": "/api/nowhere"})),
        Reply.text("done"),
    )
    run = Run.objects.get(message=store_mail(subject="docs", sender=CLIENT))
    thread = Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)
    results = [json.loads(m["content"]) for m in thread.messages if m["role"] == "tool"]
    operations = {(op["method"], op["path"]) for op in results[0]["operations"]}
    assert ("GET", "/api/workspaces/{workspace_id}/items") in operations
    assert all(path.startswith("/api/workspaces") for _, path in operations)
    assert "no API operation under '/api/nowhere'" in results[1]["error"]


def test_a_prompt_s_tool_example_reaches_the_model_as_a_call_and_its_result(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    # Tool blocks were stored but dropped from every run: the call block before them now carries them.
    PromptMessage.objects.create(
        prompt=client_manager.prompt,
        order=5,
        role="assistant",
        content='{"tool": "memory_search", "arguments": {"query": "{{email.from}}"}}',
    )
    PromptMessage.objects.create(prompt=client_manager.prompt, order=6, role="tool", content='{"memories": []}')
    fake_llm.script(Reply.text("Nothing to do."))
    run = Run.objects.get(message=store_mail(subject="example", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED, run.error
    messages = fake_llm.chat_requests()[0]["messages"]
    (call,) = [m for m in messages if m.get("tool_calls")]
    (result,) = [m for m in messages if m["role"] == "tool"]
    assert call["tool_calls"][0]["function"] == {
        "name": "memory_search",
        "arguments": json.dumps({"query": "Client Seven <client7@domain.com>"}),
    }
    assert messages.index(result) == messages.index(call) + 1
    assert result == {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": '{"memories": []}'}

"""Directors on small local models (issue 39), against the scripted server with replies recorded from small
instruct models: calls written as fenced or bare JSON or `{{…}}` are taken only when valid, an invalid one
gets one repair turn, constrained output sends the tools' schema as `response_format`, and every run ends
by itself or says why not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.orchestration.models import Conversation, OrchLog, ProviderEvent, Run, RunStatus, ThreadKind
from apps.workspaces.models import InboxEntry, WorkspaceItem
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.orchestration.conftest import is_director

pytestmark = pytest.mark.django_db

CLIENT = "Client Seven <client7@domain.com>"

# Replies as Qwen2.5-0.5B/1.5B-Instruct and SmolLM2 wrote them when given `tools=` (issue 39's study).
FENCED_ADD = (
    "I'll save a summary of the email to the workspace.\n\n```json\n"
    '{\n  "name": "workspace_add_item",\n  "arguments": {\n    "label": "Summary",\n'
    '    "data": "The client asks for the invoice.",\n    "path": "reports/summary.md"\n  }\n}\n```'
)
DOUBLE_BRACES_PUSH = (
    '{{"name": "inbox_push", "arguments": {"docs": [{"path": "reports/summary.md"}], "comments": "Summary ready."}}}'
)
INVALID_PUSH = '```json\n{"name": "inbox_push", "arguments": {"comments": 42, "priority": "high"}}\n```'
UNKNOWN_TOOL = '{"tool": "send_email", "arguments": {"to": "client7@domain.com"}}'


def set_mode(director: Any, mode: str, step_limit: int = 8) -> None:
    api_config = director.api_config
    api_config.tool_call_mode = mode
    api_config.save(update_fields=["tool_call_mode"])
    director.step_limit = step_limit
    director.save(update_fields=["step_limit"])


def director_thread(run: Run) -> Conversation:
    return Conversation.objects.get(run=run, kind=ThreadKind.DIRECTOR)


def recoveries(run: Run) -> list[dict[str, Any]]:
    return [event.payload or {} for event in ProviderEvent.objects.filter(run=run, kind="recovery").order_by("pk")]


def test_calls_written_in_the_text_are_recovered_strictly_and_recorded(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(
        is_director,
        Reply.text(FENCED_ADD),
        Reply.text(DOUBLE_BRACES_PUSH),
        Reply.calls(("finish", {"answer": "Saved a summary and told the user."})),
    )
    run = Run.objects.get(message=store_mail(subject="invoice", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED and run.status_reason == ""
    item = WorkspaceItem.objects.get(workspace__run_id=run.pk)
    assert (item.label, item.path) == ("Summary", "reports/summary.md")
    entry = InboxEntry.objects.get(run_id=run.pk)
    assert entry.comments == "Summary ready." and entry.docs and entry.docs[0]["path"] == "reports/summary.md"
    assert [(p["action"], p["how"], p["tool"]) for p in recoveries(run)] == [
        ("recovered", "fenced_json", "workspace_add_item"),
        ("recovered", "double_braces", "inbox_push"),
    ]
    # The transcript is canonical: the recovered calls are tool_calls answered by tool messages.
    messages = director_thread(run).messages
    calls = [m["tool_calls"][0]["function"]["name"] for m in messages if m.get("tool_calls")]
    assert calls == ["workspace_add_item", "inbox_push", "finish"]
    complete = OrchLog.objects.get(run=run, phase="result")
    assert complete.detail is not None and complete.result is not None
    assert complete.detail["stop"] == "finished" and complete.detail["recoveries"] == 2
    assert complete.result["final"] == "Saved a summary and told the user."


def test_an_invalid_call_gets_one_repair_turn_that_names_the_problems(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(
        is_director,
        Reply.text(INVALID_PUSH),
        Reply.text('{"name": "inbox_push", "arguments": {"comments": "42 invoices are due."}}'),
        Reply.text("All done."),
    )
    run = Run.objects.get(message=store_mail(subject="invoices", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED and run.status_reason == ""
    assert InboxEntry.objects.get(run_id=run.pk).comments == "42 invoices are due."
    repair_request = [r for r in fake_llm.chat_requests() if is_director(r)][1]
    repair = repair_request["messages"][-1]["content"]
    assert repair.startswith("Your call of inbox_push was not valid:")
    assert "comments: 42 is not of type 'string'" in repair
    assert "Additional properties are not allowed ('priority' was unexpected)" in repair
    assert [p["action"] for p in recoveries(run)] == ["repair", "repaired"]
    assert recoveries(run)[0]["problems"]


def test_a_call_still_invalid_after_the_repair_stops_the_run_and_says_so(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(is_director, Reply.text(UNKNOWN_TOOL), Reply.text(UNKNOWN_TOOL), Reply.text("never reached"))
    run = Run.objects.get(message=store_mail(subject="send it", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED
    assert run.status_reason == "stopped: the model's tool call was still invalid after a repair turn"
    assert [p["action"] for p in recoveries(run)] == ["repair", "repair_failed"]
    assert "unknown tool 'send_email'" in recoveries(run)[0]["problems"][0]
    assert len([r for r in fake_llm.chat_requests() if is_director(r)]) == 2


def test_plain_json_that_is_no_call_stays_the_answer(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    fake_llm.when(is_director, Reply.text('The sender is {"name": "Client Seven", "mood": "calm"}.'))
    run = Run.objects.get(message=store_mail(subject="who", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED and run.status_reason == "" and not recoveries(run)


def test_constrained_output_sends_the_tools_schema_and_the_run_ends_by_finish(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    set_mode(client_manager, "json_schema")
    add = {"tool": "workspace_add_item", "arguments": {"label": "Reply draft", "path": "drafts/reply.md"}}
    push = {"tool": "inbox_push", "arguments": {"docs": [{"path": "drafts/reply.md"}], "comments": "Draft ready"}}
    fake_llm.when(
        is_director,
        Reply.text(json.dumps(add)),
        Reply.text(json.dumps(push)),
        Reply.text(json.dumps(push)),  # a small model pushes again: refused, it is told to finish
        Reply.text(json.dumps({"tool": "finish", "arguments": {"answer": "Drafted a reply."}})),
    )
    run = Run.objects.get(message=store_mail(subject="draft", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED and run.status_reason == ""
    assert InboxEntry.objects.filter(run_id=run.pk).count() == 1
    requests = [r for r in fake_llm.chat_requests() if is_director(r)]
    first = requests[0]
    assert "tools" not in first
    schema = first["response_format"]["json_schema"]["schema"]
    names = [option["properties"]["tool"]["const"] for option in schema["oneOf"]]
    assert names[-1] == "finish" and "inbox_push" in names and "agent__psychologist" in names
    assert "$defs" not in json.dumps(schema)  # nested models are inlined: one self-contained schema
    assert "Tools (call exactly one per reply):" in first["messages"][2]["content"]
    # Tool results reach the model as user messages naming the tool (small models' templates know no "tool").
    last = requests[-1]["messages"]
    assert any(m["role"] == "user" and m["content"].startswith("Result of inbox_push:") for m in last)
    refused = json.loads([m for m in director_thread(run).messages if m["role"] == "tool"][2]["content"])
    assert refused["reason"] == "already_pushed" and "do not push again" in refused["error"]
    assert not recoveries(run)  # constrained replies are calls, not recoveries
    events = ProviderEvent.objects.filter(run=run, kind="request").first()
    assert (
        events is not None and events.payload is not None and events.payload["response_format"]["tools"][-1] == "finish"
    )


def test_the_last_step_offers_only_finish_and_the_run_says_it_ended_at_the_limit(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    set_mode(client_manager, "json_schema", step_limit=3)
    listing = json.dumps({"tool": "workspace_list_items", "arguments": {}})
    fake_llm.when(
        is_director,
        Reply.text(listing),
        Reply.text(listing),
        Reply.text(json.dumps({"tool": "finish", "arguments": {"answer": "Nothing to do."}})),
    )
    run = Run.objects.get(message=store_mail(subject="loop", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED
    assert run.status_reason == "ended at the step limit (3): the director was told to finish and did"
    last = [r for r in fake_llm.chat_requests() if is_director(r)][-1]
    assert last["response_format"]["json_schema"]["schema"]["properties"]["tool"] == {"const": "finish"}
    assert last["messages"][-1]["content"].startswith("This is your last step")


def test_inbox_push_is_allowed_again_after_the_user_replied(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    from django.utils import timezone

    push = ("inbox_push", {"comments": "Which date?"})
    fake_llm.when(is_director, Reply.calls(push), Reply.text("waiting"))
    run = Run.objects.get(message=store_mail(subject="date", sender=CLIENT))
    entry = InboxEntry.objects.get(run_id=run.pk)
    from apps.orchestration.tools.context import Actor, RunContext
    from apps.orchestration.tools.inbox import push as push_tool
    from apps.orchestration.tools.schemas import InboxPushArgs

    ctx = RunContext.__new__(RunContext)
    ctx.run, ctx.workspace = run, entry.workspace
    actor = Actor(kind="director", thread=director_thread(run))
    with pytest.raises(Exception, match="already put an entry"):
        push_tool(ctx, actor, InboxPushArgs(comments="again"))
    InboxEntry.objects.filter(pk=entry.pk).update(reply="Monday", replied_at=timezone.now())
    assert push_tool(ctx, actor, InboxPushArgs(comments="Booked Monday"))["pushed"] is True


def set_max_output_tokens(director: Any, tokens: int) -> None:
    api_config = director.api_config
    api_config.max_output_tokens = tokens
    api_config.save(update_fields=["max_output_tokens"])


def long_add(words: int) -> str:
    data = " ".join(f"line{i}" for i in range(words))
    return json.dumps({"tool": "workspace_add_item", "arguments": {"label": "Notes", "data": data}})


def string_bound(prop: dict[str, Any]) -> int | None:
    """maxLength of a string property, also when it is optional (anyOf [string, null])."""
    for option in [prop, *(prop.get("anyOf") or [])]:
        if option.get("type") == "string":
            return option.get("maxLength")
    return None


def test_free_text_arguments_carry_a_max_length_in_the_constrained_schema(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    set_mode(client_manager, "json_schema")
    fake_llm.when(is_director, Reply.text(json.dumps({"tool": "finish", "arguments": {"answer": "Nothing."}})))
    Run.objects.get(message=store_mail(subject="bounds", sender=CLIENT))
    schema = next(r for r in fake_llm.chat_requests() if is_director(r))["response_format"]["json_schema"]["schema"]
    options = {o["properties"]["tool"]["const"]: o["properties"]["arguments"] for o in schema["oneOf"]}
    add = options["workspace_add_item"]["properties"]
    assert {name: string_bound(add[name]) for name in ("label", "description", "data", "path")} == {
        "label": 300,
        "description": 1000,
        "data": 12_000,
        "path": 300,
    }
    patch = options["workspace_update_item"]["properties"]["patch"]
    patch = next(o for o in [patch, *(patch.get("anyOf") or [])] if o.get("type") == "object")
    assert string_bound(patch["properties"]["data"]) == 12_000
    assert options["inbox_push"]["properties"]["comments"]["maxLength"] == 4000
    assert options["finish"]["properties"]["answer"]["maxLength"] == 600
    # Every string argument the director can write is bounded, down to ids and dates.
    unbounded = []
    for tool, arguments in options.items():
        for name, prop in (arguments.get("properties") or {}).items():
            options_ = [prop, *(prop.get("anyOf") or [])]
            is_text = any(o.get("type") == "string" and "enum" not in o for o in options_)
            if is_text and string_bound(prop) is None:
                unbounded.append(f"{tool}.{name}")
    assert unbounded == []


def test_a_reply_cut_at_the_token_limit_gets_one_repair_turn_saying_so(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    set_mode(client_manager, "json_schema")
    set_max_output_tokens(client_manager, 40)
    fake_llm.when(
        is_director,
        Reply(content=long_add(200), honour_max_tokens=True),  # 1,600 characters: cut at 160
        Reply(content=long_add(5), honour_max_tokens=True),  # short enough this time
        Reply.text(json.dumps({"tool": "finish", "arguments": {"answer": "Saved short notes."}})),
    )
    run = Run.objects.get(message=store_mail(subject="long notes", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED and run.status_reason == ""
    assert WorkspaceItem.objects.get(workspace__run_id=run.pk).data.startswith("line0 line1")
    requests = [r for r in fake_llm.chat_requests() if is_director(r)]
    assert requests[0]["max_tokens"] == 40
    # The call's free text shares 40 tokens (2 characters a token); with so little, every string keeps only
    # its floor and an array one item: a grammar-following server could not have run past the limit; this
    # scripted one ignores the grammar, so the repair path shows.
    schema = requests[0]["response_format"]["json_schema"]["schema"]
    options = {o["properties"]["tool"]["const"]: o["properties"]["arguments"] for o in schema["oneOf"]}
    add = options["workspace_add_item"]["properties"]
    assert string_bound(add["data"]) == 40 and string_bound(add["label"]) == 40 and string_bound(add["path"]) == 40
    assert add["tags"]["maxItems"] == 1
    assert options["finish"]["properties"]["answer"]["maxLength"] == 80  # alone in its call: the whole budget
    assert options["workspace_add_item"]["properties"]["encoding"] == {
        "type": "string",
        "enum": ["utf8", "base64"],
        "default": "utf8",
    }
    repair = requests[1]["messages"][-1]["content"]
    assert "cut off at the output limit of 40 tokens" in repair and "shorter" in repair
    actions = recoveries(run)
    assert [(p["action"], p["finish_reason"]) for p in actions[:1]] == [("repair", "length")]
    assert [p["action"] for p in actions] == ["repair", "repaired"]


def test_a_reply_cut_twice_stops_the_run_and_says_the_token_limit_did_it(
    client_manager: Any, store_mail: Any, fake_llm: FakeOpenAI
) -> None:
    set_mode(client_manager, "json_schema")
    set_max_output_tokens(client_manager, 40)
    cut = Reply(content=long_add(200), honour_max_tokens=True)
    fake_llm.when(is_director, cut, cut, Reply.text("never reached"))
    run = Run.objects.get(message=store_mail(subject="longer notes", sender=CLIENT))
    assert run.status == RunStatus.COMPLETED
    assert run.status_reason.startswith("stopped: the model's reply was cut off at its output token limit")
    assert "Max output tokens" in run.status_reason
    assert len([r for r in fake_llm.chat_requests() if is_director(r)]) == 2  # no silent loop
    assert [p["action"] for p in recoveries(run)] == ["repair", "repair_failed"]
    complete = OrchLog.objects.get(run=run, phase="result")
    assert complete.detail is not None and complete.detail["stop"] == "output_truncated"

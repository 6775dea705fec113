"""Tool calls for small models (apps/llm/toolcalls.py): the constrained schema and the strict text parser."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from apps.llm.toolcalls import InvalidCall, ParsedCall, parse_text_call, tool_call_schema, wire_messages
from apps.llm.tools import Tool, finish_tool


class Doc(BaseModel):
    path: str


class PushArgs(BaseModel):
    model_config = {"extra": "forbid"}
    docs: list[Doc] | None = None
    comments: str = ""


TOOLS = [Tool("push", "Push to the Inbox.", PushArgs, lambda a: a).schema(), finish_tool().schema()]


def test_the_schema_is_self_contained_and_accepts_exactly_the_valid_calls() -> None:
    schema = tool_call_schema(TOOLS)
    assert "$defs" not in str(schema) and "$ref" not in str(schema)
    jsonschema.validate({"tool": "push", "arguments": {"docs": [{"path": "a.md"}]}}, schema)
    jsonschema.validate({"tool": "finish", "arguments": {"answer": "done"}}, schema)
    for wrong in (
        {"tool": "push", "arguments": {"docs": [{}]}},
        {"tool": "send", "arguments": {}},
        {"tool": "finish", "arguments": {}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)


@pytest.mark.parametrize(
    ("text", "how"),
    [
        ('```json\n{"name": "push", "arguments": {"comments": "hi"}}\n```', "fenced_json"),
        ('Sure. {"tool": "push", "arguments": {"comments": "hi"}}', "bare_json"),
        ('{{"name": "push", "arguments": {"comments": "hi"}}}', "double_braces"),
        ('<tool_call>\n{"name": "push", "arguments": "{\\"comments\\": \\"hi\\"}"}\n</tool_call>', "tagged"),
        ('[{"type": "function", "function": {"name": "push", "arguments": {"comments": "hi"}}}]', "bare_json"),
    ],
)
def test_calls_written_the_usual_ways_are_recovered(text: str, how: str) -> None:
    assert parse_text_call(text, TOOLS) == ParsedCall("push", {"comments": "hi"}, how)


def test_invalid_calls_are_named_and_other_text_is_left_alone() -> None:
    invalid = parse_text_call('{"name": "push", "arguments": {"comments": 1, "x": 2}}', TOOLS)
    assert isinstance(invalid, InvalidCall) and invalid.name == "push" and len(invalid.problems) == 2
    unknown = parse_text_call('{"tool": "send", "arguments": {}}', TOOLS)
    assert isinstance(unknown, InvalidCall) and "unknown tool 'send'" in unknown.problems[0]
    assert parse_text_call('Her details: {"name": "Ann", "age": 3}', TOOLS) is None
    assert parse_text_call("No JSON at all.", TOOLS) is None
    assert isinstance(parse_text_call("plain", TOOLS, constrained=True), InvalidCall)


def test_the_wire_transcript_has_no_tool_role() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "push", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"pushed": true}'},
    ]
    wire = wire_messages(messages, "TOOLS")
    assert [m["role"] for m in wire] == ["system", "system", "user", "assistant", "user"]
    assert wire[3]["content"] == '{"tool": "push", "arguments": {}}'
    assert wire[4]["content"] == 'Result of push:\n{"pushed": true}'


def test_free_text_shares_the_reply_token_limit_under_constrained_output() -> None:
    from apps.llm.toolcalls import MIN_STRING_CAP, reply_budget, tool_call_schema

    tool = {
        "type": "function",
        "function": {
            "name": "note",
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 5000},
                    "title": {"type": "string", "maxLength": 300},
                    "id": {"type": "string", "maxLength": 36},
                    "code": {"type": "string", "minLength": 100},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "kind": {"type": "string", "enum": ["a", "b"]},
                    "count": {"type": "integer"},
                },
            },
        },
    }
    uncapped = tool_call_schema([tool])["properties"]["arguments"]["properties"]
    assert uncapped["text"] == {"type": "string", "maxLength": 5000} and "maxLength" not in uncapped["code"]
    assert "maxItems" not in uncapped["tags"]

    def capped(tokens: int) -> dict:
        return tool_call_schema([tool], max_output_tokens=tokens)["properties"]["arguments"]["properties"]

    def total(props: dict) -> int:
        strings = sum(props[name]["maxLength"] for name in ("text", "title", "id", "code"))
        return strings + props["tags"]["maxItems"] * props["tags"]["items"]["maxLength"]

    for tokens in (100, 300, 1000, 3000):
        props, budget = capped(tokens), reply_budget(tokens)
        assert budget == tokens * 2
        # Every free string and array is bounded, and together they fit the budget (floors aside).
        assert total(props) <= max(budget, 4 * MIN_STRING_CAP + props["tags"]["maxItems"] * MIN_STRING_CAP) + 4
        assert props["id"]["maxLength"] == 36  # an id stays whole
        assert props["text"]["maxLength"] > props["title"]["maxLength"] >= MIN_STRING_CAP  # the long field leads
        assert props["kind"] == {"type": "string", "enum": ["a", "b"]} and props["count"] == {"type": "integer"}
    assert capped(100)["tags"]["maxItems"] == 1 and capped(3000)["tags"]["maxItems"] == 23
    assert capped(3000)["text"]["maxLength"] > capped(300)["text"]["maxLength"] > capped(100)["text"]["maxLength"]
    tiny = capped(4)
    assert tiny["text"]["maxLength"] == MIN_STRING_CAP and tiny["code"]["minLength"] == MIN_STRING_CAP
    assert reply_budget(0) is None and reply_budget(None) is None

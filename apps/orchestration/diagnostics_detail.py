"""What the Diagnostics detail pane shows for a node of the unified tree: facts (times, durations, tokens),
the tool call's arguments and its result as sections, and any JSON value as a tree the template renders
(templates/orchestration/partials/json_node.html). Pure functions over selectors.unified_node's dicts.

The tree keeps values as data (kind + text): the templates escape every key and string; nothing here is
marked safe."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 24  # deeper values are shown as their JSON text
MAX_NODES = 2000  # per tree; the rest is in the raw JSON
LONG_STRING = 400  # longer strings fold behind their first line
FOLD_AT_DEPTH = 2  # objects and arrays deeper than this start closed


@dataclass(slots=True)
class JsonNode:
    kind: str  # object | array | string | number | bool | null | more
    key: str = ""  # the member name (objects), the index (arrays), "" for the root
    is_index: bool = False
    text: str = ""  # scalars: the value (strings without quotes); "more": what was left out
    children: list[JsonNode] = field(default_factory=list)
    size: int = 0  # members or items
    open: bool = True
    long: bool = False  # a string folded behind its start
    preview: str = ""


class _Budget:
    def __init__(self) -> None:
        self.left = MAX_NODES


def json_tree(value: Any, *, key: str = "", is_index: bool = False, depth: int = 0) -> JsonNode:
    """A JSON-shaped value as nested JsonNodes (tuples as arrays, anything else by its str)."""
    return _node(value, key=key, is_index=is_index, depth=depth, budget=_Budget())


def _node(value: Any, *, key: str, is_index: bool, depth: int, budget: _Budget) -> JsonNode:
    budget.left -= 1
    if value is None:
        return JsonNode("null", key, is_index, "null")
    if isinstance(value, bool):
        return JsonNode("bool", key, is_index, "true" if value else "false")
    if isinstance(value, int | float):
        return JsonNode("number", key, is_index, json.dumps(value))
    if isinstance(value, str):
        long = len(value) > LONG_STRING or value.count("\n") > 8
        preview = value.strip().split("\n", 1)[0][:120] if long else ""
        return JsonNode("string", key, is_index, value, long=long, preview=preview)
    if isinstance(value, dict | list | tuple):
        if depth >= MAX_DEPTH:
            return JsonNode("string", key, is_index, json.dumps(value, ensure_ascii=False, default=str))
        pairs = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        node = JsonNode(
            "object" if isinstance(value, dict) else "array",
            key,
            is_index,
            size=len(pairs),
            open=depth < FOLD_AT_DEPTH,
        )
        for position, (child_key, child) in enumerate(pairs):
            if budget.left <= 0:
                node.children.append(JsonNode("more", text=f"{len(pairs) - position} more (see Raw JSON)"))
                break
            node.children.append(
                _node(child, key=str(child_key), is_index=not isinstance(value, dict), depth=depth + 1, budget=budget)
            )
        return node
    return JsonNode("string", key, is_index, str(value))


def parsed_json_text(value: Any) -> Any:
    """A tool result or arguments that arrived as JSON text become the value they encode; anything else as is."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def raw_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _when(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def _between_ms(start: str | None, end: str | None) -> int | None:
    first, last = _when(start), _when(end)
    if first is None or last is None:
        return None
    return max(0, round((last - first).total_seconds() * 1000))


def _usage_tokens(usage: Any) -> tuple[int | None, int | None]:
    if not isinstance(usage, dict):
        return None, None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


@dataclass(slots=True)
class Section:
    title: str
    value: Any
    code: str = ""  # a name shown in code type next to the title (the tool's)
    note: str = ""

    @property
    def tree(self) -> JsonNode:
        return json_tree(self.value)


def _message_section(position: int, message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    role = str(message.get("role", ""))
    content = message.get("content")
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        names[str(call.get("id", ""))] = str(function.get("name", ""))
        calls.append({"name": function.get("name", ""), "arguments": parsed_json_text(function.get("arguments"))})
    answered = str(message.get("tool_call_id") or "")
    return {
        "position": position,
        "role": role,
        "text": content if isinstance(content, str) and role != "tool" else "",
        "value": parsed_json_text(content) if role == "tool" or not isinstance(content, str) else None,
        "has_value": content is not None and (role == "tool" or not isinstance(content, str)),
        "calls": calls,
        "answers": names.get(answered, answered),
    }


def node_detail(node: dict[str, Any], node_id: str) -> dict[str, Any]:
    """The template context of the detail pane for one node (a log entry, a director or agent thread, a
    fetch cycle)."""
    kind = node_id.partition(":")[0]
    context: dict[str, Any] = {"node": node, "node_id": node_id, "kind": kind, "raw": raw_json(node)}
    if kind == "log":
        detail = node.get("detail") if isinstance(node.get("detail"), dict) else {}
        assert isinstance(detail, dict)
        run = node.get("run") or {}
        tool = detail.get("tool")
        context.update(
            title=tool or detail.get("action") or node.get("phase", ""),
            is_tool=bool(tool),
            failed=bool(node.get("error")),
            since_previous_ms=_between_ms(node.get("previousTimestamp"), node.get("timestamp")),
            duration_ms=detail.get("durationMs") if isinstance(detail.get("durationMs"), int) else None,
            run=run,
        )
        sections: list[Section] = []
        if tool:
            sections.append(Section("Arguments", parsed_json_text(detail.get("request")), code=str(tool)))
            if node.get("result") is not None:
                sections.append(Section("Result", parsed_json_text(node.get("result"))))
            elif not node.get("error"):
                sections.append(Section("Result", None, note="The tool returned nothing."))
            rest = {k: v for k, v in detail.items() if k not in ("tool", "request", "durationMs")}
            if rest:
                sections.append(Section("Call details", rest))
        else:
            rest = {k: v for k, v in detail.items() if k != "action"}
            if rest:
                sections.append(Section("Detail", rest))
            if node.get("result") is not None:
                sections.append(Section("Result", parsed_json_text(node.get("result"))))
        context["sections"] = sections
    elif kind in ("dir", "agent"):
        names: dict[str, str] = {}
        messages = node.get("messages") or []
        events = []
        for event in node.get("providerEvents") or []:
            prompt, completion = _usage_tokens(event.get("usage"))
            events.append({**event, "promptTokens": prompt, "completionTokens": completion})
        context.update(
            title=("Agent " if kind == "agent" else "Director ") + str(node.get("label") or ""),
            duration_ms=_between_ms(node.get("createdAt"), node.get("endedAt")),
            messages=[
                _message_section(position, message, names)
                for position, message in enumerate(messages, start=1)
                if isinstance(message, dict)
            ],
            events=events,
            entry_ids=node.get("entryIds") or [],
        )
    else:
        context.update(title=node_id)
    return context

"""Tool calls that small local models can make reliably.

Small instruct models (0.1 to 3B on llama.cpp, Ollama, LM Studio, vLLM) rarely use the `tools=` protocol: they
write the call as JSON in the text (a ```json fence, a bare object, `{{…}}`), which the endpoint does not
recognise. Two remedies, chosen per ApiConfig (`tool_call_mode`):

- constrained output (`json_schema`): no `tools=`; the reply is constrained with `response_format` to a JSON
  schema built from the tools' own schemas — a `oneOf` of `{"tool": <const name>, "arguments": <its
  parameters>}` — so every reply is one well-formed call (the loop's `finish` tool is the final answer);
- strict recovery (`auto`, `text`): a call written in the text is taken only when it names a known tool and
  its arguments validate against that tool's JSON schema; anything that looks like a call but is not valid
  earns one repair turn telling the model exactly what was wrong.

The stored transcript stays canonical OpenAI (assistant `tool_calls` + `tool` messages); `wire_messages`
renders it for an endpoint that was not given `tools=` (assistant calls as their JSON text, tool results as
user messages), so a thread can change mode between runs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

ToolCallMode = Literal["auto", "native", "json_schema", "text"]
TOOL_CALL_MODES: tuple[ToolCallMode, ...] = ("auto", "native", "json_schema", "text")
FINISH_TOOL = "finish"
MAX_PROBLEMS = 5
NOT_A_CALL = 'the reply is not one JSON object of the form {"tool": ..., "arguments": {...}}'

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|tool_call|tool)?[ \t]*\n?(.*?)```", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    how: str  # where it was found: "constrained", "fenced_json", "tagged", "bare_json", "double_braces"


@dataclass(frozen=True, slots=True)
class InvalidCall:
    """Text that is meant as a tool call but is not a valid one; `problems` is what the model is told."""

    problems: tuple[str, ...]
    how: str
    name: str = ""
    truncated: bool = False  # the endpoint stopped at the reply's token limit (finish_reason "length")


def cut_off_call(found: InvalidCall, max_tokens: int | None) -> InvalidCall:
    """An invalid call from a reply the endpoint cut at its token limit: the JSON never ended, so the
    schema problems are noise; what the model must do is write a shorter call."""
    limit = f" of {max_tokens} tokens" if max_tokens else ""
    problem = (
        f"the reply was cut off at the output limit{limit} before the JSON ended; "
        "write a shorter call (keep free text such as data or comments brief)"
    )
    return InvalidCall((problem,), found.how, found.name, truncated=True)


def tool_function(schema: dict[str, Any]) -> dict[str, Any]:
    """The `function` part of an OpenAI tool schema (or the schema itself when given bare)."""
    function = schema.get("function")
    return function if isinstance(function, dict) else schema


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """`$ref: #/$defs/X` replaced by X (pydantic puts nested models in `$defs`): a tool's parameters become
    self-contained, so they can sit inside one combined schema. A recursive model stays an open object."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
        name = ref.rsplit("/", 1)[-1]
        if name in seen or name not in defs:
            return {"type": "object"}
        target = _inline_refs(defs[name], defs, (*seen, name))
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {**target, **_inline_refs(rest, defs, seen)} if rest else target
    return {key: _inline_refs(value, defs, seen) for key, value in node.items() if key not in ("$defs", "definitions")}


def parameters_of(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters schema, self-contained (no `$defs`/`$ref`, no titles)."""
    parameters = tool_function(schema).get("parameters") or {"type": "object", "properties": {}}
    defs = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}
    inlined = _inline_refs(copy.deepcopy(parameters), defs)
    return _strip_titles(inlined)


def _strip_titles(node: Any) -> Any:
    """Schemas without `title` keywords (noise for a small model and for grammar conversion); a property
    that is itself called "title" stays."""
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    stripped: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "properties" and isinstance(value, dict):
            stripped[key] = {name: _strip_titles(schema) for name, schema in value.items()}
        else:
            stripped[key] = _strip_titles(value)
    return stripped


# Under constrained output the tool call may not outgrow the reply: its free text shares a budget of this
# many characters per token of the reply's limit (English runs about 4 characters a token; the rest is left
# for the JSON around the text and for text that tokenises worse). Every free string gets a floor (ids, dates
# and MIME types stay whole) and the rest of the budget in proportion to its declared length, so the long
# field (an item's data, a message) gets the lion's share; an array weighs like one of its items and holds
# at most one item per CHARS_PER_ARRAY_ITEM of the budget. A small model that repeats itself (a tag list
# that never ends) is closed by the grammar instead of being cut mid-JSON. A cap, not a promise: a reply cut
# anyway gets the repair turn.
CHARS_PER_OUTPUT_TOKEN = 2
MIN_STRING_CAP = 40
CHARS_PER_ARRAY_ITEM = 256
UNDECLARED_WEIGHT = 160


def reply_budget(max_output_tokens: int | None) -> int | None:
    """How many characters of free text a constrained reply may hold with this token limit (None: no limit)."""
    if not max_output_tokens:
        return None
    return int(max_output_tokens) * CHARS_PER_OUTPUT_TOKEN


def _is_free_string(node: dict[str, Any]) -> bool:
    return node.get("type") == "string" and "enum" not in node and "const" not in node


def _cap_arrays(node: Any, budget: int) -> Any:
    """Every array schema with `maxItems` at most one item per CHARS_PER_ARRAY_ITEM of the budget."""
    if isinstance(node, list):
        return [_cap_arrays(item, budget) for item in node]
    if not isinstance(node, dict):
        return node
    capped = {key: _cap_arrays(value, budget) for key, value in node.items()}
    if capped.get("type") == "array":
        most = max(1, budget // CHARS_PER_ARRAY_ITEM)
        capped["maxItems"] = min(int(capped.get("maxItems") or most), most)
        if int(capped.get("minItems") or 0) > capped["maxItems"]:
            capped["minItems"] = capped["maxItems"]
    return capped


def _string_slots(node: Any, budget: int, copies: int = 1, share: float = 1.0) -> list[tuple[int, int, float]]:
    """(declared length, copies, weight) of every free string a call may hold: an array's items count
    maxItems times each, with 1/maxItems of the weight. An undeclared length may use the whole budget but
    weighs like a short field (UNDECLARED_WEIGHT): the long fields a schema declares come first."""
    if isinstance(node, list):
        return [slot for item in node for slot in _string_slots(item, budget, copies, share)]
    if not isinstance(node, dict):
        return []
    if _is_free_string(node):
        length = int(node.get("maxLength") or max(budget, MIN_STRING_CAP))
        return [(length, copies, share * (length if node.get("maxLength") else min(length, UNDECLARED_WEIGHT)))]
    slots = []
    for key, value in node.items():
        if key == "items" and node.get("type") == "array":
            count = max(1, int(node.get("maxItems") or 1))
            slots += _string_slots(value, budget, copies * count, share / count)
        elif isinstance(value, (dict, list)):
            slots += _string_slots(value, budget, copies, share)
    return slots


def _cap_strings(node: Any, budget: int, per_weight: float, share: float = 1.0) -> Any:
    """Every free string's `maxLength`: its floor plus its weight's part of what the floors left."""
    if isinstance(node, list):
        return [_cap_strings(item, budget, per_weight, share) for item in node]
    if not isinstance(node, dict):
        return node
    if _is_free_string(node):
        length = int(node.get("maxLength") or max(budget, MIN_STRING_CAP))
        weight = length if node.get("maxLength") else min(length, UNDECLARED_WEIGHT)
        capped = dict(node)
        capped["maxLength"] = min(length, min(length, MIN_STRING_CAP) + int(per_weight * share * weight))
        if int(capped.get("minLength") or 0) > capped["maxLength"]:
            capped["minLength"] = capped["maxLength"]
        return capped
    result = {}
    for key, value in node.items():
        if key == "items" and node.get("type") == "array":
            result[key] = _cap_strings(value, budget, per_weight, share / max(1, int(node.get("maxItems") or 1)))
        else:
            result[key] = _cap_strings(value, budget, per_weight, share)
    return result


def cap_to_budget(arguments: dict[str, Any], budget: int) -> dict[str, Any]:
    """A tool's arguments schema with its arrays and free strings bounded to share `budget` characters."""
    arguments = _cap_arrays(arguments, budget)
    slots = _string_slots(arguments, budget)
    floors = sum(min(length, MIN_STRING_CAP) * copies for length, copies, _ in slots)
    weights = sum(weight * copies for _, copies, weight in slots)
    per_weight = max(0, budget - floors) / weights if weights else 0.0
    return _cap_strings(arguments, budget, per_weight)


def tool_call_schema(tools: Sequence[dict[str, Any]], *, max_output_tokens: int | None = None) -> dict[str, Any]:
    """One JSON schema for "exactly one call of one of these tools": the constraint given to the endpoint.
    With a reply token limit, each tool's free text is bounded to fit it (`cap_to_budget`)."""
    budget = reply_budget(max_output_tokens)
    options = []
    for schema in tools:
        function = tool_function(schema)
        arguments = parameters_of(schema)
        if budget is not None:
            arguments = cap_to_budget(arguments, budget)
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": function["name"]}, "arguments": arguments},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return options[0] if len(options) == 1 else {"oneOf": options}


def response_format(tools: Sequence[dict[str, Any]], *, max_output_tokens: int | None = None) -> dict[str, Any]:
    """`response_format` for /v1/chat/completions (llama.cpp's server, vLLM, LM Studio, Ollama, OpenAI)."""
    schema = tool_call_schema(tools, max_output_tokens=max_output_tokens)
    return {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema}}


def describe_tools(tools: Sequence[dict[str, Any]], *, constrained: bool) -> str:
    """The tools and the reply format as a system message, for an endpoint not given `tools=`. Short on
    purpose: a small model reads every token, and constrained decoding already enforces the shape."""
    lines = ["Tools (call exactly one per reply):"]
    for schema in tools:
        function = tool_function(schema)
        parameters = parameters_of(schema)
        required = set(parameters.get("required") or [])
        names = [f"{name}{'' if name in required else '?'}" for name in parameters.get("properties") or {}]
        description = str(function.get("description") or "").split(". ")[0].rstrip(".")
        lines.append(f"- {function['name']}({', '.join(names)}): {description}")
    lines.append(
        'Reply with one JSON object: {"tool": "<tool name>", "arguments": {...}}.'
        + ("" if constrained else " No other text.")
    )
    if any(tool_function(schema)["name"] == FINISH_TOOL for schema in tools):
        lines.append(f'When the work is done, call {FINISH_TOOL} with {{"answer": "<one short sentence>"}}.')
    return "\n".join(lines)


def _json_objects(text: str) -> list[tuple[Any, str]]:
    """JSON values found in text, with where they were found: fenced blocks first, then <tool_call> tags,
    then every top-level `{…}` the decoder accepts; `{{…}}` (a template's braces) is read as `{…}`."""
    found: list[tuple[Any, str]] = []
    decoder = json.JSONDecoder()

    def scan(chunk: str, how: str) -> None:
        index = 0
        while True:
            start = chunk.find("{", index)
            if start < 0:
                return
            candidate = chunk[start:]
            doubled = candidate.startswith("{{")
            try:
                value, end = decoder.raw_decode(candidate)
            except json.JSONDecodeError:
                value, end = None, 0
                if doubled:
                    closing = candidate.rfind("}}")
                    if closing > 0:
                        try:
                            value = json.loads(candidate[1 : closing + 1])
                            end = closing + 2
                        except json.JSONDecodeError:
                            value = None
            if value is None or end == 0:
                index = start + 1
                continue
            found.append((value, "double_braces" if doubled and how == "bare_json" else how))
            index = start + end

    stripped = text.strip()
    for match in _FENCE.finditer(stripped):
        scan(match.group(1), "fenced_json")
    for match in _TAGGED.finditer(stripped):
        scan(match.group(1), "tagged")
    if not found:
        scan(stripped, "bare_json")
    return found


def _call_shape(value: Any) -> tuple[str, Any, bool] | None:
    """(name, arguments, explicit) when a JSON value is shaped like a tool call in any of the usual
    spellings; `explicit` when it carries an arguments key too (then an unknown name is a wrong call, not
    some other JSON that happens to have a "name")."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {"name", "arguments"}}
        value = value["function"]
    for key in ("tool", "name", "tool_name", "function"):
        name = value.get(key)
        if isinstance(name, str) and name:
            for args_key in ("arguments", "args", "parameters", "input"):
                if args_key in value:
                    return name, value[args_key], True
            return name, {}, False
    return None


def validation_problems(arguments: Any, parameters: dict[str, Any]) -> list[str]:
    """What is wrong with `arguments` against a parameters schema, in sentences a model can act on."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return [f"arguments are not valid JSON ({exc.msg})"]
    if not isinstance(arguments, dict):
        return ["arguments must be a JSON object"]
    import jsonschema  # ~15 MB with its dependencies: loaded by the first tool call, not by every process

    validator = jsonschema.Draft202012Validator(parameters)
    problems = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        where = ".".join(str(part) for part in error.path) or "arguments"
        problems.append(f"{where}: {error.message}")
        if len(problems) == MAX_PROBLEMS:
            break
    return problems


def parse_text_call(
    text: str | None, tools: Sequence[dict[str, Any]], *, constrained: bool = False
) -> ParsedCall | InvalidCall | None:
    """The tool call written in `text`, strictly: a known tool name and arguments valid against its schema.
    None when the text is not meant as a call (a plain answer); InvalidCall when it is but fails the checks."""
    if not text or "{" not in text:  # under constrained output (an endpoint that ignored it) that is wrong too
        return InvalidCall((NOT_A_CALL,), how="constrained") if constrained else None
    by_name = {tool_function(schema)["name"]: schema for schema in tools}
    first_invalid: InvalidCall | None = None
    for value, how in _json_objects(text):
        shape = _call_shape(value)
        if shape is None:
            continue
        name, arguments, explicit = shape
        how = "constrained" if constrained else how
        if name not in by_name and not (explicit or constrained):
            continue
        if name not in by_name:
            available = ", ".join(sorted(by_name)) or "none"
            first_invalid = first_invalid or InvalidCall((f"unknown tool {name!r}; available: {available}",), how, name)
            continue
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                first_invalid = first_invalid or InvalidCall((f"arguments are not valid JSON ({exc.msg})",), how, name)
                continue
        problems = validation_problems(arguments, parameters_of(by_name[name]))
        if problems:
            first_invalid = first_invalid or InvalidCall(tuple(problems), how, name)
            continue
        return ParsedCall(name, arguments, how)
    if first_invalid is None and constrained:
        return InvalidCall((NOT_A_CALL,), how="constrained")
    return first_invalid


def repair_message(invalid: InvalidCall) -> str:
    problems = "\n".join(f"- {problem}" for problem in invalid.problems)
    subject = f"Your call of {invalid.name}" if invalid.name else "Your tool call"
    return (
        f"{subject} was not valid:\n{problems}\n"
        'Reply again with exactly one JSON object {"tool": "<tool name>", "arguments": {...}} that fixes this.'
    )


def wire_messages(messages: Sequence[dict[str, Any]], tool_prompt: str) -> list[dict[str, Any]]:
    """The canonical transcript as sent to an endpoint without `tools=`: the tool prompt after the first
    system messages, assistant calls as the JSON text the model is asked to write, tool results as user
    messages naming the tool (chat templates of small models often know no `tool` role)."""
    names: dict[str, str] = {}
    wire: list[dict[str, Any]] = []
    inserted = False
    for message in messages:
        role = message.get("role")
        if not inserted and role not in ("system", "developer"):
            wire.append({"role": "system", "content": tool_prompt})
            inserted = True
        if role == "assistant" and message.get("tool_calls"):
            texts = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name") or "")
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = function.get("arguments")
                texts.append(json.dumps({"tool": function.get("name"), "arguments": arguments}, ensure_ascii=False))
            wire.append({"role": "assistant", "content": "\n".join(texts)})
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "the tool")
            wire.append({"role": "user", "content": f"Result of {name}:\n{message.get('content') or ''}"})
        else:
            wire.append(message)
    if not inserted:
        wire.append({"role": "system", "content": tool_prompt})
    return wire

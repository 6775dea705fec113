"""Tools as the model sees them (name, description, JSON schema from a pydantic model) and the generic
tool-call loop: call the model, run the tools it asks for, append one `tool` message per call id, repeat
until it answers without tool calls or the step limit is reached. Invalid arguments and failing tools
become tool messages the model can read; they never raise out of the loop."""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from apps.llm.client import ChatResult, EventSink, LLMConfig, ToolCall, chat, parse_arguments

logger = logging.getLogger(__name__)
MAX_TOOL_RESULT_CHARS = 20_000


class ToolFailure(Exception):
    """A tool's own, expected failure: its message goes to the model as `{"error": ...}` (plus `extra`)."""

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.extra = extra


@dataclass(slots=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    handler: Callable[[Any], Any]  # receives the validated arguments model

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters_schema(self.arguments),
            },
        }


@functools.cache
def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of an arguments model, computed once per model (it is the same for every call)."""
    parameters = model.model_json_schema()
    parameters.pop("title", None)
    return parameters


@dataclass(slots=True)
class ToolCallRecord:
    id: str
    name: str
    args: Any
    success: bool
    result: Any = None
    error: str | None = None

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "args": self.args, "success": self.success}
        if self.error is not None:
            data["error"] = self.error
        return data


def execute_tool_call(tools: dict[str, Tool], call: ToolCall) -> ToolCallRecord:
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return ToolCallRecord(
            call.id, call.name, call.arguments, False, error=f"unknown tool {call.name!r}; available: {available}"
        )
    try:
        raw_args = parse_arguments(call.arguments)
    except ValueError as exc:
        return ToolCallRecord(call.id, call.name, call.arguments, False, error=f"invalid arguments: {exc}")
    try:
        validated = tool.arguments.model_validate(raw_args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()
        )
        return ToolCallRecord(call.id, call.name, raw_args, False, error=f"invalid arguments: {problems}")
    try:
        result = tool.handler(validated)
    except ToolFailure as exc:
        return ToolCallRecord(call.id, call.name, raw_args, False, result=exc.extra or None, error=str(exc))
    except Exception as exc:  # a bug in a tool must not end the run: the model is told and may go on
        logger.exception("tool %s failed", call.name)
        return ToolCallRecord(call.id, call.name, raw_args, False, error=f"{type(exc).__name__}: {exc}")
    return ToolCallRecord(call.id, call.name, raw_args, True, result=result)


def tool_message(record: ToolCallRecord) -> dict[str, Any]:
    if record.success:
        payload = record.result
    else:
        payload = {"error": record.error, **(record.result if isinstance(record.result, dict) else {})}
    text = payload if isinstance(payload, str) else json.dumps(payload, default=str, ensure_ascii=False)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + f"… [truncated, {len(text) - MAX_TOOL_RESULT_CHARS} more characters]"
    return {"role": "tool", "tool_call_id": record.id, "content": text}


StopReason = Literal["answered", "step_limit"]


@dataclass(slots=True)
class LoopOutcome:
    final: str | None
    reason: StopReason
    steps: int
    records: list[ToolCallRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


def run_tool_loop(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    tools: Sequence[Tool],
    *,
    step_limit: int,
    events: EventSink | None = None,
    on_assistant: Callable[[ChatResult], None] | None = None,
    on_tool: Callable[[ToolCallRecord, dict[str, Any]], None] | None = None,
    on_step: Callable[[], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> LoopOutcome:
    """`messages` is extended in place (canonical OpenAI shape). Callbacks let the caller persist as it goes:
    `on_assistant` after each model answer, `on_tool` after each tool call, `on_step` once a step's tool
    calls are all answered, so a crash leaves a transcript up to the last completed step. LLMError
    propagates: the caller fails the run."""
    by_name = {tool.name: tool for tool in tools}
    schemas = [tool.schema() for tool in tools]
    outcome = LoopOutcome(final=None, reason="step_limit", steps=0)
    for _step in range(max(1, step_limit)):
        result = chat(config, messages, tools=schemas or None, events=events, sleep=sleep or time.sleep)
        outcome.steps += 1
        for name, value in result.usage.items():
            outcome.usage[name] = outcome.usage.get(name, 0) + value
        messages.append(result.message)
        if on_assistant:
            on_assistant(result)
        if not result.tool_calls:
            outcome.final = result.content or ""
            outcome.reason = "answered"
            return outcome
        for call in result.tool_calls:
            record = execute_tool_call(by_name, call)
            outcome.records.append(record)
            message = tool_message(record)
            messages.append(message)
            if on_tool:
                on_tool(record, message)
        if on_step:
            on_step()  # the assistant's calls and every answer to them are in `messages` now
    return outcome

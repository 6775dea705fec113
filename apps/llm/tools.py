"""Tools as the model sees them (name, description, JSON schema from a pydantic model) and the generic
tool-call loop: call the model, run the tools it asks for, append one `tool` message per call id, repeat
until it answers without tool calls or the step limit is reached. Invalid arguments and failing tools
become tool messages the model can read; they never raise out of the loop."""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from apps.llm import toolcalls
from apps.llm.client import (
    ChatResult,
    EventSink,
    LLMConfig,
    ProviderEventData,
    ToolCall,
    chat,
    parse_arguments,
    redact,
)
from apps.llm.toolcalls import (
    FINISH_TOOL,
    NOT_A_CALL,
    TOOL_CALL_MODES,
    InvalidCall,
    ParsedCall,
    cut_off_call,
    describe_tools,
    parse_text_call,
    repair_message,
    wire_messages,
)
from mailagent.textinput import nul_locations, nul_message

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
    duration_ms: int | None = None  # wall time of the call (validation and the handler), for the diagnostics

    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "args": self.args, "success": self.success}
        if self.error is not None:
            data["error"] = self.error
        return data


def execute_tool_call(tools: dict[str, Tool], call: ToolCall) -> ToolCallRecord:
    started = time.monotonic()
    record = _execute_tool_call(tools, call)
    record.duration_ms = round((time.monotonic() - started) * 1000)
    return record


def _execute_tool_call(tools: dict[str, Tool], call: ToolCall) -> ToolCallRecord:
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
    if locations := nul_locations(raw_args):
        # Refused on every database alike: PostgreSQL cannot store NUL, and the model can correct its call.
        # The raw JSON text is kept (its escape is storable); the parsed value is not.
        error = f"invalid arguments: {nul_message(locations)}"
        return ToolCallRecord(call.id, call.name, call.arguments, False, error=error)
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


# answered: a plain answer; finished: the `finish` tool before the last step; finished_at_limit: `finish` on
# the last step, when the model was told to finish; step_limit: the budget ran out without an end;
# invalid_output: a tool call still invalid after its repair turn; output_truncated: the same, because the
# endpoint cut the reply at its token limit both times (the JSON never ended).
StopReason = Literal["answered", "finished", "finished_at_limit", "step_limit", "invalid_output", "output_truncated"]


MAX_FINISH_ANSWER = 600


class FinishArgs(BaseModel):
    # Bounded: under constrained decoding the grammar enforces it, so a small model cannot ramble forever.
    answer: str = Field(max_length=MAX_FINISH_ANSWER, description="One or two sentences: what you did, or your answer.")


FINISH_DESCRIPTION = "End your work now and say in one or two sentences what you did (or answer)."


def finish_tool() -> Tool:
    return Tool(FINISH_TOOL, FINISH_DESCRIPTION, FinishArgs, lambda args: {"finished": True, "answer": args.answer})


@dataclass(slots=True)
class LoopOutcome:
    final: str | None
    reason: StopReason
    steps: int
    records: list[ToolCallRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    recoveries: int = 0  # calls taken from the text or repaired (each also a "recovery" provider event)


LAST_STEP_NOTE = f"This is your last step: call {FINISH_TOOL} now with a short summary of what you did."


def _recovery_event(events: EventSink | None, config: LLMConfig, payload: dict[str, Any]) -> None:
    if events:
        events(ProviderEventData(kind="recovery", model=config.model, attempt=1, payload=redact(payload)))


def _as_tool_call(result: ChatResult, parsed: ParsedCall) -> ChatResult:
    """The reply with its text-written call turned into a canonical `tool_calls` entry."""
    call = ToolCall(
        id=f"call_{uuid.uuid4().hex[:24]}", name=parsed.name, arguments=json.dumps(parsed.arguments, ensure_ascii=False)
    )
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        ],
    }
    result.content, result.tool_calls, result.message = None, [call], message
    return result


def _add_usage(result: ChatResult, earlier: ChatResult) -> ChatResult:
    for name, value in earlier.usage.items():
        result.usage[name] = result.usage.get(name, 0) + value
    return result


def model_step(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    schemas: Sequence[dict[str, Any]],
    *,
    events: EventSink | None,
    sleep: Callable[[float], None],
    note: str = "",
) -> tuple[ChatResult, InvalidCall | None, int]:
    """One model turn in the config's tool-call mode: (the reply with its tool calls in canonical form, the
    invalid call left after the repair turn if any, how many recoveries happened). A repair turn's invalid
    reply and the repair request are appended to `messages` (the transcript shows what happened)."""
    mode = config.tool_call_mode if config.tool_call_mode in TOOL_CALL_MODES else "auto"
    constrained = mode == "json_schema" and bool(schemas)
    native = mode in ("auto", "native") or not schemas

    def ask(transcript: list[dict[str, Any]]) -> ChatResult:
        extra = [{"role": "system", "content": note}] if note else []
        if native:
            return chat(
                config,
                [*transcript, *extra],
                tools=list(schemas) or None,
                max_tokens=config.max_output_tokens,
                events=events,
                sleep=sleep,
            )
        wire = wire_messages(transcript, describe_tools(schemas, constrained=constrained))
        return chat(
            config,
            [*wire, *extra],
            response_format=(
                toolcalls.response_format(schemas, max_output_tokens=config.max_output_tokens) if constrained else None
            ),
            max_tokens=config.max_output_tokens,
            events=events,
            sleep=sleep,
        )

    result = ask(messages)
    if result.tool_calls or mode == "native" or not schemas:
        return result, None, 0
    found = parse_text_call(result.content, schemas, constrained=constrained)
    if found is None and result.finish_reason == "length" and constrained:
        found = InvalidCall((NOT_A_CALL,), how="constrained")
    if isinstance(found, InvalidCall) and result.finish_reason == "length":
        found = cut_off_call(found, config.max_output_tokens)
    if found is None:
        return result, None, 0  # a plain answer
    if isinstance(found, ParsedCall):
        if found.how != "constrained":
            _recovery_event(
                events, config, {"action": "recovered", "how": found.how, "tool": found.name, "text": result.content}
            )
        return _as_tool_call(result, found), None, int(found.how != "constrained")
    _recovery_event(
        events,
        config,
        {
            "action": "repair",
            "how": found.how,
            "tool": found.name,
            "problems": list(found.problems),
            "text": result.content,
            "finish_reason": result.finish_reason,
        },
    )
    messages.append(result.message)
    messages.append({"role": "user", "content": repair_message(found)})
    first = result
    result = _add_usage(ask(messages), first)
    if result.tool_calls:
        return result, None, 1
    again = parse_text_call(result.content, schemas, constrained=constrained)
    if again is None and result.finish_reason == "length" and constrained:
        again = InvalidCall((NOT_A_CALL,), how="constrained")
    if isinstance(again, InvalidCall) and result.finish_reason == "length":
        again = cut_off_call(again, config.max_output_tokens)
    if isinstance(again, ParsedCall):
        _recovery_event(events, config, {"action": "repaired", "how": again.how, "tool": again.name})
        return _as_tool_call(result, again), None, 1
    if again is None:
        return result, None, 1  # the model answered in plain text instead: a final answer
    _recovery_event(
        events,
        config,
        {
            "action": "repair_failed",
            "tool": again.name,
            "problems": list(again.problems),
            "text": result.content,
            "finish_reason": result.finish_reason,
        },
    )
    return result, again, 1


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
    finish: bool = False,
) -> LoopOutcome:
    """`messages` is extended in place (canonical OpenAI shape). Callbacks let the caller persist as it goes:
    `on_assistant` after each model answer, `on_tool` after each tool call, `on_step` once a step's tool
    calls are all answered, so a crash leaves a transcript up to the last completed step. LLMError
    propagates: the caller fails the run.

    With `finish` (and always with constrained output, where a plain answer cannot be written) the model
    gets a `finish` tool that ends the loop; its last step offers only `finish`, so a run that used its whole
    budget still ends by the model's own summary, and says so (`finished_at_limit`)."""
    tools = list(tools)
    if (finish or config.tool_call_mode == "json_schema") and all(tool.name != FINISH_TOOL for tool in tools):
        tools.append(finish_tool())
    by_name = {tool.name: tool for tool in tools}
    schemas = [tool.schema() for tool in tools]
    finish_only = [tool.schema() for tool in tools if tool.name == FINISH_TOOL]
    outcome = LoopOutcome(final=None, reason="step_limit", steps=0)
    limit = max(1, step_limit)
    for step in range(limit):
        last = step == limit - 1 and bool(finish_only) and limit > 1
        result, invalid, recoveries = model_step(
            config,
            messages,
            finish_only if last else schemas,
            events=events,
            sleep=sleep or time.sleep,
            note=LAST_STEP_NOTE if last else "",
        )
        outcome.steps += 1
        outcome.recoveries += recoveries
        for name, value in result.usage.items():
            outcome.usage[name] = outcome.usage.get(name, 0) + value
        messages.append(result.message)
        if on_assistant:
            on_assistant(result)
        if invalid is not None:
            outcome.final = result.content or ""
            outcome.reason = "output_truncated" if invalid.truncated else "invalid_output"
            return outcome
        if not result.tool_calls:
            outcome.final = result.content or ""
            outcome.reason = "answered"
            return outcome
        finished: ToolCallRecord | None = None
        for call in result.tool_calls:
            record = execute_tool_call(by_name, call)
            outcome.records.append(record)
            message = tool_message(record)
            messages.append(message)
            if on_tool:
                on_tool(record, message)
            if record.success and record.name == FINISH_TOOL and finished is None:
                finished = record
        if on_step:
            on_step()  # the assistant's calls and every answer to them are in `messages` now
        if finished is not None:
            outcome.final = str(finished.result.get("answer", "")) if isinstance(finished.result, dict) else ""
            outcome.reason = "finished_at_limit" if last else "finished"
            return outcome
    return outcome

"""One way to call an OpenAI-compatible chat model: the official `openai` client with a configurable
base_url (OpenAI, Azure OpenAI's v1 endpoint, Ollama, vLLM, LM Studio), our own retry loop (so every
attempt is observable), a per-config concurrency limit, and an event for every request, response and
error handed to the caller's sink (orchestration stores them as ProviderEvents).

The concurrency limit is the generation queue of apps/llm/queue.py, shared by every process through the
database, installed when the app registry is ready; before that (or without Django) a semaphore of this
process stands in.

The client imports no model: callers pass an `LLMConfig` (for an ApiConfig row, `apps.llm.configs.llm_config`).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from apps.llm.endpoints import address_problem
from apps.llm.errors import describe_failure, endpoint_name, refusal_kind
from mailagent.textinput import NUL

if TYPE_CHECKING:  # the client itself is imported on the first call: ~37 MB that a process which never calls
    # a model (the watchers, most of the cluster's processes, a web process serving pages) does not hold
    import openai
    from openai.types.chat import ChatCompletion

# "recovery": a tool call taken from the text or repaired (apps/llm/toolcalls.py), recorded like the others.
EventKind = Literal["request", "response", "error", "recovery"]
ErrorCategory = Literal[
    "timeout",
    "rate_limited",
    "server",
    "connection",
    "refused",
    "unresolvable",
    "auth",
    "bad_request",
    "forbidden_host",
    "queue_timeout",
    "other",
]
# A refused connection or a host name that does not resolve fails identically on every attempt: not retried
# (five retries with backoff only delayed "is the server running?").
RETRYABLE: frozenset[str] = frozenset({"timeout", "rate_limited", "server", "connection"})
SECRET_KEYS = ("api_key", "apikey", "authorization", "password", "secret", "token", "refresh_token")
MAX_EVENT_STRING = 4000
MAX_RETRY_AFTER = 30.0


@dataclass(frozen=True, slots=True)
class LLMConfig:
    key: str  # identity of the configuration: the concurrency limit is shared per key
    base_url: str
    api_key: str
    model: str
    timeout: float = 60.0
    max_concurrency: int = 4
    max_retries: int = 4
    backoff_base: float = 0.5
    name: str = ""
    # False for one-off calls (a connection test with a typed key): a fresh client, closed afterwards,
    # instead of one cached per (URL, key, timeout) for the life of the process.
    cache_client: bool = True
    # How tools reach the model and calls come back (apps/llm/toolcalls.py): "auto" = the endpoint's tools
    # plus strict recovery of calls written in the text; "native"; "json_schema" (constrained); "text".
    tool_call_mode: str = "auto"
    max_output_tokens: int | None = None  # the tool loop's replies; None = the endpoint's default


@dataclass(slots=True)
class ProviderEventData:
    kind: EventKind
    model: str
    attempt: int
    payload: dict[str, Any]
    latency_ms: int | None = None
    usage: dict[str, int] = field(default_factory=dict)
    status: int | None = None
    error: str = ""
    category: str = ""


EventSink = Callable[[ProviderEventData], None]


class LLMError(Exception):
    """`str()` is the sentence for people (endpoint, status, next step); `detail` is the client's own text."""

    def __init__(
        self,
        message: str,
        *,
        category: ErrorCategory,
        status: int | None = None,
        attempts: int = 1,
        detail: str = "",
        endpoint: str = "",
    ):
        super().__init__(message)
        self.category = category
        self.status = status
        self.attempts = attempts
        self.detail = detail or message
        self.endpoint = endpoint


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text as the model sent it


@dataclass(slots=True)
class ChatResult:
    content: str | None
    tool_calls: list[ToolCall]
    message: dict[str, Any]  # the assistant message, ready to append to `messages`
    usage: dict[str, int]
    model: str
    finish_reason: str
    latency_ms: int
    attempts: int


_clients: dict[tuple[str, str, float], openai.OpenAI] = {}
_semaphores: dict[str, tuple[int, threading.BoundedSemaphore]] = {}
_registry_lock = threading.Lock()


def _new_client(config: LLMConfig) -> openai.OpenAI:
    import openai

    return openai.OpenAI(
        base_url=config.base_url or None,
        api_key=config.api_key or "not-needed",
        timeout=config.timeout,
        max_retries=0,  # retries are ours: each attempt becomes an event
    )


def _client(config: LLMConfig) -> openai.OpenAI:
    cache_key = (config.base_url, config.api_key, float(config.timeout))
    with _registry_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = _new_client(config)
            _clients[cache_key] = client
        return client


def _semaphore(config: LLMConfig) -> threading.BoundedSemaphore:
    limit = max(1, int(config.max_concurrency))
    with _registry_lock:
        current = _semaphores.get(config.key)
        if current is None or current[0] != limit:
            current = (limit, threading.BoundedSemaphore(limit))
            _semaphores[config.key] = current
        return current[1]


SlotProvider = Callable[[LLMConfig], AbstractContextManager[Any]]
_slot_provider: SlotProvider = _semaphore


def use_generation_slots(provider: SlotProvider) -> None:
    """Where each attempt waits for its turn: apps/llm/queue.py installs the cross-process queue."""
    global _slot_provider
    _slot_provider = provider


_secret_key_cache: dict[Any, bool] = {}


def _is_secret_key(key: Any) -> bool:
    """Whether a dict key names a secret; remembered per key (a run sees the same few dozen keys)."""
    known = _secret_key_cache.get(key)
    if known is None:
        lowered = str(key).lower()
        known = any(secret in lowered for secret in SECRET_KEYS)
        if len(_secret_key_cache) < 4096:
            _secret_key_cache[key] = known
    return known


def redact(value: Any, *, depth: int = 0) -> Any:
    """Secrets out, long strings shortened: what a ProviderEvent may keep."""
    if depth > 12:
        return "…"
    if isinstance(value, str):
        if len(value) > MAX_EVENT_STRING:
            return value[:MAX_EVENT_STRING] + f"… [{len(value) - MAX_EVENT_STRING} more characters]"
        return value
    if isinstance(value, dict):
        return {k: "[redacted]" if _is_secret_key(k) else redact(v, depth=depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, depth=depth + 1) for v in value]
    return value


def request_summary(request: dict[str, Any]) -> dict[str, Any]:
    """What a request event keeps: the messages new since the model last spoke (the whole transcript is
    the thread's), the tool names (schemas are static), and the other parameters; secrets redacted."""
    messages = request.get("messages") or []
    start = len(messages)
    while start > 0 and messages[start - 1].get("role") != "assistant":
        start -= 1
    summary: dict[str, Any] = {key: value for key, value in request.items() if key not in ("messages", "tools")}
    summary["messageCount"] = len(messages)
    summary["newMessages"] = messages[start:] if start else messages
    if request.get("tools"):
        summary["tools"] = [tool.get("function", {}).get("name") for tool in request["tools"]]
    if isinstance(request.get("response_format"), dict):  # the schema is built from the tools: names suffice
        schema = (request["response_format"].get("json_schema") or {}).get("schema") or {}
        options = schema.get("oneOf") or [schema]
        summary["response_format"] = {
            "type": request["response_format"].get("type"),
            "tools": [((o.get("properties") or {}).get("tool") or {}).get("const") for o in options],
        }
    return redact(summary)


def _categorize(exc: Exception) -> tuple[ErrorCategory, int | None, float | None]:
    """(category, HTTP status, Retry-After seconds) of an openai exception."""
    import openai

    retry_after: float | None = None
    status: int | None = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if response is not None:
        header = response.headers.get("retry-after")
        if header is not None:
            try:
                retry_after = min(MAX_RETRY_AFTER, max(0.0, float(header)))
            except ValueError:
                retry_after = None
    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None, None
    if isinstance(exc, openai.APIConnectionError):
        return refusal_kind(exc) or "connection", None, None
    if isinstance(exc, openai.RateLimitError) or status == 429:
        return "rate_limited", status, retry_after
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return "auth", status, None
    if status is not None and status >= 500:
        return "server", status, retry_after
    if status is not None and 400 <= status < 500:
        return "bad_request", status, None
    return "other", status, None


def backoff_seconds(config: LLMConfig, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    # Exponential with full jitter: concurrent workers that failed together do not retry together.
    return random.uniform(0, config.backoff_base * (2 ** (attempt - 1)))


def _elapsed_ms(started: float) -> int:
    """Whole milliseconds since `started`, rounded to the nearest (truncating made every call look up to
    1 ms faster than it was, and the sum over many calls — the benchmark's model wait — short by half a
    millisecond a call)."""
    return round((time.monotonic() - started) * 1000)


def _post_chat(client: openai.OpenAI, request: dict[str, Any]) -> ChatCompletion:
    """POST /chat/completions through the client (auth, timeout, errors as `chat.completions.create`), with
    the body as built here: `create` first walks every message and tool schema against its TypedDicts
    (about 11 ms a call with our tool set, the largest part of a director run's own overhead), which a body
    of plain JSON values does not need."""
    from openai.types.chat import ChatCompletion

    return client.post(
        "/chat/completions", body=request, cast_to=ChatCompletion, options={"security": {"bearer_auth": True}}
    )


def chat(
    config: LLMConfig,
    messages: Sequence[dict[str, Any]],
    *,
    tools: Sequence[dict[str, Any]] | None = None,
    tool_choice: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    response_format: dict[str, Any] | None = None,
    events: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ChatResult:
    """One chat completion, retried on timeouts, 429, 5xx and dropped connections (not on a refused one).
    Raises LLMError, whose message names the endpoint, the status and the next step, when it finally fails."""
    import openai

    refusal = address_problem(config.base_url)
    if refusal:  # before any connection: the answer and its timing would tell what lives there
        where = endpoint_name(config.base_url, config.name)
        raise LLMError(f"{where}: {refusal}", category="forbidden_host", endpoint=where)
    request: dict[str, Any] = {"model": config.model, "messages": list(messages)}
    if tools:
        request["tools"] = list(tools)
        if tool_choice:
            request["tool_choice"] = tool_choice
    if temperature is not None:
        request["temperature"] = temperature
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if response_format is not None:
        request["response_format"] = response_format
    attempts = max(1, int(config.max_retries) + 1)
    last_error: LLMError | None = None
    for attempt in range(1, attempts + 1):
        if events:
            events(
                ProviderEventData(kind="request", model=config.model, attempt=attempt, payload=request_summary(request))
            )
        started = time.monotonic()
        try:
            if config.cache_client:
                with _slot_provider(config):
                    started = time.monotonic()  # the latency is the model's, not the time spent in line
                    completion = _post_chat(_client(config), request)
            else:  # a one-off call: its own client, no shared limit to keep per key
                with _new_client(config) as client:
                    completion = _post_chat(client, request)
        except LLMError as exc:  # the generation queue gave up: recorded like a failed attempt, not retried
            if events:
                events(
                    ProviderEventData(
                        kind="error",
                        model=config.model,
                        attempt=attempt,
                        payload={"error": exc.detail, "explanation": str(exc)},
                        latency_ms=_elapsed_ms(started),
                        error=str(exc),
                        category=exc.category,
                    )
                )
            exc.attempts = attempt
            raise
        except openai.OpenAIError as exc:
            latency = _elapsed_ms(started)
            category, status, retry_after = _categorize(exc)
            detail = f"{type(exc).__name__}: {exc}"[:2000]
            message = describe_failure(
                exc,
                category=category,
                status=status,
                base_url=config.base_url,
                model=config.model,
                timeout=config.timeout,
                config_name=config.name,
            )
            if events:
                events(
                    ProviderEventData(
                        kind="error",
                        model=config.model,
                        attempt=attempt,
                        payload={"error": detail, "explanation": message},
                        latency_ms=latency,
                        status=status,
                        error=message,
                        category=category,
                    )
                )
            last_error = LLMError(
                message,
                category=category,
                status=status,
                attempts=attempt,
                detail=detail,
                endpoint=endpoint_name(config.base_url, config.name),
            )
            if category not in RETRYABLE or attempt == attempts:
                raise last_error from exc
            sleep(backoff_seconds(config, attempt, retry_after))
            continue
        latency = _elapsed_ms(started)
        return _result(config, completion, latency, attempt, events)
    raise last_error or LLMError("no attempt was made", category="other")


def _result(config: LLMConfig, completion: Any, latency: int, attempt: int, events: EventSink | None) -> ChatResult:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    usage = {}
    if completion.usage is not None:
        usage = {
            "prompt_tokens": int(completion.usage.prompt_tokens or 0),
            "completion_tokens": int(completion.usage.completion_tokens or 0),
            "total_tokens": int(completion.usage.total_tokens or 0),
        }
    calls = [
        ToolCall(id=call.id, name=call.function.name, arguments=_without_nul(call.function.arguments) or "")
        for call in (getattr(message, "tool_calls", None) or [])
        if getattr(call, "function", None) is not None
    ]
    content = _without_nul(getattr(message, "content", None))
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        assistant["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    result = ChatResult(
        content=content,
        tool_calls=calls,
        message=assistant,
        usage=usage,
        model=str(completion.model or config.model),
        finish_reason=str(getattr(choice, "finish_reason", "") or ""),
        latency_ms=latency,
        attempts=attempt,
    )
    if events:
        events(
            ProviderEventData(
                kind="response",
                model=result.model,
                attempt=attempt,
                payload=redact({"message": assistant, "finish_reason": result.finish_reason}),
                latency_ms=latency,
                usage=usage,
                status=200,
            )
        )
    return result


def _without_nul(text: str | None) -> str | None:
    """A model's text with raw NUL characters shown as U+FFFD: they carry nothing readable, and PostgreSQL
    cannot store them in the transcript (a NUL written as the JSON escape inside tool arguments is refused
    with the tool call instead, so that the model can correct it)."""
    return text.replace(NUL, "\ufffd") if text and NUL in text else text


def parse_arguments(raw: str) -> dict[str, Any]:
    """The model's JSON arguments as a dict; raises ValueError with a message the model can act on."""
    if not raw or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value

"""A scripted OpenAI-compatible server on 127.0.0.1: chat completions (with tool calls) and embeddings.

The real `openai` client talks to it over HTTP. Replies come from queues: `script(*replies)` feeds the
default queue; `when(predicate, *replies)` feeds a queue used for requests the predicate accepts (e.g.
"the system prompt mentions the psychologist"), so interleaved director and agent calls stay readable.
`Reply.failure(429, retry_after="0")` and `Reply.failure(500)` inject provider errors; `delay` holds a
reply back to provoke client timeouts. Every request body is kept in `requests` for assertions, and every
chat request's time in the server in `chat_spans` (start, end; monotonic): `max_overlap()` is the most
requests it served at once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.google_server import FakeRequest, FakeResponse, LoopbackServer

Predicate = Callable[[dict[str, Any]], bool]


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, dict or raw JSON string)
    status: int = 200
    error: str = ""
    retry_after: str | None = None
    delay: float = 0.0
    # As a real server does with `max_tokens`: the text is cut where the token budget ends (4 characters a
    # token, this server's count) and finish_reason is "length". Off by default (scripts predate it).
    honour_max_tokens: bool = False

    @classmethod
    def text(cls, content: str) -> Reply:
        return cls(content=content)

    @classmethod
    def calls(cls, *calls: tuple[str, Any], content: str | None = None) -> Reply:
        return cls(content=content, tool_calls=list(calls))

    @classmethod
    def failure(cls, status: int, error: str = "", retry_after: str | None = None) -> Reply:
        return cls(status=status, error=error or f"scripted {status}", retry_after=retry_after)


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(
        str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") in ("system", "developer")
    )


class FakeOpenAI(LoopbackServer):
    def __init__(self, *, default: Reply | None = None) -> None:
        super().__init__()
        self.queue: deque[Reply] = deque()
        self.routes: list[tuple[Predicate, deque[Reply]]] = []
        self.requests: list[dict[str, Any]] = []
        self.default = default
        self._ids = itertools.count(1)
        self.api_keys: list[str] = []
        self._served = threading.Condition(self.lock)
        self.chat_spans: list[tuple[float, float]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *replies: Reply) -> FakeOpenAI:
        with self.lock:
            self.queue.extend(replies)
        return self

    def when(self, predicate: Predicate, *replies: Reply) -> FakeOpenAI:
        with self.lock:
            self.routes.append((predicate, deque(replies)))
        return self

    def chat_requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if "messages" in r]

    def max_overlap(self) -> int:
        """The most chat requests this server was serving at the same moment."""
        with self.lock:
            return self.most_in_flight

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            for predicate, queue in self.routes:
                if queue and predicate(body):
                    return queue.popleft()
            if self.queue:
                return self.queue.popleft()
        if self.default is not None:
            return self.default
        return Reply.failure(500, "the fake server has no scripted reply left")

    def handle(self, request: FakeRequest) -> FakeResponse:
        self.api_keys.append(request.headers.get("authorization", ""))
        if request.method == "GET" and request.path.endswith("/models"):
            return FakeResponse.json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        if request.method != "POST":
            return FakeResponse.json({"error": {"message": "not found"}}, status=404)
        body = json.loads(request.body or b"{}")
        with self.lock:
            self.requests.append(body)
        if request.path.endswith("/chat/completions"):
            started = time.monotonic()
            with self.lock:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                return self._chat(body)
            finally:
                with self.lock:
                    self.in_flight -= 1
                    self.chat_spans.append((started, time.monotonic()))
        if request.path.endswith("/embeddings"):
            return self._embeddings(body)
        return FakeResponse.json({"error": {"message": f"unknown path {request.path}"}}, status=404)

    def _chat(self, body: dict[str, Any]) -> FakeResponse:
        reply = self._next_reply(body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            headers = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            return FakeResponse.json(
                {"error": {"message": reply.error, "type": kind, "code": kind}}, status=reply.status, headers=headers
            )
        tool_calls = []
        for name, arguments in reply.tool_calls:
            tool_calls.append(
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        content, finish_reason = reply.content, "tool_calls" if tool_calls else "stop"
        max_tokens = body.get("max_tokens")
        if reply.honour_max_tokens and content and isinstance(max_tokens, int) and len(content) > 4 * max_tokens:
            content, finish_reason = content[: 4 * max_tokens], "length"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt_tokens = sum(len(str(m.get("content") or "")) // 4 + 4 for m in body.get("messages") or [])
        completion_tokens = len(content or "") // 4 + 10 * len(tool_calls) + 1
        return FakeResponse.json(
            {
                "id": f"chatcmpl-{next(self._ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or "fake-model",
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    def _embeddings(self, body: dict[str, Any]) -> FakeResponse:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dimension = int(body.get("dimensions") or 32)
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_vector(t, dimension)} for i, t in enumerate(texts)
        ]
        return FakeResponse.json(
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        )


def hashed_vector(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    for word in text.lower().split():
        vector[int(hashlib.sha1(word.encode(), usedforsecurity=False).hexdigest(), 16) % dimension] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]

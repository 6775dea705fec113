"""A tiny Ollama-shaped server on 127.0.0.1: GET /api/tags (Ollama's own model list) and GET /v1/models (its
OpenAI-compatible list), for the local-endpoint discovery of the wizard and Settings → Models. `hang` makes
every request wait that long first (a server that accepts and never answers in time)."""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.google_server import FakeRequest, FakeResponse, LoopbackServer


class FakeOllama(LoopbackServer):
    def __init__(self, models: list[str], *, hang: float = 0.0) -> None:
        super().__init__()
        self.models = models
        self.hang = hang

    def handle(self, request: FakeRequest) -> FakeResponse:
        if self.hang:
            time.sleep(self.hang)
        if request.method == "GET" and request.path == "/api/tags":
            tags: list[dict[str, Any]] = [
                {"name": name, "model": name, "size": 2_019_393_189, "details": {"format": "gguf"}}
                for name in self.models
            ]
            return FakeResponse.json({"models": tags})
        if request.method == "GET" and request.path == "/v1/models":
            data = [{"id": name, "object": "model", "owned_by": "library"} for name in self.models]
            return FakeResponse.json({"object": "list", "data": data})
        return FakeResponse(404, b"404 page not found", {"Content-Type": "text/plain"})


class NotAModelServer(LoopbackServer):
    """Some other web server on a model server's port: answers HTML to everything."""

    def handle(self, request: FakeRequest) -> FakeResponse:
        return FakeResponse(200, b"<!doctype html><title>hello</title>", {"Content-Type": "text/html"})

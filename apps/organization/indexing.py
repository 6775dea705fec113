"""Library files in the one hybrid search index (kind "file", owned by the library's owner): search's own
indexing API, so keyword, semantic and hybrid search rank them with mail."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.conf import settings

from apps.organization.models import LibraryFile
from apps.search.actions import request_embedding_backfill, unindex_documents
from apps.search.backends import get_search_backend
from apps.search.documents import MAX_BODY_CHARS, IndexDocument
from apps.search.models import DocumentKind

logger = logging.getLogger(__name__)


def file_document(file: LibraryFile) -> IndexDocument:
    metadata = file.metadata or {}
    date = None
    for key in ("date", "modified"):
        if metadata.get(key):
            try:
                date = dt.datetime.fromisoformat(str(metadata[key]))
            except ValueError:
                continue
            if date.tzinfo is None:
                date = date.replace(tzinfo=dt.UTC)
            break
    people = " ".join(str(metadata.get(k) or "") for k in ("sender_name", "sender")).strip()
    provenance = file.provenance or {}
    if not people and provenance.get("sender"):
        people = str(provenance["sender"])
    return IndexDocument(
        kind=DocumentKind.FILE,
        object_id=file.pk,
        title=str(metadata.get("title") or file.name),
        people=people,
        body=f"{file.path}\n{file.digest_text}"[:MAX_BODY_CHARS],
        owner_id=file.library.owner_id,
        folder=file.folder,
        date=date or file.created_at,
        from_address=str(metadata.get("sender") or provenance.get("sender") or "").lower(),
    )


def index_files(files: Iterable[LibraryFile]) -> None:
    """Index (or re-index) files; a failure is logged and never loses the file (reindexing repairs it)."""
    documents = [file_document(f) for f in files]
    if not documents:
        return
    try:
        get_search_backend().index(documents)
        if settings.SEARCH_EMBED_ON_INGEST:
            request_embedding_backfill()
    except Exception:
        logger.exception("organization: indexing %d library files failed", len(documents))


def unindex_files(file_ids: Iterable[int]) -> None:
    try:
        unindex_documents(kind=DocumentKind.FILE, object_ids=list(file_ids))
    except Exception:
        logger.exception("organization: removing library files from the index failed")

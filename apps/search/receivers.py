"""Signal receivers connected in SearchConfig.ready(): keep the index in step with the mail store."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from apps.search import actions

logger = logging.getLogger(__name__)


def index_stored_messages(sender: Any, *, account_id: int, message_ids: list[int], **kwargs: Any) -> None:
    """Full text now, in the storing process (the batch is already committed); embeddings in the background.

    A failure here must not fail the sync that stored the mail: it is logged, and `manage.py reindex`
    repairs the index."""
    try:
        actions.index_messages(message_ids=message_ids)
    except Exception:
        logger.exception("search: indexing %d stored messages of account %s failed", len(message_ids), account_id)
        return
    if settings.SEARCH_EMBED_ON_INGEST:
        try:
            actions.request_embedding_backfill()
        except Exception:
            logger.exception("search: could not queue the embedding backfill")


def unindex_attachment(sender: Any, instance: Any, **kwargs: Any) -> None:
    actions.unindex_documents(kind="attachment", object_ids=[instance.pk])

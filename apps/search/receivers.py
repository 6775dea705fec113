"""Signal receivers connected in SearchConfig.ready(): keep the index in step with the mail store."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from apps.accounts import outbox
from apps.accounts.models import HookKind
from apps.search import actions

logger = logging.getLogger(__name__)


def index_stored_messages(
    sender: Any,
    *,
    account_id: int,
    message_ids: list[int],
    retry_ids: list[int] | None = None,
    retry_kinds: list[str] | None = None,
    **kwargs: Any,
) -> None:
    """Full text now, in the storing process (the batch is already committed); embeddings in the background.

    A failure must not fail the sync that stored the mail, and must not lose it either: the messages stay
    unindexed in the outbox with the failure recorded, and the outbox sweeper indexes them later."""
    retry = list(retry_ids or []) if retry_kinds is None or HookKind.INDEX in retry_kinds else []
    ids = list(message_ids)
    if retry:
        known = set(ids)
        ids += [pk for pk in outbox.pending_ids(kind=HookKind.INDEX, message_ids=retry) if pk not in known]
    if not ids:
        return
    error = outbox.run_hook(
        kind=HookKind.INDEX,
        message_ids=ids,
        work=lambda chunk: actions.index_messages(message_ids=chunk),
        isolate=bool(retry),
    )
    if error is None and settings.SEARCH_EMBED_ON_INGEST:
        try:
            actions.request_embedding_backfill()
        except Exception:
            # Not lost: the backfill embeds every document without vectors whenever it runs next.
            logger.exception("search: could not queue the embedding backfill")


def unindex_attachment(sender: Any, instance: Any, **kwargs: Any) -> None:
    actions.unindex_documents(kind="attachment", object_ids=[instance.pk])

"""django-q2 entry points for search.

The backfills run in a cluster worker, which otherwise never embeds: the models a backfill loads are
released when it ends (embedders.release_models_loaded_during), so an idle worker holds none."""

from __future__ import annotations

from apps.search import actions
from apps.search.embedders import release_models_loaded_during


def backfill_embeddings_task() -> int:
    """Embed documents that have no vectors yet; queues its own continuation when time runs out."""
    with release_models_loaded_during():
        return actions.backfill_embeddings()


BACKFILL_SCHEDULE_NAME = "search: embedding backfill safety net"
BACKFILL_SCHEDULE_MINUTES = 10


def backfill_if_pending_task() -> int:
    """The periodic safety net (a maintenance schedule): run the backfill when documents still wait for
    vectors or messages for a gist or its continuation, though no new mail queued it: a queued request was
    lost, no worker ran meanwhile, or an upgrade added work (migration 0008's continuations). Nothing when
    SEARCH_EMBED_ON_INGEST is off or nothing waits (three cheap reads)."""
    from django.conf import settings

    from apps.search.selectors import index_work_pending

    if not settings.SEARCH_EMBED_ON_INGEST or not index_work_pending():
        return 0
    with release_models_loaded_during():
        return actions.backfill_embeddings()

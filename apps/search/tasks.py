"""django-q2 entry points for search."""

from __future__ import annotations

from apps.search import actions


def backfill_embeddings_task() -> int:
    """Embed documents that have no vectors yet; queues its own continuation when time runs out."""
    return actions.backfill_embeddings()

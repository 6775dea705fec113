"""Connected in RoutingConfig.ready(): route every committed batch of new mail."""

from __future__ import annotations

import logging
from typing import Any

from apps.routing import actions

logger = logging.getLogger(__name__)


def route_stored_messages(
    sender: Any, *, account_id: int, message_ids: list[int], fetch_cycle_id: int | None = None, **kwargs: Any
) -> None:
    """Runs after the batch committed, in the storing process. Routing trouble must not fail the sync:
    it is logged, and `manage.py replay` can route the messages again (runs are idempotent)."""
    try:
        if fetch_cycle_id is not None:
            actions.record_cycle_messages(fetch_cycle_id=fetch_cycle_id, message_ids=message_ids)
        actions.route_messages(message_ids=message_ids, fetch_cycle_id=fetch_cycle_id)
    except Exception as exc:
        logger.exception("routing: %d new messages of account %s could not be routed", len(message_ids), account_id)
        if fetch_cycle_id is not None:  # shown on the Fetcher page, so the lost routes are noticed and replayed
            actions.record_cycle_error(
                fetch_cycle_id=fetch_cycle_id,
                error=f"routing of {len(message_ids)} new messages failed ({type(exc).__name__}: {exc}); "
                "`manage.py replay` routes them again",
            )

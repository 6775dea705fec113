"""Connected in RoutingConfig.ready(): route every committed batch of new mail."""

from __future__ import annotations

import logging
from typing import Any

from apps.accounts import outbox
from apps.accounts.models import HookKind
from apps.routing import actions

logger = logging.getLogger(__name__)


def route_stored_messages(
    sender: Any,
    *,
    account_id: int,
    message_ids: list[int],
    fetch_cycle_id: int | None = None,
    retry_ids: list[int] | None = None,
    retry_kinds: list[str] | None = None,
    **kwargs: Any,
) -> None:
    """Runs after the batch committed, in the storing process. Routing trouble must not fail the sync, and
    must not lose the mail: the messages stay unrouted in the outbox with the failure recorded (and, for a
    fetch, on the cycle), and the outbox sweeper routes them later (runs are idempotent)."""
    retry = list(retry_ids or []) if retry_kinds is None or HookKind.ROUTE in retry_kinds else []
    ids = list(message_ids)
    if retry:
        known = set(ids)
        ids += [pk for pk in outbox.pending_ids(kind=HookKind.ROUTE, message_ids=retry) if pk not in known]
    if not ids:
        return
    if fetch_cycle_id is not None and message_ids:
        try:
            actions.record_cycle_messages(fetch_cycle_id=fetch_cycle_id, message_ids=message_ids)
        except Exception:
            logger.exception("routing: could not record %d messages on cycle %s", len(message_ids), fetch_cycle_id)
    error = outbox.run_hook(
        kind=HookKind.ROUTE,
        message_ids=ids,
        work=lambda chunk: actions.route_messages(message_ids=chunk, fetch_cycle_id=fetch_cycle_id),
        isolate=bool(retry),
    )
    if error is not None and fetch_cycle_id is not None:  # shown on the Fetcher page as well
        try:
            actions.record_cycle_error(
                fetch_cycle_id=fetch_cycle_id,
                error=f"routing of {len(ids)} new messages failed ({error}); they stay queued and are "
                "routed again automatically (see Diagnostics)",
            )
        except Exception:
            logger.exception("routing: could not record the failure on fetch cycle %s", fetch_cycle_id)

"""django-q2 entry points: take ids, re-fetch, tolerate vanished rows, call one function."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import close_old_connections

from apps.accounts import import_jobs, writeback
from apps.accounts.models import MailAccount
from apps.accounts.sync import sync_account
from mailagent.events import notify_user

logger = logging.getLogger(__name__)
PARALLEL_ACCOUNTS = 4


def sync_account_task(account_id: int, fetch_cycle_id: int | None = None) -> dict[str, Any]:
    outcome = sync_account(account_id, fetch_cycle_id=fetch_cycle_id)
    owner_id = MailAccount.objects.filter(pk=account_id).values_list("owner_id", flat=True).first()
    if owner_id is not None and outcome.status in {"ok", "error"}:
        notify_user(
            owner_id,
            {"type": "sync_completed", "account_id": account_id, "status": outcome.status, "created": outcome.created},
        )
    if outcome.status == "error":
        logger.warning("account %s sync failed (%s): %s", account_id, outcome.error_category, outcome.error_message)
    return {
        "account_id": account_id,
        "status": outcome.status,
        "created": outcome.created,
        "duplicates": outcome.duplicates,
        "parse_errors": outcome.parse_errors,
        "error_category": outcome.error_category,
        "error_message": outcome.error_message,
    }


def _sync_in_thread(account_id: int, fetch_cycle_id: int | None) -> dict[str, Any]:
    try:
        return sync_account_task(account_id, fetch_cycle_id)
    finally:
        close_old_connections()


def sync_all_accounts_task(fetch_cycle_id: int | None = None, owner_id: int | None = None) -> list[dict[str, Any]]:
    """Sync every enabled account (of one owner, if given); accounts run in parallel (network-bound), each
    under its own lock. `fetch_cycle_id` travels with the stored messages to whoever groups fetches."""
    accounts = MailAccount.objects.filter(enabled=True)
    if owner_id is not None:
        accounts = accounts.filter(owner_id=owner_id)
    ids = list(accounts.order_by("pk").values_list("pk", flat=True))
    if not ids:
        return []
    with ThreadPoolExecutor(max_workers=min(PARALLEL_ACCOUNTS, len(ids))) as pool:
        return list(pool.map(lambda pk: _sync_in_thread(pk, fetch_cycle_id), ids))


def apply_mail_action_task(action_id: int) -> dict[str, Any]:
    """Queued on commit by writeback.request_mail_actions: perform one write-back at the provider."""
    outcome = writeback.apply_mail_action(action_id)
    return {"action_id": action_id, "status": outcome.status, "error": outcome.error}


def retry_mail_actions_task() -> int:
    """Scheduled ("mail: write-back retries"): failed write-backs whose backoff passed, and lost ones."""
    return writeback.retry_due_mail_actions()


def sweep_outbox_task() -> dict[str, int]:
    """Scheduled ("mail: outbox sweeper"): index and route what the messages-stored hooks left undone."""
    from apps.accounts.outbox import sweep_outbox

    return sweep_outbox().announced


def import_upload_task(job_id: str) -> dict[str, Any]:
    """Queued by the import form (apps/accounts/import_jobs.py): import one uploaded archive (the Accounts
    page polls its progress)."""
    job = import_jobs.run_import(job_id)
    if job is None:
        return {"job": job_id, "status": "gone"}
    return {"job": job_id, "status": job.status, "message": job.message}


def sweep_import_uploads_task() -> dict[str, int]:
    """Scheduled ("mail: import upload sweeper"): uploads and spool files a crashed import left behind."""
    return import_jobs.sweep_import_uploads()

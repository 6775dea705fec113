"""Signal receivers connected in OrganizationConfig.ready()."""

from __future__ import annotations

import logging
from typing import Any

from apps.organization.models import AttachmentIntake

logger = logging.getLogger(__name__)


def save_stored_attachments(sender: Any, *, account_id: int, message_ids: list[int], **kwargs: Any) -> None:
    """Queue saving the attachments of newly stored mail when the account's intake switch is on or the owner
    has a filter with "save attachments" (the task keeps only the mail such a filter matches). Fetching bytes
    may be slow (IMAP), so it runs in the worker; the scheduled sweep finishes what a lost task left."""
    from apps.organization.intake import has_switch_filters

    if not AttachmentIntake.objects.filter(account_id=account_id, enabled=True).exists() and not has_switch_filters(
        account_id=account_id
    ):
        return
    try:
        from django_q.tasks import async_task

        async_task(
            "apps.organization.tasks.save_attachments_task",
            account_id,
            list(message_ids),
            task_name=f"organization: attachments of account {account_id}",
        )
    except Exception:
        logger.exception("organization: could not queue attachment intake for account %s", account_id)

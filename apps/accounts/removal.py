"""Removing a mail account: what it takes with it (real counts), then deleting exactly that.

Accounts owns the mail (messages, threads, folders, attachments and their cached files). What higher
layers keep about that mail (runs and their workspaces, search index entries) they report and delete
themselves through `account_removal_inventory` / `account_removing` (apps/accounts/signals.py), so this
module imports nothing above accounts.

The deletion runs in chunks of messages, each chunk in its own transaction, under the account's sync
lock (no sync or import writes while it runs). The account is disabled first; a crash halfway leaves a
disabled account with fewer messages, and removing it again finishes the job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.template.defaultfilters import filesizeformat

from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, Thread
from apps.accounts.signals import account_removal_inventory, account_removing
from apps.accounts.sync import acquire_sync_lock, release_sync_lock

logger = logging.getLogger(__name__)

REMOVAL_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class RemovalItem:
    key: str
    label: str
    count: int
    note: str = ""


@dataclass(slots=True)
class RemovalResult:
    account_name: str
    messages: int = 0
    attachments: int = 0
    files: int = 0


class AccountBusy(Exception):
    """The account is being synced or imported right now."""


def removal_inventory(*, account: MailAccount) -> list[RemovalItem]:
    """What removing the account deletes, counted now: its own rows, then what other apps report."""
    messages = Message.objects.filter(account=account)
    attachments = Attachment.objects.filter(message__account=account)
    cached = attachments.exclude(cache_path="")
    shared = _shared_cache_paths(account=account)
    own_sizes = dict(cached.exclude(cache_path__in=shared).values_list("cache_path", "size"))
    own_files, cached_bytes = len(own_sizes), sum(own_sizes.values())
    items = [
        RemovalItem("messages", "Messages", messages.count()),
        RemovalItem("threads", "Conversations", Thread.objects.filter(account=account).count()),
        RemovalItem("folders", "Folders", MailFolder.objects.filter(account=account).count()),
        RemovalItem("attachments", "Attachments", attachments.count()),
        RemovalItem(
            "attachment_files",
            "Attachment files on disk",
            own_files,
            note=(
                f"cached copies, {filesizeformat(cached_bytes)} in all"
                + (f"; {len(shared)} more are also used by other mail and stay" if shared else "")
            ),
        ),
    ]
    for _receiver, response in account_removal_inventory.send(sender=MailAccount, account=account):
        if isinstance(response, list):
            items.extend(item for item in response if isinstance(item, RemovalItem))
    return items


def _shared_cache_paths(*, account: MailAccount) -> set[str]:
    """Cached attachment files of this account that another account's attachments also point at."""
    own = Attachment.objects.filter(message__account=account).exclude(cache_path="").values("cache_path")
    return set(
        Attachment.objects.filter(cache_path__in=own)
        .exclude(message__account=account)
        .values_list("cache_path", flat=True)
        .distinct()
    )


def _delete_unreferenced_files(paths: set[str]) -> int:
    """Remove cached attachment files no stored attachment points at any more (content-addressed, so two
    messages with the same attachment share one file)."""
    if not paths:
        return 0
    still_used = set(Attachment.objects.filter(cache_path__in=paths).values_list("cache_path", flat=True))
    root = Path(settings.ATTACHMENT_CACHE_DIR).resolve()
    removed = 0
    for relative in sorted(paths - still_used):
        target = (root / relative).resolve()
        if not target.is_relative_to(root):
            continue
        try:
            target.unlink()
            removed += 1
        except FileNotFoundError:
            continue
        except OSError:
            logger.exception("could not delete cached attachment %s", target)
    return removed


def remove_account(*, account: MailAccount) -> RemovalResult:
    """Delete the account and everything listed by `removal_inventory`. Raises AccountBusy during a sync."""
    token = acquire_sync_lock(account.pk)
    if token is None:
        raise AccountBusy(f"“{account.name}” is being synced or imported right now; try again when it finishes")
    result = RemovalResult(account_name=account.name)
    try:
        MailAccount.objects.filter(pk=account.pk).update(enabled=False)
        while True:
            ids = list(
                Message.objects.filter(account=account).order_by("pk").values_list("pk", flat=True)[:REMOVAL_CHUNK]
            )
            if not ids:
                break
            cached = Attachment.objects.filter(message_id__in=ids).exclude(cache_path="")
            paths = set(cached.values_list("cache_path", flat=True))
            with transaction.atomic():
                account_removing.send(sender=MailAccount, account=account, message_ids=ids)
                result.attachments += Attachment.objects.filter(message_id__in=ids).count()
                Message.objects.filter(pk__in=ids).delete()
            result.messages += len(ids)
            result.files += _delete_unreferenced_files(paths)
        with transaction.atomic():
            account_removing.send(sender=MailAccount, account=account, message_ids=[])
            MailAccount.objects.filter(pk=account.pk).delete()
    finally:
        release_sync_lock(account.pk, token)  # a no-op once the row is gone
    return result

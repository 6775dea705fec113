"""The sync engine: one lock per account, provider-driven batches, status and error bookkeeping."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.accounts import locations
from apps.accounts.models import ErrorCategory, MailAccount, MailFolder, Provider, SyncStatus
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import Checkpoint, FolderInfo, ProviderError, RemoteMessage, StoreResult
from apps.accounts.store import store_remote_messages
from mailagent.liveness import holder_is_dead, process_identity

logger = logging.getLogger(__name__)

KNOWN_CATEGORIES = {choice.value for choice in ErrorCategory}


class SyncLockLost(Exception):
    """Another worker took over the account's expired lock; this sync must stop."""


@dataclass(slots=True)
class SyncOutcome:
    account_id: int
    status: str  # ok | error | busy | disabled | missing
    created: int = 0
    duplicates: int = 0
    parse_errors: int = 0
    located: int = 0  # places of messages already stored (moves, copies): no download
    removed: int = 0  # places gone on the server (expunged, moved away, folder deleted)
    deleted: int = 0  # messages whose last place is gone: deleted on the server
    error_category: str = ""
    error_message: str = ""
    created_ids: list[int] = field(default_factory=list)


def sync_batch_size() -> int:
    return max(1, int(settings.MAILAGENT_SYNC_BATCH))


def acquire_sync_lock(account_id: int) -> str | None:
    """Take the account's lock with one conditional UPDATE (atomic on SQLite and PostgreSQL).

    A lock whose holder is known dead (a process on this machine that is gone, see mailagent.liveness) is
    taken over at once, with a second conditional UPDATE on the dead holder's token so two takers cannot
    both win; otherwise a held lock frees only when it expires (a holder on another machine)."""
    token = secrets.token_hex(16)
    now = timezone.now()
    fields = {
        "sync_lock_token": token,
        "sync_lock_expires_at": now + timedelta(seconds=settings.MAILAGENT_SYNC_LOCK_SECONDS),
        "sync_lock_holder": process_identity(),
    }
    taken = MailAccount.objects.filter(
        Q(pk=account_id) & (Q(sync_lock_token="") | Q(sync_lock_expires_at__lt=now) | Q(sync_lock_expires_at=None))
    ).update(**fields)
    if taken:
        return token
    held = MailAccount.objects.filter(pk=account_id).values_list("sync_lock_token", "sync_lock_holder").first()
    if held is None or not held[1] or not holder_is_dead(held[1]):
        return None
    taken = MailAccount.objects.filter(pk=account_id, sync_lock_token=held[0]).update(**fields)
    if taken:
        logger.warning("account %s: took over the sync lock of a dead process (%s)", account_id, held[1])
    return token if taken else None


def renew_sync_lock(account_id: int, token: str) -> None:
    renewed = MailAccount.objects.filter(pk=account_id, sync_lock_token=token).update(
        sync_lock_expires_at=timezone.now() + timedelta(seconds=settings.MAILAGENT_SYNC_LOCK_SECONDS)
    )
    if not renewed:
        raise SyncLockLost(f"account {account_id}: sync lock lost")


def release_sync_lock(account_id: int, token: str) -> None:
    MailAccount.objects.filter(pk=account_id, sync_lock_token=token).update(
        sync_lock_token="", sync_lock_expires_at=None, sync_lock_holder=""
    )


class AccountSink:
    """What providers write through (the SyncSink protocol in providers/base.py)."""

    def __init__(
        self,
        account: MailAccount,
        *,
        lock_token: str | None,
        keep_payloads: bool = False,
        chunk_size: int | None = None,
        fetch_cycle_id: int | None = None,
        route_regardless_of_date: bool = False,
    ) -> None:
        self.account = account
        self.fetch_cycle_id = fetch_cycle_id
        self.route_regardless_of_date = route_regardless_of_date
        self.chunk_size = chunk_size or sync_batch_size()
        self.lock_token = lock_token
        self.keep_payloads = keep_payloads
        self.totals = StoreResult()
        self._folders: dict[str, MailFolder] = {}

    def ensure_folder(self, info: FolderInfo) -> MailFolder:
        folder = self._folders.get(info.name)
        if folder is None:
            folder, _ = MailFolder.objects.get_or_create(
                account=self.account,
                name=info.name[:512],
                defaults={"display_name": info.display_name[:512], "role": info.role[:32]},
            )
            if (info.display_name and folder.display_name != info.display_name) or (
                info.role and folder.role != info.role
            ):
                folder.display_name = info.display_name[:512] or folder.display_name
                folder.role = info.role[:32] or folder.role
                folder.save(update_fields=["display_name", "role"])
            self._folders[info.name] = folder
        return folder

    def folder_state(self, name: str) -> MailFolder | None:
        self._folders.pop(name, None)
        folder = MailFolder.objects.filter(account=self.account, name=name).first()
        if folder is not None:
            self._folders[name] = folder
        return folder

    def store_batch(self, messages: list[RemoteMessage], checkpoint: Checkpoint | None = None) -> StoreResult:
        batch = StoreResult()
        size = self.chunk_size
        chunks = [messages[i : i + size] for i in range(0, len(messages), size)] or [[]]
        for index, chunk in enumerate(chunks):
            # The cursor is written only with the last chunk: a crash before it replays the earlier chunks,
            # which the unique constraints turn into duplicates instead of losses.
            last = index == len(chunks) - 1
            result = store_remote_messages(
                account=self.account,
                messages=chunk,
                checkpoint=checkpoint if last else None,
                keep_payloads=self.keep_payloads,
                fetch_cycle_id=self.fetch_cycle_id,
                route_regardless_of_date=self.route_regardless_of_date,
            )
            for target in (batch, self.totals):
                target.created += result.created
                target.duplicates += result.duplicates
                target.parse_errors += result.parse_errors
                target.created_ids.extend(result.created_ids)
                target.located += len(result.located_ids)
            self.heartbeat()
        return batch

    def reset_folder(self, name: str, *, uidvalidity: int | None) -> None:
        MailFolder.objects.filter(account=self.account, name=name).update(
            uidvalidity=uidvalidity, last_uid=0, sync_token=""
        )
        self._folders.pop(name, None)
        logger.warning("account %s: folder %r reset for a full resync", self.account.pk, name)

    def update_flags(self, changes: dict[str, tuple[bool, bool]], *, folder: str | None = None) -> None:
        if not changes:
            return
        target = self.folder_state(folder) if folder is not None else None
        if folder is not None and target is None:
            return
        locations.update_flags(account=self.account, changes=changes, folder=target)

    def update_keywords(self, changes: dict[str, tuple[str, ...]], *, folder: str | None = None) -> None:
        if not changes:
            return
        target = self.folder_state(folder) if folder is not None else None
        if folder is not None and target is None:
            return
        locations.update_keywords(account=self.account, changes=changes, folder=target)

    def known_folders(self) -> list[MailFolder]:
        return list(MailFolder.objects.filter(account=self.account))

    def folder_places(self, name: str) -> dict[str, locations.Place]:
        folder = self.folder_state(name)
        return locations.folder_places(folder=folder) if folder is not None else {}

    def remove_places(self, location_ids: list[int]) -> None:
        self.totals.removed += len(location_ids)
        locations.remove_places(account=self.account, location_ids=location_ids)
        self.heartbeat()

    def match_known(self, facts: dict[str, locations.HeaderFacts]) -> dict[str, int]:
        return locations.match_known(account=self.account, facts=facts)

    def place_known(self, name: str, places: list[locations.KnownPlace]) -> None:
        folder = self.folder_state(name) or self.ensure_folder(FolderInfo(name=name))
        with transaction.atomic():
            locations.add_places(
                account=self.account,
                places=[
                    locations.NewPlace(
                        message_id=place.message_id,
                        folder=folder,
                        provider_id=place.provider_id,
                        uid=place.uid,
                        seen=place.seen,
                        flagged=place.flagged,
                        keywords=place.keywords,
                    )
                    for place in places
                ],
            )
            changed = locations.refresh_messages(account=self.account, message_ids=[p.message_id for p in places])
            locations.announce_changed(account_id=self.account.pk, message_ids=changed)
        self.totals.located += len(places)
        self.heartbeat()

    def places_of(self, provider_ids: list[str]) -> dict[str, list[tuple[str, int]]]:
        return locations.places_of(account=self.account, provider_ids=provider_ids)

    def move_places(self, moves: dict[str, tuple[str, bool, bool]]) -> set[str]:
        if not moves:
            return set()
        folders = {
            name: self.folder_state(name) or self.ensure_folder(FolderInfo(name=name)) for name, _, _ in moves.values()
        }
        before = locations.places_of(account=self.account, provider_ids=list(moves))
        unknown, _ = locations.move_global(
            account=self.account,
            moves={pid: (folders[name], seen, flagged) for pid, (name, seen, flagged) in moves.items()},
        )
        # Counted as located when the message was not already in that folder (a move, or back from nowhere).
        self.totals.located += sum(
            1
            for pid, (name, _, _) in moves.items()
            if pid not in unknown and [folder for folder, _ in before.get(pid, [])] != [name]
        )
        self.heartbeat()
        return unknown

    def rename_folder(self, old: str, new: FolderInfo, provider_id_prefix: tuple[str, str]) -> None:
        locations.rename_folder(
            account=self.account,
            old=old,
            new=new.name,
            display_name=new.display_name,
            role=new.role,
            provider_id_prefix=provider_id_prefix,
        )
        self._folders.pop(old, None)
        self._folders.pop(new.name, None)

    def delete_folder(self, name: str) -> None:
        self.totals.removed += locations.delete_folder(account=self.account, name=name)
        self._folders.pop(name, None)

    def heartbeat(self) -> None:
        if self.lock_token:
            renew_sync_lock(self.account.pk, self.lock_token)


def _record(account_id: int, **fields: object) -> None:
    MailAccount.objects.filter(pk=account_id).update(**fields)


def sync_account(account_id: int, *, fetch_cycle_id: int | None = None) -> SyncOutcome:
    """Pull new mail for one account. Never raises for provider trouble: the outcome says what happened.

    `fetch_cycle_id` is opaque here: it travels with the messages-stored signal to whoever groups syncs."""
    account = MailAccount.objects.filter(pk=account_id).first()
    if account is None:
        return SyncOutcome(account_id=account_id, status="missing")
    if not account.enabled:
        return SyncOutcome(account_id=account_id, status="disabled")
    token = acquire_sync_lock(account_id)
    if token is None:
        # Whoever holds the account queues one more pass when it is done; and if it released the lock before
        # it could see this request, the lock is free now and this call does the pass itself.
        _record(account_id, sync_again_requested=True)
        token = acquire_sync_lock(account_id)
        if token is None:
            return SyncOutcome(account_id=account_id, status="busy")
    _record(account_id, sync_again_requested=False)  # this pass serves every request made before it started
    started = timezone.now()
    _record(account_id, last_sync_status=SyncStatus.RUNNING)
    sink = AccountSink(account, lock_token=token, fetch_cycle_id=fetch_cycle_id)
    provider = get_provider(account)
    outcome = SyncOutcome(account_id=account_id, status="ok")
    try:
        provider.sync(sink)
        if account.provider != Provider.LOCAL:
            # Only after a complete pass: a message moved between folders is found in its new folder first.
            outcome.deleted = len(locations.mark_unlocated_deleted(account=account))
        signature = _provider_signature(provider)
    except ProviderError as exc:
        outcome.status = "error"
        outcome.error_category = exc.category if exc.category in KNOWN_CATEGORIES else ErrorCategory.OTHER
        outcome.error_message = str(exc)
        signature = None
    except SyncLockLost as exc:
        outcome.status = "error"
        outcome.error_category = ErrorCategory.OTHER
        outcome.error_message = str(exc)
        signature = None
    except Exception as exc:
        logger.exception("account %s: sync failed", account_id)
        outcome.status = "error"
        outcome.error_category = ErrorCategory.OTHER
        outcome.error_message = f"{type(exc).__name__}: {exc}"
        signature = None
    finally:
        provider.close()
    outcome.created = sink.totals.created
    outcome.duplicates = sink.totals.duplicates
    outcome.parse_errors = sink.totals.parse_errors
    outcome.located = sink.totals.located
    outcome.removed = sink.totals.removed
    outcome.created_ids = sink.totals.created_ids
    fields: dict[str, object] = {
        "last_sync_at": timezone.now(),
        "last_sync_status": SyncStatus.OK if outcome.status == "ok" else SyncStatus.ERROR,
        "last_error_category": outcome.error_category,
        "last_error_message": outcome.error_message[:2000],
        "last_sync_summary": {
            "created": outcome.created,
            "duplicates": outcome.duplicates,
            "parse_errors": outcome.parse_errors,
            "located": outcome.located,
            "removed": outcome.removed,
            "deleted": outcome.deleted,
            "seconds": round((timezone.now() - started).total_seconds(), 2),
        },
    }
    if signature is not None:
        fields["provider_signature"] = signature
    _record(account_id, **fields)
    release_sync_lock(account_id, token)
    if MailAccount.objects.filter(pk=account_id, sync_again_requested=True).exists():
        _queue_follow_up_sync(account_id)
    return outcome


def _queue_follow_up_sync(account_id: int) -> None:
    from django_q.tasks import async_task

    transaction.on_commit(
        lambda: async_task(
            "apps.accounts.tasks.sync_account_task", account_id, task_name=f"sync {account_id} (requested meanwhile)"
        )
    )


def _provider_signature(provider: object) -> str | None:
    getter = getattr(provider, "default_signature", None)
    if getter is None:
        return None
    try:
        return str(getter() or "")
    except ProviderError:
        return None

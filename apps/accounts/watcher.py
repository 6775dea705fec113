"""Push: new mail and server-side changes reach the store within seconds, not at the next fetcher cycle.

One thread per enabled account. IMAP accounts hold IDLE on INBOX (RFC 2177), with NOTIFY (RFC 5465) where
the server offers it so every folder's changes are reported too: any untagged response (EXISTS, EXPUNGE,
FETCH flags, STATUS of another folder, a renamed folder) ends the IDLE and runs an incremental sync; IDLE is
renewed before the
server's 30-minute limit, and a dropped connection is reopened with exponential backoff. Gmail and Outlook
have no push without a public URL (Gmail watch needs Pub/Sub, Graph subscriptions an HTTPS endpoint), so they
are polled with their cheap incremental cursors (history id, delta link) every POLL_SECONDS. Syncs take the
account's sync lock, so the watcher and the scheduled fetcher never sync one account twice at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from apps.accounts.models import MailAccount, Provider
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import ProviderError
from apps.accounts.providers.imap.provider import ImapProvider
from apps.accounts.sync import SyncOutcome, sync_account

logger = logging.getLogger(__name__)

IDLE_RENEW_SECONDS = 25 * 60
RESCAN_SECONDS = 30  # how often the enabled accounts are looked up again (new, removed, re-enabled)
IDLE_CHECK_SECONDS = 5
BACKOFF_START = 2.0
BACKOFF_MAX = 300.0


# RFC 5465: changes in every personal folder (not only the selected INBOX) are reported during IDLE as STATUS
# responses; Dovecot offers it. Without NOTIFY only INBOX is watched and other folders wait for the fetcher.
NOTIFY_SET = (
    b"SET (selected (MessageNew MessageExpunge FlagChange))"
    b" (personal (MessageNew MessageExpunge FlagChange MailboxName))"
)


def _enable_notify(client: Any) -> bool:
    if not client.has_capability("NOTIFY"):
        return False
    try:
        typ, _data = client._raw_command(b"NOTIFY", [NOTIFY_SET], uid=False)
    except Exception as exc:  # a server that advertises NOTIFY but refuses this SET: INBOX only
        logger.info("NOTIFY refused (%s): watching INBOX only", exc)
        return False
    return str(typ) == "OK"


@dataclass(slots=True)
class WatchStats:
    notify: bool = False
    syncs: int = 0
    reconnects: int = 0
    last_error: str = ""
    outcomes: list[SyncOutcome] = field(default_factory=list)


def poll_seconds() -> float:
    return float(getattr(settings, "MAILAGENT_WATCH_POLL_SECONDS", 60))


def _sync(account_id: int, stats: WatchStats) -> None:
    outcome = sync_account(account_id)
    stats.syncs += 1
    stats.outcomes = [*stats.outcomes[-9:], outcome]
    if outcome.status == "error":
        raise ProviderError(outcome.error_message or "sync failed", category=outcome.error_category or "other")
    if outcome.created or outcome.removed or outcome.deleted or outcome.located:
        logger.info(
            "account %s: pushed change synced (%d new, %d moved/copied, %d removed)",
            account_id,
            outcome.created,
            outcome.located,
            outcome.removed,
        )


def watch_imap_account(account_id: int, stop: threading.Event, stats: WatchStats) -> None:
    """Hold IDLE on INBOX; sync on every change. Returns when `stop` is set; raises on connection trouble."""
    account = MailAccount.objects.get(pk=account_id)
    provider = get_provider(account)
    assert isinstance(provider, ImapProvider)
    try:
        client = provider.connect()
        if not client.has_capability("IDLE"):
            raise ProviderError("the IMAP server does not offer IDLE", category="unsupported")
        stats.notify = _enable_notify(client)
        client.select_folder("INBOX", readonly=True)
        # Changes made while no IDLE was held (startup, a reconnect) are picked up first.
        _sync(account_id, stats)
        while not stop.is_set():
            client.idle()
            started = time.monotonic()
            changed = False
            try:
                while not stop.is_set() and time.monotonic() - started < IDLE_RENEW_SECONDS:
                    responses = client.idle_check(timeout=IDLE_CHECK_SECONDS)
                    if responses:
                        changed = True
                        break
            finally:
                client.idle_done()
            if changed:
                _sync(account_id, stats)
                # What changed while that sync ran may have been reported before IDLE resumes: one more
                # (cheap: CONDSTORE answers "unchanged" per folder) pass catches it.
                _sync(account_id, stats)
    finally:
        provider.close()


def watch_polled_account(account_id: int, stop: threading.Event, stats: WatchStats) -> None:
    while not stop.is_set():
        _sync(account_id, stats)
        stop.wait(poll_seconds())


def run_account_watch(account_id: int, stop: threading.Event, stats: WatchStats) -> None:
    """Watch one account until `stop`, reconnecting with backoff after any failure."""
    provider = MailAccount.objects.filter(pk=account_id).values_list("provider", flat=True).first()
    watch: Callable[[int, threading.Event, WatchStats], None] = (
        watch_imap_account if provider == Provider.IMAP else watch_polled_account
    )
    delay = BACKOFF_START
    try:
        while not stop.is_set():
            try:
                watch(account_id, stop, stats)
                delay = BACKOFF_START
            except MailAccount.DoesNotExist:
                return
            except ProviderError as exc:
                if exc.category == "unsupported":
                    # No IDLE: fall back to polling this account.
                    logger.warning("account %s: %s; polling every %ss instead", account_id, exc, poll_seconds())
                    watch = watch_polled_account
                    continue
                stats.last_error, stats.reconnects = str(exc), stats.reconnects + 1
                logger.warning("account %s: watch interrupted (%s); retrying in %.0fs", account_id, exc, delay)
            except Exception as exc:
                stats.last_error, stats.reconnects = f"{type(exc).__name__}: {exc}", stats.reconnects + 1
                logger.warning("account %s: watch failed (%s); retrying in %.0fs", account_id, exc, delay)
            stop.wait(delay)
            delay = min(BACKOFF_MAX, delay * 2)
    finally:
        close_old_connections()


class Watcher:
    """The accounts being watched; `refresh()` starts threads for new enabled accounts and stops removed ones."""

    def __init__(self, *, account_names: list[str] | None = None) -> None:
        self.account_names = account_names
        self.threads: dict[int, tuple[threading.Thread, threading.Event, WatchStats]] = {}

    def wanted(self) -> set[int]:
        accounts = MailAccount.objects.filter(enabled=True).exclude(provider=Provider.LOCAL)
        if self.account_names:
            accounts = accounts.filter(name__in=self.account_names)
        return set(accounts.values_list("pk", flat=True))

    def refresh(self) -> None:
        wanted = self.wanted()
        for account_id in list(self.threads):
            thread, stop, _ = self.threads[account_id]
            if account_id not in wanted or not thread.is_alive():
                stop.set()
                del self.threads[account_id]
        for account_id in wanted - set(self.threads):
            stop = threading.Event()
            stats = WatchStats()
            thread = threading.Thread(
                target=run_account_watch, args=(account_id, stop, stats), name=f"watch-{account_id}", daemon=True
            )
            self.threads[account_id] = (thread, stop, stats)
            thread.start()
            logger.info("watching account %s", account_id)

    def stop(self) -> None:
        for _thread, stop, _ in self.threads.values():
            stop.set()
        for thread, _, _ in self.threads.values():
            thread.join(timeout=IDLE_CHECK_SECONDS + 5)
        self.threads.clear()


def watch_mail_until(stop: threading.Event, *, account_names: list[str] | None = None) -> None:
    """Watch every enabled account (or those named) until `stop` is set: the loop of `manage.py watch_mail`,
    and of the watcher thread `manage.py background` runs beside the cluster."""
    watcher = Watcher(account_names=account_names)
    try:
        while not stop.is_set():
            watcher.refresh()
            stop.wait(RESCAN_SECONDS)
    finally:
        watcher.stop()

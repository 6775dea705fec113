"""The generation queue: one line per model configuration shared by every process (the web server's Ask runs,
the workers' director runs and organize agent), first come first served, at most `max_concurrency` requests
generating at once.

The line lives in the database every process already shares (SQLite or PostgreSQL), as GenerationTicket rows:
a request inserts its ticket (the id is its place), waits until fewer than `limit` tickets ahead of it are
generating or waiting, then marks itself active, calls the model, and deletes its ticket. The in-process
semaphore it replaces let each process send `max_concurrency` requests of its own, so a CPU model that can
serve one generation at a time got several, and all of them timed out.

A holder that dies never keeps its slot: a ticket whose process is gone (same machine: mailagent.liveness)
is deleted by the next waiter, and so is any ticket whose lease lapsed (`heartbeat_at` older than
LLM_QUEUE_LEASE_SECONDS: every process renews its tickets from one heartbeat thread while they wait or
generate), which covers holders on other machines. A request that waited longer than
LLM_QUEUE_MAX_WAIT_SECONDS gives up with LLMError(category="queue_timeout") saying how long it waited and how
many were ahead.

Where someone watches (an Ask run, a director run's page), `waiting_as(requester, on_wait)` names the
requests made inside it, so that `queue_position(requester)` finds them, and reports each change of position
to `on_wait` (None when the request's turn came).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Count
from django.utils import timezone

from apps.llm.client import LLMConfig, LLMError, use_generation_slots
from apps.llm.errors import endpoint_name
from apps.llm.models import GenerationTicket
from mailagent.liveness import holder_is_dead, process_identity

logger = logging.getLogger(__name__)

# A waiter re-reports an unchanged position this often, so a page that connects late sees it soon.
REPORT_EVERY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class QueuePosition:
    ahead: int  # requests before this one: those generating plus those waiting earlier in the line
    generating: int  # of those, how many are generating now
    waited: float  # seconds this request has waited so far

    @property
    def text(self) -> str:
        return f"waiting for the model: {self.ahead} ahead"


OnWait = Callable[[QueuePosition | None], None]
_watching: contextvars.ContextVar[tuple[str, OnWait | None]] = contextvars.ContextVar(
    "llm_queue_watching", default=("", None)
)


@contextmanager
def waiting_as(requester: str, on_wait: OnWait | None = None) -> Iterator[None]:
    """Requests made inside this block carry `requester` ("run:12", "ask:7") and report their place to
    `on_wait` while they wait (None once they generate)."""
    token = _watching.set((requester[:100], on_wait))
    try:
        yield
    finally:
        _watching.reset(token)


def lease_seconds() -> float:
    return max(1.0, float(getattr(settings, "LLM_QUEUE_LEASE_SECONDS", 30)))


def poll_seconds() -> float:
    return max(0.01, float(getattr(settings, "LLM_QUEUE_POLL_SECONDS", 0.25)))


def max_wait_seconds() -> float:
    return max(0.0, float(getattr(settings, "LLM_QUEUE_MAX_WAIT_SECONDS", 900)))


def _lock(key: str) -> None:
    """Serialise changes to one key's line, inside the caller's transaction. SQLite: every transaction here
    begins IMMEDIATE (mailagent/settings.py), which already takes the database's write lock. PostgreSQL: a
    transaction-scoped advisory lock on the key."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"mailagent.llm.queue:{key}"])


def _reclaim(key: str, now: dt.datetime) -> int:
    """Delete the key's tickets whose holder is gone: a lapsed lease, or a dead process on this machine."""
    stale = GenerationTicket.objects.filter(key=key, heartbeat_at__lt=now - dt.timedelta(seconds=lease_seconds()))
    removed = stale.delete()[0]
    holders = set(GenerationTicket.objects.filter(key=key).values_list("holder", flat=True))
    dead = [holder for holder in holders if holder_is_dead(holder)]
    if dead:
        removed += GenerationTicket.objects.filter(key=key, holder__in=dead).delete()[0]
    if removed:
        logger.warning("llm queue %s: reclaimed %d ticket(s) of processes that are gone", key, removed)
    return removed


def _counts(key: str, ticket_id: int) -> tuple[int, int]:
    """(generating, waiting before this ticket) in the key's line."""
    generating = GenerationTicket.objects.filter(key=key, active=True).count()
    waiting_before = GenerationTicket.objects.filter(key=key, active=False, pk__lt=ticket_id).count()
    return generating, waiting_before


def _line(key: str) -> tuple[int, int]:
    """(generating, waiting) in the key's line, in one query."""
    counts = dict(
        GenerationTicket.objects.filter(key=key)
        .values_list("active")
        .annotate(n=Count("pk"))
        .values_list("active", "n")
    )
    return int(counts.get(True, 0)), int(counts.get(False, 0))


def _my_turn(generating: int, waiting_before: int, limit: int) -> bool:
    # First come first served: of the free slots, the earliest waiters take them.
    return generating + waiting_before < limit


def _enqueue(key: str, limit: int, requester: str) -> tuple[int, bool]:
    """Insert this request's ticket; active at once when a slot is free and nobody waits."""
    now = timezone.now()
    with transaction.atomic():
        _lock(key)
        generating, waiting = _line(key)
        if not _my_turn(generating, waiting, limit) and _reclaim(key, now):  # only a full line looks for the dead
            generating, waiting = _line(key)
        active = _my_turn(generating, waiting, limit)
        ticket = GenerationTicket.objects.create(
            key=key,
            requester=requester,
            holder=process_identity(),
            active=active,
            enqueued_at=now,
            started_at=now if active else None,
            heartbeat_at=now,
        )
    return ticket.pk, active


def _try_start(key: str, ticket_id: int, limit: int) -> tuple[bool, int, int, bool]:
    """Under the key's lock: take a slot if it is this ticket's turn. (started, generating, waiting before,
    ticket still exists)."""
    now = timezone.now()
    with transaction.atomic():
        _lock(key)
        _reclaim(key, now)
        if not GenerationTicket.objects.filter(pk=ticket_id).exists():
            return False, 0, 0, False
        generating, waiting_before = _counts(key, ticket_id)
        if _my_turn(generating, waiting_before, limit):
            GenerationTicket.objects.filter(pk=ticket_id).update(active=True, started_at=now, heartbeat_at=now)
            return True, generating, waiting_before, True
    return False, generating, waiting_before, True


def _looks_blocked_by_the_dead(key: str, ticket_id: int, now: dt.datetime) -> bool:
    """Whether a ticket ahead has a lapsed lease or a dead holder (then the locked path reclaims it)."""
    ahead = GenerationTicket.objects.filter(key=key, pk__lt=ticket_id).values_list("holder", "heartbeat_at")
    lapsed = now - dt.timedelta(seconds=lease_seconds())
    return any(heartbeat < lapsed or holder_is_dead(holder) for holder, heartbeat in ahead)


class _Heartbeat:
    """One daemon thread per process renews the leases of its tickets (waiting or generating) every third of
    the lease. A ticket younger than that is left alone: a quick call writes nothing more than its ticket."""

    def __init__(self) -> None:
        self._tickets: dict[int, float] = {}  # id -> monotonic time of its last renewal
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, ticket_id: int) -> None:
        with self._lock:
            self._tickets[ticket_id] = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="llm-queue-heartbeat", daemon=True)
                self._thread.start()

    def discard(self, ticket_id: int) -> None:
        with self._lock:
            self._tickets.pop(ticket_id, None)

    def _due(self) -> list[int]:
        cutoff = time.monotonic() - lease_seconds() / 3
        with self._lock:
            due = [ticket_id for ticket_id, renewed in self._tickets.items() if renewed <= cutoff]
            for ticket_id in due:
                self._tickets[ticket_id] = time.monotonic()
            return due

    def _run(self) -> None:
        while True:
            time.sleep(max(0.05, lease_seconds() / 6))
            due = self._due()
            if not due:
                with self._lock:
                    if not self._tickets:
                        self._thread = None
                        return
                continue
            try:
                GenerationTicket.objects.filter(pk__in=due).update(heartbeat_at=timezone.now())
            except Exception:  # the next beat tries again; a lapsed lease only lets another request start
                logger.warning("llm queue: could not renew leases", exc_info=True)
            finally:
                close_old_connections()
                connection.close()  # idle between beats: hold no connection (the test database is dropped)


_heartbeat = _Heartbeat()


def _report(on_wait: OnWait | None, position: QueuePosition | None) -> None:
    if on_wait is None:
        return
    try:
        on_wait(position)
    except Exception:  # showing the position is best effort; the request goes on
        logger.warning("llm queue: the position could not be reported", exc_info=True)


def _queue_timeout(config: LLMConfig, waited: float, generating: int, waiting_before: int, limit: int) -> LLMError:
    where = endpoint_name(config.base_url, config.name)
    ahead = generating + waiting_before
    message = (
        f"{where}: waited {waited:.0f} s in the generation queue and gave up with {ahead} request"
        f"{'' if ahead == 1 else 's'} still ahead ({generating} generating, at most {limit} at a time). "
        "The model is busy: try again later, or raise the configuration's parallel requests if the server "
        "can serve more at once."
    )
    return LLMError(message, category="queue_timeout", endpoint=where)


@contextmanager
def generation_slot(config: LLMConfig) -> Iterator[None]:
    """Wait for a slot of `config.key` (at most LLM_QUEUE_MAX_WAIT_SECONDS), hold it for the block."""
    limit = max(1, int(config.max_concurrency))
    requester, on_wait = _watching.get()
    started = time.monotonic()
    ticket_id, active = _enqueue(config.key, limit, requester)
    _heartbeat.add(ticket_id)
    try:
        if not active:
            ticket_id = _wait_turn(config, ticket_id, limit, requester, on_wait, started)
            _report(on_wait, None)
        yield
    finally:
        _heartbeat.discard(ticket_id)
        GenerationTicket.objects.filter(pk=ticket_id).delete()


def _wait_turn(
    config: LLMConfig, ticket_id: int, limit: int, requester: str, on_wait: OnWait | None, started: float
) -> int:
    """Poll until this ticket may generate; returns its id (a new one if it had to queue again)."""
    deadline = started + max_wait_seconds()
    last: tuple[int, int] | None = None
    reported_at = 0.0
    while True:
        generating, waiting_before = _counts(config.key, ticket_id)
        if _my_turn(generating, waiting_before, limit) or _looks_blocked_by_the_dead(
            config.key, ticket_id, timezone.now()
        ):
            taken, generating, waiting_before, exists = _try_start(config.key, ticket_id, limit)
            if taken:
                return ticket_id
            if not exists:  # our own lease lapsed (a stalled process) and a waiter removed it: queue again
                _heartbeat.discard(ticket_id)
                ticket_id, active = _enqueue(config.key, limit, requester)
                _heartbeat.add(ticket_id)
                if active:
                    return ticket_id
                continue
        now = time.monotonic()
        if (generating, waiting_before) != last or now - reported_at >= REPORT_EVERY_SECONDS:
            last, reported_at = (generating, waiting_before), now
            _report(on_wait, QueuePosition(generating + waiting_before, generating, now - started))
        if now >= deadline:
            _heartbeat.discard(ticket_id)
            GenerationTicket.objects.filter(pk=ticket_id).delete()  # (the caller deletes the first ticket)
            raise _queue_timeout(config, now - started, generating, waiting_before, limit)
        time.sleep(poll_seconds())


def queue_position(requester: str) -> QueuePosition | None:
    """Where the earliest waiting request of `requester` stands in its line, or None if none waits."""
    ticket = GenerationTicket.objects.filter(requester=requester, active=False).order_by("pk").first()
    if ticket is None:
        return None
    generating, waiting_before = _counts(ticket.key, ticket.pk)
    waited = max(0.0, (timezone.now() - ticket.enqueued_at).total_seconds())
    return QueuePosition(generating + waiting_before, generating, waited)


def install() -> None:
    """Make the client take its slots from this queue (apps.llm's AppConfig.ready)."""
    use_generation_slots(generation_slot)

"""The outbox of the messages-stored hooks: nothing stored is left unindexed or unrouted for good.

`MessageOutbox.indexed_at` / `.routed_at` (one narrow row per message, inserted with it) are NULL until the
hook's work is done; the work itself sets them (`mark_done`) in the transaction that writes its result, so
"done" can never be claimed without it. A hook
that raises records a `HookFailure` (attempts, next attempt with exponential backoff, last error) through
`run_hook`; a process killed between the commit of the mail and the end of its hooks leaves the fields NULL
and nothing else. The sweeper (`sweep_outbox`, a django-q2 schedule) re-announces what is still to do
through the same hook, oldest first, respecting the backoff; the failures show on the home and Diagnostics
pages (`outbox_status`)."""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from apps.accounts.models import HookFailure, HookKind, Message, MessageOutbox
from apps.accounts.signals import messages_stored

logger = logging.getLogger(__name__)

DONE_FIELD = {HookKind.INDEX: "indexed_at", HookKind.ROUTE: "routed_at"}
# The hook of a freshly committed batch runs right after the commit in the storing process; the sweeper
# leaves it that long before it calls the batch lost.
GRACE = dt.timedelta(seconds=120)
BACKOFF_BASE = dt.timedelta(seconds=60)
BACKOFF_MAX = dt.timedelta(hours=6)
# From this many failed attempts on, a failure is shown as persistent (it is still retried).
PERSISTENT_ATTEMPTS = 3
SWEEP_BATCH = 200


def backoff(attempts: int) -> dt.timedelta:
    """1 min, 2, 4, … capped at 6 h after the n-th failed attempt."""
    return min(BACKOFF_MAX, BACKOFF_BASE * (2 ** max(0, min(attempts - 1, 20))))


def mark_done(*, kind: str, message_ids: Sequence[int], now: dt.datetime | None = None) -> int:
    """Called by the work, inside the transaction that writes its result. One UPDATE per 500 ids."""
    column = DONE_FIELD[HookKind(kind)]
    at = now or timezone.now()
    ids = list(message_ids)
    updated = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        updated += MessageOutbox.objects.filter(message_id__in=chunk).update(**{column: at})
    if ids and HookFailure.objects.filter(kind=kind).exists():
        for start in range(0, len(ids), 500):
            HookFailure.objects.filter(kind=kind, message_id__in=ids[start : start + 500]).delete()
    return updated


def record_failure(*, kind: str, message_ids: Sequence[int], error: str, now: dt.datetime | None = None) -> None:
    """One more failed attempt for each message (a vanished message is skipped)."""
    at = now or timezone.now()
    ids = list(dict.fromkeys(message_ids))
    text = error[:4000]
    with transaction.atomic():
        existing = dict(HookFailure.objects.filter(kind=kind, message_id__in=ids).values_list("message_id", "attempts"))
        by_attempts: dict[int, list[int]] = defaultdict(list)
        for message_id, attempts in existing.items():
            by_attempts[attempts + 1].append(message_id)
        for attempts, group in by_attempts.items():
            HookFailure.objects.filter(kind=kind, message_id__in=group).update(
                attempts=attempts, next_attempt_at=at + backoff(attempts), last_error=text, last_failed_at=at
            )
        live = set(Message.objects.filter(pk__in=[i for i in ids if i not in existing]).values_list("pk", flat=True))
        HookFailure.objects.bulk_create(
            [
                HookFailure(
                    message_id=message_id,
                    kind=kind,
                    attempts=1,
                    next_attempt_at=at + backoff(1),
                    last_error=text,
                    first_failed_at=at,
                    last_failed_at=at,
                )
                for message_id in ids
                if message_id in live
            ],
            ignore_conflicts=True,
            batch_size=500,
        )


def run_hook(
    *, kind: str, message_ids: Sequence[int], work: Callable[[list[int]], object], isolate: bool
) -> str | None:
    """Do `work(ids)`; on an error record a failed attempt instead of losing the messages. With `isolate`
    a failed batch is tried again one message at a time, so one bad message cannot hold back the others.
    Returns None when everything succeeded, else the (last) error as "Type: text"."""
    ids = list(message_ids)
    if not ids:
        return None
    try:
        work(ids)
        return None
    except Exception as exc:
        logger.exception("%s hook failed for %d messages", kind, len(ids))
        error = f"{type(exc).__name__}: {exc}"
        if isolate and len(ids) > 1:
            errors = [run_hook(kind=kind, message_ids=[one], work=work, isolate=False) for one in ids]
            return next((e for e in reversed(errors) if e is not None), None)
        record_failure(kind=kind, message_ids=ids, error=error)
        return error


def pending_ids(*, kind: str, message_ids: Iterable[int]) -> list[int]:
    """Those of these messages whose `kind` work is still to do."""
    column = DONE_FIELD[HookKind(kind)]
    ids = list(message_ids)
    found: list[int] = []
    for start in range(0, len(ids), 500):
        found.extend(
            MessageOutbox.objects.filter(
                message_id__in=ids[start : start + 500], **{f"{column}__isnull": True}
            ).values_list("message_id", flat=True)
        )
    return sorted(found)


def due_ids(*, kind: str, now: dt.datetime | None = None, limit: int = SWEEP_BATCH) -> list[tuple[int, int]]:
    """(message id, account id) of messages whose `kind` work is missing, past the grace period (or with a
    failure recorded) and not backing off after a failure; oldest first."""
    at = now or timezone.now()
    column = DONE_FIELD[HookKind(kind)]
    failed = HookFailure.objects.filter(message=OuterRef("message_id"), kind=kind)
    rows = (
        MessageOutbox.objects.filter(**{f"{column}__isnull": True})
        .filter(Q(stored_at__lt=at - GRACE) | Exists(failed))  # a recorded failure: its hook has finished
        .filter(~Exists(failed.filter(next_attempt_at__gt=at)))
        .order_by("stored_at", "message_id")
        .values_list("message_id", "message__account_id")[:limit]
    )
    return list(rows)


@dataclass(slots=True)
class SweepResult:
    announced: dict[str, int] = field(default_factory=dict)


def sweep_outbox(*, now: dt.datetime | None = None, limit: int = SWEEP_BATCH) -> SweepResult:
    """Re-announce, per kind and account, the messages whose hook work is due. The receivers do the work
    (and mark it done) or record another failed attempt."""
    result = SweepResult()
    for kind in HookKind:
        due = due_ids(kind=kind, now=now, limit=limit)
        by_account: dict[int, list[int]] = defaultdict(list)
        for message_id, account_id in due:
            by_account[account_id].append(message_id)
        for account_id, ids in by_account.items():
            messages_stored.send(
                sender=Message, account_id=account_id, message_ids=[], retry_ids=ids, retry_kinds=[kind.value]
            )
        result.announced[kind.value] = len(due)
    return result


@dataclass(slots=True)
class OutboxKindStatus:
    kind: str
    label: str
    pending: int = 0
    failing: int = 0
    persistent: int = 0
    last_error: str = ""
    last_failed_at: dt.datetime | None = None


@dataclass(slots=True)
class OutboxStatus:
    kinds: list[OutboxKindStatus]

    @property
    def pending(self) -> int:
        return sum(k.pending for k in self.kinds)

    @property
    def persistent(self) -> int:
        return sum(k.persistent for k in self.kinds)

    @property
    def failing(self) -> int:
        return sum(k.failing for k in self.kinds)


def outbox_status(*, owner: Any = None, now: dt.datetime | None = None) -> OutboxStatus:
    """Counts for the home page (one owner's mail) and Diagnostics (everyone's: owner=None). "Pending"
    leaves out the grace period, so a batch being indexed right now is not reported."""
    at = now or timezone.now()
    outbox = MessageOutbox.objects.all()
    messages = outbox if owner is None else outbox.filter(message__account__owner=owner)
    failures = HookFailure.objects.all() if owner is None else HookFailure.objects.filter(message__account__owner=owner)
    # One count per kind, each answered from its partial index (only the rows with work left).
    counts = {
        kind.value: messages.filter(**{f"{DONE_FIELD[kind]}__isnull": True}, stored_at__lt=at - GRACE).count()
        for kind in HookKind
    }
    stats = {
        row["kind"]: row
        for row in failures.values("kind").annotate(
            failing=Count("pk"),
            persistent=Count("pk", filter=Q(attempts__gte=PERSISTENT_ATTEMPTS)),
            last_failed_at=Max("last_failed_at"),
        )
    }
    kinds: list[OutboxKindStatus] = []
    for kind in HookKind:
        status = OutboxKindStatus(kind=kind.value, label=kind.label, pending=counts[kind.value])
        row = stats.get(kind.value)
        if row:
            status.failing = row["failing"]
            status.persistent = row["persistent"]
            status.last_failed_at = row["last_failed_at"]
            status.last_error = (
                failures.filter(kind=kind.value).order_by("-last_failed_at").values_list("last_error", flat=True)[:1]
            )[0]
        kinds.append(status)
    return OutboxStatus(kinds=kinds)

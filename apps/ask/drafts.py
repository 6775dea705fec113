"""Follow-up drafts: which of my threads wait for an answer, and the text of a polite nudge;
create_follow_up_drafts writes the Draft rows (one per waiting thread, never sent)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from apps.accounts.models import MailAccount, Message
from apps.ask.models import Draft
from apps.search.backends import get_search_backend
from apps.search.backends.base import SearchFilters


@dataclass(slots=True)
class FollowUpTarget:
    account: MailAccount
    thread_id: int
    subject: str
    last_sent: Message
    waiting_for: list[dict[str, str]] = field(default_factory=list)
    has_draft: bool = False


def _people(entries: Any) -> list[dict[str, str]]:
    if not isinstance(entries, list):
        return []
    return [
        {"name": str(e.get("name") or ""), "address": str(e.get("address") or "").lower()}
        for e in entries
        if isinstance(e, dict) and e.get("address")
    ]


def topic_thread_ids(topic_terms: list[str], account_ids: tuple[int, ...]) -> set[int] | None:
    """Threads whose messages mention the topic (None: no topic given, every thread qualifies)."""
    if not topic_terms:
        return None
    hits = get_search_backend().keyword(
        " ".join(topic_terms), filters=SearchFilters(account_ids=account_ids), limit=200, snippets=False
    )
    message_ids = {hit.message_id for hit in hits if hit.message_id is not None}
    return set(Message.objects.filter(pk__in=message_ids, thread__isnull=False).values_list("thread_id", flat=True))


def find_unanswered_threads(
    *, owner: Any, accounts: list[MailAccount], topic_terms: list[str], min_days: int, now: dt.datetime
) -> list[FollowUpTarget]:
    """Threads where I wrote to people who have not written back since, my last message to them being at
    least `min_days` old. Each target names who we are waiting for."""
    mine = {a.address.lower() for a in accounts if a.address}
    if not mine:
        return []
    account_ids = tuple(a.pk for a in accounts)
    by_id = {a.pk: a for a in accounts}
    topic_threads = topic_thread_ids(topic_terms, account_ids)
    sent = Message.objects.filter(account_id__in=account_ids, from_address__in=mine, thread__isnull=False)
    if topic_threads is not None:
        sent = sent.filter(thread_id__in=topic_threads)
    thread_ids = set(sent.values_list("thread_id", flat=True)[:500])
    if not thread_ids:
        return []
    messages: dict[int, list[Message]] = {}
    for message in (
        Message.objects.filter(thread_id__in=thread_ids)
        .only("id", "thread_id", "account_id", "from_address", "to", "cc", "subject", "date", "message_id")
        .order_by("date", "pk")
    ):
        messages.setdefault(message.thread_id or 0, []).append(message)
    drafted = set(Draft.objects.filter(owner=owner, thread_id__in=thread_ids).values_list("thread_id", flat=True))
    cutoff = now - dt.timedelta(days=min_days)
    targets: list[FollowUpTarget] = []
    for thread_id, items in sorted(messages.items()):
        # Someone who wrote in the thread after I first wrote to them has replied, whatever came later.
        waiting: dict[str, dict[str, str]] = {}
        last_to: dict[str, Message] = {}
        replied: set[str] = set()
        for message in items:
            sender = message.from_address.lower()
            if sender in mine:
                for person in [*_people(message.to), *_people(message.cc)]:
                    if person["address"] not in mine and person["address"] not in replied:
                        waiting.setdefault(person["address"], person)
                        last_to[person["address"]] = message
            elif sender in waiting:
                replied.add(sender)
                del waiting[sender]
                last_to.pop(sender, None)
        due = [p for address, p in waiting.items() if _sent_before(last_to[address], cutoff)]
        if not due:
            continue
        last_sent = max((last_to[p["address"]] for p in due), key=lambda m: (m.date or cutoff, m.pk))
        targets.append(
            FollowUpTarget(
                account=by_id[last_sent.account_id],
                thread_id=thread_id,
                subject=items[0].subject,
                last_sent=last_sent,
                waiting_for=due,
                has_draft=thread_id in drafted,
            )
        )
    return targets


def _sent_before(message: Message, cutoff: dt.datetime) -> bool:
    return message.date is not None and message.date <= cutoff


def reply_subject(subject: str) -> str:
    stripped = subject.strip()
    return stripped if stripped.lower().startswith("re:") else f"Re: {stripped}"


def follow_up_body(target: FollowUpTarget) -> str:
    names = [p["name"].split()[0] if p["name"] else p["address"].split("@")[0] for p in target.waiting_for]
    greeting = "Hi " + ", hi ".join(names) + ","
    when = f" from {target.last_sent.date:%-d %B}" if target.last_sent.date else ""
    topic = target.subject.strip() or "my last message"
    body = (
        f"{greeting}\n\n"
        f"I'm following up on my message about “{topic}”{when}. "
        "Could you let me know where things stand, or when I can expect an answer?\n\n"
        "Thank you!"
    )
    signature = target.account.signature.strip() or target.account.display_name.strip()
    if signature:
        body += f"\n\n-- \n{signature}"
    return body


def create_follow_up_drafts(
    *, owner: Any, targets: list[FollowUpTarget], ask_run_id: Any = None
) -> tuple[list[Draft], list[int]]:
    """One reviewable Draft per waiting thread; threads that already have a draft are skipped."""
    created: list[Draft] = []
    skipped: list[int] = []
    for target in targets:
        with transaction.atomic():
            # Locked re-check: two runs racing on the same thread create one draft.
            exists = Draft.objects.select_for_update().filter(owner=owner, thread_id=target.thread_id).exists()
            if exists:
                target.has_draft = True
                skipped.append(target.thread_id)
                continue
            draft = Draft.objects.create(
                owner=owner,
                account=target.account,
                thread_id=target.thread_id,
                in_reply_to=target.last_sent,
                ask_run_id=ask_run_id,
                to=[{"name": p["name"], "address": p["address"]} for p in target.waiting_for],
                subject=reply_subject(target.subject),
                body=follow_up_body(target),
            )
            target.has_draft = False
            created.append(draft)
    return created, skipped

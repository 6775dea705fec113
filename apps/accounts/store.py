"""Storing fetched messages: parse, dedupe, thread, insert and advance the cursor in one transaction.

Every provider and the local importer end here. The batch is parsed outside the transaction (CPU only),
then one short transaction inserts what is new, gives every item its location and writes the checkpoint
that follows it, so a crash either keeps the whole batch and its cursor or neither. Unique (account,
dedupe_key) on messages and (folder, provider_id) on locations make any replay harmless.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.accounts import locations
from apps.accounts.identity import dedupe_key_for_parsed
from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, MessageOutbox, Thread
from apps.accounts.parsing import ParsedMessage, parse_message
from apps.accounts.providers.base import Checkpoint, RemoteMessage, StoreResult
from apps.accounts.signals import messages_stored
from mailagent.bulk import insert_rows, insert_values

REPLY_PREFIX = re.compile(r"^\s*((re|fw|fwd|aw|wg|sv|vs|antw|ynt|ilt|tr|rv|res|enc)\s*(\[\d+\])?\s*:\s*)+", re.I)
SUBJECT_THREAD_WINDOW = dt.timedelta(days=45)


def normalize_subject(subject: str) -> str:
    return " ".join(REPLY_PREFIX.sub("", subject or "").split()).lower()[:998]


def is_reply_subject(subject: str) -> bool:
    return bool(REPLY_PREFIX.match(subject or ""))


@dataclass(slots=True)
class _Incoming:
    remote: RemoteMessage
    parsed: ParsedMessage
    provider_id: str
    dedupe_key: str


def dedupe_key_for(parsed: ParsedMessage) -> str:
    return dedupe_key_for_parsed(parsed)


def cache_attachment_bytes(payload: bytes) -> tuple[str, str]:
    """Content-addressed cache under ATTACHMENT_CACHE_DIR; returns (relative path, sha256)."""
    digest = hashlib.sha256(payload).hexdigest()
    relative = f"{digest[:2]}/{digest}"
    target = Path(settings.ATTACHMENT_CACHE_DIR) / relative
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        tmp.write_bytes(payload)
        tmp.replace(target)
    return relative, digest


def parse_batch(messages: list[RemoteMessage], *, keep_payloads: bool) -> list[_Incoming]:
    """Parse a batch; the same (folder, provider id) twice in one batch is kept once. Two items with one
    content key stay: they are one message in two places (or twice in one folder, as IMAP allows)."""
    incoming: list[_Incoming] = []
    seen_places: set[tuple[str, str]] = set()
    for remote in messages:
        parsed = parse_message(remote.raw, keep_attachment_payloads=keep_payloads)
        if parsed.date is None and remote.internal_date is not None:
            # No usable Date header: the server's arrival time is the best date there is.
            parsed.date = remote.internal_date
        provider_id = remote.provider_id or f"local:{parsed.raw_sha256}"
        if (remote.folder, provider_id) in seen_places:
            continue
        seen_places.add((remote.folder, provider_id))
        incoming.append(
            _Incoming(remote=remote, parsed=parsed, provider_id=provider_id, dedupe_key=dedupe_key_for(parsed))
        )
    return incoming


def store_remote_messages(
    *,
    account: MailAccount,
    messages: list[RemoteMessage],
    checkpoint: Checkpoint | None = None,
    keep_payloads: bool = False,
    fetch_cycle_id: int | None = None,
    route_regardless_of_date: bool = False,
) -> StoreResult:
    incoming = parse_batch(messages, keep_payloads=keep_payloads)
    in_batch_duplicates = len(messages) - len(incoming)
    unfinished: list[int] = []
    with transaction.atomic():
        result = _insert(
            account=account, incoming=incoming, unfinished=unfinished, route_regardless_of_date=route_regardless_of_date
        )
        if checkpoint is not None:
            apply_checkpoint(account=account, checkpoint=checkpoint)
        result.duplicates += in_batch_duplicates
        changed = locations.refresh_messages(account=account, message_ids=result.located_ids)
        if result.created_ids or unfinished or changed:
            created = list(result.created_ids)
            retry = list(dict.fromkeys([*unfinished, *changed]))
            # Known messages whose hooks never finished (a crash after their commit) get them again now;
            # messages that gained a place are re-indexed (locations.refresh_messages reopened their outbox).
            transaction.on_commit(
                lambda: messages_stored.send(
                    sender=Message,
                    account_id=account.pk,
                    message_ids=created,
                    fetch_cycle_id=fetch_cycle_id,
                    retry_ids=retry,
                    retry_kinds=None,
                )
            )
    return result


def apply_checkpoint(*, account: MailAccount, checkpoint: Checkpoint) -> None:
    if checkpoint.account_cursor is not None:
        MailAccount.objects.filter(pk=account.pk).update(sync_cursor=checkpoint.account_cursor)
        account.sync_cursor = checkpoint.account_cursor
    if checkpoint.folder:
        fields: dict[str, object] = {"last_synced_at": timezone.now()}
        if checkpoint.uidvalidity is not None:
            fields["uidvalidity"] = checkpoint.uidvalidity
        if checkpoint.last_uid is not None:
            fields["last_uid"] = checkpoint.last_uid
        if checkpoint.sync_token is not None:
            fields["sync_token"] = checkpoint.sync_token
        updated = MailFolder.objects.filter(account=account, name=checkpoint.folder).update(**fields)
        if not updated:
            MailFolder.objects.create(account=account, name=checkpoint.folder, **fields)


def _insert(
    *, account: MailAccount, incoming: list[_Incoming], unfinished: list[int], route_regardless_of_date: bool = False
) -> StoreResult:
    """Insert what is new and give every item its location; `unfinished` gets the already-stored messages
    whose index or routing is missing. An item whose place is already stored is a duplicate; an item whose
    content is already stored (a copy, a move, a resync after a UIDVALIDITY change) only gets a location."""
    result = StoreResult()
    if not incoming:
        return result
    folders = locations.folders_by_name(account=account, names={item.remote.folder for item in incoming})
    keys = [item.dedupe_key for item in incoming]
    existing_by_key = {
        row["dedupe_key"]: row
        for row in Message.objects.filter(account=account, dedupe_key__in=keys).values(
            "id", "dedupe_key", "outbox__indexed_at", "outbox__routed_at"
        )
    }
    unfinished.extend(
        row["id"]
        for row in existing_by_key.values()
        if row["outbox__indexed_at"] is None or row["outbox__routed_at"] is None
    )
    placed = locations.existing_places(account=account, provider_ids=[item.provider_id for item in incoming])
    fresh: list[_Incoming] = []
    fresh_keys: set[str] = set()
    places: list[tuple[_Incoming, int | None]] = []  # (item, known message pk or None = the fresh row)
    for item in incoming:
        folder = folders[item.remote.folder]
        if (folder.pk, item.provider_id) in placed:
            result.duplicates += 1
            continue
        known = existing_by_key.get(item.dedupe_key)
        if known is not None:
            result.duplicates += 1
            places.append((item, int(known["id"])))
        elif item.dedupe_key in fresh_keys:
            result.duplicates += 1
            places.append((item, None))
        else:
            fresh.append(item)
            fresh_keys.add(item.dedupe_key)
            places.append((item, None))

    created_ids: list[int] = []
    if fresh:
        thread_ids = _assign_threads(account=account, fresh=fresh)
        rows = [_message_row(account, item, thread_id) for item, thread_id in zip(fresh, thread_ids, strict=True)]
        created_ids = insert_values(Message, rows, batch_size=500)
        stored_at = timezone.now()
        insert_values(
            MessageOutbox,
            [
                {"message_id": pk, "stored_at": stored_at, "route_regardless_of_date": route_regardless_of_date}
                for pk in created_ids
            ],
            batch_size=500,
        )
        _insert_attachments(fresh, created_ids)
        _refresh_thread_aggregates(set(thread_ids))
    by_key = {item.dedupe_key: pk for item, pk in zip(fresh, created_ids, strict=True)}
    new_places = [
        locations.NewPlace(
            message_id=known_pk if known_pk is not None else by_key[item.dedupe_key],
            folder=folders[item.remote.folder],
            provider_id=item.provider_id,
            uid=item.remote.uid,
            seen=item.remote.seen,
            flagged=item.remote.flagged,
            global_id=item.remote.global_id,
            provisional=item.remote.provisional,
            keywords=tuple(item.remote.keywords),
        )
        for item, known_pk in places
    ]
    locations.add_places(account=account, places=new_places)
    result.created = len(created_ids)
    result.created_ids = created_ids
    result.located_ids = sorted({pk for _, pk in places if pk is not None})
    result.parse_errors = sum(1 for item in fresh if item.parsed.parse_error)
    return result


def _insert_attachments(fresh: list[_Incoming], created_ids: list[int]) -> None:
    attachments: list[Attachment] = []
    for message_pk, item in zip(created_ids, fresh, strict=True):
        for parsed_attachment in item.parsed.attachments:
            cache_path = sha = ""
            if parsed_attachment.payload is not None:
                cache_path, sha = cache_attachment_bytes(parsed_attachment.payload)
            attachments.append(
                Attachment(
                    message_id=message_pk,
                    filename=parsed_attachment.filename[:512],
                    mime_type=parsed_attachment.mime_type[:255] or "application/octet-stream",
                    size=parsed_attachment.size,
                    content_id=parsed_attachment.content_id[:998],
                    is_inline=parsed_attachment.is_inline,
                    disposition=parsed_attachment.disposition,
                    is_crypto_part=parsed_attachment.is_crypto_part,
                    provider_ref=item.remote.attachment_refs.get(
                        parsed_attachment.part_ref, parsed_attachment.part_ref
                    )[:2048],
                    cache_path=cache_path,
                    sha256=sha,
                )
            )
    if attachments:
        insert_rows(attachments, batch_size=500)


def _message_row(account: MailAccount, item: _Incoming, thread_id: int) -> dict[str, Any]:
    """The new Message row as {attname: value} (see mailagent.bulk.insert_values)."""
    parsed = item.parsed
    remote = item.remote
    sender = parsed.from_
    labels = list(remote.labels)
    if remote.folder and remote.folder not in labels:
        labels.insert(0, remote.folder)
    return dict(
        account_id=account.pk,
        thread_id=thread_id,
        provider_id=item.provider_id[:512],
        dedupe_key=item.dedupe_key,
        message_id=parsed.message_id[:998],
        in_reply_to=parsed.in_reply_to[:998],
        references=" ".join(parsed.references),
        folder=remote.folder[:512],
        labels=labels,
        from_name=(sender.name if sender else "")[:512],
        from_address=(sender.address if sender else "")[:320],
        to=[a.as_dict() for a in parsed.to],
        cc=[a.as_dict() for a in parsed.cc],
        bcc=[a.as_dict() for a in parsed.bcc],
        reply_to=[a.as_dict() for a in parsed.reply_to],
        subject=parsed.subject,
        date=parsed.date,
        body_text=parsed.body_text,
        body_html=parsed.body_html,
        snippet=parsed.snippet[:300],
        size=parsed.size,
        seen=remote.seen,
        flagged=remote.flagged,
        has_attachments=bool(parsed.attachments),
        raw_headers=parsed.raw_headers,
        parse_error=parsed.parse_error,
    )


def _assign_threads(*, account: MailAccount, fresh: list[_Incoming]) -> list[int]:
    """Thread by References/In-Reply-To, then the provider's thread id, then reply subject; else a new thread."""
    referenced: set[str] = set()
    for item in fresh:
        referenced.update(item.parsed.references)
        if item.parsed.in_reply_to:
            referenced.add(item.parsed.in_reply_to)
    own_ids = [item.parsed.message_id for item in fresh if item.parsed.message_id]
    by_message_id: dict[str, int | Thread] = {}
    if referenced:
        by_message_id.update(
            Message.objects.filter(account=account, message_id__in=list(referenced), thread__isnull=False)
            .values_list("message_id", "thread_id")
            .iterator()
        )
    # Replies stored before their parent: the parent joins the replies' thread.
    children_thread: dict[str, int] = {}
    if own_ids:
        for parent_id, thread_id in Message.objects.filter(
            account=account, in_reply_to__in=own_ids, thread__isnull=False
        ).values_list("in_reply_to", "thread_id"):
            children_thread.setdefault(parent_id, thread_id)
    provider_thread_ids = {item.remote.provider_thread_id for item in fresh if item.remote.provider_thread_id}
    by_provider_thread: dict[str, int | Thread] = {}
    if provider_thread_ids:
        by_provider_thread.update(
            Thread.objects.filter(account=account, provider_thread_id__in=provider_thread_ids).values_list(
                "provider_thread_id", "pk"
            )
        )
    reply_subjects = {normalize_subject(i.parsed.subject) for i in fresh if is_reply_subject(i.parsed.subject)}
    reply_subjects.discard("")
    by_subject: dict[str, list[tuple[dt.datetime | None, int | Thread]]] = {}
    if reply_subjects:
        for key, last, pk in Thread.objects.filter(account=account, subject_key__in=reply_subjects).values_list(
            "subject_key", "last_message_at", "pk"
        ):
            by_subject.setdefault(key, []).append((last, pk))

    new_threads: list[Thread] = []
    resolved: list[int | Thread] = []
    for item in fresh:
        parsed = item.parsed
        chosen: int | Thread | None = None
        for ref in [parsed.in_reply_to, *reversed(parsed.references)]:
            if ref and ref in by_message_id:
                chosen = by_message_id[ref]
                break
        if chosen is None and parsed.message_id in children_thread:
            chosen = children_thread[parsed.message_id]
        provider_thread = item.remote.provider_thread_id[:255]
        if chosen is None and provider_thread:
            chosen = by_provider_thread.get(provider_thread)
        subject_key = normalize_subject(parsed.subject)
        if chosen is None and subject_key and is_reply_subject(parsed.subject):
            chosen = _closest_thread(by_subject.get(subject_key, []), parsed.date)
        if chosen is None:
            chosen = Thread(
                account=account,
                provider_thread_id=provider_thread,
                subject=REPLY_PREFIX.sub("", parsed.subject).strip()[:998],
                subject_key=subject_key,
            )
            new_threads.append(chosen)
            if provider_thread:
                by_provider_thread[provider_thread] = chosen
            if subject_key:
                by_subject.setdefault(subject_key, []).append((parsed.date, chosen))
        if parsed.message_id:
            by_message_id[parsed.message_id] = chosen
        resolved.append(chosen)
    if new_threads:
        insert_rows(new_threads, batch_size=500)
    return [value.pk if isinstance(value, Thread) else value for value in resolved]


def _closest_thread(
    candidates: list[tuple[dt.datetime | None, int | Thread]], when: dt.datetime | None
) -> int | Thread | None:
    best: tuple[dt.timedelta, int | Thread] | None = None
    for last, pk in candidates:
        if when is None or last is None:
            distance = dt.timedelta(0) if when is None and last is None else SUBJECT_THREAD_WINDOW
        else:
            distance = abs(when - last)
        if distance < SUBJECT_THREAD_WINDOW and (best is None or distance < best[0]):
            best = (distance, pk)
    return best[1] if best else None


def _refresh_thread_aggregates(thread_ids: set[int]) -> None:
    """Recount the threads that just got messages: one correlated UPDATE (index mail_message_thread_date covers it).

    Every id here is the thread of a row just inserted, so each has at least one message."""
    if not thread_ids:
        return
    thread_table = connection.ops.quote_name(Thread._meta.db_table)
    message_table = connection.ops.quote_name(Message._meta.db_table)
    ids = sorted(thread_ids)
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            placeholders = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"UPDATE {thread_table} SET (message_count, first_message_at, last_message_at) ="  # noqa: S608
                f" (SELECT COUNT(m.id), MIN(m.date), MAX(m.date) FROM {message_table} m"
                f" WHERE m.thread_id = {thread_table}.id) WHERE id IN ({placeholders})",
                chunk,
            )

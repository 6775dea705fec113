"""Where each message is: locations (folder + provider id + per-place flags) and the message state they give.

A message's visible state follows from its locations: its primary folder and provider id are those of its
first live location (links, attachment fetches), it is read when every copy is \\Seen, starred when any copy
is \\Flagged, and deleted on the server when no location is left. A change the search index must see (a
message gone or back) reopens the message's index work in the outbox in the same transaction and announces it
on commit, so the index follows the mailbox even if the process dies right after the commit (the outbox
sweeper finishes it). Folders and flags are read from here by the index's filters, never copied into it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import CharField, Exists, OuterRef, Value
from django.db.models.functions import Concat, Substr
from django.utils import timezone

from apps.accounts import labels
from apps.accounts.models import HookKind, MailAccount, MailFolder, Message, MessageLocation, MessageOutbox
from apps.accounts.signals import messages_stored

CHUNK = 500


@dataclass(slots=True)
class NewPlace:
    message_id: int
    folder: MailFolder
    provider_id: str
    uid: int | None = None
    seen: bool = False
    flagged: bool = False
    global_id: bool = False
    provisional: bool = False
    keywords: tuple[str, ...] = ()  # label keywords on the server (labels.label_keywords)


@dataclass(frozen=True, slots=True)
class KnownPlace:
    """A place on the server of a message already stored (recognised without downloading it)."""

    message_id: int
    provider_id: str
    uid: int | None = None
    seen: bool = False
    flagged: bool = False
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Place:
    location_id: int
    message_id: int
    uid: int | None
    seen: bool
    flagged: bool
    rfc_message_id: str = ""
    keywords: tuple[str, ...] = ()


def _chunks(values: Sequence[Any]) -> Iterable[list[Any]]:
    items = list(values)
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def folders_by_name(*, account: MailAccount, names: Iterable[str]) -> dict[str, MailFolder]:
    wanted = set(names)
    found = {folder.name: folder for folder in MailFolder.objects.filter(account=account, name__in=wanted)}
    for name in wanted - set(found):
        found[name], _ = MailFolder.objects.get_or_create(account=account, name=name[:512])
    return found


def existing_places(*, account: MailAccount, provider_ids: Sequence[str]) -> set[tuple[int, str]]:
    places: set[tuple[int, str]] = set()
    for chunk in _chunks(list(dict.fromkeys(provider_ids))):
        places.update(
            MessageLocation.objects.filter(account=account, provider_id__in=chunk).values_list(
                "folder_id", "provider_id"
            )
        )
    return places


def add_places(*, account: MailAccount, places: Sequence[NewPlace]) -> None:
    """Store new locations. A provider id that names the message wherever it is (global_id) and is stored in
    another folder is the message having moved there: the old location goes."""
    moved = [place.provider_id for place in places if place.global_id]
    carried: dict[str, list[str]] = {}
    for chunk in _chunks(moved):
        for place in [p for p in places if p.provider_id in set(chunk)]:
            elsewhere = MessageLocation.objects.filter(account=account, provider_id=place.provider_id).exclude(
                folder=place.folder
            )
            # The place moves: the labels it had move with it (a later label diff compares against them).
            for keywords in elsewhere.values_list("keywords", flat=True):
                carried.setdefault(place.provider_id, list(keywords or []))
            elsewhere.delete()
    MessageLocation.objects.bulk_create(
        [
            MessageLocation(
                account=account,
                message_id=place.message_id,
                folder=place.folder,
                provider_id=place.provider_id[:512],
                uid=place.uid,
                seen=place.seen,
                flagged=place.flagged,
                provisional=place.provisional,
                keywords=list(place.keywords) or carried.get(place.provider_id, []),
            )
            for place in places
        ],
        batch_size=CHUNK,
        ignore_conflicts=True,
    )
    # The server's labels on a place become the message's tags (the sync's "server wins").
    _attach_keyword_tags(account, {(place.message_id, kw) for place in places for kw in place.keywords})
    # A message the server now names in a real place loses its provisional one.
    confirmed = sorted({place.message_id for place in places if not place.provisional})
    for chunk in _chunks(confirmed):
        MessageLocation.objects.filter(message_id__in=chunk, provisional=True).delete()


def folder_places(*, folder: MailFolder) -> dict[str, Place]:
    """provider id → Place for every location in one folder the server has named (not provisional ones)."""
    return {
        row[1]: Place(
            location_id=row[0],
            message_id=row[2],
            uid=row[3],
            seen=row[4],
            flagged=row[5],
            rfc_message_id=row[6],
            keywords=tuple(row[7] or ()),
        )
        for row in MessageLocation.objects.filter(folder=folder, provisional=False).values_list(
            "pk", "provider_id", "message_id", "uid", "seen", "flagged", "message__message_id", "keywords"
        )
    }


def _attach_keyword_tags(account: MailAccount, pairs: Iterable[tuple[int, str]]) -> None:
    tags: dict[int, set[str]] = defaultdict(set)
    for message_id, keyword in pairs:
        name = labels.keyword_to_tag(keyword)
        if name is not None:
            tags[message_id].add(name)
    if tags:
        labels.attach_tags(owner_id=account.owner_id, tags=dict(tags))


def update_keywords(
    *, account: MailAccount, changes: dict[str, tuple[str, ...]], folder: MailFolder | None = None
) -> int:
    """provider id → the label keywords the server now reports for a place (in `folder` when given). A keyword that
    appeared adds its tag to the message; one that disappeared takes the tag off, unless another place of the
    message still carries it (the message's server labels are those of all its places). Returns how many
    places changed."""
    if not changes:
        return 0
    with transaction.atomic():
        added: set[tuple[int, str]] = set()
        dropped: dict[int, set[str]] = defaultdict(set)
        updated: list[MessageLocation] = []
        for chunk in _chunks(list(changes)):
            rows = MessageLocation.objects.filter(account=account, provider_id__in=chunk)
            if folder is not None:
                rows = rows.filter(folder=folder)
            for location in rows.only("pk", "provider_id", "message_id", "keywords"):
                before = {_keyword_tag_key(kw): kw for kw in location.keywords or ()}
                after = {_keyword_tag_key(kw): kw for kw in changes[location.provider_id]}
                if set(before) == set(after) and sorted(before.values()) == sorted(after.values()):
                    continue
                location.keywords = sorted(after.values())
                updated.append(location)
                added.update((location.message_id, after[key]) for key in set(after) - set(before))
                for key in set(before) - set(after):
                    dropped[location.message_id].add(before[key])
        if updated:
            MessageLocation.objects.bulk_update(updated, ["keywords"], batch_size=CHUNK)
        _attach_keyword_tags(account, added)
        if dropped:
            # A tag stays while any place of the message still has its keyword.
            still: dict[int, set[str]] = defaultdict(set)
            for message_id, keywords in MessageLocation.objects.filter(message_id__in=list(dropped)).values_list(
                "message_id", "keywords"
            ):
                still[message_id].update(_keyword_tag_key(kw) for kw in keywords or ())
            gone: dict[int, set[str]] = {}
            for message_id, keywords in dropped.items():
                names = {labels.keyword_to_tag(kw) for kw in keywords}
                gone[message_id] = {
                    name for name in names if name is not None and labels.tag_key(name) not in still[message_id]
                }
            labels.detach_tags(owner_id=account.owner_id, tags=gone)
    return len(updated)


def _keyword_tag_key(keyword: str) -> str:
    name = labels.keyword_to_tag(keyword)
    return labels.tag_key(name if name is not None else keyword)


def places_of(*, account: MailAccount, provider_ids: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    """provider id → [(folder name, location id)] of the server-named locations with these ids."""
    found: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for chunk in _chunks(list(dict.fromkeys(provider_ids))):
        for provider_id, folder, pk in (
            MessageLocation.objects.filter(account=account, provider_id__in=chunk, provisional=False)
            .order_by("pk")
            .values_list("provider_id", "folder__name", "pk")
        ):
            found[provider_id].append((folder, pk))
    return dict(found)


def move_global(*, account: MailAccount, moves: dict[str, tuple[MailFolder, bool, bool]]) -> tuple[set[str], list[int]]:
    """Messages named by a global provider id (Gmail id, Graph immutable id) are now in these folders with these
    flags, and nowhere else. The message is found by its locations, else by its row (a message whose location
    went earlier in this sync, or that was marked deleted and came back). Returns (ids naming no stored
    message, messages whose state changed)."""
    if not moves:
        return set(), []
    with transaction.atomic():
        message_of: dict[str, int] = {}
        for chunk in _chunks(list(moves)):
            message_of.update(
                MessageLocation.objects.filter(account=account, provider_id__in=chunk)
                .order_by("pk")
                .values_list("provider_id", "message_id")
            )
        missing = [provider_id for provider_id in moves if provider_id not in message_of]
        for chunk in _chunks(missing):
            message_of.update(
                Message.objects.filter(account=account, provider_id__in=chunk)
                .order_by("pk")
                .values_list("provider_id", "pk")
            )
        places = [
            NewPlace(
                message_id=message_of[provider_id],
                folder=folder,
                provider_id=provider_id,
                seen=seen,
                flagged=flagged,
                global_id=True,
            )
            for provider_id, (folder, seen, flagged) in moves.items()
            if provider_id in message_of
        ]
        add_places(account=account, places=places)
        # A place that was already there kept its old flags (the insert skipped it): set them.
        for place in places:
            MessageLocation.objects.filter(folder=place.folder, provider_id=place.provider_id).exclude(
                seen=place.seen, flagged=place.flagged
            ).update(seen=place.seen, flagged=place.flagged)
        changed = refresh_messages(account=account, message_ids=[place.message_id for place in places])
        announce_changed(account_id=account.pk, message_ids=changed)
    return {provider_id for provider_id in moves if provider_id not in message_of}, changed


def refresh_messages(*, account: MailAccount, message_ids: Iterable[int]) -> list[int]:
    """Bring each message's state in line with its locations; returns the ids whose search document must be
    written again (their index work is reopened): those back from "deleted on the server". Folder, provider id
    and flags are not in the index, so a move or a flag change costs no re-indexing. Messages without any
    location are left alone: only `mark_unlocated_deleted` decides a message is gone, once a whole sync has
    had the chance to find it elsewhere."""
    ids = sorted(set(message_ids))
    if not ids:
        return []
    by_message: dict[int, list[tuple[int, str, str, bool, bool]]] = defaultdict(list)
    for chunk in _chunks(ids):
        for row in (
            MessageLocation.objects.filter(message_id__in=chunk)
            .order_by("pk")
            .values_list("message_id", "pk", "folder__name", "provider_id", "seen", "flagged")
        ):
            by_message[row[0]].append(row[1:])
    changed: list[Message] = []
    gone_or_back: list[int] = []
    for chunk in _chunks([pk for pk in ids if pk in by_message]):
        for message in Message.objects.filter(pk__in=chunk).only(
            "pk", "folder", "provider_id", "seen", "flagged", "deleted_at"
        ):
            places = by_message[message.pk]
            _, folder, provider_id, _, _ = places[0]
            state = (folder, provider_id, all(p[3] for p in places), any(p[4] for p in places), None)
            if state != (message.folder, message.provider_id, message.seen, message.flagged, message.deleted_at):
                if message.deleted_at is not None:
                    gone_or_back.append(message.pk)
                message.folder, message.provider_id, message.seen, message.flagged, message.deleted_at = state
                changed.append(message)
    if changed:
        Message.objects.bulk_update(
            changed, ["folder", "provider_id", "seen", "flagged", "deleted_at"], batch_size=CHUNK
        )
    # The index holds none of folder, provider id and flags (filters read them from the locations and the
    # message), so only a message back from "deleted on the server" needs its document again.
    return _reopen_index(gone_or_back)


def _reopen_index(ids: list[int]) -> list[int]:
    for chunk in _chunks(ids):
        MessageOutbox.objects.filter(message_id__in=chunk).update(indexed_at=None)
    return ids


def announce_changed(*, account_id: int, message_ids: Sequence[int]) -> None:
    """After commit: the search index (and anything else listening) re-reads these messages."""
    ids = list(dict.fromkeys(message_ids))
    if not ids:
        return
    transaction.on_commit(
        lambda: messages_stored.send(
            sender=Message,
            account_id=account_id,
            message_ids=[],
            fetch_cycle_id=None,
            retry_ids=ids,
            retry_kinds=[HookKind.INDEX],
        )
    )


def remove_places(*, account: MailAccount, location_ids: Sequence[int]) -> list[int]:
    """Locations gone on the server (expunged, moved away); returns the messages whose state changed."""
    touched: set[int] = set()
    with transaction.atomic():
        for chunk in _chunks(list(location_ids)):
            rows = MessageLocation.objects.filter(account=account, pk__in=chunk)
            touched.update(rows.values_list("message_id", flat=True))
            rows.delete()
        changed = refresh_messages(account=account, message_ids=touched)
        announce_changed(account_id=account.pk, message_ids=changed)
    return changed


def update_flags(
    *, account: MailAccount, changes: dict[str, tuple[bool, bool]], folder: MailFolder | None = None
) -> int:
    """provider id → (seen, flagged) of stored locations (in one folder, or anywhere in the account)."""
    if not changes:
        return 0
    with transaction.atomic():
        touched: set[int] = set()
        updated: list[MessageLocation] = []
        for chunk in _chunks(list(changes)):
            rows = MessageLocation.objects.filter(account=account, provider_id__in=chunk)
            if folder is not None:
                rows = rows.filter(folder=folder)
            for location in rows.only("pk", "provider_id", "message_id", "seen", "flagged"):
                seen, flagged = changes[location.provider_id]
                if (location.seen, location.flagged) != (seen, flagged):
                    location.seen, location.flagged = seen, flagged
                    updated.append(location)
                    touched.add(location.message_id)
        if updated:
            MessageLocation.objects.bulk_update(updated, ["seen", "flagged"], batch_size=CHUNK)
        changed = refresh_messages(account=account, message_ids=touched)
        announce_changed(account_id=account.pk, message_ids=changed)
    return len(updated)


def rename_folder(
    *, account: MailAccount, old: str, new: str, display_name: str, role: str, provider_id_prefix: tuple[str, str]
) -> int:
    """A folder renamed on the server keeps its messages: the row takes the new name, and the provider ids of
    its locations (and of the messages whose first place it is) starting with `provider_id_prefix[0]` start
    with `provider_id_prefix[1]` instead. Nothing is downloaded and nothing is re-indexed (the index reads
    folders from the locations): two UPDATE statements, whatever the folder's size. Returns how many
    locations moved with it."""
    old_prefix, new_prefix = provider_id_prefix
    renamed = Concat(Value(new_prefix[:512]), Substr("provider_id", len(old_prefix) + 1), output_field=CharField())
    with transaction.atomic():
        folder = MailFolder.objects.select_for_update().get(account=account, name=old)
        MailFolder.objects.filter(account=account, name=new).exclude(pk=folder.pk).delete()
        folder.name, folder.display_name, folder.role = new[:512], display_name[:512], role[:32]
        folder.save(update_fields=["name", "display_name", "role"])
        moved = MessageLocation.objects.filter(folder=folder, provider_id__startswith=old_prefix).update(
            provider_id=renamed
        )
        # A message's primary folder and provider id are those of its first location (see refresh_messages).
        Message.objects.filter(account=account, folder=old, provider_id__startswith=old_prefix).update(
            folder=new[:512], provider_id=renamed
        )
    return moved


def delete_folder(*, account: MailAccount, name: str) -> int:
    """A folder gone on the server: its locations go (their messages may live on elsewhere) and so does the row."""
    with transaction.atomic():
        folder = MailFolder.objects.filter(account=account, name=name).first()
        if folder is None:
            return 0
        location_ids = list(MessageLocation.objects.filter(folder=folder).values_list("pk", flat=True))
        remove_places(account=account, location_ids=location_ids)
        folder.delete()
    return len(location_ids)


def mark_unlocated_deleted(*, account: MailAccount) -> list[int]:
    """After a complete sync: a message left without any location is gone from the server."""
    with transaction.atomic():
        ids = list(
            Message.objects.filter(account=account, deleted_at=None)
            .filter(~Exists(MessageLocation.objects.filter(message=OuterRef("pk"))))
            .values_list("pk", flat=True)
        )
        now = timezone.now()
        for chunk in _chunks(ids):
            Message.objects.filter(pk__in=chunk).update(deleted_at=now)
        _reopen_index(ids)
        announce_changed(account_id=account.pk, message_ids=ids)
    return ids


@dataclass(frozen=True, slots=True)
class HeaderFacts:
    """What a cheap header fetch tells about a message on the server, enough to recognise a stored one."""

    message_id: str
    size: int
    date_ts: int | None


def match_known(*, account: MailAccount, facts: dict[str, HeaderFacts]) -> dict[str, int]:
    """key → stored message pk for the facts that match exactly one stored message (Message-ID, size and
    date all equal). Anything ambiguous or unknown is left out: it is downloaded and recognised by content."""
    wanted = {fact.message_id for fact in facts.values() if fact.message_id}
    candidates: dict[str, list[tuple[int, int, int | None]]] = defaultdict(list)
    for chunk in _chunks(sorted(wanted)):
        for pk, message_id, size, date in Message.objects.filter(account=account, message_id__in=chunk).values_list(
            "pk", "message_id", "size", "date"
        ):
            candidates[message_id].append((pk, size, int(date.timestamp()) if date else None))
    matched: dict[str, int] = {}
    for key, fact in facts.items():
        if not fact.message_id:
            continue
        hits = [
            pk for pk, size, when in candidates.get(fact.message_id, []) if size == fact.size and when == fact.date_ts
        ]
        if len(hits) == 1:
            matched[key] = hits[0]
    return matched

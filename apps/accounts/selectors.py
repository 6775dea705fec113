"""Reads for the mail pages: always scoped to the requesting user's accounts, no N+1 loops.

`access_*` functions are the permission check: another user's row is indistinguishable from a
missing one (Http404).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import Http404

from apps.accounts.models import (
    Attachment,
    MailAccount,
    MailAction,
    MailFolder,
    MailTag,
    Message,
    MessageLocation,
    MessageTag,
    Provider,
    Thread,
)

THREADS_PER_PAGE = 50
MAX_SENDERS_SHOWN = 3
# Lists never show these; credentials would otherwise be decrypted for every row.
LIST_DEFERRED_FIELDS = ("credentials", "last_sync_summary", "provider_signature", "signature_text")


# --- permission-checked single objects ------------------------------------------------------------


def _parse_id(value: object) -> int:
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        raise Http404("No such object") from None
    if number <= 0:
        raise Http404("No such object")
    return number


def access_account(*, user: Any, account_id: object) -> MailAccount:
    account = MailAccount.objects.filter(pk=_parse_id(account_id), owner=user).first()
    if account is None:
        raise Http404("No such account")
    return account


def access_thread(*, user: Any, thread_id: object) -> Thread:
    thread = Thread.objects.select_related("account").filter(pk=_parse_id(thread_id), account__owner=user).first()
    if thread is None:
        raise Http404("No such thread")
    return thread


def access_message(*, user: Any, message_id: object) -> Message:
    message = (
        Message.objects.select_related("account")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("pk")))
        .filter(pk=_parse_id(message_id), account__owner=user)
        .first()
    )
    if message is None:
        raise Http404("No such message")
    return message


def access_attachment(*, user: Any, attachment_id: object) -> Attachment:
    attachment = (
        Attachment.objects.select_related("message__account")
        .filter(pk=_parse_id(attachment_id), message__account__owner=user)
        .first()
    )
    if attachment is None:
        raise Http404("No such attachment")
    return attachment


# --- accounts and folders -------------------------------------------------------------------------


def list_accounts_for_user(*, user: Any) -> QuerySet[MailAccount]:
    """The user's accounts with their message counts (one query)."""
    return with_archive_facts(MailAccount.objects.filter(owner=user).defer(*LIST_DEFERRED_FIELDS)).order_by("name")


def list_accounts_in_full_for_user(*, user: Any) -> QuerySet[MailAccount]:
    """The user's accounts with every field and their message counts (the JSON API; the pages defer the
    fields their lists do not show)."""
    return with_archive_facts(MailAccount.objects.filter(owner=user)).order_by("name")


def with_archive_facts(accounts: QuerySet[MailAccount]) -> QuerySet[MailAccount]:
    """`message_count` and `last_stored_at` (when mail last arrived: a local archive's last import)."""
    mine = Message.objects.filter(account=OuterRef("pk")).order_by().values("account")
    return accounts.annotate(
        message_count=Subquery(mine.annotate(n=Count("pk")).values("n")),
        last_stored_at=Subquery(mine.annotate(at=Max("stored_at")).values("at")),
    )


def account_with_facts(*, account: MailAccount) -> MailAccount:
    return with_archive_facts(MailAccount.objects.filter(pk=account.pk)).get()


def list_local_accounts_for_user(*, user: Any) -> QuerySet[MailAccount]:
    return MailAccount.objects.filter(owner=user, provider=Provider.LOCAL).order_by("name")


@dataclass(slots=True)
class FolderEntry:
    """A folder as the sidebar and the account page show it."""

    account_id: int
    name: str
    label: str
    role: str = ""
    total: int = 0
    unread: int = 0
    last_synced_at: Any = None


@dataclass(slots=True)
class AccountEntry:
    account: MailAccount
    folders: list[FolderEntry] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(folder.total for folder in self.folders)

    @property
    def unread(self) -> int:
        return sum(folder.unread for folder in self.folders)


ROLE_ORDER = {"inbox": 0, "sent": 1, "drafts": 2, "archive": 3, "spam": 8, "trash": 9}


def _folder_sort_key(entry: FolderEntry) -> tuple[int, str]:
    return ROLE_ORDER.get(entry.role, 5), entry.label.lower()


def folder_entries(accounts: list[MailAccount]) -> list[AccountEntry]:
    """Accounts with their folders and per-folder counts: two queries for any number of accounts.

    Messages whose folder has no MailFolder row (older syncs, providers without folder listings) still
    get an entry, so every stored message is reachable from the sidebar.
    """
    by_account: dict[int, AccountEntry] = {account.pk: AccountEntry(account=account) for account in accounts}
    if not by_account:
        return []
    folders: dict[tuple[int, str], FolderEntry] = {}
    for folder in (
        MailFolder.objects.filter(account_id__in=list(by_account))
        .only("id", "account_id", "name", "display_name", "role", "last_synced_at")
        .order_by()
    ):
        folders[(folder.account_id, folder.name)] = FolderEntry(
            account_id=folder.account_id,
            name=folder.name,
            label=folder.display_name or folder.name,
            role=folder.role,
            last_synced_at=folder.last_synced_at,
        )
    # Counted from locations, as the server counts: a message in two folders counts in both, each with
    # its own \\Seen; a message deleted on the server has no location left.
    counts = (
        MessageLocation.objects.filter(account_id__in=list(by_account))
        .order_by()
        .values("account_id", "folder__name")
        .annotate(total=Count("pk"), unread=Count("pk", filter=Q(seen=False)))
    )
    for row in counts:
        key = (row["account_id"], row["folder__name"])
        entry = folders.get(key)
        if entry is None:
            name = row["folder__name"]
            entry = FolderEntry(account_id=row["account_id"], name=name, label=name or "(no folder)")
            folders[key] = entry
        entry.total = row["total"]
        entry.unread = row["unread"]
    for entry in sorted(folders.values(), key=_folder_sort_key):
        by_account[entry.account_id].folders.append(entry)
    return [by_account[account.pk] for account in accounts]


def in_folders(name: str, folders: tuple[str, ...]) -> bool:
    """Whether a folder is one of `folders` or below one of them (the search's `in:` reads subfolders too)."""
    return any(name == folder or name.startswith(f"{folder}/") for folder in folders)


def messages_in_folders(*, account_id: int, folders: tuple[str, ...], message_ids: list[int]) -> set[int]:
    """Those of `message_ids` that have a place in one of the account's `folders` (or below one)."""
    located = MessageLocation.objects.filter(account_id=account_id, message_id__in=message_ids).values_list(
        "message_id", "folder__name"
    )
    return {message_id for message_id, name in located if in_folders(name, folders)}


def folders_for_account(*, account: MailAccount) -> list[FolderEntry]:
    entries = folder_entries([account])
    return entries[0].folders if entries else []


def default_folder(entry: AccountEntry) -> str | None:
    """The inbox when the account has one; None means "all mail"."""
    for folder in entry.folders:
        if folder.role == "inbox" or folder.name.lower() == "inbox":
            return folder.name
    return None


# --- threads --------------------------------------------------------------------------------------


@dataclass(slots=True)
class MailboxSelection:
    accounts: list[AccountEntry]
    account: MailAccount | None
    folder: str | None  # None: every folder of the account


def select_mailbox(*, user: Any, account_id: str | None, folder: str | None) -> MailboxSelection:
    """Resolve the `account` / `folder` query parameters against the user's own accounts."""
    accounts = list(MailAccount.objects.filter(owner=user).defer(*LIST_DEFERRED_FIELDS).order_by("name"))
    entries = folder_entries(accounts)
    chosen: AccountEntry | None = None
    if account_id:
        wanted = _parse_id(account_id)
        chosen = next((entry for entry in entries if entry.account.pk == wanted), None)
        if chosen is None:
            raise Http404("No such account")
    elif entries:
        chosen = entries[0]
    if chosen is None:
        return MailboxSelection(accounts=entries, account=None, folder=None)
    if folder is None:
        folder = default_folder(chosen)
    elif folder == "":
        folder = None  # explicit "all mail"
    return MailboxSelection(accounts=entries, account=chosen.account, folder=folder)


def thread_list_queryset(*, account: MailAccount, folder: str | None) -> QuerySet[Thread]:
    """Threads of one account (optionally those with a message in one folder), newest activity first.

    Everything a row shows comes from annotations and a single prefetch of the senders, so a page costs a
    constant number of queries however many threads it holds.
    """
    messages = Message.objects.filter(thread=OuterRef("pk"), deleted_at=None)
    latest = messages.order_by("-date", "-pk")
    threads = Thread.objects.filter(account=account).filter(Exists(messages))
    if folder is not None:
        threads = threads.filter(
            Exists(MessageLocation.objects.filter(message__thread=OuterRef("pk"), folder__name=folder))
        )
    return (
        threads.annotate(
            has_unread=Exists(messages.filter(seen=False)),
            has_flagged=Exists(messages.filter(flagged=True)),
            has_attachments=Exists(messages.filter(has_attachments=True)),
            latest_snippet=Subquery(latest.values("snippet")[:1]),
            latest_subject=Subquery(latest.values("subject")[:1]),
        )
        .prefetch_related(
            Prefetch(
                "messages",
                queryset=Message.objects.only("id", "thread_id", "from_name", "from_address", "date").order_by(
                    "date", "pk"
                ),
                to_attr="sender_rows",
            )
        )
        .order_by(F("last_message_at").desc(nulls_last=True), "-pk")
    )


def thread_senders(thread: Thread) -> list[str]:
    """Distinct sender names in order of first appearance (uses the prefetched `sender_rows`)."""
    names: list[str] = []
    for message in getattr(thread, "sender_rows", []):
        name = message.from_name or message.from_address or "(unknown)"
        if name not in names:
            names.append(name)
    return names


def paginate_threads(*, account: MailAccount, folder: str | None, page: str | None) -> Page:
    paginator = Paginator(thread_list_queryset(account=account, folder=folder), THREADS_PER_PAGE)
    page_obj = paginator.get_page(page)
    tags = tags_by_thread(thread_ids=[thread.pk for thread in page_obj.object_list])
    for thread in page_obj.object_list:
        thread.tag_names = tags.get(thread.pk, [])  # type: ignore[attr-defined]
        senders = thread_senders(thread)
        thread.sender_names = senders[:MAX_SENDERS_SHOWN]  # type: ignore[attr-defined]
        thread.more_senders = max(0, len(senders) - MAX_SENDERS_SHOWN)  # type: ignore[attr-defined]
    return page_obj


def thread_messages(*, thread: Thread) -> list[Message]:
    """All messages of a thread, oldest first, with their attachments (two queries)."""
    return list(
        Message.objects.filter(thread=thread)
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("pk")))
        .order_by(F("date").asc(nulls_first=True), "pk")
    )


# --- write-back ---------------------------------------------------------------------------------------------


def access_mail_action(*, user: Any, action_id: object) -> MailAction:
    action = MailAction.objects.select_related("message").filter(pk=_parse_id(action_id), account__owner=user).first()
    if action is None:
        raise Http404("No such change")
    return action


def recent_mail_actions(*, messages: list[Message], limit: int = 20) -> list[MailAction]:
    """The latest write-backs of these messages, newest first, for the conversation page."""
    if not messages:
        return []
    return list(
        MailAction.objects.filter(message__in=messages).select_related("message").order_by("-created_at", "-pk")[:limit]
    )


def move_targets(*, account: MailAccount) -> list[MailFolder]:
    """Folders a conversation can be moved to (the server's own, in sidebar order)."""
    folders = list(MailFolder.objects.filter(account=account).exclude(name=""))
    return sorted(folders, key=lambda f: (ROLE_ORDER.get(f.role, 5), (f.display_name or f.name).lower()))


# --- copies of one mail -------------------------------------------------------------------------------------

COPY_HEAD = 4000  # characters of a body compared to tell copies of one mail


def copy_keys(message_pks: list[int]) -> dict[int, tuple[Any, ...]]:
    """{message pk: its copy key}. Copies of one mail (delivered to several folders or mailboxes, or imported
    twice) share a key: the same sender, subject, date, text (its first COPY_HEAD characters, spacing aside:
    one copy may keep blank lines or tabs another lost on the way) and HTML length. The bodies are read only
    for the messages whose sender, subject and date another one shares."""
    from django.db.models.functions import Length, Substr

    heads = {
        pk: ((address or "").lower(), " ".join((subject or "").split()), date)
        for pk, address, subject, date in Message.objects.filter(pk__in=message_pks).values_list(
            "pk", "from_address", "subject", "date"
        )
    }
    shared = Counter(heads.values())
    keys: dict[int, tuple[Any, ...]] = {pk: (*head, "", None) for pk, head in heads.items()}
    doubtful = [pk for pk, head in heads.items() if shared[head] > 1]
    if doubtful:
        rows = (
            Message.objects.filter(pk__in=doubtful)
            .annotate(head=Substr("body_text", 1, COPY_HEAD), html_length=Length("body_html"))
            .values_list("pk", "head", "html_length")
        )
        for pk, text, size in rows:
            keys[pk] = (*heads[pk], " ".join((text or "").split()), size)
    return keys


# --- tags ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TagCount:
    name: str
    count: int  # messages carrying the tag that are still in the mailbox (not deleted on the server)


def list_tags_for_user(*, user: Any) -> list[TagCount]:
    """The user's tags with how many of their messages carry each (one query)."""
    rows = (
        MailTag.objects.filter(owner=user)
        .annotate(
            count=Count(
                "message_tags",
                filter=Q(message_tags__message__deleted_at__isnull=True, message_tags__message__account__owner=user),
            )
        )
        .filter(count__gt=0)  # a tag left only on mail deleted on the server finds nothing: not listed
        .order_by("key")
        .values_list("name", "count")
    )
    return [TagCount(name=name, count=count) for name, count in rows]


def tags_by_message(*, message_ids: list[int]) -> dict[int, list[str]]:
    """Tag names per message id, sorted (one query)."""
    found: dict[int, list[str]] = {pk: [] for pk in message_ids}
    rows = (
        MessageTag.objects.filter(message_id__in=message_ids)
        .order_by("tag__key")
        .values_list("message_id", "tag__name")
    )
    for message_id, name in rows:
        found[message_id].append(name)
    return found


def tags_of_messages(*, message_ids: list[int]) -> list[str]:
    """The tags any of the messages carries (a thread's chips), sorted."""
    names = {name for tags in tags_by_message(message_ids=message_ids).values() for name in tags}
    return sorted(names, key=str.casefold)


def tags_by_thread(*, thread_ids: list[int]) -> dict[int, list[str]]:
    """The tags any live message of each thread carries, sorted (one query): the thread list's chips."""
    found: dict[int, set[str]] = {}
    rows = MessageTag.objects.filter(message__thread_id__in=thread_ids, message__deleted_at__isnull=True).values_list(
        "message__thread_id", "tag__name"
    )
    for thread_id, name in rows:
        found.setdefault(thread_id, set()).add(name)
    return {thread_id: sorted(names, key=str.casefold) for thread_id, names in found.items()}

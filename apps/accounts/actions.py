"""Every write to mail accounts goes through here (DESIGN.md: typed, keyword-only, on_commit side effects)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.accounts import labels, writeback
from apps.accounts.models import (
    Attachment,
    ImapSecurity,
    MailAccount,
    MailAction,
    MailActionKind,
    MailTag,
    Message,
    MessageLocation,
    MessageTag,
    Provider,
    SignatureMode,
    Thread,
)
from apps.accounts.providers import get_provider
from apps.accounts.providers.base import ProviderError
from apps.accounts.store import cache_attachment_bytes


class AccountNameTaken(ValueError):
    pass


def _create_account(**fields: Any) -> MailAccount:
    try:
        with transaction.atomic():
            return MailAccount.objects.create(**fields)
    except IntegrityError as exc:
        raise AccountNameTaken(f"You already have an account named {fields['name']!r}") from exc


def create_imap_account(
    *,
    owner: Any,
    name: str,
    address: str,
    host: str,
    port: int,
    security: str,
    username: str,
    password: str,
    display_name: str = "",
) -> MailAccount:
    if security not in ImapSecurity.values:
        raise ValueError(f"Unknown IMAP security {security!r}")
    return _create_account(
        owner=owner,
        name=name.strip(),
        provider=Provider.IMAP,
        address=address.strip(),
        display_name=display_name.strip(),
        imap_host=host.strip(),
        imap_port=port,
        imap_security=security,
        imap_username=username.strip() or address.strip(),
        credentials={"password": password},
    )


def check_imap_settings(*, host: str, port: int, security: str, username: str, password: str) -> str:
    """Log in to an IMAP server with settings not saved yet: "" when it works, else what failed (the same
    words a failed sync records). Nothing is stored."""
    if security not in ImapSecurity.values:
        return f"Unknown IMAP security {security!r}"
    unsaved = MailAccount(
        provider=Provider.IMAP,
        imap_host=host.strip(),
        imap_port=port,
        imap_security=security,
        imap_username=username.strip(),
        credentials={"password": password},
    )
    provider = get_provider(unsaved)
    try:
        provider.test_connection()
    except ProviderError as exc:
        return str(exc)
    finally:
        provider.close()
    return ""


def create_local_account(*, owner: Any, name: str, address: str = "") -> MailAccount:
    return _create_account(owner=owner, name=name.strip(), provider=Provider.LOCAL, address=address.strip())


def get_or_create_local_account(*, owner: Any, name: str) -> MailAccount:
    existing = MailAccount.objects.filter(owner=owner, name=name.strip()).first()
    if existing is not None:
        if existing.provider != Provider.LOCAL:
            raise AccountNameTaken(f"{name!r} is a {existing.get_provider_display()} account, not a local archive")
        return existing
    return create_local_account(owner=owner, name=name)


def update_signature(*, account: MailAccount, mode: str, text: str) -> MailAccount:
    if mode not in SignatureMode.values:
        raise ValueError(f"Unknown signature mode {mode!r}")
    account.signature_mode = mode
    account.signature_text = text
    account.save(update_fields=["signature_mode", "signature_text"])
    return account


def set_account_enabled(*, account: MailAccount, enabled: bool) -> MailAccount:
    account.enabled = enabled
    account.save(update_fields=["enabled"])
    return account


def update_imap_password(*, account: MailAccount, password: str) -> MailAccount:
    credentials = dict(account.credentials or {})
    credentials["password"] = password
    account.credentials = credentials
    account.last_error_category = ""
    account.save(update_fields=["credentials", "last_error_category"])
    return account


def request_sync(*, account: MailAccount) -> None:
    """Queue a background sync once the current transaction commits."""
    from django_q.tasks import async_task

    account_id = account.pk
    transaction.on_commit(
        lambda: async_task("apps.accounts.tasks.sync_account_task", account_id, task_name=f"sync account {account_id}")
    )


def fetch_attachment_bytes(*, attachment: Attachment) -> bytes:
    """The attachment's bytes: from the cache, else from the provider (then cached). Raises ProviderError."""
    if attachment.cache_path:
        cached = Path(settings.ATTACHMENT_CACHE_DIR) / attachment.cache_path
        if cached.exists():
            return cached.read_bytes()
    provider = get_provider(attachment.message.account)
    try:
        payload = provider.fetch_attachment(attachment)
    finally:
        provider.close()
    if not isinstance(payload, bytes):
        raise ProviderError("The provider returned no attachment data")
    relative, digest = cache_attachment_bytes(payload)
    attachment.cache_path = relative
    attachment.sha256 = digest
    attachment.size = len(payload)
    attachment.save(update_fields=["cache_path", "sha256", "size"])
    return payload


def record_connection_test(*, account: MailAccount, error_category: str, message: str = "") -> MailAccount:
    account.last_error_category = error_category
    account.last_error_message = message[:2000]
    if not error_category and account.last_sync_status == "error":
        account.last_sync_status = "ok"
    account.save(update_fields=["last_error_category", "last_error_message", "last_sync_status"])
    return account


def set_messages_seen(*, messages: list[Message], seen: bool, requested_by: Any = None, origin: str = "user") -> int:
    """Mark messages read/unread here and on the server (through the write-back ledger). Returns how many
    changed; the objects keep their old state so the page can still show which ones were new."""
    changing = [message for message in messages if message.seen != seen]
    if not changing:
        return 0
    located = set(MessageLocation.objects.filter(message__in=changing).values_list("message_id", flat=True))
    writeback.request_mail_actions(
        messages=[m for m in changing if m.pk in located],
        kind=MailActionKind.READ if seen else MailActionKind.UNREAD,
        requested_by=requested_by,
        origin=origin,
    )
    # A message with no place on any server (deleted there) changes here only.
    unlocated = [m.pk for m in changing if m.pk not in located]
    if unlocated:
        Message.objects.filter(pk__in=unlocated).update(seen=seen)
    return len(changing)


RULE_KINDS = {MailActionKind.READ, MailActionKind.FLAG, MailActionKind.ARCHIVE, MailActionKind.MOVE, MailActionKind.TAG}


def apply_rule(*, message_ids: list[int], kind: str, folder: str = "", tag: str = "") -> dict[int, str]:
    """A rule the user enabled (a filter's mail action) on new mail: recorded in the write-back ledger with
    origin "rule" and carried out on the server like a click here. Mail with no place on a server (an
    import) is marked read or flagged here only. Returns {message id: why it could not apply}."""
    if kind not in RULE_KINDS:
        raise ValueError(f"a rule cannot {kind!r}")
    messages = list(Message.objects.filter(pk__in=message_ids, deleted_at=None).order_by("pk"))
    if kind == MailActionKind.READ:
        set_messages_seen(messages=messages, seen=True, origin="rule")
        return {}
    if kind == MailActionKind.TAG:  # here, and as a keyword / label / category on the server
        by_owner: dict[int, tuple[Any, list[Message]]] = {}
        for message in Message.objects.filter(pk__in=[m.pk for m in messages]).select_related("account__owner"):
            owner = message.account.owner
            by_owner.setdefault(owner.pk, (owner, []))[1].append(message)
        for owner, group in by_owner.values():
            add_tag(owner=owner, messages=group, name=tag, origin="rule")
        return {}
    located = set(MessageLocation.objects.filter(message__in=messages).values_list("message_id", flat=True))
    if kind == MailActionKind.FLAG:
        Message.objects.filter(pk__in=[m.pk for m in messages if m.pk not in located]).update(flagged=True)
    problems: dict[int, str] = {}
    by_account: dict[int, list[Message]] = {}
    for message in messages:
        if message.pk in located:
            by_account.setdefault(message.account_id, []).append(message)
    for group in by_account.values():
        try:
            writeback.request_mail_actions(messages=group, kind=kind, folder=folder, origin="rule")
        except writeback.MailActionRefused as exc:
            problems.update({message.pk: str(exc) for message in group})
    return problems


def mark_thread_unread(*, thread: Thread, requested_by: Any = None) -> int:
    messages = list(Message.objects.filter(thread=thread, seen=True, deleted_at=None))
    return set_messages_seen(messages=messages, seen=False, requested_by=requested_by)


def act_on_thread(
    *, thread: Thread, kind: str, folder: str = "", source_folder: str | None = None, requested_by: Any = None
) -> list[MailAction]:
    """Flag, unflag, archive, move or trash a conversation's messages (raises MailActionRefused)."""
    messages = list(Message.objects.filter(thread=thread, deleted_at=None))
    return writeback.request_mail_actions(
        messages=messages, kind=kind, folder=folder, source_folder=source_folder, requested_by=requested_by
    )


def undo_mail_action(*, action: MailAction, requested_by: Any = None) -> MailAction:
    return writeback.undo_mail_action(action=action, requested_by=requested_by)


__all__ = [
    "AccountNameTaken",
    "act_on_thread",
    "create_imap_account",
    "create_local_account",
    "fetch_attachment_bytes",
    "get_or_create_local_account",
    "mark_thread_unread",
    "record_connection_test",
    "request_sync",
    "set_account_enabled",
    "set_messages_seen",
    "undo_mail_action",
    "update_imap_password",
    "update_signature",
]


# --- tags --------------------------------------------------------------------------------------------------

# The names and their checks live in apps/accounts/labels.py (the sync maps server labels with them too).
TAG_MAX_LENGTH = labels.TAG_MAX_LENGTH
TAG_RE = labels.TAG_RE
InvalidTag = labels.InvalidTag
tag_key = labels.tag_key
clean_tag_name = labels.clean_tag_name


def _own_messages(owner: Any, messages: list[Message]) -> list[Message]:
    pks = {message.pk for message in messages}
    owned = set(Message.objects.filter(pk__in=pks, account__owner=owner).values_list("pk", flat=True))
    foreign = sorted(pks - owned)
    if foreign:
        raise PermissionError(f"Messages {foreign} are not in this user's accounts")
    return messages


def add_tag(
    *, owner: Any, messages: list[Message], name: str, requested_by: Any = None, origin: str = "user"
) -> MailTag:
    """Tag `messages` (a thread: all its messages) with `name`; the tag keeps the spelling it was first given.
    On an IMAP account the tag also goes to the server as a keyword, through the write-back ledger."""
    cleaned = clean_tag_name(name)
    _own_messages(owner, messages)
    with transaction.atomic():
        tag, _ = MailTag.objects.get_or_create(owner=owner, key=tag_key(cleaned), defaults={"name": cleaned})
        had = set(MessageTag.objects.filter(tag=tag, message__in=messages).values_list("message_id", flat=True))
        MessageTag.objects.bulk_create(
            [MessageTag(tag=tag, message=message) for message in messages], ignore_conflicts=True
        )
        _request_label_write_back(
            messages=[m for m in messages if m.pk not in had],
            kind=MailActionKind.TAG,
            tag=tag.name,
            requested_by=None if origin == "rule" else requested_by or owner,
            origin=origin,
        )
    return tag


def remove_tag(
    *, owner: Any, messages: list[Message], name: str, requested_by: Any = None, origin: str = "user"
) -> int:
    """Take tag `name` off `messages`; a tag no message carries any more is gone (as in notmuch). Returns how
    many messages lost it. On an IMAP account the keyword is taken off on the server too (ledger)."""
    _own_messages(owner, messages)
    with transaction.atomic():
        tag = MailTag.objects.select_for_update().filter(owner=owner, key=tag_key((name or "").strip())).first()
        if tag is None:
            return 0
        had = set(MessageTag.objects.filter(tag=tag, message__in=messages).values_list("message_id", flat=True))
        removed, _ = MessageTag.objects.filter(tag=tag, message__in=[m.pk for m in messages]).delete()
        if not MessageTag.objects.filter(tag=tag).exists():
            tag.delete()
        _request_label_write_back(
            messages=[m for m in messages if m.pk in had],
            kind=MailActionKind.UNTAG,
            tag=tag.name,
            requested_by=requested_by or owner,
            origin=origin,
        )
    return removed


def _request_label_write_back(
    *, messages: list[Message], kind: str, tag: str, requested_by: Any, origin: str = "user"
) -> None:
    if not messages:
        return
    live = [m for m in messages if m.deleted_at is None]
    writeback.request_mail_actions(messages=live, kind=kind, tag=tag, requested_by=requested_by, origin=origin)

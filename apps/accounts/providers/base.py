"""The provider interface: what IMAP, Gmail, Outlook and local imports have in common.

A provider talks to its server and yields raw RFC 822 messages in batches through a SyncSink; the
sink parses, deduplicates, threads, stores and commits each batch *together with* the cursor that
follows it (apps/accounts/sync.py). A crash between batches therefore resumes from the last committed
cursor, and the unique constraints absorb any replay: no loss, no duplicates.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from apps.accounts.locations import HeaderFacts, KnownPlace, Place
    from apps.accounts.models import Attachment, MailAccount, MailFolder


class ProviderError(Exception):
    """A provider failure with a category the UI and the re-authorization flow understand.

    category: missing_refresh_token | invalid_grant | network | auth | rate_limited | unsupported | other
    """

    def __init__(self, message: str, *, category: str = "other", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.category = category
        self.retry_after = retry_after


@dataclass(slots=True)
class FolderInfo:
    name: str  # stable provider name/id (IMAP path, Gmail label id, Graph folder id)
    display_name: str = ""
    role: str = ""  # inbox | sent | drafts | trash | spam | archive | ""


@dataclass(slots=True)
class RemoteMessage:
    provider_id: str  # unique within the account and stable across syncs
    raw: bytes  # RFC 822 source
    folder: str = ""  # MailFolder.name
    labels: list[str] = field(default_factory=list)
    seen: bool = False
    flagged: bool = False
    # Label keywords on the server (IMAP FLAGS that are user labels, apps/accounts/labels.py): become tags.
    keywords: tuple[str, ...] = ()
    provider_thread_id: str = ""
    # Attachments are fetched on demand: map an IMAP-style part number (ParsedAttachment.part_ref) to
    # the provider's own attachment reference when it has one (Gmail attachmentId, Graph id).
    attachment_refs: dict[str, str] = field(default_factory=dict)
    uid: int | None = None  # IMAP UID within the folder's UIDVALIDITY
    internal_date: dt.datetime | None = None  # the server's arrival time: the date when there is no Date header
    # True when provider_id names the message wherever it is (Gmail id, Graph immutable id): the same id in
    # another folder is the message having moved. IMAP ids name one place (folder, UIDVALIDITY, UID).
    global_id: bool = False
    # A place the server has not named yet (a reply just sent): replaced by the message's first real location.
    provisional: bool = False


@dataclass(frozen=True, slots=True)
class WriteBackPlace:
    """One stored location of a message a write-back acts on."""

    folder: str  # MailFolder.name
    provider_id: str


@dataclass(slots=True)
class Checkpoint:
    """The cursor to persist in the same transaction as the batch it follows."""

    folder: str = ""  # MailFolder.name the fields below belong to ("" = account-wide)
    uidvalidity: int | None = None
    last_uid: int | None = None
    sync_token: str | None = None  # Graph delta link, etc.
    account_cursor: str | None = None  # Gmail history id


@dataclass(slots=True)
class StoreResult:
    created: int = 0
    duplicates: int = 0
    parse_errors: int = 0
    created_ids: list[int] = field(default_factory=list)
    located_ids: list[int] = field(default_factory=list)  # known messages that got a new location
    located: int = 0
    removed: int = 0


class SyncSink(Protocol):
    def ensure_folder(self, info: FolderInfo) -> MailFolder: ...

    def folder_state(self, name: str) -> MailFolder | None: ...

    def store_batch(self, messages: list[RemoteMessage], checkpoint: Checkpoint | None = None) -> StoreResult: ...

    def reset_folder(self, name: str, *, uidvalidity: int | None) -> None:
        """Forget a folder's cursor (UIDVALIDITY changed, delta token expired): the next batches resync it."""
        ...

    def update_flags(self, changes: dict[str, tuple[bool, bool]], *, folder: str | None = None) -> None:
        """provider_id → (seen, flagged) for stored locations (of one folder when given)."""
        ...

    def update_keywords(self, changes: dict[str, tuple[str, ...]], *, folder: str | None = None) -> None:
        """provider_id → the label keywords (Gmail: user labels in keyword form) the server reports now, for
        stored locations (of one folder when given)."""
        ...

    def known_folders(self) -> list[MailFolder]: ...

    def folder_places(self, name: str) -> dict[str, Place]:
        """provider id → Place of every stored location in the folder."""
        ...

    def remove_places(self, location_ids: list[int]) -> None:
        """Locations gone on the server; a message left with none is marked deleted once the sync completes."""
        ...

    def match_known(self, facts: dict[str, HeaderFacts]) -> dict[str, int]:
        """key → stored message for header facts that identify exactly one stored message."""
        ...

    def place_known(self, name: str, places: list[KnownPlace]) -> None:
        """New locations in folder `name` for messages already stored."""
        ...

    def places_of(self, provider_ids: list[str]) -> dict[str, list[tuple[str, int]]]:
        """provider id → [(folder name, location id)] of the stored, server-named locations with these ids."""
        ...

    def move_places(self, moves: dict[str, tuple[str, bool, bool]]) -> set[str]:
        """provider id → (folder name, seen, flagged) for ids that name a message wherever it is (Gmail ids, Graph
        immutable ids): the stored message is now in that folder, with those flags, and no longer anywhere else.
        Nothing is downloaded. Returns the ids that name no stored message (the caller downloads them)."""
        ...

    def rename_folder(self, old: str, new: FolderInfo, provider_id_prefix: tuple[str, str]) -> None:
        """Folder `old` is now `new`: its stored places stay, their provider ids starting with
        `provider_id_prefix[0]` start with `provider_id_prefix[1]` instead."""
        ...

    def delete_folder(self, name: str) -> None: ...

    def heartbeat(self) -> None:
        """Called between batches: renews the account's sync lock."""
        ...


class MailProvider(ABC):
    """One connected mailbox. Implementations must be safe to construct without network I/O."""

    def __init__(self, account: MailAccount) -> None:
        self.account = account

    @abstractmethod
    def test_connection(self) -> None:
        """Log in and do one cheap call; raise ProviderError (with its category) on failure."""

    @abstractmethod
    def sync(self, sink: SyncSink) -> None:
        """Pull everything new since the stored cursors into the sink, batch by batch."""

    @abstractmethod
    def fetch_attachment(self, attachment: Attachment) -> bytes:
        """The decoded bytes of one attachment, fetched from the provider."""

    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """Perform a MailActionKind (read, unread, flag, unflag, move, archive, trash, tag, untag) on these
        locations at the provider; `target` is the destination folder of a move, `tag` the tag's name. Returns
        what the provider answered, in words.
        Raises ProviderError; category "unsupported" means retrying cannot help."""
        raise ProviderError(
            f"{self.account.get_provider_display()} accounts cannot be changed from mailagent yet",
            category="unsupported",
        )

    def default_signature(self) -> str:
        """The provider's own signature, when it has one (Gmail sendAs)."""
        return ""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

"""How an IMAP server names things: folder roles (SPECIAL-USE or usual names), selectable folders and
the (folder, UIDVALIDITY, UID) reference a stored message keeps."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from imapclient import IMAPClient

SPECIAL_USE_ROLES = {
    b"\\sent": "sent",
    b"\\drafts": "drafts",
    b"\\trash": "trash",
    b"\\junk": "spam",
    b"\\archive": "archive",
}
# Servers without SPECIAL-USE: the usual names.
WELL_KNOWN_NAMES = {
    "sent": "sent",
    "sent items": "sent",
    "sent messages": "sent",
    "sent mail": "sent",
    "drafts": "drafts",
    "trash": "trash",
    "deleted items": "trash",
    "deleted messages": "trash",
    "junk": "spam",
    "junk e-mail": "spam",
    "spam": "spam",
    "archive": "archive",
    "archives": "archive",
}


@dataclass(frozen=True, slots=True)
class ImapMessageRef:
    """Where a stored message lives on the server: parsed back from RemoteMessage.provider_id."""

    folder: str
    uidvalidity: int
    uid: int

    @property
    def provider_id(self) -> str:
        return f"{self.folder}:{self.uidvalidity}:{self.uid}"

    @classmethod
    def parse(cls, provider_id: str) -> ImapMessageRef:
        # Folder names may contain ":", the two numbers never do.
        folder, uidvalidity, uid = provider_id.rsplit(":", 2)
        return cls(folder=folder, uidvalidity=int(uidvalidity), uid=int(uid))


def folder_role(name: str, flags: Sequence[bytes], delimiter: str | None) -> str:
    if name.upper() == "INBOX":
        return "inbox"
    lowered = {flag.lower() for flag in flags}
    for flag, role in SPECIAL_USE_ROLES.items():
        if flag in lowered:
            return role
    # By name only at the top level (or directly under INBOX, as Courier-style servers nest them):
    # "Projects/Archive" is a user's folder, not the archive.
    parent, _, leaf = name.rpartition(delimiter) if delimiter else ("", "", name)
    if parent and parent.upper() != "INBOX":
        return ""
    return WELL_KNOWN_NAMES.get(leaf.strip().lower(), "")


def selectable_folders(client: IMAPClient) -> Iterator[tuple[str, Any, Any]]:
    """(name, hierarchy delimiter, flags) of every folder that can be selected (not \\Noselect/\\NonExistent)."""
    for flags, delimiter, raw_name in client.list_folders():
        lowered = {flag.lower() for flag in flags}
        if b"\\noselect" in lowered or b"\\nonexistent" in lowered:
            continue
        name = raw_name.decode("utf-8", "replace") if isinstance(raw_name, bytes) else str(raw_name)
        sep = delimiter.decode("ascii", "replace") if isinstance(delimiter, bytes) else delimiter
        yield name, sep, flags

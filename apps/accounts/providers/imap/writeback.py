"""Write-back to an IMAP server: flags and keywords (UID STORE), moves (UID MOVE, else COPY + EXPUNGE) and
the APPEND of a sent reply's copy to the Sent folder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from imapclient import IMAPClient

from apps.accounts.labels import keyword_refusal, keyword_to_tag, tag_key, tag_to_keyword
from apps.accounts.providers.base import ProviderError, WriteBackPlace
from apps.accounts.providers.imap.connection import ImapConnection
from apps.accounts.providers.imap.folders import ImapMessageRef, folder_role, selectable_folders

FLAG_CHANGES = {
    "read": (b"\\Seen", True),
    "unread": (b"\\Seen", False),
    "flag": (b"\\Flagged", True),
    "unflag": (b"\\Flagged", False),
}
MOVE_KINDS = {"move", "archive", "trash"}


def _uid_set(uids: list[int]) -> str:
    return ",".join(str(uid) for uid in uids)


@dataclass(frozen=True, slots=True)
class SentCopy:
    folder: str
    provider_id: str  # ImapMessageRef.provider_id of the copy when the server answered APPENDUID, else ""


def sent_folder(folders: Sequence[tuple[str, str]]) -> str:
    """The Sent folder among (name, role) pairs: SPECIAL-USE \\Sent ("sent!") first, then a usual name."""
    for wanted in ("sent!", "sent"):
        for name, role in folders:
            if role == wanted:
                return name
    return ""


def _appended_ref(folder: str, response: Any) -> str:
    """UIDPLUS: "[APPENDUID <uidvalidity> <uid>] …" names the copy exactly."""
    text = response.decode("ascii", "replace") if isinstance(response, bytes) else str(response or "")
    if "APPENDUID" not in text.upper():
        return ""
    parts = text[text.upper().index("APPENDUID") :].split("]", 1)[0].split()
    if len(parts) < 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return ""
    return ImapMessageRef(folder=folder, uidvalidity=int(parts[1]), uid=int(parts[2])).provider_id


class ImapWriteBack(ImapConnection):
    def append_sent_copy(self, raw: bytes) -> SentCopy:
        """APPEND the exact bytes a reply was sent with (by SMTP) to the account's Sent folder, flagged \\Seen,
        so the user's other mail clients show it. The folder is the one the server marks SPECIAL-USE \\Sent,
        else the one called by a usual name (Sent, Sent Items, …); none is created."""
        with self._session() as client:
            folder = sent_folder(self._list_folders_with_flags(client))
            if not folder:
                raise ProviderError(
                    "the IMAP server has no Sent folder (none marked \\Sent, none named Sent, Sent Items, Sent "
                    "Messages or Sent Mail), and mailagent does not create one",
                    category="other",
                )
            response = client.append(folder, raw, flags=(b"\\Seen",))
        return SentCopy(folder=folder, provider_id=_appended_ref(folder, response))

    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """STORE flags or keywords (a tag), or MOVE (UID MOVE where the server has it, else COPY + \\Deleted +
        UID EXPUNGE), per folder, in a read-write SELECT. A folder whose UIDVALIDITY changed since the last sync
        is refused (its UIDs name other messages now); UIDs already gone are reported, not an error. A tag is
        written only where the folder's PERMANENTFLAGS accept new keywords (\\*) or already list it."""
        if kind == "tag" and keyword_refusal(tag):
            raise ProviderError(keyword_refusal(tag), category="unsupported")
        by_folder: dict[str, list[int]] = {}
        for place in places:
            ref = ImapMessageRef.parse(place.provider_id)
            by_folder.setdefault(place.folder, []).append(ref.uid)
        stored_uidvalidity = {place.folder: ImapMessageRef.parse(place.provider_id).uidvalidity for place in places}
        said: list[str] = []
        refused: list[str] = []
        with self._session() as client:
            for folder, uids in by_folder.items():
                if kind in MOVE_KINDS and folder == target:
                    continue
                selected = client.select_folder(folder)
                uidvalidity = int(selected[b"UIDVALIDITY"])
                if uidvalidity != stored_uidvalidity[folder]:
                    raise ProviderError(
                        f"Folder {folder!r} changed on the server (UIDVALIDITY {stored_uidvalidity[folder]} → "
                        f"{uidvalidity}) since the last sync; the next sync re-reads it and the action is retried",
                        category="other",
                    )
                present = sorted(int(uid) for uid in client.search(["UID", ",".join(str(u) for u in uids)]))
                if not present:
                    said.append(f"{folder}: already gone from the server")
                    continue
                if kind in FLAG_CHANGES:
                    flag, add = FLAG_CHANGES[kind]
                    (client.add_flags if add else client.remove_flags)(present, [flag])
                    said.append(f"{folder}: UID STORE {_uid_set(present)} {'+' if add else '-'}FLAGS ({flag.decode()})")
                elif kind == "tag":
                    keyword = tag_to_keyword(tag)
                    permanent = {bytes(flag).lower() for flag in selected.get(b"PERMANENTFLAGS", ())}
                    if b"\\*" not in permanent and keyword.lower().encode() not in permanent:
                        said.append(f"{folder}: not tagged, the folder does not accept keywords (PERMANENTFLAGS)")
                        refused.append(folder)
                        continue
                    client.add_flags(present, [keyword.encode("ascii")])
                    said.append(f"{folder}: UID STORE {_uid_set(present)} +FLAGS ({keyword})")
                elif kind == "untag":
                    # Every keyword that stands for this tag, however the server or another client spelled it.
                    spelled = {tag_to_keyword(tag).encode("ascii")}
                    for data in client.fetch(present, ["FLAGS"]).values():
                        for flag in data.get(b"FLAGS", ()):
                            name = keyword_to_tag(bytes(flag).decode("ascii", "replace"))
                            if name is not None and tag_key(name) == tag_key(tag):
                                spelled.add(bytes(flag))
                    client.remove_flags(present, sorted(spelled))
                    words = " ".join(sorted(item.decode("ascii", "replace") for item in spelled))
                    said.append(f"{folder}: UID STORE {_uid_set(present)} -FLAGS ({words})")
                elif kind in MOVE_KINDS:
                    if client.has_capability("MOVE"):
                        client.move(present, target)
                        said.append(f"{folder}: UID MOVE {_uid_set(present)} to {target}")
                    else:
                        client.copy(present, target)
                        client.add_flags(present, [b"\\Deleted"])
                        if client.has_capability("UIDPLUS"):
                            client.uid_expunge(present)
                        else:
                            client.expunge()
                        said.append(f"{folder}: UID COPY {_uid_set(present)} to {target}, then expunged")
                else:
                    raise ProviderError(f"Unknown write-back {kind!r}", category="unsupported")
        if refused and len(refused) == len(by_folder):
            raise ProviderError(
                f"The tag {tag!r} cannot be stored on the server: "
                + ", ".join(repr(f) for f in refused)
                + " accept no new keywords (the server's PERMANENTFLAGS lack \\*); it is kept here only",
                category="unsupported",
            )
        return "\n".join(said) or "nothing to change"

    def _list_folders_with_flags(self, client: IMAPClient) -> list[tuple[str, str]]:
        """(name, role) of the selectable folders, the role by SPECIAL-USE flag or usual name."""
        return [
            (name, "sent!" if b"\\sent" in {flag.lower() for flag in flags} else folder_role(name, flags, sep))
            for name, sep, flags in selectable_folders(client)
        ]

"""Gmail write-back: messages.modify for flags, moves and user labels (tags), messages.trash and untrash."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apps.accounts.labels import tag_key
from apps.accounts.providers.base import ProviderError, WriteBackPlace
from apps.accounts.providers.gmail.client import GmailConnection, execute

FLAG_LABELS = {
    "read": ([], ["UNREAD"]),
    "unread": (["UNREAD"], []),
    "flag": (["STARRED"], []),
    "unflag": ([], ["STARRED"]),
}


class GmailWriteBack(GmailConnection):
    def write_back(self, *, kind: str, places: list[WriteBackPlace], target: str = "", tag: str = "") -> str:
        """messages.modify / trash / untrash per Gmail id. Moves: the target label is added and the label of the
        folder the message is in removed (archive = remove INBOX, as Gmail's Archive button does)."""
        from googleapiclient.errors import HttpError

        folder_of: dict[str, str] = {}
        for place in places:
            folder_of.setdefault(place.provider_id, place.folder)
        said: list[str] = []
        with self._session():
            messages = self._users().messages()
            write: Callable[[str, str], str]
            if kind in ("tag", "untag"):
                label_id = self._user_label_id(tag, create=kind == "tag")
                if label_id is None:
                    return f"Gmail has no label {tag!r}: nothing to take off"
                add, remove = ([label_id], []) if kind == "tag" else ([], [label_id])

                def write(mid: str, _folder: str) -> str:
                    return self._modify(messages, mid, add=add, remove=remove)
            else:

                def write(mid: str, folder: str) -> str:
                    return self._write_one(messages, mid, kind=kind, folder=folder, target=target)

            for mid, folder in folder_of.items():
                try:
                    said.append(f"{mid}: {write(mid, folder)}")
                except HttpError as exc:
                    if exc.resp.status == 404:
                        said.append(f"{mid}: already gone from Gmail")
                        continue
                    raise
        return "\n".join(said) or "nothing to change"

    def _user_label_id(self, tag: str, *, create: bool) -> str | None:
        """The id of the user label named like the tag (as tags compare), created when asked and missing."""
        response = execute(self._users().labels().list(userId="me"))
        for label in response.get("labels") or []:
            if tag_key(str(label.get("name") or "")) != tag_key(tag):
                continue
            if label.get("type") == "user":
                return str(label["id"])
            raise ProviderError(
                f"The tag {tag!r} is Gmail's own {label.get('name')} label, which says what a message is rather than "
                "labelling it: it is kept here only. Choose another name to have it in Gmail.",
                category="unsupported",
            )
        if not create:
            return None
        created = execute(self._users().labels().create(userId="me", body={"name": tag}))
        return str(created["id"])

    def _write_one(self, messages: Any, mid: str, *, kind: str, folder: str, target: str) -> str:
        if kind in FLAG_LABELS:
            add, remove = FLAG_LABELS[kind]
            return self._modify(messages, mid, add=add, remove=remove)
        if kind not in ("move", "archive", "trash"):
            raise ProviderError(f"Unknown write-back {kind!r}", category="unsupported")
        if folder == target:
            return "already there"
        if kind == "move" and target in ("SENT", "DRAFT", "SPAM"):
            # Gmail refuses to put these labels on a message (they say what it is, not where it is).
            raise ProviderError(f"Gmail cannot move mail into {target}", category="unsupported")
        if kind == "trash" or target == "TRASH":
            labels = execute(messages.trash(userId="me", id=mid)).get("labelIds") or []
            return f"messages.trash → labels {', '.join(labels) or '(none)'}"
        steps: list[str] = []
        if folder == "TRASH":
            execute(messages.untrash(userId="me", id=mid))
            steps.append("messages.untrash")
        if kind == "archive":  # Gmail's Archive: out of the inbox, every other label kept
            add, remove = [], ["INBOX"]
        else:
            add = [target] if target else []
            # The label that put it in its old folder goes (not Sent/Drafts: those say what it is, not where).
            remove = [folder] if folder and folder not in ("TRASH", "SENT", "DRAFT") else []
        if add or remove:
            steps.append(self._modify(messages, mid, add=add, remove=remove))
        return "; ".join(steps) or "nothing to change"

    def _modify(self, messages: Any, mid: str, *, add: list[str], remove: list[str]) -> str:
        body = {"addLabelIds": add, "removeLabelIds": remove}
        labels = execute(messages.modify(userId="me", id=mid, body=body)).get("labelIds") or []
        change = " ".join([*(f"+{label}" for label in add), *(f"-{label}" for label in remove)])
        return f"messages.modify {change} → labels {', '.join(labels) or '(none)'}"

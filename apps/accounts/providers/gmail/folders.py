"""Where a Gmail message is: the folder its labels give (system labels first, then its first user label,
else All Mail), and a listed resource as a RemoteMessage."""

from __future__ import annotations

import base64
from typing import Any

from apps.accounts.providers.base import FolderInfo, RemoteMessage

SYSTEM_FOLDER_ROLES = {"INBOX": "inbox", "SENT": "sent", "DRAFT": "drafts", "TRASH": "trash", "SPAM": "spam"}
# Labels that are states, not places: never a message's folder.
STATE_LABELS = {"UNREAD", "STARRED", "IMPORTANT", "CHAT"}
# Where a message without any folder label is: All Mail, which is what archiving (removing INBOX) leads to.
ALL_MAIL = FolderInfo(name="", display_name="All Mail", role="archive")


def folder_for_labels(labels: list[str]) -> str:
    # Trash and spam first: a trashed message may keep its other labels, and Gmail shows it only in Trash.
    for system in ("TRASH", "SPAM", "INBOX", "SENT", "DRAFT"):
        if system in labels:
            return system
    for label in labels:
        if label not in STATE_LABELS and not label.startswith("CATEGORY_"):
            return label
    return ""


def remote_message_from(resource: dict[str, Any]) -> RemoteMessage:
    labels = [str(label) for label in resource.get("labelIds") or []]
    raw = str(resource.get("raw") or "")
    return RemoteMessage(
        provider_id=str(resource["id"]),
        raw=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)),
        folder=folder_for_labels(labels),
        labels=labels,
        seen="UNREAD" not in labels,
        flagged="STARRED" in labels,
        provider_thread_id=str(resource.get("threadId") or ""),
        global_id=True,
    )

"""Writes of the Results page: adding, editing and deleting workspace items (through the workspaces actions,
so every change is revisioned and logged) and the user's notification preferences."""

from __future__ import annotations

import base64
import json
import mimetypes
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from apps.results.models import NotificationPreference
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import CreatedBy, Encoding, WorkspaceItem


def delete_items(*, user: Any, item_ids: Iterable[int], hard: bool) -> int:
    """Soft-delete the user's live items among `item_ids`, or when `hard` permanently delete them (soft-deleted
    ones too); returns how many were deleted. Items of other users and items already gone are skipped."""
    items = WorkspaceItem.objects.filter(pk__in=list(item_ids), workspace__owner=user)
    if not hard:
        items = items.filter(deleted=False)
    rows = list(items.select_related("workspace").only("pk", "workspace"))
    actor = {"createdBy": CreatedBy.USER, "userId": user.pk, "via": "results"}
    deleted = 0
    with transaction.atomic():
        for item in rows:
            try:
                workspace_actions.remove_item(item_id=item.pk, workspace=item.workspace, hard=hard, actor=actor)
            except workspace_actions.WorkspaceError:
                continue  # removed meanwhile by an agent
            deleted += 1
    return deleted


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    restored: int
    refused: list[str]  # why an item could not be restored (its path is taken by a live item)


def restore_items(*, user: Any, item_ids: Iterable[int]) -> RestoreOutcome:
    """Undo the soft delete of the user's deleted items among `item_ids` (through the workspaces actions, so
    the revision log records it). Items of other users, live items and permanently deleted ones are skipped."""
    rows = list(
        WorkspaceItem.objects.filter(pk__in=list(item_ids), workspace__owner=user, deleted=True)
        .select_related("workspace")
        .only("pk", "label", "mime_type", "workspace")
    )
    actor = {"createdBy": CreatedBy.USER, "userId": user.pk, "via": "results"}
    restored = 0
    refused: list[str] = []
    for item in rows:
        try:
            workspace_actions.restore_item(item_id=item.pk, workspace=item.workspace, actor=actor)
        except workspace_actions.WorkspaceError as exc:
            refused.append(f"“{item.label or item.mime_type}”: {exc}")
            continue
        restored += 1
    return RestoreOutcome(restored=restored, refused=refused)


def update_notification_preference(
    *, user: Any, browser_notifications: bool | None = None, prompt_dismissed: bool | None = None
) -> NotificationPreference:
    preference, _ = NotificationPreference.objects.get_or_create(user=user)
    fields = []
    if browser_notifications is not None:
        preference.browser_notifications = browser_notifications
        fields.append("browser_notifications")
    if prompt_dismissed is not None:
        preference.prompt_dismissed = prompt_dismissed
        fields.append("prompt_dismissed")
    if fields:
        preference.save(update_fields=fields)
    return preference


# --- editing and adding items -------------------------------------------------------------------------

# The types the Results page edits as text (anything else keeps its data; label, description and tags stay
# editable). JSON is checked before it is saved.
TEXT_TYPES = ("text/markdown", "text/plain", "application/json")
MAX_UPLOAD_BYTES = workspace_actions.MAX_ITEM_BYTES


class ItemInputError(ValueError):
    """What the user entered cannot be saved, and why (the form shows it next to what they wrote)."""


def _user_actor(user: Any) -> dict[str, Any]:
    return {"createdBy": CreatedBy.USER, "userId": user.pk, "via": "results"}


def clean_tags(raw: str) -> list[str]:
    """Tags as typed: separated by commas or spaces, a leading # dropped, each once."""
    tags: list[str] = []
    for part in raw.replace(",", " ").split():
        tag = part.lstrip("#").strip()
        if tag and tag not in tags:
            tags.append(tag[:100])
    return tags


def _checked_text(mime_type: str, data: str) -> str:
    data = data.replace("\r\n", "\n")
    if mime_type == "application/json" and data.strip():
        try:
            json.loads(data)
        except ValueError as exc:
            raise ItemInputError(f"The content is not valid JSON ({exc}). Fix it, or save it as plain text.") from None
    return data


def edit_item(
    *,
    user: Any,
    item: WorkspaceItem,
    label: str,
    description: str,
    tags: str,
    data: str | None,
    expected_revision: int,
) -> WorkspaceItem:
    """Save the user's edit of one of their live items as a new revision. `data` is None for an item whose
    content is not edited as text (an image, a file). A revision saved meanwhile (by an agent or another tab)
    raises workspace_actions.RevisionConflict: nothing is overwritten."""
    patch: dict[str, Any] = {"label": label.strip(), "description": description.strip(), "tags": clean_tags(tags)}
    if data is not None:
        if item.encoding != Encoding.UTF8 or item.mime_type not in TEXT_TYPES:
            raise ItemInputError("This item's content is a file: replace it by adding a new item.")
        patch["data"] = _checked_text(item.mime_type, data)
    try:
        return workspace_actions.update_item(
            item_id=item.pk,
            workspace=item.workspace,
            patch=patch,
            expected_revision=expected_revision,
            actor=_user_actor(user),
        )
    except workspace_actions.RevisionConflict:
        raise
    except workspace_actions.WorkspaceError as exc:
        raise ItemInputError(f"Not saved: {exc}.") from None


def add_item_to_run(
    *,
    user: Any,
    run: Any,
    label: str,
    description: str,
    tags: str,
    mime_type: str,
    data: str,
    upload: UploadedFile | None = None,
) -> WorkspaceItem:
    """A new item, written by the user, in the workspace of one of their runs: text, markdown or JSON typed
    in the form, or an uploaded file (kept byte for byte: as text when it is UTF-8 text, else base64)."""
    workspace = workspace_actions.open_workspace(
        owner=user,
        run_id=run.pk,
        message_id=run.message_id,
        director_id=run.director_id,
        director_name=run.director.name,
        title=run.message.subject if run.message_id else "",
    )
    encoding = Encoding.UTF8
    if upload is not None:
        if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
            raise ItemInputError(f"The file is {upload.size:,} bytes; an item holds at most {MAX_UPLOAD_BYTES:,}.")
        raw = upload.read()
        mime_type = (upload.content_type or mimetypes.guess_type(upload.name or "")[0] or "application/octet-stream")[
            :255
        ]
        label = label.strip() or (upload.name or "")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if text and (mime_type.startswith("text/") or mime_type == "application/json") and "\x00" not in text:
            data = text
        else:
            data, encoding = base64.b64encode(raw).decode("ascii"), Encoding.BASE64
    else:
        if mime_type not in TEXT_TYPES:
            raise ItemInputError(f"Choose a type: {', '.join(TEXT_TYPES)}, or upload a file.")
        if not data.strip():
            raise ItemInputError("Write the content, or upload a file.")
        data = _checked_text(mime_type, data)
    try:
        return workspace_actions.add_item(
            workspace=workspace,
            data=data,
            label=label.strip(),
            description=description.strip(),
            mime_type=mime_type,
            encoding=encoding,
            tags=clean_tags(tags),
            context={"via": "results", "userId": user.pk},
            created_by=CreatedBy.USER,
        )
    except workspace_actions.WorkspaceError as exc:
        raise ItemInputError(f"Not saved: {exc}.") from None

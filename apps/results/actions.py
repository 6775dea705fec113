"""Writes of the Results page: deleting workspace items (through the workspaces actions, so every removal is
revisioned and logged) and the user's notification preferences."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from apps.results.models import NotificationPreference
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import CreatedBy, WorkspaceItem


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

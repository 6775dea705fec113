"""Writes of the Results page: deleting workspace items (through the workspaces actions, so every removal is
revisioned and logged) and the user's notification preferences."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from apps.results.models import NotificationPreference
from apps.workspaces import actions as workspace_actions
from apps.workspaces.models import CreatedBy, WorkspaceItem


def delete_items(*, user: Any, item_ids: Iterable[int], hard: bool) -> int:
    """Soft-delete (or, when `hard`, permanently delete) the user's live items among `item_ids`; returns how
    many were deleted. Items of other users and items already deleted are skipped."""
    items = list(
        WorkspaceItem.objects.filter(pk__in=list(item_ids), workspace__owner=user, deleted=False)
        .select_related("workspace")
        .only("pk", "workspace")
    )
    actor = {"createdBy": CreatedBy.USER, "userId": user.pk, "via": "results"}
    deleted = 0
    with transaction.atomic():
        for item in items:
            try:
                workspace_actions.remove_item(item_id=item.pk, workspace=item.workspace, hard=hard, actor=actor)
            except workspace_actions.WorkspaceError:
                continue  # removed meanwhile by an agent
            deleted += 1
    return deleted


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

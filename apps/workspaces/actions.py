"""Writes to workspaces. Revisions make concurrent edits safe: an update with a stale expectedRevision
fails with RevisionConflict (the API answers 409 with the current revision) and changes nothing."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.workspaces.models import CreatedBy, Encoding, ItemAction, Workspace, WorkspaceItem, WorkspaceItemLog

MAX_ITEM_BYTES = 5 * 1024 * 1024
PATCHABLE = ("label", "description", "mime_type", "encoding", "data", "tags")
# The spec's item field names (API and tools) → model fields.
SPEC_FIELDS = {
    "label": "label",
    "description": "description",
    "mimeType": "mime_type",
    "encoding": "encoding",
    "data": "data",
    "tags": "tags",
}


class WorkspaceError(ValueError):
    pass


class RevisionConflict(WorkspaceError):
    def __init__(self, item: WorkspaceItem, expected: int) -> None:
        super().__init__(f"revision conflict: expected {expected}, current is {item.revision}")
        self.current_revision = item.revision
        self.item = item


def open_workspace(
    *,
    owner: Any,
    run_id: int | None,
    message_id: int | None,
    director_id: int | None,
    director_name: str,
    title: str,
) -> Workspace:
    """One workspace per run (get or create, so a retried run reuses it)."""
    if run_id is not None:
        existing = Workspace.objects.filter(run_id=run_id).first()
        if existing is not None:
            return existing
    return Workspace.objects.create(
        owner=owner,
        run_id=run_id,
        message_id=message_id,
        director_id=director_id,
        director_name=director_name[:100],
        title=title[:300],
    )


def patch_from_spec(patch: Mapping[str, Any]) -> dict[str, Any]:
    """A patch in the spec's names (mimeType …) as model fields; unknown names are an error."""
    unknown = set(patch) - set(SPEC_FIELDS)
    if unknown:
        raise WorkspaceError(f"cannot patch {', '.join(sorted(unknown))}; patchable: {', '.join(SPEC_FIELDS)}")
    return {SPEC_FIELDS[name]: value for name, value in patch.items()}


TEXT_LIMITS = {"label": 300, "mime_type": 255, "description": None, "data": None}


def _validate_payload(*, encoding: str, data: str, tags: Any, texts: Mapping[str, Any] | None = None) -> None:
    for name, value in {"data": data, **(texts or {})}.items():
        if not isinstance(value, str):
            raise WorkspaceError(f"{name} must be a string")
        limit = TEXT_LIMITS.get(name)
        if limit is not None and len(value) > limit:
            raise WorkspaceError(f"{name} is longer than {limit} characters")
    if encoding not in Encoding.values:
        raise WorkspaceError(f"encoding must be one of {', '.join(Encoding.values)}")
    if encoding == Encoding.BASE64:
        try:
            raw = base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise WorkspaceError("data is not valid base64") from None
        size = len(raw)
    else:
        size = len(data.encode("utf-8"))
    if size > MAX_ITEM_BYTES:
        raise WorkspaceError(f"item is {size} bytes; the limit is {MAX_ITEM_BYTES}")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise WorkspaceError("tags must be a list of strings")


def _log(item: WorkspaceItem, action: str, actor: Mapping[str, Any]) -> None:
    WorkspaceItemLog.objects.create(
        workspace_id=item.workspace_id, item_id=item.pk, action=action, revision=item.revision, actor=dict(actor)
    )


def add_item(
    *,
    workspace: Workspace,
    data: str = "",
    label: str = "",
    description: str = "",
    mime_type: str = "text/plain",
    encoding: str = Encoding.UTF8,
    tags: list[str] | None = None,
    context: Mapping[str, Any] | None = None,
    created_by: str = CreatedBy.DIRECTOR,
) -> WorkspaceItem:
    tags = list(tags or [])
    _validate_payload(encoding=encoding, data=data, tags=tags)
    if created_by not in CreatedBy.values:
        raise WorkspaceError(f"createdBy must be one of {', '.join(CreatedBy.values)}")
    now = timezone.now()
    context = {**(context or {}), "createdBy": created_by}
    with transaction.atomic():
        item = WorkspaceItem.objects.create(
            workspace=workspace,
            label=label[:300],
            description=description,
            mime_type=(mime_type or "text/plain")[:255],
            encoding=encoding,
            data=data,
            tags=tags,
            created=now,
            updated=now,
            context=context,
            created_by=created_by,
        )
        _log(item, ItemAction.ADD, context)
    return item


def update_item(
    *,
    item_id: int,
    workspace: Workspace,
    patch: Mapping[str, Any],
    expected_revision: int | None,
    actor: Mapping[str, Any],
) -> WorkspaceItem:
    unknown = set(patch) - set(PATCHABLE)
    if unknown:
        raise WorkspaceError(f"cannot patch {', '.join(sorted(unknown))}; patchable: {', '.join(PATCHABLE)}")
    with transaction.atomic():
        item = WorkspaceItem.objects.select_for_update().filter(pk=item_id, workspace=workspace).first()
        if item is None or item.deleted:
            raise WorkspaceError(f"no item {item_id} in this workspace")
        if expected_revision is not None and expected_revision != item.revision:
            raise RevisionConflict(item, expected_revision)
        merged = {name: patch.get(name, getattr(item, name)) for name in PATCHABLE}
        _validate_payload(
            encoding=merged["encoding"],
            data=merged["data"],
            tags=merged["tags"],
            texts={name: merged[name] for name in ("label", "description", "mime_type")},
        )
        for name, value in patch.items():
            setattr(item, name, value)
        item.revision += 1
        item.updated = timezone.now()
        item.save(update_fields=[*patch, "revision", "updated"])
        _log(item, ItemAction.UPDATE, actor)
    return item


def remove_item(*, item_id: int, workspace: Workspace, hard: bool, actor: Mapping[str, Any]) -> None:
    with transaction.atomic():
        item = WorkspaceItem.objects.select_for_update().filter(pk=item_id, workspace=workspace).first()
        if item is None or (item.deleted and not hard):
            raise WorkspaceError(f"no item {item_id} in this workspace")
        if hard:
            _log(item, ItemAction.HARD_DELETE, actor)
            item.delete()
            return
        item.deleted = True
        item.revision += 1
        item.updated = timezone.now()
        item.save(update_fields=["deleted", "revision", "updated"])
        _log(item, ItemAction.REMOVE, actor)

"""Reads for workspaces (permission-checked access, filtered item lists, the JSON shape of an item)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.workspaces.models import Workspace, WorkspaceItem, WorkspaceItemLog


def access_workspace(*, user: Any, workspace_id: int) -> Workspace:
    workspace = Workspace.objects.filter(pk=workspace_id, owner=user).first()
    if workspace is None:
        raise Http404("No such workspace")
    return workspace


def workspace_for_run(*, run_id: int) -> Workspace | None:
    return Workspace.objects.filter(run_id=run_id).first()


def list_items(
    *,
    workspace: Workspace,
    include_deleted: bool = False,
    mime_type: str | None = None,
    tag: str | None = None,
    author: str | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> QuerySet[WorkspaceItem]:
    items = WorkspaceItem.objects.filter(workspace=workspace)
    if not include_deleted:
        items = items.filter(deleted=False)
    if mime_type:
        # "image/*" selects a whole family.
        items = (
            items.filter(mime_type__startswith=mime_type[:-1])
            if mime_type.endswith("/*")
            else items.filter(mime_type=mime_type)
        )
    if author:
        items = items.filter(created_by=author)
    ordered = items.order_by("created", "pk")
    if tag:
        # Tags are a JSON list; filter in Python (portable across SQLite and PostgreSQL, lists are short).
        ids = [pk for pk, tags in ordered.values_list("pk", "tags") if isinstance(tags, list) and tag in tags]
        ordered = WorkspaceItem.objects.filter(pk__in=ids).order_by("created", "pk")
    if limit is not None:
        return ordered[offset : offset + limit]
    return ordered[offset:] if offset else ordered


def get_item(*, workspace: Workspace, item_id: int) -> WorkspaceItem | None:
    return WorkspaceItem.objects.filter(workspace=workspace, pk=item_id).first()


def item_json(item: WorkspaceItem, *, include_data: bool = True) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(item.pk),
        "label": item.label,
        "description": item.description,
        "mimeType": item.mime_type,
        "encoding": item.encoding,
        "tags": item.tags,
        "created": item.created.isoformat(),
        "updated": item.updated.isoformat(),
        "revision": item.revision,
        "deleted": item.deleted,
        "context": item.context,
    }
    if include_data:
        data["data"] = item.data
    else:
        data["size"] = len(item.data)
    return data


def item_log(*, workspace: Workspace) -> QuerySet[WorkspaceItemLog]:
    return WorkspaceItemLog.objects.filter(workspace=workspace).order_by("at", "pk")

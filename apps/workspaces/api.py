"""Workspaces REST API (mounted at /api/workspaces), the spec's paths:

GET/POST /{id}/items (filters mimeType, tag, author; offset/limit paging; includeDeleted),
GET/PUT/DELETE /{id}/items/{itemId} (PUT takes expectedRevision: a stale one → 409 with the current
revision; DELETE is soft unless ?hard=true). Every change is logged with the acting user.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status

from apps.workspaces import actions, selectors
from apps.workspaces.models import CreatedBy

router = Router(tags=["workspaces"])


class ItemIn(Schema):
    label: str = ""
    description: str = ""
    mimeType: str = "text/plain"
    encoding: str = "utf8"
    data: str = ""
    tags: list[str] = []
    path: str | None = None


class ItemPatch(Schema):
    patch: dict[str, Any]
    expectedRevision: int | None = None


class ItemsOut(Schema):
    items: list[dict[str, Any]]
    total: int
    offset: int
    limit: int


def _actor(request: HttpRequest) -> dict[str, Any]:
    return {"createdBy": CreatedBy.USER, "userId": request.user.pk}


@router.get("/{workspace_id}/items", response=ItemsOut)
def list_items(
    request: HttpRequest,
    workspace_id: int,
    includeDeleted: bool = False,
    mimeType: str | None = None,
    tag: str | None = None,
    author: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> dict[str, Any]:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    limit = max(1, min(limit, 500))
    offset = max(0, offset)
    everything = selectors.list_items(
        workspace=workspace, include_deleted=includeDeleted, mime_type=mimeType, tag=tag, author=author
    )
    page = list(everything[offset : offset + limit])
    return {
        "items": [selectors.item_json(item) for item in page],
        "total": everything.count(),
        "offset": offset,
        "limit": limit,
    }


@router.post("/{workspace_id}/items", response={201: dict[str, Any], 400: dict[str, Any]})
def add_item(request: HttpRequest, workspace_id: int, payload: ItemIn) -> Status:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    try:
        item = actions.add_item(
            workspace=workspace,
            data=payload.data,
            label=payload.label,
            description=payload.description,
            mime_type=payload.mimeType,
            encoding=payload.encoding,
            tags=payload.tags,
            context={"userId": request.user.pk},
            created_by=CreatedBy.USER,
            path=payload.path,
        )
    except actions.WorkspaceError as exc:
        return Status(400, {"error": str(exc)})
    return Status(201, {"item": selectors.item_json(item)})


@router.get("/{workspace_id}/items/{item_id}", response={200: dict[str, Any], 404: dict[str, Any]})
def get_item(request: HttpRequest, workspace_id: int, item_id: int) -> Status:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    item = selectors.get_item(workspace=workspace, item_id=item_id)
    if item is None:
        return Status(404, {"error": f"no item {item_id} in this workspace"})
    return Status(200, {"item": selectors.item_json(item)})


@router.put("/{workspace_id}/items/{item_id}", response={200: dict[str, Any], 400: dict[str, Any], 409: dict[str, Any]})
def update_item(request: HttpRequest, workspace_id: int, item_id: int, payload: ItemPatch) -> Status:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    try:
        patch = actions.patch_from_spec(payload.patch)
        item = actions.update_item(
            item_id=item_id,
            workspace=workspace,
            patch=patch,
            expected_revision=payload.expectedRevision,
            actor=_actor(request),
        )
    except actions.RevisionConflict as exc:
        return Status(
            409, {"error": str(exc), "currentRevision": exc.current_revision, "item": selectors.item_json(exc.item)}
        )
    except actions.WorkspaceError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, {"item": selectors.item_json(item)})


@router.delete("/{workspace_id}/items/{item_id}", response={200: dict[str, Any], 404: dict[str, Any]})
def remove_item(request: HttpRequest, workspace_id: int, item_id: int, hard: bool = False) -> Status:
    workspace = selectors.access_workspace(user=request.user, workspace_id=workspace_id)
    try:
        actions.remove_item(item_id=item_id, workspace=workspace, hard=hard, actor=_actor(request))
    except actions.WorkspaceError as exc:
        return Status(404, {"error": str(exc)})
    return Status(200, {"removed": True, "hard": hard})

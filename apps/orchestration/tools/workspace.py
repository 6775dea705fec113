"""workspace_* tools: every participant may add, list, read, update and remove any item of the run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from apps.llm import ToolFailure
from apps.orchestration.prepared import PreparedQuery
from apps.orchestration.tools.context import Actor, RunContext
from apps.orchestration.tools.schemas import (
    WorkspaceAddArgs,
    WorkspaceGetArgs,
    WorkspaceListArgs,
    WorkspaceRemoveArgs,
    WorkspaceUpdateArgs,
)
from apps.workspaces import actions, selectors
from apps.workspaces.models import Workspace, WorkspaceItem


def _item_id(value: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ToolFailure(f"no item {value!r}: item ids are numbers as workspace_list_items shows them") from None


def add_item(ctx: RunContext, actor: Actor, args: WorkspaceAddArgs) -> dict[str, Any]:
    try:
        item = actions.add_item(
            workspace=ctx.workspace,
            data=args.data,
            label=args.label,
            description=args.description,
            mime_type=args.mimeType,
            encoding=args.encoding,
            tags=args.tags,
            context=ctx.item_context(actor),
            created_by=actor.kind,
            path=args.path,
        )
    except actions.WorkspaceError as exc:
        raise ToolFailure(str(exc)) from None
    return {"item": selectors.item_json(item, include_data=False)}


MAX_LISTED = 200


def _prepared_listing(include_deleted: bool) -> PreparedQuery[WorkspaceItem]:
    """The selector's own queryset without a type or tag filter (how directors list a workspace), compiled
    once per connection instead of at every call."""

    def build(workspace_id: int) -> QuerySet[WorkspaceItem]:
        return selectors.list_items(workspace=Workspace(pk=workspace_id), include_deleted=include_deleted)[:MAX_LISTED]

    return PreparedQuery(WorkspaceItem, build, "workspace_id")


_LISTINGS = {include_deleted: _prepared_listing(include_deleted) for include_deleted in (False, True)}


def list_items(ctx: RunContext, actor: Actor, args: WorkspaceListArgs) -> dict[str, Any]:
    items: Iterable[WorkspaceItem]
    if args.mimeType or args.tag:
        items = selectors.list_items(
            workspace=ctx.workspace, include_deleted=args.includeDeleted, mime_type=args.mimeType, tag=args.tag
        )[:MAX_LISTED]
    else:
        items = _LISTINGS[args.includeDeleted](workspace_id=ctx.workspace.pk)
    return {"items": [selectors.item_json(item, include_data=False) for item in items]}


def get_item(ctx: RunContext, actor: Actor, args: WorkspaceGetArgs) -> dict[str, Any]:
    item = selectors.get_item(workspace=ctx.workspace, item_id=_item_id(args.id))
    if item is None:
        raise ToolFailure(f"no item {args.id} in this workspace")
    return {"item": selectors.item_json(item)}


def update_item(ctx: RunContext, actor: Actor, args: WorkspaceUpdateArgs) -> dict[str, Any]:
    patch = actions.patch_from_spec(args.patch.model_dump(exclude_none=True))
    if not patch:
        raise ToolFailure("the patch is empty: give at least one of label, description, mimeType, encoding, data, tags")
    try:
        item = actions.update_item(
            item_id=_item_id(args.id),
            workspace=ctx.workspace,
            patch=patch,
            expected_revision=args.expectedRevision,
            actor=ctx.item_context(actor),
        )
    except actions.RevisionConflict as exc:
        raise ToolFailure(str(exc), currentRevision=exc.current_revision) from None
    except actions.WorkspaceError as exc:
        raise ToolFailure(str(exc)) from None
    return {"item": selectors.item_json(item, include_data=False)}


def remove_item(ctx: RunContext, actor: Actor, args: WorkspaceRemoveArgs) -> dict[str, Any]:
    try:
        actions.remove_item(
            item_id=_item_id(args.id), workspace=ctx.workspace, hard=args.hardDelete, actor=ctx.item_context(actor)
        )
    except actions.WorkspaceError as exc:
        raise ToolFailure(str(exc)) from None
    return {"removed": True}

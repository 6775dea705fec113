from __future__ import annotations

from django.contrib import admin

from apps.workspaces.models import Workspace, WorkspaceItem, WorkspaceItemLog
from mailagent.admin_scoping import OwnerScopedAdmin, OwnerScopedTabularInline


class WorkspaceItemInline(OwnerScopedTabularInline):
    model = WorkspaceItem
    extra = 0
    fields = ("label", "mime_type", "encoding", "tags", "revision", "deleted", "created_by", "updated")
    readonly_fields = ("revision", "updated")
    show_change_link = True


@admin.register(Workspace)
class WorkspaceAdmin(OwnerScopedAdmin):
    list_display = ("pk", "title", "director_name", "run_id", "owner", "created_at")
    search_fields = ("title", "director_name")
    raw_id_fields = ("owner", "message")
    inlines = (WorkspaceItemInline,)


@admin.register(WorkspaceItem)
class WorkspaceItemAdmin(OwnerScopedAdmin):
    list_display = ("pk", "label", "mime_type", "workspace", "revision", "deleted", "created_by", "updated")
    list_filter = ("mime_type", "deleted", "created_by")
    raw_id_fields = ("workspace",)


@admin.register(WorkspaceItemLog)
class WorkspaceItemLogAdmin(OwnerScopedAdmin):
    list_display = ("at", "workspace", "item_id", "action", "revision")
    list_filter = ("action",)
    readonly_fields = ("workspace", "item_id", "action", "revision", "actor", "at")

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from apps.workspaces.models import (
    InboxEntry,
    MailboxToken,
    McpCall,
    Workspace,
    WorkspaceItem,
    WorkspaceItemLog,
    WorkspaceToken,
)
from mailagent.admin_scoping import OwnerScopedAdmin, OwnerScopedTabularInline
from mailagent.admin_secrets import encrypted_json_display, undecryptable_fields


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

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*super().get_readonly_fields(request, obj), *undecryptable_fields(obj, ("description", "data")))


@admin.register(WorkspaceItemLog)
class WorkspaceItemLogAdmin(OwnerScopedAdmin):
    list_display = ("at", "workspace", "item_id", "action", "revision")
    list_filter = ("action",)
    readonly_fields = ("workspace", "item_id", "action", "revision", "actor", "at")


@admin.register(InboxEntry)
class InboxEntryAdmin(OwnerScopedAdmin):
    list_display = ("created", "workspace_label", "source", "run_id", "read_at", "replied_at")
    list_filter = ("source",)
    raw_id_fields = ("owner", "workspace")
    # The question is encrypted JSON: shown read-only, like other encrypted JSON.
    exclude = ("ask",)
    readonly_fields = ("reply_delivered_at", "ask_display")
    ask_display = encrypted_json_display("ask", "Question")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return (*super().get_readonly_fields(request, obj), *undecryptable_fields(obj, ("comments", "reply")))


@admin.register(WorkspaceToken)
class WorkspaceTokenAdmin(OwnerScopedAdmin):
    """Tokens are created on the workspace page or with manage.py mcp_token (shown once); here only revoked."""

    list_display = ("prefix", "name", "workspace", "created_at", "last_used_at", "revoked_at")
    raw_id_fields = ("workspace",)
    readonly_fields = ("token_hash", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(MailboxToken)
class MailboxTokenAdmin(OwnerScopedAdmin):
    """Mailbox MCP tokens: created in Settings → MCP tokens or with manage.py mcp_token (shown once); here
    their limits can be changed and they can be revoked. Only the token's SHA-256 is stored, never the token."""

    list_display = ("prefix", "name", "owner", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    raw_id_fields = ("owner", "workspace", "account")
    readonly_fields = ("token_hash", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(McpCall)
class McpCallAdmin(OwnerScopedAdmin):
    """The mailbox MCP audit ledger (ids only, never queries or text), read-only."""

    list_display = ("at", "tool", "token", "owner", "ok", "result_bytes", "duration_ms")
    list_filter = ("tool", "ok")
    readonly_fields = (
        "token", "owner", "tool", "argument_ids", "ok", "error", "result_bytes", "duration_ms", "at",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

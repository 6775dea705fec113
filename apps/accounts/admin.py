"""Admin for mail accounts and stored mail. Credentials never appear: the field is excluded outright and the
admin shows only how they are stored (encrypted, plaintext, or cannot be decrypted)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.accounts.models import Attachment, MailAccount, MailFolder, Message, Thread
from mailagent.admin_scoping import OwnerScopedAdmin, OwnerScopedTabularInline
from mailagent.crypto import storage_of_stored_value, stored_column


class MailFolderInline(OwnerScopedTabularInline):
    model = MailFolder
    extra = 0
    fields = ("name", "display_name", "role", "uidvalidity", "last_uid", "last_synced_at")
    readonly_fields = ("uidvalidity", "last_uid", "last_synced_at")
    show_change_link = False


@admin.register(MailAccount)
class MailAccountAdmin(OwnerScopedAdmin):
    list_display = (
        "name",
        "owner",
        "provider",
        "address",
        "enabled",
        "last_sync_status",
        "last_sync_at",
        "credentials_storage",
    )
    list_filter = ("provider", "enabled", "last_sync_status", "last_error_category")
    search_fields = ("name", "address", "owner__email", "owner__username")
    list_select_related = ("owner",)
    raw_id_fields = ("owner",)
    # Passwords and OAuth token sets are write-only: never shown or edited here, only how they are stored.
    exclude = ("credentials",)
    readonly_fields = (
        "credentials_storage",
        "sync_cursor",
        "last_sync_at",
        "last_sync_status",
        "last_error_category",
        "last_error_message",
        "last_sync_summary",
        "provider_signature",
        "sync_lock_token",
        "sync_lock_expires_at",
        "created_at",
    )
    inlines = (MailFolderInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[MailAccount]:
        # The stored column as it is (ciphertext or plaintext): the list says how each secret is kept without
        # decrypting anything.
        return (
            super()
            .get_queryset(request)
            .defer("credentials")
            .annotate(_stored_credentials=stored_column("credentials"))
        )

    @admin.display(description="Credentials")
    def credentials_storage(self, obj: MailAccount) -> str:
        return storage_of_stored_value(getattr(obj, "_stored_credentials", None)).label


class AttachmentInline(OwnerScopedTabularInline):
    model = Attachment
    extra = 0
    can_delete = False
    fields = ("filename", "mime_type", "size", "is_inline", "content_id", "sha256", "cache_path")
    readonly_fields = fields
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(OwnerScopedAdmin):
    """Stored mail mirrors the provider; it is inspected here, never edited."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in self.model._meta.get_fields() if field.concrete]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # View permission drives the read-only change form; saving is refused.
        return False


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("subject_or_blank", "from_address", "account", "folder", "date", "seen", "has_attachments")
    list_filter = ("account", "folder", "has_attachments", "seen", "flagged")
    search_fields = ("subject", "from_address", "from_name")
    list_select_related = ("account",)
    date_hierarchy = "date"
    show_full_result_count = False
    inlines = (AttachmentInline,)

    @admin.display(description="Subject", ordering="subject")
    def subject_or_blank(self, obj: Message) -> str:
        return obj.subject or "(no subject)"


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "account", "message_count", "last_message_at")
    list_filter = ("account",)
    search_fields = ("subject",)
    list_select_related = ("account",)

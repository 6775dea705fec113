from __future__ import annotations

from django.contrib import admin

from apps.organization.models import AttachmentIntake, Library, LibraryFile, Move, OrganizationSettings, Suggestion


@admin.register(AttachmentIntake)
class AttachmentIntakeAdmin(admin.ModelAdmin):
    list_display = ("account", "enabled", "max_bytes", "allowed_suffixes", "enabled_at")
    list_editable = ("enabled",)
    readonly_fields = ("enabled_at",)

    def save_model(self, request, obj, form, change):  # type: ignore[no-untyped-def]
        from apps.organization.intake import set_intake

        saved = set_intake(
            account=obj.account,
            enabled=obj.enabled,
            max_bytes=obj.max_bytes,
            allowed_suffixes=list(obj.allowed_suffixes or []),
            include_inline=obj.include_inline,
        )
        obj.pk, obj.enabled_at = saved.pk, saved.enabled_at


@admin.register(Library)
class LibraryAdmin(admin.ModelAdmin):
    list_display = ("owner", "root", "created_at")


@admin.register(LibraryFile)
class LibraryFileAdmin(admin.ModelAdmin):
    list_display = ("path", "library", "status", "source", "digest_kind", "size")
    list_filter = ("status", "source", "digest_kind")
    search_fields = ("path",)


@admin.register(Suggestion)
class SuggestionAdmin(admin.ModelAdmin):
    list_display = ("file", "status", "target_folder", "confidence", "source", "created_at")
    list_filter = ("status", "source")


@admin.register(Move)
class MoveAdmin(admin.ModelAdmin):
    list_display = ("from_path", "to_path", "reason", "created_at", "undone_at")


admin.site.register(OrganizationSettings)

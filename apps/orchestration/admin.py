"""Directors are edited here; their filters appear inline (apps/routing/admin.py adds the inline)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.contrib.admin.options import InlineModelAdmin

from apps.orchestration.models import Director, Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("pk", "director", "message", "status", "trigger", "fetch_cycle_id", "created_at")
    list_filter = ("status", "trigger", "director")
    list_select_related = ("director", "message")
    raw_id_fields = ("message",)
    readonly_fields = ("created_at", "started_at", "finished_at")


@admin.register(Director)
class DirectorAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "enabled", "created_at")
    list_filter = ("enabled",)
    search_fields = ("name", "description")
    list_select_related = ("owner",)
    # Higher layers (routing's filters) add their inlines to this tuple from their own admin module.
    inlines: ClassVar[tuple[type[InlineModelAdmin[Any, Any]], ...]] = ()

"""Filters are edited inline under their director (drag rows to reorder) and listed with recent matches."""

from __future__ import annotations

import datetime as dt

from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone

from apps.orchestration.admin import DirectorAdmin
from apps.orchestration.models import Run
from apps.routing.models import FetchCycle, Filter
from mailagent.admin_scoping import OwnerScopedAdmin, OwnerScopedTabularInline

RECENT_DAYS = 7


class FilterInline(OwnerScopedTabularInline):
    model = Filter
    extra = 1
    fields = ("order", "field", "regex", "case_insensitive", "description", "enabled")
    ordering = ("order", "pk")
    classes = ("sortable-inline",)

    class Media:
        js = ("mailagent/admin_sortable.js",)
        css = {"all": ("mailagent/admin_sortable.css",)}


DirectorAdmin.inlines = (*DirectorAdmin.inlines, FilterInline)


@admin.register(Filter)
class FilterAdmin(OwnerScopedAdmin):
    list_display = ("regex", "director", "field", "case_insensitive", "enabled", "order", "recent_matches", "errors")
    list_filter = ("field", "enabled", "director")
    list_editable = ("enabled", "order")
    list_select_related = ("director",)
    search_fields = ("regex", "description", "director__name")
    readonly_fields = ("created_at", "updated_at", "error_count", "last_error", "last_error_at")
    ordering = ("order", "pk")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Filter]:
        since = timezone.now() - dt.timedelta(days=RECENT_DAYS)
        matches = (
            Run.objects.filter(filter_id=OuterRef("pk"), created_at__gte=since)
            .values("filter_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(recent_match_count=Coalesce(Subquery(matches, output_field=IntegerField()), 0))
        )

    @admin.display(description=f"Matches ({RECENT_DAYS} days)", ordering="recent_match_count")
    def recent_matches(self, obj: Filter) -> int:
        return int(getattr(obj, "recent_match_count", 0))

    @admin.display(description="Errors", ordering="error_count")
    def errors(self, obj: Filter) -> str:
        return f"{obj.error_count}: {obj.last_error[:80]}" if obj.error_count else "—"


@admin.register(FetchCycle)
class FetchCycleAdmin(OwnerScopedAdmin):
    list_display = ("pk", "trigger", "status", "started_at", "messages_stored", "runs_created", "accounts_failed")
    list_filter = ("trigger", "status")
    readonly_fields = [f.name for f in FetchCycle._meta.fields]

"""Owner scoping for the Django admin: staff who are not superusers see and choose only their own rows.

Every user-owned model reaches its owner through a chain of foreign keys ending in a field named `owner`
(Message → account → owner, Run → director → owner). `owner_lookup()` finds the shortest such chain, so
an admin needs no per-model configuration: `OwnerScopedAdmin` filters its changelist, its foreign-key and
many-to-many choices (drop-downs, raw-id fields and their validation) and its related list filters.
Superusers see everything. Models with no owner chain (global settings) are left unscoped. A model whose
rows reach their owner through one of several nullable chains (a provider event belongs to a run, or to a
prompt tried in the playground) lists them as `owner_lookups = ("run__director__owner", "prompt__owner")`:
a row is the user's when any chain ends at them.
"""

from __future__ import annotations

from collections import deque
from functools import cache
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import models
from django.db.models import Q, QuerySet
from django.http import HttpRequest

OWNER_FIELD = "owner"
MAX_DEPTH = 4


@cache
def owner_lookup(model: type[models.Model]) -> str | None:
    """The ORM path from `model` to its owning user (e.g. "message__account__owner"), or None."""
    user_model = get_user_model()
    queue: deque[tuple[type[models.Model], str, int]] = deque([(model, "", 0)])
    seen: set[type[models.Model]] = {model}
    while queue:
        current, prefix, depth = queue.popleft()
        foreign_keys = [
            f
            for f in current._meta.get_fields()
            if (f.many_to_one or f.one_to_one) and f.concrete and f.related_model is not None
        ]
        for field in foreign_keys:
            if field.name == OWNER_FIELD and field.related_model is user_model:
                return f"{prefix}{field.name}"
        if depth + 1 >= MAX_DEPTH:
            continue
        for field in foreign_keys:
            related = field.related_model
            if isinstance(related, type) and related is not user_model and related not in seen:
                seen.add(related)
                queue.append((related, f"{prefix}{field.name}__", depth + 1))
    return None


def owner_lookups(model: type[models.Model]) -> tuple[str, ...]:
    """Every ORM path from `model` to its owner: the model's declared `owner_lookups`, else the shortest chain."""
    declared = getattr(model, "owner_lookups", None)
    if declared:
        return tuple(declared)
    path = owner_lookup(model)
    return () if path is None else (path,)


def scoped_queryset(model: type[models.Model], user: Any, queryset: QuerySet[Any] | None = None) -> QuerySet[Any]:
    """`queryset` (default: all rows of `model`) limited to what `user` owns; the user model to themself."""
    rows = queryset if queryset is not None else model._default_manager.all()
    if model is get_user_model():
        return rows.filter(pk=user.pk)
    paths = owner_lookups(model)
    if not paths:
        return rows
    owned = Q()
    for path in paths:
        owned |= Q(**{path: user})
    return rows.filter(owned)


def _unscoped(request: HttpRequest) -> bool:
    return bool(getattr(request.user, "is_superuser", False))


class OwnerScopedMixin:
    """For ModelAdmin and inline admins alike (both share these hooks)."""

    model: type[models.Model]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)  # type: ignore[misc]
        return rows if _unscoped(request) else scoped_queryset(self.model, request.user, rows)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not _unscoped(request) and "queryset" not in kwargs:
            kwargs["queryset"] = scoped_queryset(db_field.related_model, request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not _unscoped(request) and "queryset" not in kwargs:
            kwargs["queryset"] = scoped_queryset(db_field.related_model, request.user)
        return super().formfield_for_manytomany(db_field, request, **kwargs)  # type: ignore[misc]


class OwnerScopedAdmin(OwnerScopedMixin, admin.ModelAdmin):
    def get_list_filter(self, request: HttpRequest) -> Any:
        """Related list filters list every row of the related model; for non-superusers offer only the
        related rows that appear in their own (scoped) changelist."""
        filters = super().get_list_filter(request)
        if _unscoped(request):
            return filters
        scoped: list[Any] = []
        for entry in filters:
            if isinstance(entry, str) and "__" not in entry:
                field = self.model._meta.get_field(entry)
                if field.is_relation:
                    scoped.append((entry, admin.RelatedOnlyFieldListFilter))
                    continue
            scoped.append(entry)
        return scoped


class OwnerScopedTabularInline(OwnerScopedMixin, admin.TabularInline):
    pass


class OwnerScopedStackedInline(OwnerScopedMixin, admin.StackedInline):
    pass

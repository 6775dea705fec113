"""`{% load search_tags %}{% search_embedding_progress %}`: the backfill progress panel for any page (the
Diagnostics page always shows it);
`{% search_embedding_progress when_pending=True %}` renders it only while vectors or gists are missing (the
Search page: results found by words only until then)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.accounts.selectors import list_tags_for_user
from apps.search.selectors import (
    embedding_progress,
    gist_embedding_progress,
    index_work_pending,
    list_saved_searches,
)

register = template.Library()


@register.inclusion_tag("search/partials/embedding_progress.html")
def search_embedding_progress(when_pending: bool = False) -> dict[str, Any]:
    if when_pending and not index_work_pending():
        return {"hidden": True}  # without counting (the counts cost a quarter second on a large index)
    return {"progress": embedding_progress(), "gists": gist_embedding_progress(), "hidden": False}


@register.inclusion_tag("search/partials/sidebar_searches.html", takes_context=True)
def mailbox_saved_searches(context: template.Context) -> dict[str, Any]:
    """The mailbox sidebar's saved searches and tags, each with its count and a link that runs it."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"saved": [], "tags": [], "show": False}
    return {"saved": list_saved_searches(user=user), "tags": list_tags_for_user(user=user), "show": True}

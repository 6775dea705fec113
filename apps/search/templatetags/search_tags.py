"""`{% load search_tags %}{% search_embedding_progress %}`: the backfill progress panel for any page (the
Diagnostics page always shows it);
`{% search_embedding_progress when_pending=True %}` renders it only while vectors or gists are missing (the
Search page: results found by words only until then)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.search.selectors import embedding_progress, gist_embedding_progress

register = template.Library()


@register.inclusion_tag("search/partials/embedding_progress.html")
def search_embedding_progress(when_pending: bool = False) -> dict[str, Any]:
    progress, gists = embedding_progress(), gist_embedding_progress()
    pending = bool(progress.pending or (gists.embedder and gists.pending))
    return {"progress": progress, "gists": gists, "hidden": when_pending and not pending}

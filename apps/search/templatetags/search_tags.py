"""`{% load search_tags %}{% search_embedding_progress %}`: the backfill progress panel for any page
(the diagnostics page lives in mailagent, which imports no app, so it includes this tag instead)."""

from __future__ import annotations

from typing import Any

from django import template

from apps.search.selectors import embedding_progress, gist_embedding_progress

register = template.Library()


@register.inclusion_tag("search/partials/embedding_progress.html")
def search_embedding_progress() -> dict[str, Any]:
    return {"progress": embedding_progress(), "gists": gist_embedding_progress()}

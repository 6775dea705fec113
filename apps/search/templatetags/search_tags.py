"""`{% load search_tags %}{% search_embedding_progress %}`: the backfill progress panel for staff on any page
(the Diagnostics page always shows it; the home page and the Search page while work is pending);
`{% search_embedding_progress when_pending=True %}` renders it only while vectors or gists are missing (the
Search page: results found by words only until then)."""

from __future__ import annotations

from email.utils import parseaddr
from typing import Any

from django import template
from django.urls import reverse

from apps.accounts.selectors import list_tags_for_user
from apps.search.selectors import index_work_pending, list_saved_searches, progress_context

register = template.Library()


@register.inclusion_tag("search/partials/embedding_progress.html", takes_context=True)
def search_embedding_progress(context: dict[str, Any], when_pending: bool = False) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_staff:
        # The index is the server's, shared by every user: its counts (and its polling endpoint) are staff-only.
        return {"hidden": True}
    if when_pending and not index_work_pending():
        return {"hidden": True}  # without counting (the counts cost a quarter second on a large index)
    return progress_context()


@register.inclusion_tag("search/partials/sidebar_searches.html", takes_context=True)
def mailbox_saved_searches(context: template.Context) -> dict[str, Any]:
    """The mailbox sidebar's saved searches and tags, each with its count and a link that runs it."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"saved": [], "tags": [], "show": False}
    return {"saved": list_saved_searches(user=user), "tags": list_tags_for_user(user=user), "show": True}


@register.filter
def hit_labels(row: Any) -> list[dict[str, str]]:
    """The badges a result row shows after its subject: a file, folded copies, and how it matched."""
    labels = [{"text": "file", "title": "a file in your library", "testid": ""}] if row.kind == "file" else []
    if row.kind == "mail" and row.folder:
        labels.append({"text": row.folder, "title": "folder", "testid": ""})  # results come from every folder
    if row.copies:
        labels.append(
            {
                "text": f"+ {row.copies} cop{'y' if row.copies == 1 else 'ies'}",
                "title": "the same mail (sender, subject, date and text) stored again in another folder or account",
                "testid": "search-copies",
            }
        )
    if "fts" in row.sources:
        labels.append({"text": "words", "title": "matched your words", "testid": ""})
    if "vector" in row.sources or "gist" in row.sources:
        labels.append({"text": "meaning", "title": "matched the meaning", "testid": ""})
    return labels


@register.filter
def hit_senders(row: Any) -> str:
    """The first cell of a result row: the mail's sender, or where a file lies."""
    if row.kind != "mail":
        return f"in {row.folder or 'library root'}"
    name, address = parseaddr(row.sender)
    return name or address or row.sender  # the name, as the mailbox shows a sender (the address in the title)


@register.filter
def hit_thumbnail(row: Any) -> str:
    return reverse("search:file_thumbnail", args=[row.pk]) if row.kind == "file" and row.is_image else ""

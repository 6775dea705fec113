"""MIME-aware previews of workspace items: markdown rendered (and sanitized), JSON pretty-printed,
images inline as data: URLs, text as text, anything else as a download."""

from __future__ import annotations

import json
from typing import Any

import nh3
from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from apps.workspaces.models import WorkspaceItem

register = template.Library()
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
INLINE_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp"}


@register.filter
def render_markdown(text: str) -> SafeString:
    html = _markdown.render(text or "")
    return mark_safe(nh3.clean(html, link_rel="noopener noreferrer nofollow"))  # noqa: S308 -- sanitized by nh3


@register.filter
def preview_kind(item: WorkspaceItem) -> str:
    mime = (item.mime_type or "").lower()
    if mime in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if mime == "application/json" or mime.endswith("+json"):
        return "json"
    if mime in INLINE_IMAGES and item.encoding == "base64":
        return "image"
    if mime.startswith("text/") and item.encoding == "utf8":
        return "text"
    return "download"


@register.filter
def pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


@register.inclusion_tag("workspaces/partials/inbox_badge.html", takes_context=True)
def inbox_nav_badge(context: template.Context, url: str) -> dict[str, Any]:
    """The unread count next to the Inbox nav link (nothing for other links)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if url != reverse("inbox:inbox") or user is None or not user.is_authenticated:
        return {"hidden": True}
    from apps.workspaces.selectors import unread_count

    return {"unread": unread_count(user=user)}

"""MIME-aware previews for the Results pane: which renderer an item gets, sanitized HTML, and item facts."""

from __future__ import annotations

from typing import Any

import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe

from apps.workspaces.models import WorkspaceItem

register = template.Library()

INLINE_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"}
MARKDOWN = {"text/markdown", "text/x-markdown"}
HTML = {"text/html", "application/xhtml+xml"}
CODE_TYPES = {
    "application/javascript",
    "application/x-python",
    "application/x-sh",
    "application/xml",
    "application/sql",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "text/css",
    "text/javascript",
    "text/xml",
    "text/csv",
    "text/x-diff",
}


@register.filter
def result_kind(item: WorkspaceItem) -> str:
    """markdown | html | json | image | code | text | file (a base64 payload with no preview)."""
    mime = (item.mime_type or "").split(";", 1)[0].strip().lower()
    if item.encoding == "base64":
        return "image" if mime in INLINE_IMAGES else "file"
    if mime in MARKDOWN:
        return "markdown"
    if mime in HTML:
        return "html"
    if mime == "application/json" or mime.endswith("+json"):
        return "json"
    if mime in CODE_TYPES or mime.startswith("text/x-") or mime.endswith(("+xml", "+yaml")):
        return "code"
    if mime.startswith("text/") or mime == "":
        return "text"
    return "code"  # utf-8 text of another type (application/…): shown verbatim in monospace


@register.filter
def is_text(item: WorkspaceItem) -> bool:
    return item.encoding == "utf8"


@register.filter
def sanitize_html(text: str) -> SafeString:
    """Agent-written HTML with scripts, event handlers, styles and forms removed (nh3)."""
    return mark_safe(nh3.clean(text or "", link_rel="noopener noreferrer nofollow"))  # noqa: S308 -- sanitized


@register.filter
def author_name(item: WorkspaceItem) -> str:
    context: dict[str, Any] = item.context if isinstance(item.context, dict) else {}
    agent = context.get("agent") if isinstance(context.get("agent"), dict) else None
    director = context.get("director") if isinstance(context.get("director"), dict) else None
    if agent and agent.get("name"):
        return f"agent {agent['name']}"
    if item.created_by == "director" and director and director.get("name"):
        return f"director {director['name']}"
    return str(item.get_created_by_display()).lower()


@register.filter
def actor_label(actor: Any) -> str:
    if not isinstance(actor, dict):
        return ""
    for key in ("agent", "director"):
        value = actor.get(key)
        if isinstance(value, dict) and value.get("name"):
            return f"{key} {value['name']}"
    if actor.get("tool"):
        return f"tool {actor['tool']}"
    return str(actor.get("createdBy") or "")


@register.inclusion_tag("results/partials/notifications_script.html", takes_context=True)
def notifications_script(context: template.Context) -> dict[str, Any]:
    """The notifications client every page loads (signed-in users only). `shared_layer` tells it whether
    pushes cross processes (a Redis channel layer); without one it polls the database more often."""
    from django.conf import settings

    request = context.get("request")
    user = getattr(request, "user", None)
    backend = str(settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", ""))
    return {
        "show": bool(user is not None and user.is_authenticated),
        "shared_layer": bool(backend) and not backend.endswith("InMemoryChannelLayer"),
    }

"""Rendering of answers: escaped text, line breaks, and the values the extractive answer marked with
**…** shown as <mark>."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()
_MARKED = re.compile(r"\*\*(.+?)\*\*")


@register.filter
def ask_answer(text: str) -> SafeString:
    escaped = str(escape(text or ""))
    marked = _MARKED.sub(r"<mark>\1</mark>", escaped)
    return mark_safe(marked.replace("\n", "<br>"))  # noqa: S308 -- escaped above, only <mark>/<br> added


@register.simple_tag(takes_context=True)
def latest_ask_conversation(context: template.Context) -> object:
    """The signed-in user's latest Ask conversation (the launcher continues it), or None."""
    from apps.ask.selectors import latest_conversation

    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    return latest_conversation(user=user)

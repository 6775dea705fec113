"""`{% load mail_rows %}`: what the shared mail row (templates/accounts/partials/mail_row.html) needs, so the
mailbox and the search results show a date the same way without each view computing "today"."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format

register = template.Library()


@register.filter
def mail_date(value: dt.datetime | None) -> str:
    """A list's short date: the time for today, the month and day this year, else the full date."""
    if value is None:
        return ""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    today = timezone.localdate()
    if local.date() == today:
        return date_format(local, "H:i")
    if local.year == today.year:
        return date_format(local, "M j")
    return date_format(local, "Y-m-d")


@register.filter
def with_query(url: str, query: str | None) -> str:
    """`url?query`, or the url alone for an empty query (a row's link keeps the list's filters)."""
    return f"{url}?{query}" if query else url

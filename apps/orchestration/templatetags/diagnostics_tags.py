"""Filters of the Diagnostics detail pane: a value as a JSON tree, durations, ISO times as datetimes."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django import template

from apps.orchestration.diagnostics_detail import JsonNode, json_tree

register = template.Library()


@register.filter(name="json_tree")
def json_tree_filter(value: Any) -> JsonNode:
    return json_tree(value)


@register.filter
def duration(milliseconds: Any) -> str:
    """850 ms, 1.25 s, 2 min 05 s, 1 h 02 min."""
    if not isinstance(milliseconds, int | float):
        return ""
    ms = int(milliseconds)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.2f} s"
    seconds = ms // 1000
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


@register.filter
def iso_datetime(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None

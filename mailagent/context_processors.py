from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse


def settings_pages() -> list[dict[str, str]]:
    """Configuration pages apps declare as `settings_entries = [(label, url name)]`: reached from Settings, which
    is the nav entry lit on them (the bar keeps to the sections used every day)."""
    pages = []
    for config in apps.get_app_configs():
        for label, url_name in getattr(config, "settings_entries", ()):
            try:
                pages.append({"label": label, "url": reverse(url_name)})
            except NoReverseMatch:
                continue
    return pages


def _entries(attribute: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for config in apps.get_app_configs():
        for label, url_name in getattr(config, attribute, ()):
            try:
                entries.append({"label": label, "url": reverse(url_name)})
            except NoReverseMatch:
                continue
    return entries


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Sections that exist: apps declare `nav_entries = [(label, url name)]` on their AppConfig for the bar, and
    `nav_more_entries` for the "More" menu at its end (sections visited less often, configuration, staff tools),
    so the bar keeps to one row at laptop widths."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"nav_entries": [], "nav_more": [], "nav_more_active": False}
    entries: list[dict[str, Any]] = [{"label": "Home", "url": reverse("home")}, *_entries("nav_entries")]
    more = _entries("nav_more_entries")
    if request.user.is_staff:
        more.append({"label": "Diagnostics", "url": reverse("runs:diagnostics")})
        more.append({"label": "Admin", "url": reverse("admin:index")})
    # Exactly one entry is lit: the one whose URL is the longest prefix of this page's path (so /mail/accounts/
    # lights Accounts, not Mailbox too); Home only on the home page itself.
    current = request.path
    every = entries + more
    settings_entry = next((e for e in every if e["label"] == "Settings"), None)
    candidates = [(e["url"], e) for e in every]
    if settings_entry is not None:
        candidates += [(page["url"], settings_entry) for page in settings_pages()]
    matching = [(url, e) for url, e in candidates if url == current or (url != "/" and current.startswith(url))]
    lit = max(matching, key=lambda pair: len(pair[0]), default=(None, None))[1]
    for entry in every:
        entry["active"] = entry is lit
    return {"nav_entries": entries, "nav_more": more, "nav_more_active": any(e["active"] for e in more)}

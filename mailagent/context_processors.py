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


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Sections that exist: apps declare `nav_entries = [(label, url name)]` on their AppConfig."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {"nav_entries": []}
    entries: list[dict[str, Any]] = [{"label": "Home", "url": reverse("home")}]
    for config in apps.get_app_configs():
        for label, url_name in getattr(config, "nav_entries", ()):
            try:
                entries.append({"label": label, "url": reverse(url_name)})
            except NoReverseMatch:
                continue
    if request.user.is_staff:
        entries.append({"label": "Diagnostics", "url": reverse("diagnostics")})
        entries.append({"label": "Admin", "url": reverse("admin:index")})
    # Exactly one entry is lit: the one whose URL is the longest prefix of this page's path (so /mail/accounts/
    # lights Accounts, not Mailbox too); Home only on the home page itself.
    current = request.path
    settings_entry = next((e for e in entries if e["label"] == "Settings"), None)
    candidates = [(e["url"], e) for e in entries]
    if settings_entry is not None:
        candidates += [(page["url"], settings_entry) for page in settings_pages()]
    matching = [(url, e) for url, e in candidates if url == current or (url != "/" and current.startswith(url))]
    lit = max(matching, key=lambda pair: len(pair[0]), default=(None, None))[1]
    for entry in entries:
        entry["active"] = entry is lit
    return {"nav_entries": entries}

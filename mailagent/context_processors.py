from __future__ import annotations

from typing import Any

from django.apps import apps
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse


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
    matching = [e for e in entries if e["url"] == current or (e["url"] != "/" and current.startswith(e["url"]))]
    lit = max(matching, key=lambda e: len(e["url"]), default=None)
    for entry in entries:
        entry["active"] = entry is lit
    return {"nav_entries": entries}

"""The count of approvals waiting for the user, next to Approvals in the navigation's More menu, on the More
button and on the phone's Menu button (so a pending send or mail change is seen without opening a menu)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from apps.orchestration.selectors import pending_approval_count

register = template.Library()


def _pending(context: template.Context) -> int | None:
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    cache = getattr(request, "_pending_approvals", None)
    if cache is None:
        cache = pending_approval_count(user=user)
        request._pending_approvals = cache  # type: ignore[union-attr]
    return cache


@register.inclusion_tag("orchestration/partials/approvals_badge.html", takes_context=True)
def approvals_nav_badge(context: template.Context, url: str = "", button: str = "more") -> dict[str, Any]:
    """On the Approvals link (url) or, with no url, on a menu button (`button`: "more" or "menu", which names
    its test id); nothing on other links."""
    if url and url != reverse("runs:approvals"):
        return {"hidden": True}
    pending = _pending(context)
    testid = "approvals-pending" if url else f"{button}-approvals"
    return {"hidden": pending is None or (not url and not pending), "pending": pending or 0, "testid": testid}

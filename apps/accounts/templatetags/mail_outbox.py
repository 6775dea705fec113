"""`{% mail_outbox_status %}`: the outbox of indexing/routing work, for the home page (the user's own mail)
and Diagnostics (everyone's). Lives here so the project's own views need not import an app."""

from __future__ import annotations

from typing import Any

from django import template

from apps.accounts.outbox import PERSISTENT_ATTEMPTS, outbox_status

register = template.Library()


@register.inclusion_tag("accounts/partials/outbox_status.html", takes_context=True)
def mail_outbox_status(context: dict[str, Any], scope: str = "mine") -> dict[str, Any]:
    user = context["request"].user
    if not user.is_authenticated:
        return {"status": None}
    everyone = scope == "all" and user.is_staff
    status = outbox_status(owner=None if everyone else user)
    return {"status": status, "everyone": everyone, "persistent_attempts": PERSISTENT_ATTEMPTS}

"""What the sign-in page may offer: `{% signup_open as open %}` is True only when the account adapter
(mailagent.auth, MAILAGENT_ALLOW_SIGNUP) accepts new sign-ups, so no page links to a closed sign-up."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import get_adapter
from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def signup_open(context: dict[str, Any]) -> bool:
    request = context.get("request")
    return request is not None and bool(get_adapter(request).is_open_for_signup(request))

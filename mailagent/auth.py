from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.conf import settings
from django.http import HttpRequest


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return bool(settings.MAILAGENT_ALLOW_SIGNUP)

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        """Failed logins are counted per (address, client IP), not per address alone: allauth's default
        locked an address for 5 minutes after 5 wrong passwords from anywhere, so anyone who knew the admin's
        address could lock them out. allauth's per-IP limit (10 a minute) still bounds guessing from one
        place. The client IP is REMOTE_ADDR, or X-Forwarded-For's when FORWARDED_ALLOW_IPS trusts the proxy
        (uvicorn rewrites the client address then)."""
        return f"{super()._get_login_attempts_cache_key(request, **credentials)}@{self.get_client_ip(request)}"

"""HTTP for mailbox OAuth and provider APIs: a requests session with a default timeout, and rate-limit
backoff that honours Retry-After."""

from __future__ import annotations

import datetime as dt
import email.utils
import logging
import time
from typing import Any

import requests

from apps.accounts.oauth_settings import HTTP_TIMEOUT_SECONDS, RATE_LIMIT_MAX_ATTEMPTS, RATE_LIMIT_MAX_WAIT_SECONDS
from apps.accounts.providers.base import ProviderError

logger = logging.getLogger(__name__)


class HttpSession(requests.Session):
    """requests.Session with a default timeout (MSAL, google-auth and the calendar tools use it)."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT_SECONDS)
        verb = method if isinstance(method, str) else method.decode()
        target = url if isinstance(url, str) else url.decode()
        return super().request(verb, target, *args, **kwargs)


# --- rate limits ------------------------------------------------------------------------------------


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def backoff_sleep(seconds: float) -> None:
    time.sleep(seconds)


class RateLimitBackoff:
    """Honours Retry-After (capped) for a limited number of attempts, then gives up as rate_limited."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.attempts = 0

    def wait(self, retry_after: float | None) -> None:
        self.attempts += 1
        delay = retry_after if retry_after is not None else float(min(2 ** (self.attempts - 1), 30))
        if self.attempts >= RATE_LIMIT_MAX_ATTEMPTS or delay > RATE_LIMIT_MAX_WAIT_SECONDS:
            raise ProviderError(
                f"{self.service} is rate limiting this account; try again later",
                category="rate_limited",
                retry_after=delay,
            )
        logger.info("%s rate limited; waiting %.1fs (attempt %d)", self.service, delay, self.attempts)
        backoff_sleep(delay)

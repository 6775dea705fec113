"""Per-user rate limits for expensive actions (Ask runs, fetch cycles), kept in the Django cache.

A fixed window per (action, user): the first hit in a window creates the counter with the window's
lifetime, later hits increment it atomically (Redis INCR when REDIS_URL configures the Redis cache, so
every web process shares one count; the local-memory cache counts per process). Over the limit the
caller gets RateLimited with the seconds until the window ends, which views turn into a 429 with
Retry-After. Limits come from settings.MAILAGENT_RATE_LIMITS ("30/10m": 30 per 10 minutes).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, JsonResponse

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_ACTION_NAMES = {"ask": "Ask questions", "fetch": "fetcher starts and fetches"}


@dataclass(frozen=True, slots=True)
class Rate:
    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        match = _RATE.match(text)
        if not match:
            raise ValueError(f"rate {text!r} is not like '30/10m' (count / [number] s|m|h|d)")
        count, number, unit = int(match.group(1)), int(match.group(2) or 1), match.group(3)
        if number < 1:
            raise ValueError(f"rate {text!r} has an empty period")
        return cls(count=count, seconds=number * _UNIT_SECONDS[unit])

    def describe(self) -> str:
        for unit, name in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
            if self.seconds % unit == 0:
                amount = self.seconds // unit
                return f"{self.count} per {name}" if amount == 1 else f"{self.count} per {amount} {name}s"
        raise AssertionError("unreachable: every period is whole seconds")


class RateLimited(Exception):
    def __init__(self, *, action: str, rate: Rate, retry_after: int) -> None:
        self.action = action
        self.rate = rate
        self.retry_after = retry_after
        what = _ACTION_NAMES.get(action, action)
        super().__init__(f"Too many {what}: the limit is {rate.describe()}. Try again in {_duration(retry_after)}.")


def _duration(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes"


def rate_for(action: str) -> Rate | None:
    """The configured rate of an action, or None when it is unlimited ("" or "0/..." in the setting)."""
    text = str(settings.MAILAGENT_RATE_LIMITS.get(action, "")).strip()
    if not text:
        return None
    rate = Rate.parse(text)
    return rate if rate.count > 0 else None


def hit(*, action: str, user_id: Any, now: float | None = None) -> None:
    """Count one `action` by `user_id`; raise RateLimited when it is over the configured rate."""
    rate = rate_for(action)
    if rate is None:
        return
    current = time.time() if now is None else now
    window = int(current // rate.seconds)
    key = f"mailagent:ratelimit:{action}:{user_id}:{window}"
    cache.add(key, 0, timeout=rate.seconds + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # the key expired between add and incr: this is the first hit of a new window
        cache.add(key, 1, timeout=rate.seconds + 1)
        count = 1
    if count > rate.count:
        retry_after = max(1, math.ceil((window + 1) * rate.seconds - current))
        raise RateLimited(action=action, rate=rate, retry_after=retry_after)


def too_many_requests(exc: RateLimited, *, as_json: bool) -> HttpResponse:
    """A 429 that says what happened and when to try again (also in Retry-After)."""
    response: HttpResponse
    if as_json:
        response = JsonResponse({"error": str(exc), "retryAfter": exc.retry_after}, status=429)
    else:
        response = HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(exc.retry_after)
    return response

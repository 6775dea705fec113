"""Per-user rate limits on expensive endpoints: Ask runs (API and page) and fetcher start/fetch/run.

The probe's fuzzer created 447 Ask runs and 1,132 fetch cycles and left the fetcher at a 1-minute interval.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse

from apps.ask.models import AskRun
from apps.routing.models import FetchCycle
from mailagent.ratelimit import Rate, RateLimited, hit

pytestmark = pytest.mark.django_db

LIMITS = {"ask": "2/h", "fetch": "3/10m"}


def other_client() -> Client:
    stranger = get_user_model().objects.create_user(username="other", email="other@example.com", password="pw-12345678")
    client = Client()
    client.force_login(stranger)
    return client


def test_rates_parse_and_read_well() -> None:
    assert Rate.parse("30/10m") == Rate(count=30, seconds=600)
    assert Rate.parse("5 / h") == Rate(count=5, seconds=3600)
    assert Rate.parse("30/10m").describe() == "30 per 10 minutes"
    assert Rate.parse("1/d").describe() == "1 per day"
    with pytest.raises(ValueError, match="is not like"):
        Rate.parse("lots")


@override_settings(MAILAGENT_RATE_LIMITS={"ask": "2/m"})
def test_the_window_ends_and_retry_after_counts_down(user: Any) -> None:
    hit(action="ask", user_id=user.pk, now=120.0)
    hit(action="ask", user_id=user.pk, now=130.0)
    with pytest.raises(RateLimited) as caught:
        hit(action="ask", user_id=user.pk, now=150.0)
    assert caught.value.retry_after == 30
    assert str(caught.value) == "Too many Ask questions: the limit is 2 per minute. Try again in 30 seconds."
    hit(action="ask", user_id=user.pk, now=180.0)  # a new window


@override_settings(MAILAGENT_RATE_LIMITS={"ask": ""})
def test_an_empty_rate_means_no_limit(user: Any) -> None:
    for _ in range(50):
        hit(action="ask", user_id=user.pk)


@override_settings(MAILAGENT_RATE_LIMITS=LIMITS)
def test_ask_api_answers_429_with_retry_after_per_user(logged_in_client: Client) -> None:
    for _ in range(2):
        assert (
            logged_in_client.post("/api/ask", {"question": "hello"}, content_type="application/json").status_code == 202
        )
    refused = logged_in_client.post("/api/ask", {"question": "hello"}, content_type="application/json")
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 3600
    body = refused.json()
    assert body["error"].startswith("Too many Ask questions: the limit is 2 per hour. Try again in ")
    assert body["retryAfter"] == int(refused["Retry-After"])
    assert AskRun.objects.count() == 2  # the refused request created nothing
    # Another user has their own budget.
    assert other_client().post("/api/ask", {"question": "hi"}, content_type="application/json").status_code == 202


@override_settings(MAILAGENT_RATE_LIMITS=LIMITS)
def test_ask_page_shares_the_budget_and_shows_the_error(logged_in_client: Client) -> None:
    url = reverse("ask:run_create")
    assert logged_in_client.post("/api/ask", {"question": "one"}, content_type="application/json").status_code == 202
    assert logged_in_client.post(url, {"question": "two"}).status_code in (200, 302)
    page = logged_in_client.post(url, {"question": "three"})
    assert page.status_code == 429 and "Retry-After" in page
    assert "Too many Ask questions" in page.content.decode()
    htmx = logged_in_client.post(url, {"question": "four"}, headers={"HX-Request": "true"})
    assert htmx.status_code == 429 and "Too many Ask questions" in htmx.content.decode()
    assert AskRun.objects.count() == 2


@override_settings(MAILAGENT_RATE_LIMITS=LIMITS)
def test_fetcher_start_fetch_and_run_share_one_budget(logged_in_client: Client) -> None:
    assert logged_in_client.post("/api/fetcher/start", content_type="application/json").status_code == 200
    assert logged_in_client.post("/api/fetcher/fetch").status_code == 202
    assert logged_in_client.post("/api/fetcher/run").status_code == 202
    refused = logged_in_client.post("/api/fetcher/fetch")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["error"].startswith("Too many fetcher starts and fetches: the limit is 3 per 10 minutes.")
    assert logged_in_client.post("/api/fetcher/stop").status_code == 200  # stopping is never limited
    assert FetchCycle.objects.count() == 2

    page = logged_in_client.post(reverse("routing:fetcher_control", args=["fetch"]))
    assert page.status_code == 429 and "Retry-After" in page
    assert "Too many fetcher starts and fetches" in page.content.decode()
    htmx = logged_in_client.post(reverse("routing:fetcher_control", args=["run"]), headers={"HX-Request": "true"})
    assert htmx.status_code == 429 and htmx["HX-Redirect"] == reverse("routing:fetcher")
    assert FetchCycle.objects.count() == 2


def test_the_fetcher_interval_has_a_minimum(logged_in_client: Client) -> None:
    too_fast = logged_in_client.post("/api/fetcher/start", data={"intervalMinutes": 1}, content_type="application/json")
    assert too_fast.status_code == 400
    assert "intervalMinutes must be between 2 and 1440" in too_fast.content.decode()
    ok = logged_in_client.post("/api/fetcher/start", data={"intervalMinutes": 2}, content_type="application/json")
    assert ok.json()["intervalMinutes"] == 2


@override_settings(MAILAGENT_FETCH_MIN_INTERVAL_MINUTES=10)
def test_a_stored_shorter_interval_is_raised_to_the_minimum_on_start(logged_in_client: Client) -> None:
    started = logged_in_client.post("/api/fetcher/start", content_type="application/json").json()
    assert started["intervalMinutes"] == 10  # the default of 5 is below this server's minimum


def test_failed_logins_from_a_stranger_do_not_lock_the_owner_out(user: Any) -> None:
    """allauth's default locks an address after 5 wrong passwords for 5 minutes, whoever typed them: anyone
    who knew the admin's address could lock them out. The count is per (address, client IP) now."""
    from django.core.cache import cache

    from tests.conftest import USER_PASSWORD

    cache.clear()
    stranger = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(6):
        stranger.post(reverse("account_login"), {"login": user.email, "password": "wrong-guess"})
    locked = stranger.post(reverse("account_login"), {"login": user.email, "password": USER_PASSWORD})
    assert locked.status_code == 200 and "Too many failed login attempts" in locked.content.decode()

    owner = Client(REMOTE_ADDR="198.51.100.20")
    response = owner.post(reverse("account_login"), {"login": user.email, "password": USER_PASSWORD})
    assert response.status_code == 302
    assert owner.get(reverse("runs:list")).status_code == 200

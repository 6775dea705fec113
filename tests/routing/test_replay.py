"""Shadow replay on the demo mailbox: `manage.py replay` and the "Test filters" panel."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.models import Message
from apps.orchestration.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(user: Any) -> int:
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    return Message.objects.count()


def replay(*args: str) -> str:
    out = io.StringIO()
    call_command("replay", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_replay_dry_run_lists_matches_and_creates_nothing(demo: int, director: Any) -> None:
    from apps.routing import actions

    finance = director("Finance")
    travel = director("Travel")
    # Created now: the demo mail is older than these filters, so only a replay routes it.
    actions.create_filter(director=finance, field_name="subject", regex_text=r"invoice|rechnung|hesap özeti")
    actions.create_filter(director=travel, field_name="subject", regex_text=r"booking|flight|reservation")
    expected_finance = Message.objects.filter(subject__iregex=r"invoice|rechnung|hesap özeti").count()
    assert expected_finance >= 5

    output = replay("--director", "Finance", "--last", str(demo), "--dry-run")
    lines = [line for line in output.splitlines() if line.startswith("Finance ← ")]
    assert len(lines) == expected_finance
    assert all("[subject ~ /invoice|rechnung|hesap özeti/ matched" in line for line in lines)
    assert not any(line.startswith("Travel") for line in output.splitlines())
    summary = output.strip().splitlines()[-1]
    assert summary == (
        f"{demo} emails checked, {expected_finance} matched, {expected_finance} routes, 0 filter errors "
        "(dry run: nothing created)"
    )
    assert Run.objects.count() == 0

    created = replay("--director", "Finance", "--last", str(demo))
    assert re.search(rf", {expected_finance} new runs \(0 already existed\)$", created.strip())
    assert Run.objects.filter(director=finance, trigger="replay").count() == expected_finance
    again = replay("--director", "Finance", "--last", str(demo))
    assert again.strip().endswith(f", 0 new runs ({expected_finance} already existed)")

    everyone = replay("--last", str(demo), "--dry-run")
    assert any(line.startswith("Travel ← ") for line in everyone.splitlines())


def test_replay_refuses_unknown_director_and_bad_counts(demo: int, director: Any) -> None:
    director("Finance")
    with pytest.raises(CommandError, match=r"No director named 'Nobody' \(directors: Finance\)"):
        replay("--director", "Nobody", "--dry-run")
    with pytest.raises(CommandError, match="--last must be a positive number"):
        replay("--last", "0")


def test_test_filters_panel_shows_which_director_fires(demo: int, logged_in_client: Any, director: Any) -> None:
    from apps.routing import actions

    finance = director("Finance")
    actions.create_filter(director=finance, field_name="from", regex_text=r"cloudnest")
    expected = (
        Message.objects.filter(from_address__icontains="cloudnest").count()
        + Message.objects.filter(from_name__icontains="cloudnest").exclude(from_address__icontains="cloudnest").count()
    )
    assert expected > 0
    page = logged_in_client.get(reverse("settings:filters")).content.decode()
    assert 'data-testid="test-form"' in page
    response = logged_in_client.get(reverse("routing:filters_test"), {"last": demo, "director": finance.pk})
    html = response.content.decode()
    assert response.status_code == 200
    assert f"<strong>{demo}</strong> emails checked, <strong>{expected}</strong> would be routed" in html
    assert html.count("<div>Finance</div>") == html.count('data-testid="test-row"') == expected
    assert Run.objects.count() == 0

    api = logged_in_client.post(f"/api/filters/test?last={demo}").json()
    assert api["messages"] == demo and len(api["routes"]) == expected
    assert {route["directorName"] for route in api["routes"]} == {"Finance"}

    bad = logged_in_client.get(reverse("routing:filters_test"), {"last": "0"})
    assert bad.status_code == 400

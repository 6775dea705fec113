"""Filters: validation everywhere a pattern can be saved, matching semantics per field, time budget."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from apps.orchestration.models import Run
from apps.routing import actions, selectors
from apps.routing.matching import InvalidPattern, compile_pattern
from apps.routing.models import Filter

pytestmark = pytest.mark.django_db

UNBALANCED = "(client.*@domain"
UNBALANCED_ERROR = "Invalid regex pattern: missing ) at position 16"


def test_compile_pattern_reports_the_exact_reason() -> None:
    with pytest.raises(InvalidPattern) as caught:
        compile_pattern(UNBALANCED, case_insensitive=True)
    assert str(caught.value) == UNBALANCED_ERROR
    with pytest.raises(InvalidPattern, match=r"^Invalid regex pattern: the pattern is empty$"):
        compile_pattern("   ", case_insensitive=False)
    with pytest.raises(InvalidPattern, match=r"^Invalid regex pattern: nothing to repeat"):
        compile_pattern("*urgent", case_insensitive=False)


def test_action_rejects_invalid_pattern_and_saves_nothing(director: Any) -> None:
    support = director("Support")
    with pytest.raises(ValidationError) as caught:
        actions.create_filter(director=support, field_name="from", regex_text=UNBALANCED)
    assert caught.value.message_dict == {"regex": [UNBALANCED_ERROR]}
    with pytest.raises(ValidationError) as caught:
        actions.create_filter(director=support, field_name="headers", regex_text="x")
    assert "Unknown field 'headers'" in caught.value.message_dict["field"][0]
    assert Filter.objects.count() == 0

    saved = actions.create_filter(director=support, field_name="subject", regex_text="urgent")
    with pytest.raises(ValidationError):
        actions.update_filter(item=saved, regex="(urgent")
    saved.refresh_from_db()
    assert saved.regex == "urgent"


def test_api_rejects_invalid_pattern_with_the_message(logged_in_client: Any, director: Any) -> None:
    support = director("Support")
    response = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "From", "regex": UNBALANCED}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {"error": UNBALANCED_ERROR, "field": "regex"}
    assert Filter.objects.count() == 0

    created = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "From", "regex": r"client.*@domain\.com"}),
        content_type="application/json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["field"] == "from" and body["directorName"] == "Support" and body["caseInsensitive"] is True

    bad_update = logged_in_client.put(
        f"/api/filters/{body['id']}", data=json.dumps({"regex": "a{2,1}"}), content_type="application/json"
    )
    assert bad_update.status_code == 400
    assert bad_update.json()["error"].startswith("Invalid regex pattern: ")
    assert Filter.objects.get().regex == r"client.*@domain\.com"

    listed = logged_in_client.get("/api/filters").json()
    assert [item["regex"] for item in listed] == [r"client.*@domain\.com"]
    assert logged_in_client.delete(f"/api/filters/{body['id']}").status_code == 204
    assert Filter.objects.count() == 0


def test_api_never_touches_another_users_directors(client: Any, django_user_model: Any, director: Any) -> None:
    support = director("Support")
    intruder = django_user_model.objects.create_user(username="eve", email="eve@example.com", password="x")
    client.force_login(intruder)
    response = client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": "x"}),
        content_type="application/json",
    )
    assert response.status_code == 404
    client.logout()
    assert client.get("/api/filters").status_code == 401


def test_filters_page_shows_the_error_and_saves_nothing(logged_in_client: Any, director: Any) -> None:
    support = director("Support")
    response = logged_in_client.post(
        reverse("settings:filters"),
        {"director": support.pk, "field": "subject", "regex": UNBALANCED, "case_insensitive": "on"},
    )
    assert response.status_code == 400
    assert UNBALANCED_ERROR in response.content.decode()
    assert Filter.objects.count() == 0

    ok = logged_in_client.post(
        reverse("settings:filters"), {"director": support.pk, "field": "subject", "regex": "urgent"}
    )
    assert ok.status_code == 302
    page = logged_in_client.get(reverse("settings:filters")).content.decode()
    assert "/urgent/" in page and "Support" in page


def test_admin_rejects_invalid_pattern(staff_client: Any, staff_user: Any) -> None:
    from apps.orchestration.actions import create_director

    support = create_director(owner=staff_user, name="Support")
    response = staff_client.post(
        reverse("admin:routing_filter_add"),
        {"director": support.pk, "field": "body", "regex": UNBALANCED, "case_insensitive": "on", "order": 0},
    )
    assert response.status_code == 200
    assert UNBALANCED_ERROR in response.content.decode()
    assert Filter.objects.count() == 0

    # The director page edits filters inline; an invalid row blocks the whole save.
    inline = {
        "name": "Support",
        "owner": staff_user.pk,
        "enabled": "on",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
        "filters-TOTAL_FORMS": "1",
        "filters-INITIAL_FORMS": "0",
        "filters-MIN_NUM_FORMS": "0",
        "filters-MAX_NUM_FORMS": "1000",
        "filters-0-order": "0",
        "filters-0-field": "subject",
        "filters-0-regex": "[unclosed",
        "filters-0-enabled": "on",
    }
    page = staff_client.post(reverse("admin:orchestration_director_change", args=[support.pk]), inline)
    assert page.status_code == 200
    assert "Invalid regex pattern: unterminated character set" in page.content.decode()
    assert Filter.objects.count() == 0
    changelist = staff_client.get(reverse("admin:routing_filter_changelist"))
    assert changelist.status_code == 200


def test_every_field_matches_as_documented(director: Any, add_filter: Any, store_mail: Any) -> None:
    names = ["from", "to", "cc", "bcc", "subject", "body", "date", "subject-cs"]
    directors = {name: director(f"D-{name}") for name in names}
    add_filter(directors["from"], "from", r"^Client Seven <client.*@domain\.com>$")
    add_filter(directors["to"], "to", r"^Second <second@example\.com>$")
    add_filter(directors["cc"], "cc", r"carol@")
    add_filter(directors["bcc"], "bcc", r"hidden")
    add_filter(directors["subject"], "subject", r"urgent")
    add_filter(directors["body"], "body", r"invoice\s+#\d+")
    # Relative to now, not a fixed day: filters route only mail newer than themselves (see add_filter).
    sent = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).replace(hour=14, minute=5, second=0, microsecond=0)
    add_filter(directors["date"], "date", rf"^{sent:%Y-%m-%d}T14:")
    add_filter(directors["subject-cs"], "subject", r"urgent", case_insensitive=False)

    message = store_mail(
        subject="URGENT: call me",
        body="Please pay invoice  #4411 today.\n",
        sender="Client Seven <client7@domain.com>",
        to="First <first@example.com>, Second <second@example.com>",
        cc="Carol <carol@example.com>",
        bcc="Hidden Watcher <watcher@example.com>",
        date=sent,
    )
    routed = {run.director.name: run.match for run in Run.objects.filter(message=message).select_related("director")}
    assert set(routed) == {f"D-{name}" for name in names if name != "subject-cs"}
    assert routed["D-from"]["matched"] == "Client Seven <client7@domain.com>"
    assert routed["D-to"]["matched"] == "Second <second@example.com>"
    assert routed["D-subject"]["matched"] == "URGENT"
    assert routed["D-body"]["matched"] == "invoice  #4411"
    assert routed["D-date"]["matched"] == f"{sent:%Y-%m-%d}T14:"


def test_catastrophic_pattern_is_abandoned_and_recorded(
    director: Any, add_filter: Any, store_mail: Any, settings: Any
) -> None:
    settings.ROUTING_FILTER_TIMEOUT_MS = 30
    slow = add_filter(director("Backtracker"), "body", r"(x+x+)+y")
    add_filter(director("Plain"), "body", r"x{100}")
    started = time.monotonic()
    message = store_mail(subject="Long body", body="x" * 5000 + "\n")
    elapsed = time.monotonic() - started
    assert elapsed < 10  # bounded, not a hang (the real bound is the timeout; no timing is asserted tightly)
    assert list(Run.objects.filter(message=message).values_list("director__name", flat=True)) == ["Plain"]
    slow.refresh_from_db()
    assert slow.error_count == 1
    assert slow.last_error.startswith("timed out after 30 ms on the body of message")


def test_message_budget_stops_evaluation_with_an_error(
    director: Any, add_filter: Any, store_mail: Any, settings: Any
) -> None:
    settings.ROUTING_FILTER_TIMEOUT_MS = 40
    settings.ROUTING_MESSAGE_BUDGET_MS = 60
    first = add_filter(director("A"), "body", r"(a|aa)+$")
    second = add_filter(director("B"), "body", r"(\w+\s?)+$")
    third = add_filter(director("C"), "subject", r"never")
    store_mail(subject="budget", body="a" * 3000 + "!\n")
    errors = {f.pk: f.last_error for f in Filter.objects.filter(pk__in=[first.pk, second.pk, third.pk])}
    assert errors[first.pk].startswith("timed out after 40 ms")
    # What is left of the 60 ms budget after the first timeout depends on the machine: either way it is bounded.
    assert errors[second.pk].startswith("timed out after ") or "budget" in errors[second.pk]
    assert errors[third.pk] == "not evaluated: this message's time budget ran out"


def test_mail_older_than_the_filter_is_not_routed(director: Any, store_mail: Any) -> None:
    support = director("Support")
    actions.create_filter(director=support, field_name="subject", regex_text="report")  # created now
    old = store_mail(subject="Old report", date=dt.datetime.now(dt.UTC) - dt.timedelta(days=3))
    new = store_mail(subject="New report", date=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5))
    assert list(Run.objects.values_list("message_id", flat=True)) == [new.pk]
    replayed = actions.route_messages(message_ids=[old.pk], respect_creation=False, trigger="replay")
    assert len(replayed.created_run_ids) == 1
    assert Run.objects.get(message=old).trigger == "replay"


def test_disabled_filters_and_directors_do_not_route(director: Any, add_filter: Any, store_mail: Any) -> None:
    off = director("Off", enabled=False)
    on = director("On")
    add_filter(off, "subject", "hello")
    quiet = add_filter(on, "subject", "hello", enabled=False)
    store_mail(subject="hello there")
    assert Run.objects.count() == 0
    actions.update_filter(item=quiet, enabled=True)
    store_mail(subject="hello again")
    assert list(Run.objects.values_list("director__name", flat=True)) == ["On"]


def test_rule_set_is_recompiled_only_after_changes(director: Any, add_filter: Any) -> None:
    item = add_filter(director("Support"), "subject", "alpha")
    first = selectors.load_rule_set()
    assert selectors.load_rule_set() is first
    actions.update_filter(item=item, regex="beta")
    second = selectors.load_rule_set()
    assert second is not first
    assert [f.regex for group in second.by_owner.values() for f in group] == ["beta"]


def test_oversized_patterns_and_descriptions_are_refused(logged_in_client: Any, director: Any) -> None:
    support = director("Support")
    too_long = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": "a" * 1001}),
        content_type="application/json",
    )
    assert too_long.status_code == 400
    assert too_long.json() == {"error": "Invalid regex pattern: longer than 1000 characters", "field": "regex"}
    wordy = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": "a", "description": "d" * 301}),
        content_type="application/json",
    )
    assert wordy.status_code == 400 and wordy.json()["field"] == "description"
    assert Filter.objects.count() == 0


# Compiled in a child process whose address space is capped: if the size check ever regresses, the child
# fails with MemoryError (a{2147483648} grew a web process to 21.7 GB) instead of the machine swapping.
CHILD_ADDRESS_SPACE_BYTES = 768 * 1024 * 1024
HUGE_REPETITIONS = ["a{2147483648}", "a{1000000}", "a{3000000}", "(a{1000}){1000}", "x{0,65535}", "(?:ab{999}){999}"]
COMPILE_IN_A_CAPPED_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from apps.routing.matching import InvalidPattern, compile_pattern
outcome = {}
for pattern in json.loads(sys.argv[2]):
    try:
        compile_pattern(pattern, case_insensitive=True)
        outcome[pattern] = "compiled"
    except InvalidPattern as exc:
        outcome[pattern] = str(exc)
    except MemoryError:
        outcome[pattern] = "MemoryError"
print(json.dumps(outcome))
"""


def test_huge_repetitions_are_refused_before_compiling_in_a_memory_capped_process() -> None:
    import subprocess
    import sys

    from tests.services import REPO_ROOT

    child = subprocess.run(
        [sys.executable, "-c", COMPILE_IN_A_CAPPED_CHILD, str(CHILD_ADDRESS_SPACE_BYTES), json.dumps(HUGE_REPETITIONS)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    outcome = json.loads(child.stdout)
    for pattern in ["a{2147483648}", "a{1000000}", "a{3000000}", "x{0,65535}"]:
        assert outcome[pattern] == (
            f"Invalid regex pattern: the repetition {pattern[1:]} is over the limit; "
            "a repetition count may be at most 1,000"
        ), pattern
    for pattern in ["(a{1000}){1000}", "(?:ab{999}){999}"]:
        assert outcome[pattern].startswith("Invalid regex pattern: it would compile to about "), pattern
        assert "the limit is 20,000" in outcome[pattern]


def test_api_and_form_refuse_a_huge_repetition_naming_the_limit(logged_in_client: Any, director: Any) -> None:
    support = director("Support")
    # a{100000} compiled to +27 MB before the check: small enough to fail here rather than hurt the run
    response = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": "a{100000}"}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "Invalid regex pattern: the repetition {100000} is over the limit; "
        "a repetition count may be at most 1,000",
        "field": "regex",
    }
    nested = logged_in_client.post(
        reverse("settings:filters"), {"director": support.pk, "field": "subject", "regex": "((a{40}){40}){40}"}
    )
    assert nested.status_code == 400
    assert "it would compile to about 64,000 units" in nested.content.decode()
    assert Filter.objects.count() == 0
    # Ordinary counted repetitions stay valid
    assert actions.create_filter(director=support, field_name="subject", regex_text=r"INV-\d{4,8}|(?:ab){1,50}")


def test_a_stored_huge_pattern_never_compiles_when_routing(director: Any) -> None:
    support = director("Support")
    kept = actions.create_filter(director=support, field_name="subject", regex_text="invoice")
    Filter.objects.filter(pk=kept.pk).update(regex="a{100000}")  # stored before the check existed
    rules = selectors.load_rule_set()
    assert len(rules) == 0


def test_a_runaway_pattern_is_measured_warned_about_and_refused_in_the_wizard(
    logged_in_client: Any, director: Any
) -> None:
    support = director("Support")
    # Measured, not guessed: (a+)+$ does not finish on a run of "a" followed by something else.
    warning = "This pattern backtracks catastrophically: on a text of “a” repeated 2,000 times"
    api = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": "(a+)+$"}),
        content_type="application/json",
    )
    assert api.status_code == 201 and api.json()["warning"].startswith(warning)
    fine = logged_in_client.post(
        "/api/filters",
        data=json.dumps({"directorId": support.pk, "field": "subject", "regex": r"client.*@domain\.com"}),
        content_type="application/json",
    )
    assert fine.json()["warning"] == ""
    changed = logged_in_client.put(
        f"/api/filters/{fine.json()['id']}", data=json.dumps({"regex": r"(\w+\s?)+$"}), content_type="application/json"
    )
    assert changed.status_code == 200 and "backtracks catastrophically" in changed.json()["warning"]
    assert [f["warning"] for f in logged_in_client.get("/api/filters").json()] == ["", ""]  # only when saved

    page = logged_in_client.post(
        reverse("settings:filters"), {"director": support.pk, "field": "subject", "regex": "(x+x+)+y"}, follow=True
    )
    assert "backtracks catastrophically" in page.content.decode() and Filter.objects.count() == 3
    wizard = logged_in_client.post(
        reverse("setup:step", args=["filter"]), {"director": support.pk, "field": "subject", "regex": "(b+)+$"}
    )
    assert wizard.status_code == 400 and "backtracks catastrophically" in wizard.content.decode()
    assert not Filter.objects.filter(regex="(b+)+$").exists()


def test_an_unsaved_pattern_is_tried_on_the_newest_emails(
    logged_in_client: Any, director: Any, store_mail: Any
) -> None:
    support = director("Support")
    store_mail(subject="Invoice 12 from Acme", sender="billing@acme.example")
    store_mail(subject="Lunch?", sender="friend@example.com")
    store_mail(subject="invoice 13 from Acme", sender="billing@acme.example")
    assert Filter.objects.count() == 0  # before the first filter exists the saved-filters dry run finds nothing
    tried = logged_in_client.get(
        reverse("routing:filters_test"),
        {"field": "subject", "regex": r"invoice \d+", "case_insensitive": "on", "director": support.pk},
    )
    content = tried.content.decode()
    assert tried.status_code == 200
    assert "<strong>3</strong> emails checked, <strong>2</strong> match this pattern (not saved yet)" in content
    assert "Invoice 12 from Acme" in content and "invoice 13 from Acme" in content and "Lunch?" not in content
    assert Filter.objects.count() == 0 and not Run.objects.exists()
    newest = logged_in_client.get(  # the form's "on the newest N emails"
        reverse("routing:filters_test"), {"field": "subject", "regex": r"invoice \d+", "last": 1}
    )
    assert "<strong>1</strong> email checked, <strong>1</strong> matches this pattern" in newest.content.decode()
    case_sensitive = logged_in_client.get(reverse("routing:filters_test"), {"field": "subject", "regex": "Invoice"})
    assert "<strong>1</strong> matches this pattern" in case_sensitive.content.decode()
    broken = logged_in_client.get(reverse("routing:filters_test"), {"field": "subject", "regex": "(unclosed"})
    assert broken.status_code == 400 and "Invalid regex pattern" in broken.content.decode()
    for page in (reverse("settings:filters"), reverse("setup:step", args=["filter"])):
        html = logged_in_client.get(page).content.decode()
        assert 'data-testid="try-pattern"' in html and 'hx-params="director,field,regex,case_insensitive,last"' in html


def test_the_dry_run_lists_each_email_once_with_every_director_it_goes_to(
    logged_in_client: Any, director: Any, add_filter: Any, store_mail: Any
) -> None:
    # A newcomer saw "10 would be routed" for 9 emails and one email twice in the table: an email matched
    # by the filters of two directors made two rows.
    support, billing = director("Support"), director("Billing")
    add_filter(support, "subject", "Invoice")
    add_filter(billing, "subject", "Invoice")
    add_filter(billing, "from", "acme")
    store_mail(subject="Invoice 12", sender="billing@acme.example")
    store_mail(subject="Lunch?", sender="friend@example.com")
    store_mail(subject="Order shipped", sender="shop@acme.example")
    Run.objects.all().delete()
    tested = logged_in_client.get(reverse("routing:filters_test"), {"last": 50})
    content = tested.content.decode()
    assert tested.status_code == 200
    assert "<strong>3</strong> emails checked, <strong>2</strong> would be routed" in content
    assert "3 runs" in content  # Invoice 12 → Support and Billing, Order shipped → Billing
    rows = content.split('data-testid="test-row"')[1:]
    assert len(rows) == 2
    invoice = next(row for row in rows if "Invoice 12" in row)
    assert invoice.count("Invoice 12") == 2  # the link's title and text: the email is listed once
    assert "Support" in invoice and "Billing" in invoice
    # A director without filters checks nothing, and the panel says what to do instead of an empty table.
    idle = logged_in_client.get(reverse("routing:filters_test"), {"last": 50, "director": director("Idle").pk})
    assert "No enabled filter of this director checked these 3 emails" in idle.content.decode()
    assert not Run.objects.exists()

"""The search syntax (operators, phrases, exclusions, dates) on the demo mailbox through the real /search/ page,
/api/search and `manage.py search`; thread grouping, counts, paging; the relevance floor and "did you mean"."""

from __future__ import annotations

import datetime as dt
import io
import json
import mailbox
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Q
from django.utils import timezone

from apps.accounts.actions import create_local_account
from apps.accounts.demo_mailbox.generator import build_demo_messages
from apps.accounts.demo_mailbox.importing import import_demo_mailbox
from apps.accounts.importers import import_path
from apps.accounts.models import Attachment, Message
from apps.search.query import parse_search, period

pytestmark = pytest.mark.django_db


def test_parser_reads_operators_phrases_and_exclusions() -> None:
    parsed = parse_search('from:lena "kick-off meeting" slot -spam -in:Newsletters subject:"march invoice" 10:30')
    assert parsed.text == '"kick-off meeting" slot 10:30'  # a time is not an operator
    assert [str(op) for op in parsed.operators] == ["from:lena", "-in:Newsletters", 'subject:"march invoice"']
    assert parsed.excluded == ["spam"]
    assert parse_search("IS:Unread HAS:attachments").operators[0].value == "unread"
    assert parse_search("has:attachments").operators[0].value == "attachment"
    for bad, message in [
        ("is:important", "is:unread"),
        ("has:photo", "has:attachment"),
        ("kind:video", "kind:mail"),
        ("from:", "needs a value"),
        ("after:2024-13-45", "not a date"),
        ("date:2024-05..2024-01", "ends before it starts"),
    ]:
        assert message in "; ".join(parse_search(bad).errors), bad


def test_dates_are_periods() -> None:
    start, end = period("2024-03")
    assert (start.date(), end.date()) == (dt.date(2024, 3, 1), dt.date(2024, 4, 1))
    start, end = period("2024")
    assert (start.date(), end.date()) == (dt.date(2024, 1, 1), dt.date(2025, 1, 1))
    start, end = period("2024-03-05")
    assert (start.date(), end.date()) == (dt.date(2024, 3, 5), dt.date(2024, 3, 6))
    parsed = parse_search("date:2024-01..2024-03 after:2024-02-10")
    assert parsed.date_from == timezone.make_aware(dt.datetime(2024, 2, 10))
    assert parsed.date_to is not None and parsed.date_to.date() == dt.date(2024, 3, 31)


@pytest.fixture
def demo(user: Any, django_capture_on_commit_callbacks: Any, settings: Any) -> Any:
    settings.SEARCH_EMBED_ON_INGEST = False  # operators filter; no ranking by meaning is needed here
    with django_capture_on_commit_callbacks(execute=True):
        import_demo_mailbox(owner=user, stdout=io.StringIO())
    return Message.objects.filter(account__owner=user)


def _api(client: Any, q: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/search", {"q": q, "limit": 100, **params})
    assert response.status_code == 200, (q, response.content)
    return response.json()


def _threads(messages: Any) -> set[int]:
    return set(messages.values_list("thread_id", flat=True))


def test_each_operator_on_the_demo_mailbox(logged_in_client: Any, demo: Any) -> None:
    anchor = demo.order_by("-date").first().date
    month = anchor.strftime("%Y-%m")
    month_start = anchor.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    lena = Q(from_name__icontains="lena") | Q(from_address__icontains="lena")
    with_pdf = Attachment.objects.filter(filename__icontains=".pdf").values("message_id")
    expected: dict[str, Any] = {
        "from:lena": demo.filter(lena),
        # to: is every recipient (To, Cc and Bcc), as in notmuch and Gmail.
        "to:marco@bianchi-ux.example": demo.filter(
            Q(to__icontains="marco@bianchi-ux.example")
            | Q(cc__icontains="marco@bianchi-ux.example")
            | Q(bcc__icontains="marco@bianchi-ux.example")
        ),
        "cc:sofia": demo.filter(pk__in=[m.pk for m in demo if any("sofia" in str(r).lower() for r in m.cc)]),
        'subject:"kick-off"': demo.filter(subject__icontains="kick-off"),
        "has:attachment": demo.filter(has_attachments=True),
        "filename:pdf": demo.filter(pk__in=with_pdf),
        "is:unread": demo.filter(seen=False),
        "is:starred": demo.filter(flagged=True),
        "in:sent": demo.filter(folder="Sent"),
        "in:Newsletters is:unread": demo.filter(folder="Newsletters", seen=False),
        f"date:{month}": demo.filter(date__gte=month_start),
        f"before:{month}": demo.filter(date__lt=month_start),
        f"after:{month}": demo.filter(date__gte=month_start),
        "account:Demo has:attachment -filename:pdf": demo.filter(has_attachments=True).exclude(pk__in=with_pdf),
        "from:lena -is:unread": demo.filter(lena, seen=True),
    }
    for query, messages in expected.items():
        assert messages.exists(), f"the demo mailbox has nothing for {query}"
        data = _api(logged_in_client, query, mode="keyword")
        assert data["count"] == messages.count(), query
        threads = _threads(messages)
        assert data["threads"] == len(threads), query
        shown = {row["thread_id"] for row in data["results"]}
        assert shown <= threads and len(shown) == min(100, len(threads)), query
        assert all(row["kind"] == "mail" for row in data["results"]), query
        html = logged_in_client.get("/search/", {"q": query}).content.decode()
        count = re.search(r'data-testid="search-count">\s*(\d+) match', html)
        assert count and int(count.group(1)) == messages.count(), query
        assert html.count('data-testid="search-result"') == min(20, len(_threads(messages))), query
    # Operators combine with free text and "phrases"; -word excludes.
    desk = _api(logged_in_client, 'ergoform "standing desk" is:starred', mode="keyword")
    assert desk["results"][0]["title"].startswith("Re: Complaint: standing desk")
    without = _api(logged_in_client, "ergoform -ergoform", mode="keyword")
    assert without["count"] == 0 and without["results"] == []
    # Bad operators and unknown accounts say what to write instead.
    bad = logged_in_client.get("/api/search", {"q": "is:important"})
    assert bad.status_code == 422 and "is:unread" in bad.json()["error"]
    assert logged_in_client.get("/api/search", {"q": "account:nope x"}).status_code == 422
    page = logged_in_client.get("/search/", {"q": "after:2024-02-30"}, headers={"HX-Request": "true"})
    assert "not a date" in page.content.decode()


def test_threads_counts_and_paging(logged_in_client: Any, demo: Any) -> None:
    kickoff = demo.filter(subject__icontains="kick-off meeting")
    data = _api(logged_in_client, '"kick-off meeting"', mode="keyword")
    [row] = data["results"]
    assert row["matches"] == kickoff.count() > 1 and data["count"] == kickoff.count() and data["threads"] == 1
    html = logged_in_client.get("/search/", {"q": '"kick-off meeting"', "mode": "keyword"}).content.decode()
    assert f'title="messages of this thread that match">{kickoff.count()}</span>' in html  # the row's count cell
    read = demo.filter(seen=True)
    threads = len(_threads(read))
    first = _api(logged_in_client, "is:read", limit=20)
    second = _api(logged_in_client, "is:read", limit=20, page=2)
    assert first["count"] == read.count() and first["threads"] == threads
    assert first["pages"] == -(-threads // 20) and first["has_next"]
    ids_1 = [r["thread_id"] for r in first["results"]]
    ids_2 = [r["thread_id"] for r in second["results"]]
    assert len(ids_1) == 20 and not set(ids_1) & set(ids_2)
    dates = [dt.datetime.fromisoformat(r["date"]) for r in first["results"] + second["results"]]
    assert dates == sorted(dates, reverse=True)  # operators alone list newest first
    html = logged_in_client.get("/search/", {"q": "is:read"}).content.decode()
    assert "page 1 of" in html and 'data-testid="search-next"' in html and "page=2" in html
    # The CLI speaks the same syntax: threads in text, one entry per message in JSON.
    out = io.StringIO()
    call_command("search", '"kick-off meeting"', "--mode", "keyword", stdout=out)
    assert f"({kickoff.count()} messages)" in out.getvalue()
    out = io.StringIO()
    call_command("search", "from:lena is:read", "--json", "--limit", "50", stdout=out)
    assert {r["message_id"] for r in json.loads(out.getvalue())} == set(
        demo.filter(Q(from_name__icontains="lena"), seen=True).values_list("message_id", flat=True)
    )


def test_the_command_honours_limit_or_refuses_it(demo: Any) -> None:
    """`--limit` above the API's 100 is honoured (every message, not the first 100), above 1000 refused."""
    assert demo.count() > 150
    out = io.StringIO()
    call_command("search", "--json", "--limit", "1000", "--mode", "keyword", "--", "-is:starred", stdout=out)
    entries = json.loads(out.getvalue())
    listed = {entry["id"] for entry in entries} | {c["id"] for entry in entries for c in entry["copy_messages"]}
    assert listed == set(demo.filter(flagged=False).values_list("pk", flat=True))
    out = io.StringIO()
    call_command("search", "--json", "--limit", "120", "--mode", "keyword", "--", "-is:starred", stdout=out)
    assert len(json.loads(out.getvalue())) == 120
    with pytest.raises(CommandError, match="more than 1000"):
        call_command("search", "x", "--limit", "1001")


def test_did_you_mean_comes_from_the_index(logged_in_client: Any, demo: Any) -> None:
    data = _api(logged_in_client, "from:amira wekly updte")
    assert data["did_you_mean"] == "weekly update from:amira"
    fixed = _api(logged_in_client, data["did_you_mean"], mode="keyword")
    updates = demo.filter(from_name__icontains="amira", subject__icontains="weekly update")
    assert _threads(updates) <= {row["thread_id"] for row in fixed["results"]}
    html = logged_in_client.get("/search/", {"q": "parcle"}).content.decode()
    assert 'data-testid="search-suggestion"' in html and ">parcel</a>" in html
    assert _api(logged_in_client, "parcel")["did_you_mean"] is None


def test_a_possessive_finds_the_name(logged_in_client: Any, demo: Any) -> None:
    # No demo mail writes "Ergoform's": searched as the phrase "ergoform s" it found nothing.
    assert not demo.filter(body_text__icontains="ergoform's").exists()
    assert not demo.filter(subject__icontains="ergoform's").exists()
    plain = _api(logged_in_client, "Ergoform", mode="keyword")
    for query in ("Ergoform's", "Ergoform\u2019s"):
        possessive = _api(logged_in_client, query, mode="keyword")
        assert possessive["count"] == plain["count"] > 0, query
        assert [r["thread_id"] for r in possessive["results"]] == [r["thread_id"] for r in plain["results"]], query
    # Pieces of more than one letter still form a phrase.
    assert _api(logged_in_client, "rock'n'roll", mode="keyword")["count"] == 0


def test_copies_of_one_mail_are_one_row(
    logged_in_client: Any, demo: Any, user: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The QNB statements imported again into a second account (an old laptop's mbox export): the search page
    lists each statement once and says it has a copy; the count still counts every stored message."""
    export = mailbox.mbox(tmp_path / "export.mbox")
    for mail in build_demo_messages():
        if mail.sender.address.endswith("@qnbfinansbank.example"):
            export.add(mail.to_email().as_bytes())
    export.flush()
    second = create_local_account(owner=user, name="Old laptop export")
    with django_capture_on_commit_callbacks(execute=True):
        imported = import_path(second, tmp_path / "export.mbox").imported
    assert imported >= 2
    data = _api(logged_in_client, "from:qnbfinansbank.example", mode="keyword")
    assert data["count"] == 2 * imported
    assert len(data["results"]) == imported and all(row["copies"] == 1 for row in data["results"])
    # `manage.py search --json`: one entry per mail, its copy listed with its account and folder.
    out = io.StringIO()
    call_command("search", "from:qnbfinansbank.example", "--json", "--limit", "50", "--mode", "keyword", stdout=out)
    entries = json.loads(out.getvalue())
    assert len(entries) == imported
    for entry in entries:
        [copy] = entry["copy_messages"]
        assert copy["message_id"] == entry["message_id"] and {copy["account_id"], entry["account_id"]} == {
            second.pk,
            demo.first().account_id,
        }
    html = logged_in_client.get("/search/", {"q": "from:qnbfinansbank.example"}).content.decode()
    assert html.count('data-testid="search-result"') == imported
    assert html.count('data-testid="search-copies"') == imported and "+ 1 copy" in html

# ruff: noqa: RUF001 -- Turkish and German text is what these tests are about.
"""Ingest hook, management commands, the JSON API, the search page/partial, progress and checks."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.template import Context, Template

from apps.accounts.actions import create_local_account
from apps.accounts.models import HookFailure, HookKind, Message, MessageOutbox
from apps.accounts.signals import messages_stored
from apps.search import actions
from apps.search.checks import check_search_database, check_search_libraries
from apps.search.models import SearchDocument

pytestmark = pytest.mark.django_db

RESULT_KEYS = {
    "kind", "message_id", "score", "sources", "snippet", "title", "subject", "from", "date", "folder", "matches",
    "thread_id", "unread", "copies", "id", "account_id", "copy_messages",
}  # fmt: skip


@pytest.fixture
def corpus(make_message: Any, index_all: Any) -> dict[str, Message]:
    messages = {
        "statement": make_message(
            "Kredi Kartı Hesap Özeti",
            "Son Ödeme Tarihi: 25.03.2024. Asgari ödeme tutarı 1.443,70 TL.",
            sender=("Banka", "ekstre@banka.example"),
            message_id="statement-1@banka.example",
        ),
        "offsite": make_message("Team offsite", "Agenda for the offsite in the mountains next week."),
        "invoice": make_message("Turbine invoice", "Invoice for turbine maintenance, due in 30 days."),
    }
    index_all()
    return messages


def test_ingest_indexes_full_text_even_without_embeddings(
    make_message: Any, account: Any, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = False
    message = make_message("Quarry permit", "The quarry permit expires in June.")
    with django_capture_on_commit_callbacks(execute=True):
        messages_stored.send(sender=Message, account_id=account.pk, message_ids=[message.pk])
    document = SearchDocument.objects.get(kind="message", object_id=message.pk)
    assert document.embedded_with == "" and not document.chunks.exists()
    from apps.search.backends import get_search_backend

    assert [h.message_id for h in get_search_backend().keyword("quarry permit")] == [message.pk]


def test_messages_stored_signal_indexes_and_embeds(
    make_message: Any, account: Any, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = True
    message = make_message("Warehouse lease renewal", "The warehouse lease renews in May.")
    with django_capture_on_commit_callbacks(execute=True):
        messages_stored.send(sender=Message, account_id=account.pk, message_ids=[message.pk])
    document = SearchDocument.objects.get(kind="message", object_id=message.pk)
    assert document.embedded_with  # the django-q2 backfill ran (synchronously in tests)
    assert document.chunks.exists()


def test_import_through_the_real_importer_is_searchable(
    user: Any, tmp_path: Any, django_capture_on_commit_callbacks: Any, embedder: Any, settings: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = True
    from email.message import EmailMessage

    from apps.accounts.importers import import_path
    from apps.search.backends import get_search_backend

    message = EmailMessage()
    message["From"] = "Lucía <lucia@example.es>"
    message["To"] = "owner@example.com"
    message["Subject"] = "Alquiler del piso"
    message["Message-ID"] = "<rent-1@example.es>"
    message["Date"] = "Mon, 08 Apr 2024 09:00:00 +0000"
    message.set_content("El alquiler del piso sube a 950 euros al mes a partir de junio.")
    (tmp_path / "rent.eml").write_bytes(bytes(message))
    account = create_local_account(owner=user, name="imported")
    with django_capture_on_commit_callbacks(execute=True):
        import_path(account, tmp_path)
    assert not SearchDocument.objects.filter(embedded_with="").exists()
    hits = get_search_backend().hybrid("monthly rent for the flat", embedder=embedder)
    assert [h.message_id for h in hits] == list(Message.objects.filter(account=account).values_list("pk", flat=True))


def test_indexing_failure_does_not_break_the_sync(
    make_message: Any, account: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = make_message("Anything", "at all")

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(actions, "index_messages", broken)
    messages_stored.send(sender=Message, account_id=account.pk, message_ids=[message.pk])
    # Not only logged: the failure is recorded for the outbox sweeper, and the message stays to be indexed.
    failure = HookFailure.objects.get(message=message, kind=HookKind.INDEX)
    assert "disk full" in failure.last_error
    assert failure.next_attempt_at > failure.last_failed_at
    assert not MessageOutbox.objects.filter(message=message, indexed_at__isnull=False).exists()


def test_one_backfill_at_a_time(make_message: Any, index_all: Any) -> None:
    make_message("Pending", "waiting for vectors")
    index_all(embeddings=False)
    assert actions._acquire_backfill_lock()
    try:
        assert actions.backfill_embeddings(requeue=False) == 0
    finally:
        actions._release_backfill_lock()
    assert actions.backfill_embeddings(requeue=False) == 2  # the document's search vectors, then its gist
    assert not SearchDocument.objects.filter(embedded_with="").exists()


def test_a_held_backfill_says_so_and_a_dead_holders_lease_is_taken_over_at_once(make_message: Any) -> None:
    import datetime as dt
    import subprocess

    from django.utils import timezone

    from apps.search.models import SearchIndexState
    from mailagent.liveness import process_identity

    make_message("Pending", "waiting for vectors")
    holder = subprocess.Popen(["sleep", "120"])
    try:
        SearchIndexState.objects.update_or_create(
            pk=1,
            defaults={
                "backfill_lock_until": timezone.now() + dt.timedelta(minutes=10),
                "backfill_holder": process_identity(holder.pid),
            },
        )
        # Before: "Embedded 0 documents" and exit status 0, with everything still pending.
        with pytest.raises(CommandError) as held:
            call_command("reindex", "--embeddings", "--no-progress", stdout=StringIO())
        assert f"another embedding backfill is running: process {holder.pid} on" in str(held.value)
        assert "1 documents and 1 gists are pending" in str(held.value)
        assert SearchDocument.objects.filter(embedded_with="").count() == 1
    finally:
        holder.kill()
        holder.wait()
    # The holder is dead (killed, as a worker can be mid-backfill): its lease is taken, not waited out.
    out = StringIO()
    call_command("reindex", "--embeddings", "--no-progress", stdout=out)
    assert "1/1 have vectors, 1/1 messages a gist" in out.getvalue()
    state = SearchIndexState.objects.get(pk=1)
    assert state.backfill_lock_until is None and state.backfill_holder == ""


def test_search_command_prints_the_json_shape(corpus: dict[str, Message]) -> None:
    out = StringIO()
    call_command("search", "credit card statement payment deadline", "--json", "--limit", "2", stdout=out)
    results = json.loads(out.getvalue())
    assert len(results) == 1  # the two unrelated mails stay below the semantic floor: no padding
    assert all(set(r) == RESULT_KEYS for r in results)
    top = results[0]
    assert top["message_id"] == "statement-1@banka.example"
    assert set(top["sources"]) <= {"fts", "vector"} and "vector" in top["sources"]
    assert top["from"] == "Banka <ekstre@banka.example>"
    assert top["date"].startswith("2024-")
    keyword = StringIO()
    call_command("search", "son odeme", "--json", "--mode", "keyword", "--account", "main", stdout=keyword)
    [hit] = json.loads(keyword.getvalue())
    assert hit["sources"] == ["fts"] and "<mark>Ödeme</mark>" in hit["snippet"]
    plain = StringIO()
    call_command("search", "turbine", "--mode", "keyword", stdout=plain)
    assert "Turbine invoice" in plain.getvalue()
    with pytest.raises(CommandError):
        call_command("search", "x", "--account", "nope")
    with pytest.raises(CommandError):
        call_command("search", "x", "--after", "yesterday-ish")


def test_the_one_shot_commands_rank_without_loading_the_in_memory_keyword_index(
    corpus: dict[str, Message],
) -> None:
    # The index's first load reads every document (seconds at Enron scale) to save milliseconds per query:
    # `manage.py search` and `manage.py ask` answer one question and exit, so FTS5 ranks instead.
    from apps.search.backends import get_search_backend, keyword_index

    keyword_index.forget_keyword_indexes()
    out = StringIO()
    call_command("search", "turbine", "--mode", "keyword", stdout=out)
    assert "Turbine invoice" in out.getvalue()
    call_command("ask", "what does the turbine invoice say?", "--json", stdout=StringIO())
    assert not keyword_index._indexes and not keyword_index._loading
    assert get_search_backend().options.get("KEYWORD_INDEX", True) is True  # only for the command's duration


def test_reindex_command_builds_both_indexes(make_message: Any) -> None:
    make_message("Loose message", "stored without the ingest hook")
    out = StringIO()
    call_command("reindex", "--embeddings", "--no-progress", stdout=out)
    assert "1 new" in out.getvalue() and "1/1 have vectors, 1/1 messages a gist" in out.getvalue()
    again = StringIO()
    call_command("reindex", "--rebuild", "--no-progress", stdout=again)
    assert "1 unchanged" in again.getvalue()
    assert SearchDocument.objects.get().embedded_with


def test_api_requires_login(client: Any, corpus: dict[str, Message]) -> None:
    response = client.get("/api/search", {"q": "offsite"})
    assert response.status_code == 401


def test_api_search_shape_and_scoping(
    logged_in_client: Any, corpus: dict[str, Message], make_message: Any, index_all: Any, django_user_model: Any
) -> None:
    stranger = django_user_model.objects.create_user(username="x", email="x@example.com", password="pw-123456789")
    foreign = create_local_account(owner=stranger, name="theirs")
    make_message("Team offsite photos", "offsite pictures", owner_account=foreign)
    index_all()
    response = logged_in_client.get("/api/search", {"q": "offsite", "mode": "keyword"})
    assert response.status_code == 200, response.content
    page = response.json()
    results = page["results"]
    assert [r["subject"] for r in results] == ["Team offsite"]
    assert {k for k, v in results[0].items() if v is not None} == RESULT_KEYS - {"thread_id"}  # no thread here
    assert (page["count"], page["threads"], page["page"], page["pages"], page["has_next"]) == (1, 1, 1, 1, False)
    hybrid = logged_in_client.get("/api/search", {"q": "credit card statement payment deadline", "limit": 1}).json()
    assert hybrid["results"][0]["message_id"] == "statement-1@banka.example"
    filtered = logged_in_client.get("/api/search", {"q": "invoice", "mode": "keyword", "from": "nobody@"}).json()
    assert filtered["results"] == [] and filtered["count"] == 0
    assert logged_in_client.get("/api/search", {"q": "offsite", "account": "theirs"}).status_code == 404
    assert logged_in_client.get("/api/search", {"q": "offsite", "mode": "fuzzy"}).status_code == 422
    assert logged_in_client.get("/api/search", {"q": "offsite", "limit": 500}).status_code == 422


def test_search_page_and_htmx_partial(logged_in_client: Any, corpus: dict[str, Message]) -> None:
    page = logged_in_client.get("/search/", {"q": "son odeme", "mode": "keyword"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "<html" in html and 'data-testid="search-input"' in html
    assert "<mark>Ödeme</mark>" in html
    partial = logged_in_client.get("/search/", {"q": "turb", "mode": "keyword"}, headers={"HX-Request": "true"})
    body = partial.content.decode()
    assert "<html" not in body and "Turbine invoice" in body  # prefix search while typing
    empty = logged_in_client.get("/search/", {"q": "zzzz", "mode": "keyword"}, headers={"HX-Request": "true"})
    assert 'data-testid="search-empty"' in empty.content.decode()
    bad = logged_in_client.get("/search/", {"q": "x after:2024-99"}, headers={"HX-Request": "true"})
    assert "not a date" in bad.content.decode()


def test_search_box_partial_renders_standalone(rf: Any) -> None:
    html = Template('{% include "search/partials/search_box.html" %}').render(Context({}))
    assert 'hx-trigger="input changed delay:300ms, search"' in html and 'id="search-results"' in html


def test_embedding_progress_panel(staff_client: Any, corpus: dict[str, Message]) -> None:
    html = staff_client.get("/runs/diagnostics/").content.decode()
    assert "3 / 3 documents (100.0%)" in html
    # The corpus fixture embeds search vectors only: its gists are pending, and the panel keeps polling.
    messages = SearchDocument.objects.filter(kind="message").count()
    assert f"0 / {messages} messages (0.0%)" in html and f"{messages} pending" in html
    assert 'hx-trigger="every 5s"' in html
    actions.embed_stale_gists()
    page = staff_client.get("/search/progress/")
    assert page.status_code == 200
    assert f"{messages} / {messages} messages (100.0%)" in page.content.decode()
    assert 'hx-trigger="every 5s"' not in page.content.decode()


def test_the_search_and_home_pages_show_the_backfill_to_staff_only_while_it_has_work(
    staff_user: Any, logged_in_client: Any, corpus: dict[str, Message], settings: Any
) -> None:
    """The corpus has search vectors but no gists yet: the panel says so; once they are embedded it is gone.
    The index is the server's (every user's documents), so its panel and its polling endpoint are staff-only."""
    from django.test import Client

    staff_client = Client()  # not the `staff_client` fixture: it shares Django's `client` with logged_in_client
    staff_client.force_login(staff_user)
    for url in ("/search/", "/"):
        page = staff_client.get(url).content.decode()
        assert 'data-testid="embedding-progress"' in page and "3 pending: embedded after the search vectors" in page
        assert 'data-testid="embedding-eta"' in page
        assert 'data-testid="embedding-progress"' not in logged_in_client.get(url).content.decode()
    assert logged_in_client.get("/search/progress/").status_code == 302
    settings.SEARCH_GIST_EMBEDDER = "none"  # gists switched off: nothing is waiting
    assert 'data-testid="embedding-progress"' not in staff_client.get("/search/").content.decode()
    settings.SEARCH_GIST_EMBEDDER = "e5"
    actions.embed_stale_gists()
    assert 'data-testid="embedding-progress"' not in staff_client.get("/search/").content.decode()
    assert 'data-testid="embedding-progress"' not in staff_client.get("/").content.decode()


def test_the_time_left_is_measured_from_the_progress_of_the_last_minutes() -> None:
    from django.core.cache import cache

    from apps.search.selectors import ETA_CACHE_KEY, embedding_eta_seconds

    cache.delete(ETA_CACHE_KEY)
    assert embedding_eta_seconds(100, 900, now=1000.0) is None  # one sample is no rate
    assert embedding_eta_seconds(105, 895, now=1010.0) is None  # ten seconds are not yet
    assert embedding_eta_seconds(130, 870, now=1030.0) == pytest.approx(870 / (30 / 30))  # 1 document a second
    assert embedding_eta_seconds(190, 810, now=1120.0) == pytest.approx(810 / (90 / 120))
    assert embedding_eta_seconds(1000, 0, now=1130.0) == 0.0
    # A reset (vectors dropped, counts going down) starts the measurement again instead of a negative rate.
    assert embedding_eta_seconds(10, 990, now=1140.0) is None


def test_system_checks_pass() -> None:
    assert check_search_libraries() == []
    assert check_search_database(databases=["default"]) == []

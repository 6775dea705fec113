# ruff: noqa: RUF001 -- Turkish and German text is what these tests are about.
"""The search backend contract: the same tests run on whichever database the suite runs on (the make
target runs the suite on SQLite and on PostgreSQL 18 + pgvector), so both backends honour one interface."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection

from apps.accounts.actions import create_local_account
from apps.accounts.models import Attachment, Message
from apps.search import actions
from apps.search.backends import backend_class_for_vendor, get_search_backend
from apps.search.backends.base import SearchFilters
from apps.search.folding import parse_query
from apps.search.models import SearchChunk, SearchDocument, SearchIndexState
from tests.search.conftest import HashingEmbedder

pytestmark = pytest.mark.django_db


def ids(hits: list[Any]) -> list[int | None]:
    return [hit.message_id for hit in hits]


def fulltext_rows() -> int:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM search_fts")
        else:
            cursor.execute("SELECT count(*) FROM search_document WHERE tsv IS NOT NULL")
        return int(cursor.fetchone()[0])


def test_backend_follows_the_database_vendor(backend: Any) -> None:
    assert type(backend) is backend_class_for_vendor(connection.vendor)
    assert backend.vendor == connection.vendor
    assert backend.check() == []


def test_keyword_ranks_subject_matches_and_highlights_snippets(make_message: Any, index_all: Any, backend: Any) -> None:
    subject_hit = make_message("Pipeline capacity report", "Numbers for the week attached.")
    body_hit = make_message("Weekly notes", "Someone asked about the pipeline again; see the capacity sheet.")
    make_message("Lunch", "Sandwiches at noon.")
    index_all(embeddings=False)
    hits = backend.keyword("pipeline capacity")
    assert ids(hits) == [subject_hit.pk, body_hit.pk]
    assert all(hit.sources == ["fts"] for hit in hits)
    assert hits[0].score >= hits[1].score > 0
    assert "<mark>pipeline</mark>" in hits[1].snippet and "<mark>capacity</mark>" in hits[1].snippet
    # Any word matches; bm25 ranks the documents with more (and rarer) query words first.
    loose = backend.keyword("pipeline sandwiches")
    assert {h.message_id for h in loose} == {subject_hit.pk, body_hit.pk, Message.objects.get(subject="Lunch").pk}


def test_possessives_and_initialisms_match_however_the_mail_writes_them(
    make_message: Any, index_all: Any, backend: Any
) -> None:
    joined = make_message("Netting agreement", "SCEG's contact for you is Kenny Jackson.")
    ampersand = make_message("SCE&G netting draft", "The draft for SCE&G is attached.")
    sheriff = make_message("Contact information", "Cell number for John Sheriff: 011-44-7770-555012.")
    make_message("Lunch", "Sandwiches at noon.")
    index_all(embeddings=False)
    # "SCE&G's" is the initialism, written "SCE&G" or "SCEG", not the phrase "sce g s"
    assert set(ids(backend.keyword("SCE&G's contact"))) >= {joined.pk, ampersand.pk}
    assert ids(backend.keyword("SCE&G"))[0] == ampersand.pk
    # "Sheriff's" is the name; the mail never writes the possessive
    assert ids(backend.keyword("John Sheriff's cell")) == [sheriff.pk]


def test_every_match_is_ranked_and_common_words_are_dropped_by_document_frequency(
    make_message: Any, index_all: Any
) -> None:
    oldest = make_message("Widget widget widget", "widget widget widget widget")
    newer = [make_message(f"Note {n}", f"one widget mentioned in the note number {n}") for n in range(3)]
    lunches = [make_message(f"Lunch {n}", f"the note says lunch is at {n}") for n in range(5)]
    index_all(embeddings=False)
    backend = backend_class_for_vendor(connection.vendor)({"KEYWORD_PRUNE_MIN_DOCUMENTS": 0})
    # The oldest match, not only the newest ones, is ranked: it holds the word most often.
    assert ids(backend.keyword("widget", limit=1)) == [oldest.pk]
    # "the" and "note" are in more than half of the documents: left out of the query, so they neither
    # match the lunch notes nor outrank the widget; "number 1" picks the right note.
    parsed = backend.informative_query(parse_query("the widget note number 1"))
    assert [term.primary for term in parsed.terms] == ["widget", "number", "1"]
    hits = backend.keyword("the widget note number 1")
    assert hits[0].message_id == newer[1].pk
    assert {h.message_id for h in hits} == {oldest.pk, lunches[1].pk, *(m.pk for m in newer)}
    # When every word is that common the rarest ones still search.
    assert backend.keyword("the note")


def test_selective_filters_still_find_older_matches(make_message: Any, index_all: Any, user: Any) -> None:
    other = create_local_account(owner=user, name="other")
    lonely = make_message("Widget order", "widget order", owner_account=other)
    for n in range(8):
        make_message(f"Widget order {n}", "widget order widget order")
    index_all(embeddings=False)
    backend = get_search_backend()
    assert ids(backend.keyword("widget order", filters=SearchFilters(account_ids=(other.pk,)), limit=1)) == [lonely.pk]
    assert ids(backend.keyword("widget", filters=SearchFilters(account_ids=(other.pk,)), limit=2)) == [lonely.pk]


def test_keyword_matches_addresses_phrases_and_prefixes(make_message: Any, index_all: Any, backend: Any) -> None:
    message = make_message(
        "Gas nominations",
        "Please confirm the nominations for Topock.",
        sender=("Jeff Skilling", "jeff.skilling@enron.com"),
    )
    make_message("Confirm later", "nominations please for another site")
    index_all(embeddings=False)
    assert ids(backend.keyword("jeff.skilling@enron.com")) == [message.pk]
    assert ids(backend.keyword("skilling")) == [message.pk]
    assert ids(backend.keyword('"confirm the nominations"')) == [message.pk]
    assert ids(backend.keyword("topo", prefix_last=True)) == [message.pk]
    assert backend.keyword("topo") == []
    # Syntax the full-text engines would choke on is just text here.
    assert backend.keyword('AND OR NOT "( * : -') == []


FOLDING_CASES = [
    # (text in the message, what the user types) — both directions for Turkish and German.
    ("Kredi kartı Son Ödeme Tarihi yaklaşıyor", "son odeme tarihi"),
    ("Son odeme tarihi yaklasiyor", "Son Ödeme Tarihi"),
    ("İstanbul şubesi ağustos ayında kapalı", "istanbul subesi agustos kapali"),
    ("Istanbul subesi agustos kapali", "İSTANBUL ŞUBESİ AĞUSTOS KAPALI"),
    ("Çiğdem gönderdi", "cigdem gonderdi"),
    ("Die Rechnung für die Hauptstraße", "hauptstrasse rechnung fur"),
    ("Hauptstrasse Rechnung", "Hauptstraße"),
    ("Herr Müller schreibt", "mueller"),
    ("Herr Mueller schreibt", "Müller"),
    ("Grüße aus Köln", "gruesse koeln"),
    ("Gruesse aus Koeln", "Grüße Köln"),
    ("Smørrebrød in Århus", "smorrebrod arhus"),
]


@pytest.mark.parametrize(("text", "query"), FOLDING_CASES)
def test_folding_matches_both_spellings(text: str, query: str, make_message: Any, index_all: Any, backend: Any) -> None:
    wanted = make_message("Note", text)
    make_message("Other", "Nothing to see here, just an unrelated note about lunch.")
    index_all(embeddings=False)
    hits = backend.keyword(query)
    assert ids(hits) == [wanted.pk], f"{query!r} should find {text!r}"
    assert "<mark>" in hits[0].snippet


def test_snippets_keep_the_original_spelling(make_message: Any, index_all: Any, backend: Any) -> None:
    make_message("Hesap özeti", "Kredi kartınızın Son Ödeme Tarihi 15 Mart; asgari ödeme tutarı 1.250 TL.")
    index_all(embeddings=False)
    [hit] = backend.keyword("son odeme tarihi")
    assert "<mark>Son</mark> <mark>Ödeme</mark> <mark>Tarihi</mark>" in hit.snippet


TURKISH_STATEMENT = (
    "Hesap Özeti - Kredi Kartı",
    "Sayın müşterimiz, Mart 2024 dönemine ait kredi kartı hesap özetiniz hazırlanmıştır. "
    "Dönem borcu: 4.812,35 TL. Asgari ödeme tutarı: 1.443,70 TL. Son Ödeme Tarihi: 25.03.2024. "
    "Son ödeme tarihine kadar ödemenizi yapmanızı rica ederiz.",
)
PROBE_DISTRACTORS = [
    ("Team offsite agenda", "We will meet in the main conference room on Thursday to plan the next quarter."),
    ("Your package has shipped", "Your order #4471 is on its way and should arrive on Friday."),
    ("Fantasy football draft", "The league draft is this Sunday at 7pm, bring snacks."),
    ("Lieferung verspätet", "Ihre Bestellung wird sich leider um eine Woche verzögern. Wir bitten um Entschuldigung."),
    ("Toplantı notları", "Yarınki proje toplantısında sunum slaytlarını gözden geçireceğiz."),
    ("Gym membership renewal", "Your annual gym membership renews next month. Visit the front desk with questions."),
    ("Quarterly gas report", "Attached is the quarterly report on natural gas trading volumes in the west region."),
    ("Recipe swap", "Here is my grandmother's lentil soup recipe, as promised."),
    # Shares English words with the question but is not about a due payment.
    ("Apply for a new credit card", "Earn double miles with our travel card. No annual fee in the first year."),
    ("Car payment calculator", "Try our calculator to compare monthly car loan payments before you buy."),
]
PROBE_QUESTION = "When is my credit card payment due?"


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_multilingual_probe_finds_the_turkish_statement(
    mode: str, make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    statement = make_message(*TURKISH_STATEMENT, sender=("Banka", "ekstre@banka.example"))
    for subject, body in PROBE_DISTRACTORS:
        make_message(subject, body)
    index_all()
    hits = backend.search(PROBE_QUESTION, mode=mode, embedder=embedder, limit=5)
    # Semantic search ranks it first. Hybrid fusion also counts keyword evidence, and in an eleven-message
    # index even "is" and "my" are rare words, so the adverts sharing "credit card" / "payment" and a mail
    # sharing "is my" come first; on real mail fusion beats both of its lists (bench/search.py).
    wanted = 1 if mode == "semantic" else 5
    found = [h.message_id for h in hits[:wanted]]
    assert statement.pk in found, [h.message_id for h in hits]
    assert "vector" in hits[found.index(statement.pk)].sources


def test_filters_apply_to_every_mode(make_message: Any, index_all: Any, backend: Any, user: Any, embedder: Any) -> None:
    other = create_local_account(owner=user, name="other")
    base = dt.datetime(2024, 1, 10, tzinfo=dt.UTC)
    text = "Invoice for the turbine maintenance contract"
    early = make_message("Turbine invoice", text, date=base, folder="INBOX")
    late = make_message(
        "Turbine invoice", text, date=base + dt.timedelta(days=30), folder="Archive", sender=("Bo", "bo@vendor.example")
    )
    elsewhere = make_message("Turbine invoice", text, owner_account=other)
    attached = make_message(
        "Turbine invoice",
        text,
        attachments=[("invoice.pdf", "Turbine maintenance invoice total 12,000 USD")],
        to=[("Carla", "carla@plant.example")],
    )
    index_all()
    main_id = early.account_id
    cases: list[tuple[SearchFilters, set[int]]] = [
        (SearchFilters(account_ids=(other.pk,)), {elsewhere.pk}),
        (SearchFilters(account_ids=()), set()),
        (SearchFilters(account_ids=(main_id,), folder="Archive"), {late.pk}),
        (SearchFilters(date_from=base + dt.timedelta(days=1)), {late.pk, elsewhere.pk, attached.pk}),
        (SearchFilters(date_to=base + dt.timedelta(hours=1)), {early.pk}),
        (SearchFilters(from_address="vendor.example"), {late.pk}),
        (SearchFilters(to_address="CARLA@plant"), {attached.pk}),
        (SearchFilters(has_attachment=True), {attached.pk}),
        (SearchFilters(kinds=("attachment",)), {attached.pk}),
        (SearchFilters(message_ids=(late.pk, attached.pk)), {late.pk, attached.pk}),
        (SearchFilters(message_ids=()), set()),
    ]
    for filters, expected in cases:
        for mode in ("keyword", "semantic", "hybrid"):
            found = {
                hit.message_id
                for hit in backend.search("turbine invoice", mode=mode, filters=filters, embedder=embedder)
            }
            assert found == expected, (mode, filters)
    attachment_hits = backend.keyword("12,000 usd")
    assert [hit.kind for hit in attachment_hits] == ["attachment"]
    assert attachment_hits[0].message_id == attached.pk


def test_similarities_score_every_chunk_of_the_named_messages_only(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    """What a reranker uses for its shortlist: the exact best-chunk cosine of each named message's documents
    (the message and its attachments), equal to the semantic search's score, whatever their rank in it."""
    make_message("Fire alarm test", "The fire alarm test moves to Wednesday morning at nine.")
    lunch = make_message("Lunch", "Sandwiches at noon in the kitchen.")
    make_message("Budget", "The budget review is on Friday.")
    scan = make_message("Scan", "See attached.", attachments=[("notes.txt", "Fire alarm drill schedule for March")])
    index_all()
    question = "when is the fire alarm test"
    searched = {hit.document_id: hit.score for hit in backend.semantic(question, limit=10, embedder=embedder)}
    hits = backend.similarities(
        question, filters=SearchFilters(message_ids=(lunch.pk, scan.pk)), limit=10, embedder=embedder
    )
    assert sorted(hit.message_id or 0 for hit in hits) == sorted([lunch.pk, scan.pk, scan.pk])  # mail + attachment
    assert {hit.kind for hit in hits if hit.message_id == scan.pk} == {"message", "attachment"}
    for hit in hits:
        assert hit.score == pytest.approx(searched[hit.document_id], abs=1e-4)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert ids(hits)[0] == scan.pk  # the attachment about the fire alarm drill is the closest
    assert backend.similarities(question, filters=SearchFilters(message_ids=()), limit=10, embedder=embedder) == []


def test_deleting_a_message_removes_it_from_both_indexes(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    keep = make_message("Boiler inspection", "The boiler inspection is scheduled for Monday.")
    gone = make_message(
        "Boiler inspection results", "Inspection passed.", attachments=[("report.pdf", "boiler inspection report")]
    )
    index_all()
    assert {h.message_id for h in backend.semantic("boiler inspection", embedder=embedder)} == {keep.pk, gone.pk}
    assert fulltext_rows() == 3
    gone.delete()
    assert ids(backend.keyword("boiler inspection")) == [keep.pk]
    assert ids(backend.semantic("boiler inspection", embedder=embedder)) == [keep.pk]
    assert ids(backend.hybrid("boiler inspection", embedder=embedder)) == [keep.pk]
    assert SearchDocument.objects.count() == 1
    assert fulltext_rows() == 1
    assert not SearchChunk.objects.exclude(document__message=keep).exists()


def test_deleting_an_attachment_removes_its_text(make_message: Any, index_all: Any, backend: Any) -> None:
    message = make_message("Scan", "see attachment", attachments=[("scan.pdf", "warranty certificate")])
    index_all(embeddings=False)
    assert backend.keyword("warranty certificate")
    Attachment.objects.filter(message=message).delete()
    assert backend.keyword("warranty certificate") == []


def test_reindexing_is_idempotent_and_notices_changes(make_message: Any, index_all: Any, backend: Any) -> None:
    message = make_message("Draft contract", "first version of the contract")
    index_all()
    again = actions.index_messages(message_ids=[message.pk])
    assert (again.created, again.updated, again.unchanged) == (0, 0, 1)
    assert SearchDocument.objects.get().embedded_with  # untouched documents keep their vectors
    Message.objects.filter(pk=message.pk).update(body_text="second version mentions arbitration")
    changed = actions.index_messages(message_ids=[message.pk])
    assert changed.updated == 1
    assert SearchDocument.objects.get().embedded_with == ""  # waits for the backfill again
    assert ids(backend.keyword("arbitration")) == [message.pk]
    assert backend.keyword('"first version"') == []
    assert fulltext_rows() == 1


def test_switching_embedders_re_embeds_everything(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    make_message("Solar panel quote", "Quote for twelve solar panels on the warehouse roof.")
    make_message("Parking", "The parking lot is closed tomorrow.")
    index_all()
    assert SearchIndexState.objects.get().dimension == embedder.dimension
    small = HashingEmbedder(dimension=48)
    assert backend.semantic("solar panels quote", embedder=small) == []  # nothing embedded with it yet
    assert backend.embed_pending(embedder=small) == 2
    state = SearchIndexState.objects.get()
    assert (state.embedder, state.dimension) == (small.key, 48)
    assert SearchChunk.objects.count() >= 2
    hits = backend.semantic("solar panels quote", embedder=small)
    assert hits and SearchDocument.objects.get(pk=hits[0].document_id).title == "Solar panel quote"
    assert backend.semantic("solar panels quote", embedder=embedder) == []
    assert backend.embedding_progress().done == 2
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'search_chunk_embedding_hnsw'")
            assert "vector(48)" in cursor.fetchone()[0]


def test_long_bodies_are_chunked_and_best_chunk_wins(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    filler = "The committee reviewed routine facilities items and agreed to revisit them next month. " * 16
    message = make_message("Minutes", filler + "Finally, the fire alarm test moves to Wednesday morning at nine.")
    index_all()
    chunks = SearchChunk.objects.filter(document__message=message).order_by("chunk_no")
    limit = get_search_backend().options["MAX_CHUNKS"]
    assert 1 < chunks.count() <= limit
    assert chunks[0].text.startswith("Minutes")
    assert len(chunks[0].embedding) == embedder.dimension


def test_passages_cover_the_whole_mail_own_words_first_then_forwarded_history(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    own = "Please see the note below from facilities and plan accordingly for your team. " * 4
    history = "The parking garage on level three closes for repairs from Monday the 12th until Friday. " * 40
    body = own + "\n\n-----Ursprüngliche Nachricht-----\nFacilities wrote:\n" + history + "\nThe answer: bring badges."
    message = make_message("FW: garage", body)
    index_all()
    texts = list(
        SearchChunk.objects.filter(document__message=message).order_by("chunk_no").values_list("text", flat=True)
    )
    assert texts[0].startswith("FW: garage") and "parking garage" not in texts[0]  # own words first
    assert any("bring badges" in text for text in texts)  # the end of a long forwarded mail is reachable
    assert len(texts) > 2
    hits = backend.semantic("when does the parking garage close for repairs", embedder=embedder, limit=1)
    assert hits[0].message_id == message.pk and hits[0].chunk_no and hits[0].chunk_no > 0


def test_embedding_progress_counts_documents(make_message: Any, index_all: Any, backend: Any) -> None:
    make_message("One", "first")
    make_message("Two", "second")
    index_all(embeddings=False)
    progress = backend.embedding_progress()
    assert (progress.done, progress.total) == (0, 2)
    index_all()
    progress = backend.embedding_progress()
    assert (progress.done, progress.total, progress.pending, progress.percent) == (2, 2, 0, 100.0)


def test_a_rolled_back_insert_leaves_nothing_behind_in_either_index(
    make_message: Any, index_all: Any, backend: Any, embedder: Any
) -> None:
    """Mail indexed and searched inside a transaction that is then rolled back (a failed import, a request
    that errs) is never found afterwards, also when the next mail is given the same ids (SQLite reuses
    rolled-back rowids, and its search keeps the index in memory)."""
    from django.db import transaction

    class RolledBack(Exception):
        pass

    keep = make_message("Boiler inspection", "The boiler inspection is scheduled for Monday.")
    index_all(keep)
    with pytest.raises(RolledBack), transaction.atomic():
        gone = make_message("Crane winch", "The harbour crane needs a new winch cable.")
        index_all(gone)
        assert ids(backend.keyword("winch cable")) == [gone.pk]  # loaded into the in-memory indexes
        assert gone.pk in ids(backend.semantic("harbour crane winch cable", embedder=embedder))
        raise RolledBack
    after = make_message("Forklift battery", "The forklift battery is swollen and must be replaced.")
    index_all(after)
    assert ids(backend.keyword("winch cable")) == []
    assert ids(backend.keyword("forklift battery")) == [after.pk]
    assert ids(backend.keyword("boiler inspection")) == [keep.pk]
    questions = ("forklift battery swollen", "harbour crane winch cable")
    kept = [[(h.document_id, round(h.score, 4)) for h in backend.semantic(q, embedder=embedder)] for q in questions]
    if connection.vendor == "sqlite":
        from apps.search.backends.sqlite import forget_vector_matrices

        forget_vector_matrices()  # nothing in memory: the vectors read again from what is stored
    read_again = [
        [(h.document_id, round(h.score, 4)) for h in backend.semantic(q, embedder=embedder)] for q in questions
    ]
    assert kept == read_again and kept[0][0][0] == SearchDocument.objects.get(message=after).pk

# ruff: noqa: RUF001
"""Rerank and merge: each signal on hand-made candidates, and the weights in their one place."""

from __future__ import annotations

import datetime as dt

from apps.ask.answer import EvidenceMessage, EvidenceText, citation_check
from apps.ask.planner import plan_question
from apps.ask.rerank import (
    AttachmentText,
    Candidate,
    ThreadResult,
    keep_search_hits,
    merge_threads,
    score_candidates,
)

NOW = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
PLAN = plan_question("when do I need to make a payment to QNB bank for my credit card", now=NOW)


def candidate(
    pk: int, *, sender: str, subject: str, body: str = "", when: dt.datetime | None = None, **kw: object
) -> Candidate:
    item = Candidate(message_pk=pk, **kw)  # type: ignore[arg-type]
    item.thread_id = pk
    item.sender, item.from_address = sender, sender.split("<")[-1].rstrip(">")
    item.subject, item.body = subject, body
    item.date = when or NOW
    item.loaded = True
    return item


def test_the_asked_for_entity_beats_a_closer_text_from_someone_else() -> None:
    other_bank = candidate(
        1, sender="Marmara Bank <ekstre@marmara.example>", subject="Kredi Kartı Hesap Özeti",
        body="Son Ödeme Tarihi: 15.12.2026\nDönem Borcu: 12.345,67 TL", semantic_rank=1, semantic_score=0.7,
        keyword_rank=1,
    )  # fmt: skip
    qnb = candidate(
        2, sender="QNB Finansbank <e-ekstre@qnb.example>", subject="QNB E-Ekstre",
        body="e-ekstreniz ektedir", semantic_rank=2, semantic_score=0.5, keyword_rank=3,
    )  # fmt: skip
    qnb.attachments = [AttachmentText(9, "ekstre.pdf", "Son Ödeme Tarihi: 11/05/2026")]
    ranked = score_candidates(PLAN, [other_bank, qnb], keyword_lists=3)
    assert [c.message_pk for c in ranked] == [2, 1]
    assert qnb.features["entity"] == 1.0 and other_bank.features["entity"] == 0.0
    assert qnb.features["attachment"] == 1.0 and qnb.matched_attachment is not None
    assert "attachment_text" in qnb.sources and "sender" in qnb.matched_fields


def test_an_entity_written_without_its_inner_punctuation_is_found() -> None:
    # "SCE&G's contact" when the mail writes "SCEG's contact" (Enron): Ask had said no mail mentions SCE&G.
    plan = plan_question("Who is SCE&G's contact for the power netting agreement draft?", now=NOW)
    assert "SCE&G" in plan.entities
    mail = candidate(1, sender="laura@energy.example", subject="RE: Power Netting Agmt request",
                     body="SCEG's contact for you is Kenny Jackson.", keyword_rank=1)  # fmt: skip
    other = candidate(2, sender="ann@energy.example", subject="Netting agreement draft",
                      body="The netting agreement draft is attached.", keyword_rank=2)  # fmt: skip
    score_candidates(plan, [mail, other], keyword_lists=1)
    assert mail.features["entity"] > 0.0 and other.features["entity"] == 0.0
    # "U.S." is not the word "us"
    plan = plan_question("What did the U.S. office send?", now=NOW)
    assert plan.entities == ["U.S"]
    us = candidate(3, sender="a@b.example", subject="Hello", body="Send us the report.", keyword_rank=1)
    score_candidates(plan, [us], keyword_lists=1)
    assert us.features["entity"] == 0.0


def test_latest_statement_of_a_series_wins() -> None:
    body = "Son Ödeme Tarihi: {}\nKredi kartı ödeme"
    march = candidate(1, sender="QNB <e@qnb.example>", subject="QNB E-Ekstre - Mart 2026",
                      body=body.format("11/04/2026"), when=dt.datetime(2026, 3, 28, tzinfo=dt.UTC))  # fmt: skip
    april = candidate(2, sender="QNB <e@qnb.example>", subject="QNB E-Ekstre - Nisan 2026",
                      body=body.format("11/05/2026"), when=dt.datetime(2026, 4, 27, tzinfo=dt.UTC))  # fmt: skip
    advert = candidate(3, sender="QNB <kampanya@qnb.example>", subject="Taksit kampanyası",
                       body="QNB kredi kartı ödemelerinizi bölün! Kampanya 30/06/2026 tarihine kadar.",
                       when=dt.datetime(2026, 5, 20, tzinfo=dt.UTC))  # fmt: skip
    ranked = score_candidates(PLAN, [march, advert, april], keyword_lists=3)
    order = [c.message_pk for c in ranked]
    assert order.index(2) < order.index(1)  # the newest statement of the series first
    assert april.features["recency"] > march.features["recency"]
    # Without a lexicon the reranker only knows that both hold a date; the answer step tells the labelled
    # due date of the statement from the advert's sentence (tests/ask/test_trial.py).
    assert april.features["evidence"] == 1.0 and advert.features["evidence"] == 1.0


def test_mail_naming_the_day_the_question_names_wins_whenever_it_was_sent() -> None:
    # Found on Enron: "where will the Management Committee extended meeting on January 23 take place?" cited
    # the thread's earlier mail about January 11 and 17; the one moving it to January 23 was third.
    plan = plan_question("where will the Management Committee extended meeting on January 23 take place?", now=NOW)
    sent = dt.datetime(2002, 1, 9, tzinfo=dt.UTC)
    earlier = candidate(1, sender="Rosie <rosie@enron.example>", subject="Management Committee Extended Meeting",
                        body="Ken wants to leave the extended meeting for Friday, January 11, or Thursday, January 17.",
                        when=sent, keyword_rank=1, semantic_rank=1, semantic_score=0.6)  # fmt: skip
    moved = candidate(2, sender="Rosie <rosie@enron.example>", subject="Management Committee Meeting",
                      body="The extended meeting will be held Wednesday, Jan. 23rd in the 50M Dining Room.",
                      when=sent + dt.timedelta(days=1), keyword_rank=2, semantic_rank=2,
                      semantic_score=0.55)  # fmt: skip
    ranked = score_candidates(plan, [earlier, moved], keyword_lists=3)
    assert moved.features["day"] == 1.0 and earlier.features["day"] == 0.0
    assert [c.message_pk for c in ranked] == [2, 1]


def test_merge_keeps_one_row_per_thread_with_its_best_message() -> None:
    a = candidate(1, sender="A <a@x.example>", subject="QNB", body="QNB")
    b = candidate(
        2, sender="B <b@x.example>", subject="QNB ödeme", body="QNB kredi kartı ödeme son ödeme tarihi 11/05/2026"
    )
    b.thread_id = a.thread_id = 7
    c = candidate(3, sender="C <c@x.example>", subject="other", body="nothing")
    ranked = score_candidates(PLAN, [a, b, c], keyword_lists=1)
    threads = merge_threads(ranked)
    assert threads[0].key == 7
    assert threads[0].best.message_pk == 2
    assert len(threads) == 2


def test_the_search_pages_first_rows_stay_among_the_first_rows() -> None:
    # Found on fresh Enron questions: the rerank pushed the search page's tenth row (the answer) to 18th
    # behind long digests. Ask may reorder search's first rows and add its own finds, never drop one of them.
    def row(pk: int, score: float, hybrid_rank: int | None) -> ThreadResult:
        item = candidate(pk, sender="S <s@x.example>", subject=f"mail {pk}", hybrid_rank=hybrid_rank)
        return ThreadResult(key=pk, best=item, members=[item], score=score)

    own_find, digest, search_second, search_first = row(1, 3.0, None), row(2, 2.5, None), row(3, 1.0, 2), row(4, 0.9, 1)
    reordered = keep_search_hits([own_find, digest, search_second, search_first], limit=3)
    assert [t.key for t in reordered] == [1, 3, 4, 2]  # search's two rows in the first three; the digest moves down
    unchanged = [search_first, own_find, search_second, digest]
    assert keep_search_hits(unchanged, limit=3) == unchanged  # nothing to restore: the rerank's order stands
    # A hit of search's the rerank scores under SEARCH_FLOOR_SHARE of its best row is not forced in.
    weak = row(5, 0.2, 1)
    assert [t.key for t in keep_search_hits([own_find, digest, search_second, weak], limit=3)] == [1, 2, 3, 5]


def test_the_reranks_own_best_thread_is_never_displaced_by_the_search_pages_rows() -> None:
    # Found on Enron paraphrase questions: every one of search's first rows scored enough to be held, so the
    # mail the rerank itself scored best ("FW: Basis Options") was pushed out of the ten evidence rows.
    def row(pk: int, score: float, hybrid_rank: int | None) -> ThreadResult:
        item = candidate(pk, sender="S <s@x.example>", subject=f"mail {pk}", hybrid_rank=hybrid_rank)
        return ThreadResult(key=pk, best=item, members=[item], score=score)

    rows = [row(1, 3.0, None), row(2, 2.9, None), row(3, 2.0, 3), row(4, 1.9, 2), row(5, 1.8, 1)]
    held = keep_search_hits(rows, limit=3, semantic=0, gist=0)
    # Search's three rows all score enough to be held and would take all three places (mail 1 was pushed out
    # before); the rerank's best stays, and of search's rows that had to move in, its lowest (mail 4) yields.
    assert [t.key for t in held] == [1, 3, 5, 2, 4]


def test_the_semantic_indexs_first_threads_stay_among_the_first_rows() -> None:
    # Found on Enron paraphrase questions: "regulators approved the grid operator's plan for non-physical
    # day-ahead bids" shares few words with "FERC Approval of the NYISO Virtual Bidding Proposal", which the
    # semantic index ranks second; the word signals put it 56th.
    def row(pk: int, score: float, semantic_rank: int | None) -> ThreadResult:
        item = candidate(pk, sender="S <s@x.example>", subject=f"mail {pk}", semantic_rank=semantic_rank)
        return ThreadResult(key=pk, best=item, members=[item], score=score)

    rows = [row(1, 3.0, None), row(2, 2.9, None), row(3, 2.8, None), row(4, 1.2, 2), row(5, 1.1, 1), row(6, 1.0, 9)]
    held = keep_search_hits(rows, limit=3, semantic=2)
    assert [t.key for t in held] == [1, 5, 4, 2, 3, 6]  # the semantic first two, in its order, in the first three
    assert [t.key for t in keep_search_hits(rows, limit=3, semantic=0)] == [1, 2, 3, 4, 5, 6]
    # Under SEARCH_FLOOR_SHARE of the best row it is not forced in either.
    weak = [row(1, 3.0, None), row(2, 2.9, None), row(3, 2.8, None), row(4, 0.5, 1)]
    assert [t.key for t in keep_search_hits(weak, limit=3, semantic=2)] == [1, 2, 3, 4]


def test_the_gists_first_threads_never_displace_the_semantic_indexs_first() -> None:
    # Found on Enron (bench/data/ask_questions_fresh.json): the mail the semantic index ranked first for a
    # paraphrase question was held among the first rows, then pushed out again by the gist's held rows.
    def row(pk: int, score: float, semantic_rank: int | None = None, gist_rank: int | None = None) -> ThreadResult:
        item = candidate(pk, sender="S <s@x.example>", subject=f"mail {pk}", semantic_rank=semantic_rank)
        item.gist_rank = gist_rank
        return ThreadResult(key=pk, best=item, members=[item], score=score)

    rows = [row(1, 3.0), row(2, 2.9), row(3, 2.8), row(4, 2.7), row(5, 1.1, 1), row(7, 1.0, None, 1),
            row(8, 0.95, None, 2)]  # fmt: skip
    held = keep_search_hits(rows, limit=4, semantic=1, gist=2)
    assert [t.key for t in held][:4] == [1, 5, 7, 8]  # the gist's two displaced the lowest rows, not mail 5


def test_citation_check() -> None:
    evidence = [
        EvidenceText(
            1, "QNB E-Ekstre", "QNB", "2026-04-27", "", "Son Ödeme Tarihi: 11/05/2026\nDönem Borcu: 8.406,90 TL"
        ),
        EvidenceText(2, "Rechnung", "Schreiber", "2026-11-15", "", "Zahlbar bis 05.12.2026, 1.428,00 EUR"),
    ]
    assert citation_check("Pay 8.406,90 TL by 11/05/2026 [1].", evidence)["ok"]
    wrong_source = citation_check("Pay by 05.12.2026 [1].", evidence)
    assert not wrong_source["ok"] and wrong_source["unsupported"] == ["05.12.2026"]
    assert citation_check("Pay by 05.12.2026 [2]. The QNB bill is due 11/05/2026 [1].", evidence)["ok"]
    assert citation_check("It is 11/05/2026 [3].", evidence)["invalid_citations"] == [3]
    assert citation_check("Due on 11 May 2026 [1].", evidence)["ok"]  # the same date, written out
    # the answer names the thread message it quotes by its own date: that header counts as cited text
    reply = EvidenceMessage("Re: Rechnung", "Schreiber", "2026-11-20", 0.0, [])
    evidence[1].members = [reply]
    assert citation_check("From “Re: Rechnung”, 2026-11-20: pay by 05.12.2026 [2].", evidence)["ok"]
    # a subject ending in a day without a year, then the message's own date: two values, both cited text
    evidence[0].members = [EvidenceMessage("Board meeting - Week of October 22nd", "B", "2001-10-17", 0.0, [])]
    named = citation_check("From “Board meeting - Week of October 22nd”, 2001-10-17: “8.406,90 TL” [1]", evidence)
    assert named["ok"], named
    # A "[10]" inside a quotation of the mail is the mail's own text (a footnote), not a citation of [10]:
    footnote = citation_check("“Dönem Borcu: 8.406,90 TL [10]” [1]", evidence)
    assert footnote["ok"] and footnote["cited"] == [1] and footnote["invalid_citations"] == [], footnote

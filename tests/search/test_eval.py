# ruff: noqa: RUF001 -- Turkish and German text is what these tests are about.
"""A labelled mini-eval: paraphrased questions (our own words, not the messages') over three Enron inboxes
plus a few hand-written non-English messages, imported through the real importer so ingest indexes and
embeds them. Prints recall@10 and MRR per mode; fails below the floors (raise them as quality improves)."""

from __future__ import annotations

import tarfile
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from apps.accounts.actions import create_local_account
from apps.accounts.identity import dedupe_key_for_parsed
from apps.accounts.importers import import_path
from apps.accounts.models import Message
from apps.accounts.parsing import parse_message
from apps.search.backends.base import SearchFilters
from apps.search.models import SearchDocument
from tests.services import shared_path

pytestmark = pytest.mark.django_db

BOXES = ("allen-p", "lokay-m", "gay-r")

# Floors for the hybrid mode (what the search box uses). Measured on SQLite with bm25 over every match,
# document-frequency word pruning (off below 1,000 documents, so here every word counts), score-weighted
# RRF and whole-mail passages: hybrid recall@10 0.941, MRR 0.810; semantic 0.941 / 0.829; keyword 0.853 /
# 0.780 (before: hybrid 0.97 / 0.85, keyword 0.85 / 0.72).
# PostgreSQL (ts_rank_cd-based bm25-like keyword side), measured: hybrid 0.971 / 0.682, semantic 0.941 / 0.829,
# keyword 0.853 / 0.614 -- fusion there falls below semantic alone on MRR, a known gap (issue 11), so its
# floor is lower; raise it when the PostgreSQL keyword ranking catches up.
FLOORS = {"sqlite": (0.91, 0.78), "postgresql": (0.91, 0.65)}

HANDWRITTEN = {
    "tr-statement": (
        "Kredi Kartı Hesap Özeti - Mart 2024",
        "Değerli müşterimiz, Mart dönemi hesap özetiniz ektedir. Dönem borcunuz 7.215,40 TL, asgari ödeme "
        "tutarınız 2.164,62 TL'dir. Son Ödeme Tarihi: 18.04.2024. Gecikme faizi uygulanmaması için lütfen "
        "ödemenizi bu tarihe kadar yapınız.",
    ),
    "de-power-bill": (
        "Ihre Stromrechnung für das erste Quartal",
        "Sehr geehrte Kundin, sehr geehrter Kunde, für den Zeitraum Januar bis März haben Sie 612 kWh "
        "verbraucht. Der Rechnungsbetrag von 214,80 Euro wird am 15. April von Ihrem Konto abgebucht. "
        "Mit freundlichen Grüßen, Ihre Stadtwerke",
    ),
    "es-flat-rent": (
        "Alquiler del piso en Madrid",
        "Hola, te confirmo que el alquiler del piso de la calle Toledo sube a 950 euros al mes a partir de "
        "junio. La fianza sigue siendo de dos mensualidades. Un saludo, Lucía",
    ),
}

# (question, relevant messages: "box/inbox/N" files or hand-written keys)
QUESTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("offer to buy a ladder of tax-free municipal bonds", ("allen-p/inbox/5",)),
    ("someone wants to read my title insurance document", ("allen-p/inbox/24", "allen-p/inbox/30")),
    (
        "two signed copies of the cable and internet contract for the apartments",
        ("allen-p/inbox/20", "allen-p/inbox/21"),
    ),
    ("training simulation session about risk booked for the end of October", ("allen-p/inbox/29", "allen-p/inbox/31")),
    ("online banking works again with the same login", ("allen-p/inbox/47", "allen-p/inbox/48", "allen-p/inbox/66")),
    ("shopping plaza property on the market in Austin", ("allen-p/inbox/55",)),
    ("finding a replacement property to defer capital gains tax", ("allen-p/inbox/53",)),
    ("money needed from the construction loan for Bishops Corner", ("allen-p/inbox/7", "allen-p/inbox/28")),
    ("reimbursement claims waiting for my sign-off", ("allen-p/inbox/45",)),
    (
        "I still have not approved Matt Smith's system access",
        ("allen-p/inbox/14", "allen-p/inbox/19", "allen-p/inbox/38", "allen-p/inbox/41", "allen-p/inbox/59"),
    ),
    ("what counts as a lump sum payout from the deferral plan", ("allen-p/inbox/63", "allen-p/inbox/46")),
    ("circus performance outing for the commercial team", ("lokay-m/inbox/6", "lokay-m/inbox/4")),
    ("table of maximum tariff charges for Transwestern customers", ("lokay-m/inbox/7", "lokay-m/inbox/8")),
    ("weekly volumes delivered into California and San Juan utilisation", ("lokay-m/inbox/10", "lokay-m/inbox/32")),
    (
        "cost cases for enlarging the main line by 250 or 300 million cubic feet",
        ("lokay-m/inbox/11", "lokay-m/inbox/13"),
    ),
    ("state regulators did not vote on breaking up the SoCal gas system", ("lokay-m/inbox/12", "lokay-m/inbox/16")),
    ("how much to lay a twenty mile pipe to Bakersfield", ("lokay-m/inbox/23",)),
    ("secret lunch to celebrate a colleague", ("lokay-m/inbox/27",)),
    ("dinner invitation at a coworker's home, partners welcome", ("lokay-m/inbox/35",)),
    ("holiday gifts for kids at a poor elementary school", ("lokay-m/inbox/48",)),
    ("competition law questions about Dynegy buying the company", ("lokay-m/inbox/73", "gay-r/inbox/60")),
    ("annual review of staff by their managers", ("lokay-m/inbox/46", "lokay-m/inbox/43")),
    ("PPL wants primary receipt rights moved to it", ("lokay-m/inbox/69", "lokay-m/inbox/53")),
    ("board changed the retirement savings plan rules", ("gay-r/inbox/3",)),
    ("connecting to the office network from home has changed", ("gay-r/inbox/7",)),
    ("free bus tickets for staff who do not park downtown", ("gay-r/inbox/18",)),
    ("see my direct deposit slip online", ("gay-r/inbox/68",)),
    ("packing boxes before the office relocation", ("gay-r/inbox/65", "gay-r/inbox/69")),
    ("friend flew abroad to adopt a child", ("gay-r/inbox/48", "gay-r/inbox/1")),
    ("storm moving towards the Caribbean", ("gay-r/inbox/61", "gay-r/inbox/93")),
    ("openings for energy trading positions in Texas", ("gay-r/inbox/4",)),
    ("when do I have to pay my credit card bill", ("tr-statement",)),
    ("how much is the electricity invoice this quarter", ("de-power-bill",)),
    ("rent increase for the apartment in Madrid", ("es-flat-rent",)),
]


@pytest.fixture(scope="module")
def eval_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive_path = shared_path("data", "enron", "enron-inbox.tar.gz")
    target = tmp_path_factory.mktemp("search-eval")
    with tarfile.open(archive_path, "r:gz") as archive:
        members = [m for m in archive if m.isfile() and m.name.split("/")[1] in BOXES]
        archive.extractall(target, members=members, filter="data")
    handwritten = target / "maildir" / "handwritten"
    handwritten.mkdir()
    for key, (subject, body) in HANDWRITTEN.items():
        message = EmailMessage()
        message["From"] = "Sender <sender@example.org>"
        message["To"] = "owner@example.com"
        message["Subject"] = subject
        message["Date"] = "Mon, 08 Apr 2024 09:00:00 +0000"
        message["Message-ID"] = f"<{key}@handwritten.example>"
        message.set_content(body)
        (handwritten / f"{key}.eml").write_bytes(bytes(message))
    return target / "maildir"


def dedupe_key_of(tree: Path, label: str) -> str:
    """How the store identifies a message (Message-ID + content fingerprint), from the file's own bytes."""
    path = tree / "handwritten" / f"{label}.eml" if label in HANDWRITTEN else tree / label
    return dedupe_key_for_parsed(parse_message(path.read_bytes()))


def test_mini_eval(
    user: Any, eval_tree: Path, django_capture_on_commit_callbacks: Any, embedder: Any, settings: Any
) -> None:
    settings.SEARCH_EMBED_ON_INGEST = True
    from apps.search.backends import get_search_backend

    account = create_local_account(owner=user, name="eval")
    with django_capture_on_commit_callbacks(execute=True):
        import_path(account, eval_tree)
    stored = Message.objects.filter(account=account).count()
    assert stored > 150
    # Ingest indexed and embedded everything (django-q2 runs the backfill inline in tests).
    assert SearchDocument.objects.filter(account=account).count() >= stored
    assert not SearchDocument.objects.filter(embedded_with="").exists()

    pk_by_key = dict(Message.objects.filter(account=account).values_list("dedupe_key", "pk"))
    backend = get_search_backend()
    filters = SearchFilters(account_ids=(account.pk,), kinds=("message", "attachment"))
    report: dict[str, tuple[float, float]] = {}
    misses: list[str] = []
    for mode in ("keyword", "semantic", "hybrid"):
        found_at_10 = 0
        reciprocal = 0.0
        for question, labels in QUESTIONS:
            relevant = {pk_by_key[dedupe_key_of(eval_tree, label)] for label in labels}
            hits = backend.search(question, mode=mode, filters=filters, limit=10, embedder=embedder, snippets=False)
            ranked = [hit.message_id for hit in hits]
            rank = next((i for i, pk in enumerate(ranked, start=1) if pk in relevant), None)
            if rank is not None:
                found_at_10 += 1
                reciprocal += 1.0 / rank
            elif mode == "hybrid":
                misses.append(question)
        report[mode] = (found_at_10 / len(QUESTIONS), reciprocal / len(QUESTIONS))
    print(f"\nsearch mini-eval: {len(QUESTIONS)} questions, {stored} messages")
    for mode, (recall, mrr) in report.items():
        print(f"  {mode:<8} recall@10 {recall:.3f}   MRR {mrr:.3f}")
    if misses:
        print("  hybrid misses: " + "; ".join(misses))
    recall, mrr = report["hybrid"]
    floor_recall, floor_mrr = FLOORS[connection.vendor]
    assert recall >= floor_recall, report
    assert mrr >= floor_mrr, report

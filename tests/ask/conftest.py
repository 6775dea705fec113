# ruff: noqa: RUF001 -- the statements are Turkish on purpose.
"""Ask fixtures: the demo mailbox plus QNB credit-card e-statements (Turkish mail, the due date only in the
PDF), imported through the ordinary importer, indexed and embedded as ingest would do it.

The module-scoped `ask_mailbox` commits its data once per test module (imports and embeddings take
seconds) and removes it afterwards; tests on it run inside rolled-back transactions as usual."""

from __future__ import annotations

import datetime as dt
import io
import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.accounts.demo_mailbox import DEMO_ACCOUNT_NAME, build_pdf, import_demo_mailbox
from apps.accounts.importers import import_path
from apps.accounts.models import MailAccount
from apps.search.backends import get_search_backend
from apps.search.backends.sqlite import forget_vector_matrices
from apps.search.embedders import get_embedder
from tests.fakes.openai_server import FakeOpenAI

QNB = ("QNB Finansbank", "e-ekstre@qnbfinansbank.example")
KEY_QUESTION = "when do I need to make a payment to QNB bank for my credit card"
_users = itertools.count(1)


def qnb_statement(*, month: str, slug: str, sent: dt.datetime, cutoff: str, due: str, debt: str, minimum: str) -> bytes:
    """A QNB e-statement: a short Turkish mail; the due date and the amounts are only in the PDF."""
    message = EmailMessage()
    message["From"] = f"{QNB[0]} <{QNB[1]}>"
    message["To"] = "Deniz Kaya <deniz@kaya-consulting.example>"
    message["Subject"] = f"QNB E-Ekstre - {month}"
    message["Date"] = format_datetime(sent)
    message["Message-ID"] = f"<qnb-e-ekstre-{slug}@qnbfinansbank.example>"
    message.set_content(
        "Değerli Müşterimiz,\n\n"
        f"QNB Finansbank kredi kartınıza ait {month} dönemi e-ekstreniz ektedir. Hesap özetinizin "
        "ayrıntılarını ekteki PDF dosyasında bulabilirsiniz.\n\n"
        "Ödemelerinizi QNB Mobil, internet şubesi veya ATM'lerimiz üzerinden yapabilirsiniz.\n\n"
        "Bu e-posta bilgilendirme amaçlıdır, lütfen yanıtlamayınız.\nQNB Finansbank"
    )
    lines = [
        "Kart Sahibi: DENIZ KAYA",
        "Kart Numarasi: 4155 **** **** 7712",
        f"Hesap Kesim Tarihi: {cutoff}",
        f"Son Ödeme Tarihi: {due}",
        f"Dönem Borcu: {debt}",
        f"Asgari Ödeme Tutari: {minimum}",
        "",
        "Islem Tarihi  Aciklama                         Tutar",
        "03/04/2026    MIGROS KADIKOY                   642,15 TL",
        "09/04/2026    THY ONLINE                     3.120,00 TL",
        "",
        "Son ödeme tarihine kadar en az asgari ödeme tutarini ödemeniz gerekmektedir.",
    ]
    pdf = build_pdf(title=f"QNB Finansbank - Kredi Karti Hesap Özeti ({month})", lines=lines, created=sent)
    message.add_attachment(pdf, maintype="application", subtype="pdf", filename=f"QNB_E-Ekstre_{slug}.pdf")
    return bytes(message)


def qnb_campaign(sent: dt.datetime) -> bytes:
    """A QNB advert: same bank, a date and the word "ödeme", but no due date. A hard negative."""
    message = EmailMessage()
    message["From"] = f"{QNB[0]} <kampanya@qnbfinansbank.example>"
    message["To"] = "deniz@kaya-consulting.example"
    message["Subject"] = "Kredi kartınıza özel taksit kampanyası"
    message["Date"] = format_datetime(sent)
    message["Message-ID"] = "<qnb-kampanya-2026-05@qnbfinansbank.example>"
    message.set_content(
        "Değerli Müşterimiz,\n\nQNB Finansbank kredi kartı ödemelerinizi 3 taksite bölme fırsatı! "
        "Kampanya 30/06/2026 tarihine kadar geçerlidir.\n\nQNB Finansbank"
    )
    return bytes(message)


STATEMENTS = (
    # month, slug, sent, cut-off, due, period debt, minimum payment
    ("Mart 2026", "2026-03", dt.datetime(2026, 3, 28, 6, 40, tzinfo=dt.UTC), "27/03/2026", "11/04/2026",
     "6.118,40 TL", "1.835,52 TL"),
    ("Nisan 2026", "2026-04", dt.datetime(2026, 4, 27, 6, 40, tzinfo=dt.UTC), "26/04/2026", "11/05/2026",
     "8.406,90 TL", "2.522,07 TL"),
)  # fmt: skip


def add_qnb_mail(account: MailAccount) -> None:
    with tempfile.TemporaryDirectory(prefix="ask-qnb-") as tmp:
        folder = Path(tmp) / "INBOX"
        folder.mkdir()
        for month, slug, sent, cutoff, due, debt, minimum in STATEMENTS:
            raw = qnb_statement(month=month, slug=slug, sent=sent, cutoff=cutoff, due=due, debt=debt, minimum=minimum)
            (folder / f"qnb-{slug}.eml").write_bytes(raw)
        (folder / "qnb-kampanya.eml").write_bytes(qnb_campaign(dt.datetime(2026, 5, 20, 9, 0, tzinfo=dt.UTC)))
        import_path(account, Path(tmp))


@dataclass
class AskMailbox:
    user: Any
    account: MailAccount


def build_ask_mailbox(*, embeddings: bool) -> AskMailbox:
    number = next(_users)
    user = get_user_model().objects.create_user(
        username=f"asker{number}", email=f"asker{number}@example.com", password="ask-test-password-42"
    )
    import_demo_mailbox(owner=user, stdout=io.StringIO())
    account = MailAccount.objects.get(owner=user, name=DEMO_ACCOUNT_NAME)
    add_qnb_mail(account)
    if embeddings:
        get_search_backend().embed_pending(embedder=get_embedder())
    return AskMailbox(user=user, account=account)


def remove_ask_mailbox(mailbox: AskMailbox) -> None:
    mailbox.user.delete()  # accounts, messages, index documents and runs cascade


@pytest.fixture(scope="module")
def ask_mailbox(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AskMailbox]:
    """Demo mailbox + QNB mail, full text and embeddings, committed for the module."""
    with django_db_blocker.unblock():
        forget_vector_matrices()
        mailbox = build_ask_mailbox(embeddings=True)
    try:
        yield mailbox
    finally:
        with django_db_blocker.unblock():
            remove_ask_mailbox(mailbox)
            forget_vector_matrices()


@pytest.fixture
def fake_llm(settings: Any) -> Iterator[FakeOpenAI]:
    """The scripted OpenAI-compatible server, selected for Ask through settings.ASK_LLM."""
    server = FakeOpenAI()
    server.start()
    settings.ASK_LLM = {"base_url": server.base_url, "api_key": "sk-ask-test", "model": "fake-model"}
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ask_mailbox_text(django_db_setup: Any, django_db_blocker: Any) -> Iterator[AskMailbox]:
    """The same mailbox with the full-text index only (no embeddings): quicker, for non-ranking tests."""
    with django_db_blocker.unblock():
        forget_vector_matrices()
        mailbox = build_ask_mailbox(embeddings=False)
    try:
        yield mailbox
    finally:
        with django_db_blocker.unblock():
            remove_ask_mailbox(mailbox)
            forget_vector_matrices()

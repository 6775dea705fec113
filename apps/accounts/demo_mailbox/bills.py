# ruff: noqa: RUF001  (Turkish, German and typographic characters are the point of the demo content)
"""Bills: Turkish card statements (with their PDFs), a German invoice, receipts and travel bookings."""

from __future__ import annotations

import datetime as dt

from apps.accounts.demo_mailbox.model import BERLIN, INBOX, DemoMail, MailboxBuilder, Person, pdf_attachment
from apps.accounts.demo_mailbox.people import (
    BANK,
    CITYRIDE,
    CLOUDNEST,
    ME,
    PERA,
    RAIL,
    ROASTERY,
    SCHREIBER,
    SEITENWEISE,
    SKYBRIDGE,
    TELVIO,
)

TURKISH_STATEMENT_SUBJECT = "Kredi Kartı Hesap Özeti - Kasım 2026"
GERMAN_INVOICE_SUBJECT = "Rechnung Nr. 2026-1187 – Schreiber & Partner IT-Dienstleistungen"


def turkish_statements(b: MailboxBuilder) -> None:
    statements = [
        # (month label, sent days ago, cut-off, due date, period debt, minimum payment, unread/flagged)
        ("Ekim 2026", 34, "16.10.2026", "26.10.2026", "9.812,40 TL", "2.943,72 TL", False),
        ("Kasım 2026", 3, "17.11.2026", "15.12.2026", "12.345,67 TL", "3.703,70 TL", True),
    ]
    transactions = [
        ("02.11.2026", "MIGROS SANAL MARKET ISTANBUL", "1.284,35 TL"),
        ("04.11.2026", "SKYBRIDGE AIRLINES ONLINE", "6.410,00 TL"),
        ("07.11.2026", "PERA GARDEN HOTEL ISTANBUL", "2.950,00 TL"),
        ("09.11.2026", "KAHVE DUNYASI BEYOGLU", "186,50 TL"),
        ("12.11.2026", "TELVIO ROAMING PAKETI", "412,00 TL"),
        ("14.11.2026", "ERGOFORM IADE", "-1.902,18 TL"),
        ("15.11.2026", "D&R KITAP KADIKOY", "3.005,00 TL"),
    ]
    for month, days_ago, cutoff, due, debt, minimum, current in statements:
        slug = "2026-11" if current else "2026-10"
        lines = [
            "Marmara Bank A.S. - Kredi Karti Hesap Özeti",
            "Kart Sahibi: DENIZ KAYA          Kart No: 5400 **** **** 4821",
            f"Hesap Kesim Tarihi: {cutoff}",
            f"Son Ödeme Tarihi: {due}",
            f"Dönem Borcu: {debt}",
            f"Asgari Ödeme Tutari: {minimum}",
            "Kart Limiti: 60.000,00 TL",
            "",
            "Islem Tarihi   Aciklama                                Tutar",
        ]
        if current:
            lines += [f"{date}     {text:<40} {amount}" for date, text, amount in transactions]
        else:
            lines += ["(Bu dönemin islem dökümü için internet subesini kullaniniz.)"]
        lines += [
            "",
            "Son ödeme tarihine kadar asgari ödeme tutarini ödemediginiz takdirde",
            "gecikme faizi uygulanir. Otomatik ödeme talimati için subenize basvurunuz.",
        ]
        when = b.at(days_ago, 7, 2)
        pdf = pdf_attachment(f"hesap-ozeti-{slug}.pdf", title=f"Hesap Özeti - {month}", lines=lines, created=when)
        body = (
            "Sayın DENİZ KAYA,\n\n"
            f"5400 **** **** 4821 numaralı kredi kartınızın {month} dönemine ait hesap özeti ektedir.\n\n"
            f"Hesap Kesim Tarihi: {cutoff}\n"
            f"Son Ödeme Tarihi: {due}\n"
            f"Dönem Borcu: {debt}\n"
            f"Asgari Ödeme Tutarı: {minimum}\n\n"
            "Ödemenizi mobil uygulamamızdan, internet şubemizden veya ATM'lerimizden yapabilirsiniz.\n"
            "Son ödeme tarihinde en az asgari ödeme tutarını ödemediğiniz durumda gecikme faizi uygulanır.\n\n"
            "Saygılarımızla,\nMarmara Bank Kart Hizmetleri\n\n"
            "Bu e-posta otomatik olarak gönderilmiştir, lütfen yanıtlamayınız."
        )
        b.add(
            DemoMail(
                key=f"marmara-ekstre-{slug}",
                folder=INBOX,
                sender=BANK,
                to=[ME],
                subject=f"Kredi Kartı Hesap Özeti - {month}",
                when=when,
                text=body,
                attachments=[pdf],
                seen=not current,
                flagged=current,
            )
        )


QNB = Person("QNB Finansbank", "e-ekstre@qnbfinansbank.example")
QNB_CAMPAIGNS = Person("QNB Finansbank", "kampanya@qnbfinansbank.example")
# The spring e-statements of a second card (the seed's case: "when do I need to make a payment to QNB bank
# for my credit card" → Son Ödeme Tarihi 11/05/2026). Their mail says little: the due date and the amounts
# are only in the PDF. Fixed dates, as an archive of older mail would have.
QNB_STATEMENTS = (
    # month, slug, sent (UTC), cut-off, due, period debt, minimum payment
    ("Mart 2026", "2026-03", dt.datetime(2026, 3, 28, 6, 40, tzinfo=dt.UTC), "27/03/2026", "11/04/2026",
     "6.118,40 TL", "1.835,52 TL"),
    ("Nisan 2026", "2026-04", dt.datetime(2026, 4, 27, 6, 40, tzinfo=dt.UTC), "26/04/2026", "11/05/2026",
     "8.406,90 TL", "2.522,07 TL"),
)  # fmt: skip


def qnb_statements(b: MailboxBuilder) -> None:
    for month, slug, sent, cutoff, due, debt, minimum in QNB_STATEMENTS:
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
        pdf = pdf_attachment(
            f"QNB_E-Ekstre_{slug}.pdf",
            title=f"QNB Finansbank - Kredi Karti Hesap Özeti ({month})",
            lines=lines,
            created=sent,
        )
        b.add(
            DemoMail(
                key=f"qnb-e-ekstre-{slug}",
                own_message_id=f"qnb-e-ekstre-{slug}@qnbfinansbank.example",
                folder=INBOX,
                sender=QNB,
                to=[ME],
                subject=f"QNB E-Ekstre - {month}",
                when=sent.astimezone(BERLIN),
                text=(
                    "Değerli Müşterimiz,\n\n"
                    f"QNB Finansbank kredi kartınıza ait {month} dönemi e-ekstreniz ektedir. Hesap özetinizin "
                    "ayrıntılarını ekteki PDF dosyasında bulabilirsiniz.\n\n"
                    "Ödemelerinizi QNB Mobil, internet şubesi veya ATM'lerimiz üzerinden yapabilirsiniz.\n\n"
                    "Bu e-posta bilgilendirme amaçlıdır, lütfen yanıtlamayınız.\nQNB Finansbank"
                ),
                attachments=[pdf],
            )
        )
    # Same bank, a date and "ödeme", but no due date: an advert that must not answer the question.
    b.add(
        DemoMail(
            key="qnb-kampanya-2026-05",
            own_message_id="qnb-kampanya-2026-05@qnbfinansbank.example",
            folder=INBOX,
            sender=QNB_CAMPAIGNS,
            to=[ME],
            subject="Kredi kartınıza özel taksit kampanyası",
            when=dt.datetime(2026, 5, 20, 9, 0, tzinfo=dt.UTC).astimezone(BERLIN),
            text=(
                "Değerli Müşterimiz,\n\nQNB Finansbank kredi kartı ödemelerinizi 3 taksite bölme fırsatı! "
                "Kampanya 30/06/2026 tarihine kadar geçerlidir.\n\nQNB Finansbank"
            ),
        )
    )


def german_invoice(b: MailboxBuilder) -> None:
    when = b.at(5, 10, 14)
    lines = [
        "Schreiber & Partner IT-Dienstleistungen GmbH",
        "Kastanienallee 41, 10435 Berlin  -  USt-IdNr. DE 298 114 507",
        "",
        "An: Kaya Consulting, Deniz Kaya, Lychener Str. 18, 10437 Berlin",
        "",
        "Rechnung Nr. 2026-1187",
        "Rechnungsdatum: 15.11.2026      Leistungszeitraum: Oktober 2026",
        "",
        "Pos.  Beschreibung                                   Menge   Einzelpreis      Gesamt",
        "1     Einrichtung Notebook und Backup-Konzept            1     480,00 EUR   480,00 EUR",
        "2     Wartungsvertrag Netzwerk (monatlich)               1     320,00 EUR   320,00 EUR",
        "3     Vor-Ort-Support (Stunden)                          4     100,00 EUR   400,00 EUR",
        "",
        "Nettobetrag:                                                          1.200,00 EUR",
        "zzgl. 19 % USt:                                                         228,00 EUR",
        "Rechnungsbetrag:                                                      1.428,00 EUR",
        "",
        "Zahlbar bis 05.12.2026 ohne Abzug.",
        "Bankverbindung: Berliner Volksbank, IBAN DE12 1009 0000 2883 4410 07, BIC BEVODEBB",
        "Verwendungszweck: RE 2026-1187",
    ]
    b.add(
        DemoMail(
            key="schreiber-rechnung-2026-1187",
            folder=INBOX,
            sender=SCHREIBER,
            to=[ME],
            subject=GERMAN_INVOICE_SUBJECT,
            when=when,
            text=(
                "Sehr geehrter Herr Kaya,\n\n"
                "anbei erhalten Sie unsere Rechnung Nr. 2026-1187 für die im Oktober erbrachten Leistungen.\n\n"
                "Rechnungsbetrag: 1.428,00 EUR (inkl. 19 % USt)\n"
                "Zahlbar bis 05.12.2026 ohne Abzug.\n"
                "IBAN: DE12 1009 0000 2883 4410 07 · Verwendungszweck: RE 2026-1187\n\n"
                "Bei Fragen zur Rechnung erreichen Sie uns unter 030 / 4405 2210.\n\n"
                "Mit freundlichen Grüßen\nSabine Schreiber\nSchreiber & Partner IT-Dienstleistungen GmbH"
            ),
            attachments=[
                pdf_attachment("Rechnung_2026-1187.pdf", title="Rechnung Nr. 2026-1187", lines=lines, created=when)
            ],
            seen=False,
            flagged=True,
        )
    )


# --- receipts and bills ---------------------------------------------------------------------------


def receipts(b: MailboxBuilder) -> None:
    for index, (month, amount) in enumerate(
        [("August", "18.40"), ("September", "18.40"), ("October", "23.10"), ("November", "23.10")]
    ):
        days_ago = 105 - 30 * index
        when = b.at(days_ago, 4, 10)
        number = f"CN-2026-{8 + index:02d}-3391"
        b.add(
            DemoMail(
                key=f"cloudnest-invoice-{number.lower()}",
                folder=INBOX,
                sender=CLOUDNEST,
                to=[ME],
                subject=f"Your Cloudnest invoice {number}",
                when=when,
                text=(
                    f"Hi Deniz,\n\nyour invoice {number} for {month} 2026 is ready.\n\n"
                    f"  2 × small VM (2 vCPU, 4 GB)\n  1 × managed backup 100 GB\n  Total: EUR {amount} (incl. VAT)\n\n"
                    "The amount will be charged to your card ending in 0615.\n\nCloudnest Billing"
                ),
                attachments=[
                    pdf_attachment(
                        f"cloudnest-{number}.pdf",
                        title=f"Cloudnest invoice {number}",
                        lines=[
                            f"Billing period: {month} 2026",
                            "Customer: Kaya Consulting (account 55-2093)",
                            "2 x small VM (2 vCPU, 4 GB)",
                            "1 x managed backup 100 GB",
                            f"Total: EUR {amount} incl. VAT",
                        ],
                        created=when,
                    )
                ],
            )
        )
    for index in range(4):
        days_ago = 100 - 28 * index
        b.add(
            DemoMail(
                key=f"roastery-order-{5120 + index}",
                folder=INBOX,
                sender=ROASTERY,
                to=[ME],
                subject=f"Order #{5120 + index} confirmed: your coffee subscription",
                when=b.at(days_ago, 7, 45),
                text=(
                    f"Thanks, Deniz!\n\nOrder #{5120 + index}\n"
                    "  1 kg Espresso 'Lorelei' (whole bean)  EUR 29.90\n"
                    "  Shipping                               EUR 0.00\n\n"
                    "Your beans are roasted on Tuesday and ship on Wednesday.\n\nRoastery Rhein"
                ),
            )
        )
    for index, (month, amount) in enumerate(
        [("08/2026", "24,99"), ("09/2026", "24,99"), ("10/2026", "31,48"), ("11/2026", "24,99")]
    ):
        days_ago = 99 - 30 * index
        b.add(
            DemoMail(
                key=f"telvio-rechnung-{month.replace('/', '-')}",
                folder=INBOX,
                sender=TELVIO,
                to=[ME],
                subject=f"Ihre Telvio Mobilfunkrechnung {month}",
                when=b.at(days_ago, 5, 0),
                text=(
                    f"Hallo Deniz Kaya,\n\nIhre Rechnung für {month} ist da.\n"
                    f"Rechnungsbetrag: {amount} EUR, Abbuchung per SEPA-Lastschrift in 5 Tagen.\n\n"
                    "Ihr Telvio Team"
                ),
            )
        )
    for key, subject, text, days_ago in [
        (
            "seitenweise-7781",
            "Your order from Seitenweise Books (#7781)",
            "Thank you for your order!\n\n  'The Design of Everyday Things'   EUR 18.00\n"
            "  'Thinking in Systems'            EUR 21.50\n  Total                            EUR 39.50\n\n"
            "Pick-up at the shop from Thursday.",
            58,
        ),
        (
            "seitenweise-7954",
            "Your order from Seitenweise Books (#7954)",
            "Thank you for your order!\n\n  'A Pattern Language'   EUR 64.00\n\nWe will ship within 3 days.",
            17,
        ),
    ]:
        b.add(
            DemoMail(
                key=key, folder=INBOX, sender=SEITENWEISE, to=[ME], subject=subject, when=b.at(days_ago, 20), text=text
            )
        )
    for index, (days_ago, fare, route) in enumerate(
        [
            (44, "14.60", "Lychener Str. → Hauptbahnhof"),
            (22, "9.80", "Alexanderplatz → Lychener Str."),
            (8, "21.30", "BER Airport → Lychener Str."),
        ]
    ):
        b.add(
            DemoMail(
                key=f"cityride-{index + 1}",
                folder=INBOX,
                sender=CITYRIDE,
                to=[ME],
                subject=f"Your CityRide receipt: EUR {fare}",
                when=b.at(days_ago, 22),
                text=f"Thanks for riding with CityRide.\n\nRoute: {route}\nFare: EUR {fare}\n"
                "Paid with card ending 0615.",
            )
        )


def travel(b: MailboxBuilder) -> None:
    booking = b.add(
        DemoMail(
            key="skybridge-booking-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Booking confirmation K7Q2MA – Berlin (BER) → Istanbul (IST)",
            when=b.at(40, 21, 12),
            text=(
                "Dear Deniz Kaya,\n\nyour booking is confirmed. Booking reference: K7Q2MA\n\n"
                "Outbound  SB 412  Tue 3 Nov 2026  BER 07:05 → IST 11:15\n"
                "Return    SB 419  Mon 9 Nov 2026  IST 18:40 → BER 20:55\n\n"
                "Passenger: KAYA/DENIZ MR · 1 checked bag (23 kg)\nTotal paid: EUR 286.40\n\n"
                "Online check-in opens 30 hours before departure."
            ),
        )
    )
    b.add(
        DemoMail(
            key="pera-reservation-55810",
            folder=INBOX,
            sender=PERA,
            to=[ME],
            subject="Reservation 55810 confirmed – Pera Garden Hotel, 3–9 November",
            when=b.at(39, 9, 30),
            text=(
                "Dear Mr Kaya,\n\nthank you for choosing Pera Garden Hotel.\n\n"
                "Check-in: 3 November 2026 from 14:00\nCheck-out: 9 November 2026 until 12:00\n"
                "Room: Superior double, garden view, breakfast included\nRate: 2.950,00 TL per night\n\n"
                "We look forward to welcoming you."
            ),
        )
    )
    b.add(
        DemoMail(
            key="skybridge-schedule-change-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Re: Booking confirmation K7Q2MA – schedule change on your return flight",
            when=b.at(27, 13, 2),
            text=(
                "Dear Deniz Kaya,\n\nthe departure of SB 419 on 9 November has moved from 18:40 to 19:25.\n"
                "Your seat is unchanged. No action is needed if the new time suits you."
            ),
            parent=booking,
        )
    )
    b.add(
        DemoMail(
            key="skybridge-checkin-k7q2ma",
            folder=INBOX,
            sender=SKYBRIDGE,
            to=[ME],
            subject="Check-in is open for your flight to Istanbul",
            when=b.at(18, 1, 5),
            text="Check-in for SB 412 is now open. Booking reference K7Q2MA.\nBoarding passes are in the app.",
        )
    )
    when = b.at(9, 12, 20)
    b.add(
        DemoMail(
            key="railconnect-ticket-884120",
            folder=INBOX,
            sender=RAIL,
            to=[ME],
            subject="Your ticket: Berlin Hbf → Hamburg Hbf, 2 December",
            when=when,
            text=(
                "Your ticket is attached.\n\nICE 1007 · Wed 2 Dec 2026 · Berlin Hbf 08:36 → Hamburg Hbf 10:24\n"
                "Coach 7, seat 54 (window) · Flex fare EUR 54.90\n\nShow the PDF or the app on board."
            ),
            attachments=[
                pdf_attachment(
                    "ticket-884120.pdf",
                    title="RailConnect ticket 884120",
                    lines=[
                        "Passenger: Deniz Kaya",
                        "ICE 1007, Wed 2 Dec 2026",
                        "Berlin Hbf 08:36 -> Hamburg Hbf 10:24",
                        "Coach 7, seat 54 (window)",
                        "Flex fare: EUR 54.90",
                    ],
                    created=when,
                )
            ],
        )
    )

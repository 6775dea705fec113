# ruff: noqa: RUF001  (Turkish, German and typographic characters are the point of the demo content)
"""The story threads: a proposal few answer, a meeting being moved, a support case that escalates."""

from __future__ import annotations

import datetime as dt

from apps.accounts.demo_mailbox.model import (
    BERLIN,
    DEMO_ANCHOR,
    DEMO_DOMAIN,
    INBOX,
    SENT,
    DemoAttachment,
    DemoMail,
    MailboxBuilder,
    pdf_attachment,
)
from apps.accounts.demo_mailbox.people import (
    ERGOFORM,
    ERGOFORM_AGENT,
    ERGOFORM_LEAD,
    LENA,
    MARCO,
    ME,
    PRIYA,
    SOFIA,
    TOM,
)

PROPOSAL_THREAD_SIZE = 6
MEETING_THREAD_SIZE = 5
SUPPORT_THREAD_SIZE = 6


def proposal_thread(b: MailboxBuilder) -> None:
    """A proposal sent to five people: three answer, Priya and Tom never do, a reminder follows."""
    subject = "Proposal: Nordlicht customer portal redesign (Q1 2027)"
    proposal_pdf = pdf_attachment(
        "nordlicht-portal-proposal.pdf",
        title="Nordlicht Retail - Customer Portal Redesign",
        lines=[
            "Proposal prepared by Deniz Kaya, Kaya Consulting",
            "",
            "1. Goals",
            "   - Cut the number of support tickets about order status by 30 %",
            "   - Self-service returns in three steps instead of seven",
            "   - One account page for online and in-store purchases",
            "",
            "2. Phases",
            "   Discovery (3 weeks): interviews with 12 customers and 6 store staff",
            "   Design (5 weeks): prototypes, two rounds of usability testing",
            "   Build support (8 weeks): design QA alongside the Nordlicht engineering team",
            "",
            "3. Budget",
            "   Fixed fee: 48.500,00 EUR (excl. VAT), invoiced per phase",
            "",
            "4. Decisions needed by 4 December 2026",
            "   - Engineering capacity for the build phase (Priya)",
            "   - Analytics access for the baseline metrics (Sofia)",
            "   - Sign-off on the budget (Tom)",
        ],
        created=b.at(26, 9, 5),
    )
    first = b.add(
        DemoMail(
            key="proposal-portal-001",
            folder=SENT,
            sender=ME,
            to=[LENA, PRIYA, MARCO],
            cc=[TOM, SOFIA],
            subject=subject,
            when=b.at(26, 9, 12),
            text=(
                "Hi all,\n\n"
                "attached is the proposal for the customer portal redesign we sketched in October.\n"
                "The short version: three phases (discovery, design, build support), 16 weeks in total,\n"
                "starting in the second week of January.\n\n"
                "I need three things before 4 December:\n"
                "  - Priya: can your team give us two engineers for the build phase?\n"
                "  - Sofia: read access to the order-status analytics so we can measure a baseline.\n"
                "  - Tom: a yes/no on the budget.\n\n"
                "Lena and Marco, comments on scope are very welcome.\n\n"
                "Best,\nDeniz\n\n-- \nDeniz Kaya · Kaya Consulting · Berlin"
            ),
            attachments=[proposal_pdf],
        )
    )
    lena = b.add(
        DemoMail(
            key="proposal-portal-002",
            folder=INBOX,
            sender=LENA,
            to=[ME],
            cc=[PRIYA, MARCO, TOM, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(25, 10, 40),
            text=(
                "Hi Deniz,\n\n"
                "thanks, this reads well. Two questions:\n"
                "1) Could discovery include the click-and-collect flow? Stores complain about it a lot.\n"
                "2) Do the 12 interviews include business customers, or only consumers?\n\n"
                "Happy with the timeline otherwise.\n\nLena"
            ),
            parent=first,
        )
    )
    reply = b.add(
        DemoMail(
            key="proposal-portal-003",
            folder=SENT,
            sender=ME,
            to=[LENA],
            cc=[PRIYA, MARCO, TOM, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(25, 14, 3),
            text=(
                "Hi Lena,\n\n"
                "1) Yes, click-and-collect fits into discovery without extra cost; I'll add it to the scope.\n"
                "2) Consumers only so far. I'd suggest 9 consumers + 3 business customers. OK for you?\n\n"
                "Deniz"
            ),
            parent=lena,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-004",
            folder=INBOX,
            sender=MARCO,
            to=[ME],
            cc=[LENA],
            subject=f"Re: {subject}",
            when=b.at(24, 8, 55),
            text=(
                "Morning!\n\n"
                "Looks good from the design side. Five weeks for design is tight if we do two test rounds;\n"
                "I'd plan the second round as remote, unmoderated tests to save a week.\n\n"
                "Marco"
            ),
            parent=reply,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-005",
            folder=INBOX,
            sender=SOFIA,
            to=[ME],
            subject=f"Re: {subject}",
            when=b.at(19, 17, 20),
            text=(
                "Hi Deniz, sorry for the slow answer, I was at a conference.\n"
                "Analytics access is no problem: I've requested a read-only role for you, it should arrive\n"
                "this week. The order-status dashboard is the one called 'OPS – Fulfilment'.\n\n"
                "Sofia"
            ),
            parent=first,
        )
    )
    b.add(
        DemoMail(
            key="proposal-portal-006",
            folder=SENT,
            sender=ME,
            to=[PRIYA, TOM],
            cc=[LENA],
            subject=f"Re: {subject}",
            when=b.at(5, 9, 30),
            text=(
                "Hi Priya, hi Tom,\n\n"
                "a gentle reminder about the portal proposal: I still need the engineering capacity answer\n"
                "(Priya) and the budget decision (Tom) by 4 December to keep the January start.\n"
                "Lena, Marco and Sofia have already replied.\n\n"
                "Thanks!\nDeniz"
            ),
            parent=first,
        )
    )


def _ics_invite(*, uid: str, start: dt.datetime, end: dt.datetime, stamp: dt.datetime) -> str:
    def utc(value: dt.datetime) -> str:
        return value.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")

    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//mailagent//demo mailbox//EN",
        "METHOD:REQUEST",
        "CALSCALE:GREGORIAN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        f"DTSTAMP:{utc(stamp)}",
        f"DTSTART:{utc(start)}",
        f"DTEND:{utc(end)}",
        "SUMMARY:Portal redesign kick-off",
        "LOCATION:Nordlicht HQ\\, room Fjord (3rd floor) / video link in the description",
        "DESCRIPTION:Agenda: goals and success metrics\\, interview plan\\, tooling.\\n"
        "Video: https://meet.kaya-consulting.example/portal-kickoff",
        f"ORGANIZER;CN={ME.name}:mailto:{ME.address}",
        f"ATTENDEE;CN={LENA.name};ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{LENA.address}",
        f"ATTENDEE;CN={MARCO.name};ROLE=REQ-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{MARCO.address}",
        f"ATTENDEE;CN={SOFIA.name};ROLE=OPT-PARTICIPANT;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{SOFIA.address}",
        "STATUS:CONFIRMED",
        "SEQUENCE:0",
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        "DESCRIPTION:Portal redesign kick-off",
        "TRIGGER:-PT15M",
        "END:VALARM",
        "END:VEVENT",
        "END:VCALENDAR",
    ]
    return "\r\n".join(lines) + "\r\n"


def meeting_thread(b: MailboxBuilder) -> None:
    subject = "Kick-off meeting: which slot works?"
    ask = b.add(
        DemoMail(
            key="meeting-kickoff-001",
            folder=SENT,
            sender=ME,
            to=[LENA, MARCO, SOFIA],
            subject=subject,
            when=b.at(12, 11, 0),
            text=(
                "Hi everyone,\n\n"
                "let's find a slot for the kick-off (90 minutes, in person at Nordlicht if possible):\n"
                "  A) Tuesday 1 December, 10:00\n"
                "  B) Wednesday 2 December, 14:00\n"
                "  C) Thursday 3 December, 09:30\n\n"
                "Just reply with the letters that work for you.\n\nDeniz"
            ),
        )
    )
    lena = b.add(
        DemoMail(
            key="meeting-kickoff-002",
            folder=INBOX,
            sender=LENA,
            to=[ME],
            cc=[MARCO, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(12, 13, 24),
            text="B or C for me. A clashes with the quarterly review.\n\nLena",
            parent=ask,
        )
    )
    marco = b.add(
        DemoMail(
            key="meeting-kickoff-003",
            folder=INBOX,
            sender=MARCO,
            to=[ME],
            cc=[LENA, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(11, 9, 2),
            text="C works, B only remotely. I'm at a client workshop on Wednesday afternoon.\n\nMarco",
            parent=lena,
        )
    )
    sofia = b.add(
        DemoMail(
            key="meeting-kickoff-004",
            folder=INBOX,
            sender=SOFIA,
            to=[ME],
            cc=[LENA, MARCO],
            subject=f"Re: {subject}",
            when=b.at(11, 16, 48),
            text="Any of them, but I can only stay for the first hour on C.\n\nSofia",
            parent=marco,
        )
    )
    start = dt.datetime(2026, 12, 3, 9, 30, tzinfo=BERLIN)
    b.add(
        DemoMail(
            key="meeting-kickoff-005",
            folder=SENT,
            sender=ME,
            to=[LENA, MARCO, SOFIA],
            subject=f"Re: {subject}",
            when=b.at(10, 8, 45),
            text=(
                "Thanks all, it's C: Thursday 3 December, 09:30-11:00 at Nordlicht HQ (room Fjord).\n"
                "Sofia, we'll put the metrics part first so you can leave after an hour.\n"
                "Calendar invite attached.\n\nDeniz"
            ),
            parent=sofia,
            flagged=True,
            attachments=[
                DemoAttachment(
                    filename="portal-kickoff.ics",
                    content=_ics_invite(
                        uid=f"portal-kickoff-20261203@{DEMO_DOMAIN}",
                        start=start,
                        end=start + dt.timedelta(minutes=90),
                        stamp=DEMO_ANCHOR - dt.timedelta(days=10),
                    ),
                    maintype="text",
                    subtype="calendar",
                    params={"method": "REQUEST"},
                )
            ],
        )
    )


def support_thread(b: MailboxBuilder) -> None:
    subject = "Complaint: standing desk delivered damaged (order ER-48213)"
    complaint = b.add(
        DemoMail(
            key="support-ergoform-001",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM],
            subject=subject,
            when=b.at(34, 19, 10),
            text=(
                "Hello,\n\n"
                "the standing desk from order ER-48213 arrived today with a bent left leg and a cracked\n"
                "control panel. The box was visibly crushed at one corner; the driver noted it on the\n"
                "delivery slip. Photos are available on request.\n\n"
                "I'd like a replacement of the frame and the control panel, not a refund.\n\n"
                "Regards,\nDeniz Kaya"
            ),
        )
    )
    ticket = b.add(
        DemoMail(
            key="support-ergoform-002",
            folder=INBOX,
            sender=ERGOFORM,
            to=[ME],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(34, 19, 11),
            text=(
                "Thank you for contacting Ergoform. Your request has been received as ticket #77104.\n"
                "We usually answer within two working days.\n\n"
                "Please keep the ticket number in the subject when you reply."
            ),
            parent=complaint,
        )
    )
    agent = b.add(
        DemoMail(
            key="support-ergoform-003",
            folder=INBOX,
            sender=ERGOFORM_AGENT,
            to=[ME],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(30, 11, 32),
            text=(
                "Dear Mr Kaya,\n\n"
                "we are sorry about the damaged desk. For the claim with our carrier we need three photos:\n"
                "the leg, the control panel and the label on the box. Once we have them we will ship a\n"
                "replacement within 10 working days.\n\n"
                "Kind regards,\nJana Vogt, Ergoform customer service"
            ),
            parent=ticket,
        )
    )
    photos = b.add(
        DemoMail(
            key="support-ergoform-004",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM_AGENT],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(30, 18, 5),
            text=(
                "Hello Ms Vogt,\n\n"
                "here is a description of the three photos you asked for (the pictures themselves are in the\n"
                "upload portal under ticket #77104): bent leg, cracked panel, box label with the carrier code.\n\n"
                "Deniz Kaya"
            ),
            parent=agent,
        )
    )
    escalate = b.add(
        DemoMail(
            key="support-ergoform-005",
            folder=SENT,
            sender=ME,
            to=[ERGOFORM_AGENT],
            cc=[ERGOFORM_LEAD],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(14, 9, 20),
            text=(
                "Hello,\n\n"
                "more than two weeks have passed since I sent the photos and I have not heard anything.\n"
                "I have been working at a broken desk for a month now. Please tell me by Friday when the\n"
                "replacement ships, otherwise I will withdraw from the purchase and ask for a full refund.\n\n"
                "Deniz Kaya"
            ),
            parent=photos,
        )
    )
    b.add(
        DemoMail(
            key="support-ergoform-006",
            folder=INBOX,
            sender=ERGOFORM_LEAD,
            to=[ME],
            cc=[ERGOFORM_AGENT],
            subject=f"Re: {subject} [Ticket #77104]",
            when=b.at(13, 15, 42),
            text=(
                "Dear Mr Kaya,\n\n"
                "I apologise for the silence; your ticket was stuck in the carrier claim queue.\n"
                "The replacement frame and control panel left our warehouse today (ParcelPoint tracking\n"
                "PP-5521-0938-DE). As a thank-you for your patience we refunded 60 EUR to your card.\n\n"
                "Best regards,\nMehmet Arslan, Team Lead Customer Care"
            ),
            parent=escalate,
            seen=False,
            flagged=True,
        )
    )

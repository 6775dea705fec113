# ruff: noqa: RUF001  (Turkish, German and typographic characters are the point of the demo content)
"""Team updates and personal mail."""

from __future__ import annotations

from apps.accounts.demo_mailbox.model import INBOX, SENT, DemoMail, MailboxBuilder
from apps.accounts.demo_mailbox.people import AMIRA, BEN, ELIF, MARCO, ME

# --- team updates and personal mail -------------------------------------------------------------


_WEEKLY_HIGHLIGHTS = [
    "Interview guide drafted and reviewed with Lena",
    "Baseline numbers for the order-status page collected",
    "Returns flow mapped end to end (7 steps, 3 hand-offs)",
    "First clickable prototype of the account page",
    "Usability test plan agreed with Nordlicht research",
    "Accessibility audit of the current portal finished",
    "Store staff workshop held in Hamburg",
    "Design system tokens aligned with the web shop",
    "Backlog for Q1 estimated with the engineering leads",
    "Click-and-collect pain points summarised",
    "Analytics dashboard for returns built",
    "Two prototype iterations tested with 5 users each",
    "Copy review for the returns flow",
    "Hand-off checklist for engineering drafted",
    "Budget tracking: 41 % used, on plan",
    "Retro on the discovery phase",
]


def team_updates(b: MailboxBuilder) -> None:
    for index, highlight in enumerate(_WEEKLY_HIGHLIGHTS):
        week = 31 + index
        days_ago = 2 + 7 * (len(_WEEKLY_HIGHLIGHTS) - 1 - index)
        other = _WEEKLY_HIGHLIGHTS[(index + 5) % len(_WEEKLY_HIGHLIGHTS)]
        b.add(
            DemoMail(
                key=f"team-weekly-w{week}",
                folder=INBOX,
                sender=AMIRA,
                to=[ME],
                subject=f"Weekly update – week {week}",
                when=b.at(days_ago, 17, 30),
                text=(
                    f"Hi Deniz,\n\nhere is the update for week {week}.\n\n"
                    f"Done:\n  - {highlight}\n  - {other.lower()}\n\n"
                    "Next:\n  - prepare the notes for Monday's client call\n\n"
                    "Blockers: none" + ("\n  (waiting for analytics access)" if index % 5 == 3 else "") + "\n\nAmira"
                ),
                seen=days_ago > 9,
            )
        )
    subject = "Retro notes: portal discovery phase"
    notes = b.add(
        DemoMail(
            key="retro-discovery-001",
            folder=INBOX,
            sender=AMIRA,
            to=[ME],
            cc=[MARCO],
            subject=subject,
            when=b.at(15, 16, 0),
            text=(
                "Notes from today's retro:\n\nKeep: weekly demo with Lena, interview debriefs on the same day.\n"
                "Change: fewer tools (we used four for notes), share raw notes earlier.\n"
                "Try: a shared glossary for Nordlicht terms.\n\nAmira"
            ),
        )
    )
    marco = b.add(
        DemoMail(
            key="retro-discovery-002",
            folder=INBOX,
            sender=MARCO,
            to=[AMIRA],
            cc=[ME],
            subject=f"Re: {subject}",
            when=b.at(15, 17, 12),
            text="+1 for the glossary. I can start one in the wiki tomorrow.\n\nMarco",
            parent=notes,
        )
    )
    mine = b.add(
        DemoMail(
            key="retro-discovery-003",
            folder=SENT,
            sender=ME,
            to=[AMIRA, MARCO],
            subject=f"Re: {subject}",
            when=b.at(14, 8, 40),
            text="Great notes, thanks. Let's settle on one note tool before the design phase: the wiki.\n\nDeniz",
            parent=marco,
        )
    )
    b.add(
        DemoMail(
            key="retro-discovery-004",
            folder=INBOX,
            sender=AMIRA,
            to=[ME, MARCO],
            subject=f"Re: {subject}",
            when=b.at(14, 9, 5),
            text="Agreed. I'll move the interview notes over this week.\n\nAmira",
            parent=mine,
        )
    )


def personal(b: MailboxBuilder) -> None:
    notes = [
        ("Note: garden plan for spring", "Raised bed by the fence: tomatoes, basil. Ask Elif for the seed list.", 88),
        (
            "Note: tax documents to collect",
            "Cloudnest invoices, Telvio bills, train tickets, home office receipts.",
            61,
        ),
        (
            "Note: ideas for the portal interviews",
            "Ask about the last return they made. Ask what they did instead of calling.",
            47,
        ),
        ("Note: books to read", "A Pattern Language; Thinking in Systems; Working in Public.", 33),
        ("Note: Istanbul recommendations", "Ben: the fish place in Kumkapı. Elif: ferry to Kadıköy at sunset.", 29),
        ("Note: things to fix in the flat", "Bathroom tap, the bike light, the hallway lamp.", 6),
    ]
    for index, (subject, text, days_ago) in enumerate(notes):
        b.add(
            DemoMail(
                key=f"note-to-self-{index + 1}",
                folder=SENT,
                sender=ME,
                to=[ME],
                subject=subject,
                when=b.at(days_ago, 22, 15),
                text=text,
            )
        )
    photos = b.add(
        DemoMail(
            key="family-photos-001",
            folder=INBOX,
            sender=ELIF,
            to=[ME],
            subject="Photos from Sunday",
            when=b.at(50, 20, 40),
            text=(
                "Hey! The photos from Mum's birthday are in the shared album. "
                "The one with the cake is my favourite.\n\nElif"
            ),
        )
    )
    answer = b.add(
        DemoMail(
            key="family-photos-002",
            folder=SENT,
            sender=ME,
            to=[ELIF],
            subject="Re: Photos from Sunday",
            when=b.at(50, 21, 55),
            text="They're lovely. Can you send me the cake one in full size? I'd like to print it for her.\n\nD.",
            parent=photos,
        )
    )
    b.add(
        DemoMail(
            key="family-photos-003",
            folder=INBOX,
            sender=ELIF,
            to=[ME],
            subject="Re: Photos from Sunday",
            when=b.at(49, 8, 5),
            text="Sent it via the album, it's the first one now. Print two, I want one too :)\n\nElif",
            parent=answer,
        )
    )
    dinner = b.add(
        DemoMail(
            key="dinner-ben-001",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Dinner when you're back from Istanbul?",
            when=b.at(20, 12, 30),
            text="Welcome back soon! Dinner next week? Thursday or Friday works for me.\n\nBen",
        )
    )
    reply = b.add(
        DemoMail(
            key="dinner-ben-002",
            folder=SENT,
            sender=ME,
            to=[BEN],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(20, 19, 2),
            text="Friday! I'll bring the lokum I promised. Your place or the Georgian place on Kastanienallee?",
            parent=dinner,
        )
    )
    ben = b.add(
        DemoMail(
            key="dinner-ben-003",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(19, 9, 10),
            text="Georgian place, 19:30. I'll book a table.",
            parent=reply,
        )
    )
    b.add(
        DemoMail(
            key="dinner-ben-004",
            folder=INBOX,
            sender=BEN,
            to=[ME],
            subject="Re: Dinner when you're back from Istanbul?",
            when=b.at(1, 18, 45),
            text="That was fun. Same time next month? Also: you left your scarf here.",
            parent=ben,
            seen=False,
        )
    )

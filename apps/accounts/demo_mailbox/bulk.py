"""Bulk mail: newsletters, and the generated notifications that fill the mailbox up to DEMO_MESSAGE_COUNT."""

from __future__ import annotations

from apps.accounts.demo_mailbox.model import INBOX, NEWSLETTERS, DemoMail, MailboxBuilder
from apps.accounts.demo_mailbox.people import (
    CALENDAR,
    CODEHARBOR,
    DESIGN_NOTES,
    KIEZ,
    ME,
    MEETUP,
    PARCEL,
    WEEKLY_COMMIT,
)

# --- newsletters ----------------------------------------------------------------------------------

_COMMIT_TOPICS = [
    ("Flaky tests are a product problem", "Why the slowest team in the building had the fastest CI."),
    ("SQLite in production, a year later", "WAL mode, busy timeouts and the one backup mistake we made."),
    ("Reading other people's migrations", "A checklist for schema changes you did not write."),
    ("The cost of a feature flag", "Flags are cheap to add and expensive to forget."),
    ("Typed settings, fewer surprises", "Parsing environment variables once, at startup."),
    ("Pagination without regret", "Keyset vs. offset, and when offset is just fine."),
    ("Small PRs, big wins", "Review latency dropped by half when we capped diffs at 300 lines."),
    ("When the queue is the database", "Running background jobs on Postgres and SQLite."),
    ("On-call without heroics", "Runbooks, quiet alerts and honest post-mortems."),
    ("HTML over the wire", "Server-rendered pages that still feel fast."),
    ("Searching your own data", "Full-text search and embeddings side by side."),
    ("Time zones are a UX problem", "Store UTC, show local, and say which one you mean."),
    ("Caching is a promise", "Every cache entry is a statement about when data may be stale."),
    ("The boring stack dividend", "Fewer moving parts, more time for the product."),
    ("Logs people actually read", "Structure, context and fewer exclamation marks."),
    ("A year of dependency updates", "What broke, what didn't, and the weekly ritual that helped."),
]
_KIEZ_NEWS = [
    ("Pumpkin week and a new cheese supplier", "Our shift schedule for the pumpkin delivery is online."),
    ("General assembly on 28 November", "Agenda: membership fee, cargo bike, winter opening hours."),
    ("Volunteers wanted for Saturday shifts", "Two hours a month keep the shop open for everyone."),
    ("Winter vegetables and the Christmas market stall", "Help us sell jam and sauerkraut on 12 December."),
]
_DESIGN_NOTES = [
    ("August: forms that forgive", "Error messages that tell people what to do next."),
    ("September: empty states", "The first screen a user sees is usually an empty one."),
    ("October: density and calm", "How to show a lot of data without shouting."),
    ("November: designing for keyboards", "Focus order, visible focus and shortcuts that help."),
]


def _newsletter_html(*, brand: str, colour: str, heading: str, lede: str, items: list[str], footer: str) -> str:
    rows = "".join(f'<li style="margin:0 0 8px">{item}</li>' for item in items)
    return (
        '<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background-color:#f3f4f6">'
        '<tr><td align="center" style="padding:24px">'
        '<table role="presentation" width="600" cellpadding="0" cellspacing="0" '
        'style="background-color:#ffffff;border-radius:8px;max-width:600px">'
        f'<tr><td style="background-color:{colour};color:#ffffff;padding:16px 24px;font-size:14px;'
        f'font-weight:bold;letter-spacing:1px">{brand}</td></tr>'
        f'<tr><td style="padding:24px"><h1 style="font-size:22px;margin:0 0 12px">{heading}</h1>'
        f'<p style="font-size:15px;color:#374151">{lede}</p><ul style="padding-left:20px">{rows}</ul>'
        '<p><a href="https://example.com/read-more" style="color:#2f5bd3">Read the full issue</a></p>'
        '<img src="https://example.com/pixel.gif" width="1" height="1" alt=""></td></tr>'
        f'<tr><td style="padding:16px 24px;font-size:12px;color:#6b7280">{footer} · '
        '<a href="https://example.com/unsubscribe" style="color:#6b7280">Unsubscribe</a></td></tr>'
        "</table></td></tr></table>"
    )


def newsletters(b: MailboxBuilder) -> None:
    for index, (title, lede) in enumerate(_COMMIT_TOPICS):
        number = 141 + index
        days_ago = 4 + 7 * (len(_COMMIT_TOPICS) - 1 - index)
        links = [
            f"{title} — the main essay this week",
            "Tool of the week: a tiny CLI that diffs two SQLite databases",
            "Reader question: how do you test code that sends email?",
        ]
        b.add(
            DemoMail(
                key=f"weekly-commit-{number}",
                folder=NEWSLETTERS,
                sender=WEEKLY_COMMIT,
                to=[ME],
                subject=f"The Weekly Commit #{number}: {title}",
                when=b.at(days_ago, 6, 30),
                text=f"The Weekly Commit #{number}\n\n{title}\n{lede}\n\n"
                + "\n".join(f"* {link}" for link in links)
                + "\n\nRead online: https://example.com/read-more\nUnsubscribe: https://example.com/unsubscribe",
                html=_newsletter_html(
                    brand=f"THE WEEKLY COMMIT · #{number}",
                    colour="#1f2937",
                    heading=title,
                    lede=lede,
                    items=links,
                    footer="You subscribed at weeklycommit.example",
                ),
                headers={
                    "List-Unsubscribe": "<https://example.com/unsubscribe>",
                    "List-Id": "<weekly.weeklycommit.example>",
                },
                seen=days_ago > 20,
            )
        )
    for index, (title, lede) in enumerate(_KIEZ_NEWS):
        days_ago = 95 - 28 * index
        b.add(
            DemoMail(
                key=f"kiez-news-{index + 1}",
                folder=NEWSLETTERS,
                sender=KIEZ,
                to=[ME],
                subject=f"Kiez Food Co-op: {title}",
                when=b.at(days_ago, 18, 0),
                text=f"Hello members,\n\n{lede}\n\nShop hours: Tue-Fri 15-20, Sat 10-16.\n\nYour co-op board",
                html=_newsletter_html(
                    brand="KIEZ FOOD CO-OP",
                    colour="#3f7d3a",
                    heading=title,
                    lede=lede,
                    items=["Shop hours: Tue-Fri 15-20, Sat 10-16", "Next shift sign-up: in the members' area"],
                    footer="Kiez Food Co-op eG, Berlin",
                ),
                headers={"List-Id": "<members.kiezfood.example>"},
            )
        )
    for index, (title, lede) in enumerate(_DESIGN_NOTES):
        days_ago = 110 - 30 * index
        b.add(
            DemoMail(
                key=f"design-notes-{index + 1}",
                folder=NEWSLETTERS,
                sender=DESIGN_NOTES,
                to=[ME],
                subject=f"Design Notes — {title}",
                when=b.at(days_ago, 8, 15),
                text=f"Design Notes\n\n{title}\n\n{lede}\n\nRead online: https://example.com/read-more",
                html=_newsletter_html(
                    brand="DESIGN NOTES",
                    colour="#7c3aed",
                    heading=title,
                    lede=lede,
                    items=["Essay of the month", "Three examples we liked", "One thing to try this week"],
                    footer="Design Notes is a monthly letter about interface design",
                ),
                seen=index < 3,
            )
        )


# --- generated notifications (fills the mailbox up to DEMO_MESSAGE_COUNT) ------------------------

_PULL_REQUESTS = [
    "Add keyset pagination to the orders API",
    "Fix time zone handling in the returns report",
    "Replace the legacy PDF renderer",
    "Cache order-status lookups for 60 seconds",
    "Accessibility: label the account page form fields",
    "Bump the design tokens package",
    "Track click-and-collect pick-ups in analytics",
    "Remove the unused newsletter sign-up endpoint",
    "Speed up the nightly export",
    "Retry webhook deliveries with backoff",
]
_PR_EVENTS = [
    ("requested your review", "{actor} requested your review on this pull request."),
    ("commented", "{actor} commented:\n\n> Could we add a test for the empty case?"),
    ("approved", "{actor} approved these changes."),
    ("CI failed", "The check 'tests (sqlite)' failed on commit {sha}. 1 failing test: test_export_empty_day."),
    ("merged", "Merged #{number} into main."),
]
_REVIEWERS = ["priya-r", "tbecker", "amira-h", "m-bianchi", "jweber"]
_CALENDAR_EVENTS = [
    "Client call: Nordlicht weekly",
    "Focus block: prototype",
    "Interview: store staff Hamburg",
    "Dentist",
    "Design review with Marco",
    "Invoice day",
]
_PARCEL_STATUSES = [
    "Your parcel is on its way",
    "Your parcel will arrive today",
    "Your parcel was delivered",
    "We could not deliver your parcel",
]
_MEETUP_TOPICS = [
    "Research ops on a shoestring",
    "Pricing pages that convert",
    "From prototype to production",
    "Accessibility in B2B tools",
]


def notifications(b: MailboxBuilder, count: int) -> None:
    """Repetitive, machine-sent mail: pull-request threads, calendar reminders, parcels, meetups."""
    rng = b.rng
    made = 0
    # Per pull request: number, title, first notification (what replies reference), latest, next event.
    pr_threads: list[tuple[int, str, DemoMail | None, DemoMail | None, int]] = [
        (120 + index, title, None, None, 0) for index, title in enumerate(_PULL_REQUESTS)
    ]
    while made < count:
        kind = rng.choices(["pr", "calendar", "parcel", "meetup"], weights=[6, 2, 2, 1])[0]
        days_ago = rng.uniform(0.2, 118)
        if kind == "pr":
            slot = rng.randrange(len(pr_threads))
            number, title, root, latest, step = pr_threads[slot]
            if step >= len(_PR_EVENTS):
                continue
            event, template = _PR_EVENTS[step]
            actor = rng.choice(_REVIEWERS)
            if latest is not None:
                # Each event follows the previous one on the same pull request.
                since_latest = (b.anchor - latest.when).total_seconds() / 86400
                days_ago = max(0.01, since_latest - rng.uniform(0.02, min(3.0, max(0.03, since_latest))))
            sha = f"{rng.getrandbits(28):07x}"
            mail = b.add(
                DemoMail(
                    key=f"codeharbor-nordlicht-portal-pr{number}-{step}",
                    folder=INBOX,
                    sender=CODEHARBOR,
                    to=[ME],
                    subject=("Re: " if root else "") + f"[nordlicht/portal] {title} (#{number})",
                    when=b.at(days_ago),
                    text=template.format(actor=actor, sha=sha, number=number)
                    + f"\n\n-- \nView it on CodeHarbor: https://codeharbor.example/nordlicht/portal/pull/{number}"
                    + f"\nYou are receiving this because {actor} {event} and you are a reviewer.",
                    parent=root,
                    seen=days_ago > 6,
                    headers={"List-Id": "<portal.nordlicht.codeharbor.example>"},
                )
            )
            pr_threads[slot] = (number, title, root or mail, mail, step + 1)
        elif kind == "calendar":
            title = rng.choice(_CALENDAR_EVENTS)
            when = b.at(days_ago, rng.choice([7, 8, 12, 16]), 0)
            b.add(
                DemoMail(
                    key=f"calendar-reminder-{made}",
                    folder=INBOX,
                    sender=CALENDAR,
                    to=[ME],
                    subject=f"Reminder: {title} @ {when.strftime('%a %d %b %H:%M')}",
                    when=when,
                    text=f"This is a reminder for '{title}' starting at {when.strftime('%H:%M')}.",
                )
            )
        elif kind == "parcel":
            status = rng.choice(_PARCEL_STATUSES)
            tracking = f"PP-{rng.randrange(1000, 9999)}-{rng.randrange(1000, 9999)}-DE"
            b.add(
                DemoMail(
                    key=f"parcel-{tracking.lower()}-{made}",
                    folder=INBOX,
                    sender=PARCEL,
                    to=[ME],
                    subject=f"{status} ({tracking})",
                    when=b.at(days_ago),
                    text=f"{status}.\nTracking number: {tracking}\nTrack it at https://parcelpoint.example/t/{tracking}",
                    seen=days_ago > 5,
                )
            )
        else:
            topic = rng.choice(_MEETUP_TOPICS)
            b.add(
                DemoMail(
                    key=f"meetup-{made}",
                    folder=INBOX,
                    sender=MEETUP,
                    to=[ME],
                    subject=f"New event: {topic}",
                    when=b.at(days_ago, 10, 0),
                    text=f"Berlin Product Circle invites you to '{topic}'.\n"
                    "Doors 18:30, talks 19:00. RSVP on the website.",
                )
            )
        made += 1

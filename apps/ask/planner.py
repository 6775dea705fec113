# ruff: noqa: RUF001 -- the lexicon is multilingual on purpose.
"""Step 1 and 2 of an Ask run: classify the intent, then plan the search. Pure functions of the question,
the previous turns of the conversation and "now"; no database access, so each rule is unit-tested.

The plan carries what the retrieval steps need: entities and sender/organisation hints, concept groups
(payment, statement, invoice, due date, …) with their spellings in the languages mail arrives in, the
answer type (a date, an amount, anything), a date range from phrases such as "last month" or "in March",
attachment hints, keyword query variants for the local index and query strings for Gmail and Graph.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from apps.ask.textutil import MONTHS, contains_word, normalize
from apps.search.folding import STOPWORDS, fold

AnswerType = Literal["date", "amount", "any"]
IntentName = Literal["question", "follow_up_drafts", "unsupported"]


@dataclass(frozen=True, slots=True)
class Concept:
    """A thing people ask about and the words mail uses for it. A trailing * marks a stem (Turkish and
    German inflect: "ödeme*" finds "ödemenizi"); other terms match whole words or phrases."""

    name: str
    terms: tuple[str, ...]
    # Extra words that reveal the concept in a question but are too vague to search documents for.
    triggers: tuple[str, ...] = ()


CONCEPTS: tuple[Concept, ...] = (
    Concept(
        "payment",
        (
            "payment",
            "payments",
            "pay",
            "paid",
            "ödeme*",
            "öde*",
            "zahlung*",
            "zahlbar",
            "bezahl*",
            "überweisung*",
            "pago",
            "pagar",
            "paiement",
            "payer",
            "pagamento",
        ),
    ),
    Concept(
        "due_date",
        (
            "due date",
            "due",
            "deadline",
            "pay by",
            "payable by",
            "son ödeme tarihi",
            "son ödeme",
            "fällig*",
            "zahlbar bis",
            "zahlungsziel",
            "vencimiento",
            "échéance",
            "scadenza",
        ),
        triggers=("when", "ne zaman", "wann", "cuando", "quand", "by when", "until when"),
    ),
    Concept(
        "statement",
        (
            "statement",
            "e-statement",
            "account summary",
            "hesap özeti",
            "ekstre*",
            "e-ekstre*",
            "kontoauszug*",
            "abrechnung*",
            "extracto",
            "relevé",
        ),
    ),
    Concept(
        "invoice",
        ("invoice*", "bill", "bills", "fatura*", "rechnung*", "factura*", "facture*", "receipt*", "quittung*"),
    ),
    Concept(
        "credit_card",
        (
            "credit card",
            "card",
            "kredi kart*",
            "kart*",
            "kreditkarte*",
            "tarjeta",
            "carte bancaire",
            "visa",
            "mastercard",
        ),
    ),
    Concept(
        "amount",
        (
            "amount",
            "total",
            "balance",
            "debt",
            "borç*",
            "dönem borcu",
            "tutar*",
            "betrag*",
            "summe",
            "importe",
            "montant",
            "rechnungsbetrag",
        ),
        triggers=("how much", "ne kadar", "wie viel", "wieviel", "cuánto", "combien"),
    ),
    Concept("minimum_payment", ("minimum payment", "asgari ödeme*", "mindestzahlung", "pago mínimo")),
    Concept("bank", ("bank", "banka*", "banco", "banque", "bankası")),
    Concept("meeting", ("meeting*", "call", "toplantı*", "besprechung*", "termin*", "reunión", "réunion")),
    Concept("travel", ("flight*", "booking*", "reservation*", "hotel*", "ticket*", "uçuş*", "buchung*", "reserva*")),
    Concept("delivery", ("parcel*", "package*", "delivery", "shipment*", "tracking", "kargo*", "paket*", "lieferung*")),
    Concept("contract", ("contract*", "agreement*", "sözleşme*", "vertrag*", "contrato*")),
    Concept("proposal", ("proposal*", "offer*", "quote*", "teklif*", "angebot*", "propuesta*")),
)
CONCEPTS_BY_NAME = {concept.name: concept for concept in CONCEPTS}

DATE_TRIGGERS = (
    "when",
    "what date",
    "which date",
    "by when",
    "until when",
    "deadline",
    "due",
    "ne zaman",
    "wann",
    "cuándo",
    "cuando",
    "quand",
)
AMOUNT_TRIGGERS = (
    "how much",
    "what amount",
    "what is the total",
    "ne kadar",
    "wie viel",
    "wieviel",
    "cuánto",
    "combien",
)
ATTACHMENT_HINTS = (
    "attachment",
    "attached",
    "pdf",
    "document",
    "file",
    "statement",
    "invoice",
    "receipt",
    "contract",
    "ek",
    "ekte",
    "anhang",
    "anbei",
    "adjunto",
)

# Actions Ask will not do, by the verb that asks for them (checked at the start of an instruction).
UNSUPPORTED_ACTIONS: dict[str, str] = {
    "delete": "delete mail",
    "remove": "delete mail",
    "trash": "delete mail",
    "erase": "delete mail",
    "purge": "delete mail",
    "archive": "archive mail",
    "move": "move mail",
    "file": "move mail",
    "send": "send mail",
    "forward": "forward mail",
    "reply": "send replies",
    "respond": "send replies",
    "mark": "change read/done marks",
    "flag": "change flags",
    "star": "change flags",
    "label": "change labels",
    "tag": "change labels",
    "unsubscribe": "unsubscribe you from lists",
    "block": "block senders",
    "create": "create rules or filters",
    "add": "create rules or filters",
    "set": "create rules or filters",
    "empty": "delete mail",
    "clean": "delete mail",
    "lösche": "delete mail",
    "sil": "delete mail",
}
RULE_WORDS = ("rule", "filter", "automation", "auto-reply", "autoreply", "out of office")
POLITE_PREFIX = re.compile(
    r"^(?:please|pls|kindly|hey|hi|ok|okay|now|go ahead and|can you|could you|would you|will you|i want you to|"
    r"i'd like you to|i need you to)\b[\s,]*",
    re.IGNORECASE,
)
DRAFT_WORDS = ("draft", "write", "prepare", "compose")
FOLLOW_UP_WORDS = ("follow-up", "follow up", "followup", "nudge", "reminder", "chase", "hatırlat", "nachfassen")
NO_REPLY_PATTERNS = re.compile(
    r"(hasn'?t|have ?n[o']t|did ?n[o']t|not yet|never|no one|nobody|has not|have not)\s+(yet\s+)?"
    r"(replied|responded|answered|gotten back|got back|written back)",
    re.IGNORECASE,
)
DAYS_RE = re.compile(r"\b(\d{1,3})\s*(day|days|d|week|weeks|gün|tage?n?)\b", re.IGNORECASE)

FOLLOW_UP_QUESTION = re.compile(
    r"^(and|what about|how about|also|und|peki|ya)\b|\b(that one|the one before|before that|the previous one|"
    r"the one after|after that|the next one|the same|it|them|that|those)\b",
    re.IGNORECASE,
)
BEFORE_RE = re.compile(r"\b(before that|the one before|previous|earlier|prior|older|önceki|vorherige?n?)\b", re.I)
AFTER_RE = re.compile(r"\b(after that|the one after|next one|later|newer|sonraki|nächste)\b", re.I)

QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "should",
        "would",
        "will",
        "need",
        "make",
        "give",
        "tell",
        "show",
        "find",
        "list",
        "get",
        "any",
        "my",
        "me",
        "i",
        "you",
        "our",
        "us",
        "the",
        "a",
        "an",
        "of",
        "to",
        "for",
        "from",
        "in",
        "on",
        "at",
        "by",
        "with",
        "about",
        "last",
        "this",
        "next",
        "previous",
        "that",
        "those",
        "these",
        "one",
        "ones",
        "and",
        "or",
        "also",
        "please",
        "mail",
        "mails",
        "email",
        "emails",
        "message",
        "messages",
        "inbox",
        "mailbox",
        "much",
        "many",
        "say",
        "said",
        "says",
        "tell",
        "told",
        "mention",
        "mentioned",
        "write",
        "wrote",
        "have",
        "has",
        "had",
        "get",
        "got",
        "make",
        "made",
        "need",
        "needs",
    ]
)
# Words that only say *when* (they become the date range, not search words).
TIME_WORDS = frozenset(
    [
        "today",
        "yesterday",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "day",
        "days",
        "last",
        "past",
        "previous",
        "this",
        "since",
        "ago",
        "bugun",
        "dun",
        "hafta",
        "ay",
        "yil",
        "gun",
        "heute",
        "gestern",
        "woche",
        "monat",
        "jahr",
    ]
) | frozenset(MONTHS)
SAYING_VERBS = frozenset(
    [
        "say",
        "said",
        "write",
        "wrote",
        "send",
        "sent",
        "mention",
        "mentioned",
        "ask",
        "asked",
        "reply",
        "replied",
        "answer",
        "answered",
        "tell",
        "told",
        "suggest",
        "suggested",
        "propose",
        "proposed",
        "want",
        "wanted",
        "think",
        "thought",
    ]
)
ORG_SUFFIXES = ("bank", "banka", "bankası", "airlines", "airline", "inc", "gmbh", "ltd", "llc", "corp", "ag", "co")


@dataclass(slots=True)
class DateRange:
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    label: str = ""


@dataclass(slots=True)
class DraftRequest:
    topic_terms: list[str]
    min_days: int


@dataclass(slots=True)
class Plan:
    question: str
    intent: IntentName
    refusal: str = ""  # what Ask will not do, for an unsupported action
    answer_type: AnswerType = "any"
    entities: list[str] = field(default_factory=list)
    sender_hints: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    keyword_queries: list[str] = field(default_factory=list)
    semantic_query: str = ""
    provider_queries: dict[str, str] = field(default_factory=dict)
    date_range: DateRange = field(default_factory=DateRange)
    wants_attachments: bool = False
    follow_up: bool = False
    draft: DraftRequest | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["date_range"] = {
            "start": self.date_range.start.isoformat() if self.date_range.start else None,
            "end": self.date_range.end.isoformat() if self.date_range.end else None,
            "label": self.date_range.label,
        }
        return data


@dataclass(slots=True)
class PreviousTurn:
    """What planning needs from an earlier question of the same conversation."""

    question: str
    plan: dict[str, Any]
    top_evidence_date: dt.datetime | None = None


# --- intent -----------------------------------------------------------------------------------------


def classify_intent(question: str) -> tuple[IntentName, str]:
    """(intent, refusal text). Questions are the default; instructions are checked by their first verb."""
    text = " ".join(question.strip().split())
    lowered = text.lower()
    instruction = POLITE_PREFIX.sub("", lowered)
    instruction = POLITE_PREFIX.sub("", instruction)
    first = re.match(r"[\w'-]+", instruction)
    verb = first.group(0) if first else ""
    wants_draft = any(re.search(rf"\b{word}\b", lowered) for word in DRAFT_WORDS)
    if wants_draft and (any(word in lowered for word in FOLLOW_UP_WORDS) or NO_REPLY_PATTERNS.search(lowered)):
        if verb in ("send", "forward") or re.search(r"\band send\b|\bsend (it|them)\b", lowered):
            return "unsupported", "send mail"
        return "follow_up_drafts", ""
    if verb in UNSUPPORTED_ACTIONS:
        action = UNSUPPORTED_ACTIONS[verb]
        if verb in ("create", "add", "set") and not any(word in lowered for word in RULE_WORDS):
            return "question", ""
        if verb == "file" and not re.match(r"file\s+(all|every|the|these|this|those|my|them|it)\b", instruction):
            return "question", ""
        return "unsupported", action
    if any(word in lowered for word in RULE_WORDS) and re.search(r"\b(make|create|add|set up|setup)\b", lowered):
        return "unsupported", "create rules or filters"
    return "question", ""


def refusal_text(action: str) -> str:
    return (
        f"I can't {action} — Ask Inbox only reads your mail, answers questions about it and can prepare "
        "follow-up drafts for you to review. Nothing in your mailbox was changed."
    )


# --- dates --------------------------------------------------------------------------------------------


def _start_of_day(day: dt.date, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=tz)


def _end_of_day(day: dt.date, tz: dt.tzinfo) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.max, tzinfo=tz)


def _month_range(year: int, month: int, tz: dt.tzinfo) -> tuple[dt.datetime, dt.datetime]:
    last = calendar.monthrange(year, month)[1]
    return _start_of_day(dt.date(year, month, 1), tz), _end_of_day(dt.date(year, month, last), tz)


def parse_date_range(question: str, now: dt.datetime) -> DateRange:
    """Relative and named periods: today, yesterday, this/last week, this/last month, last N days,
    in March (the most recent March that has begun), in March 2025, in 2025, since March."""
    text = normalize(question)
    tz = now.tzinfo or dt.UTC
    today = now.astimezone(tz).date()
    if re.search(r"\btoday\b|\bbugun\b|\bheute\b", text):
        return DateRange(_start_of_day(today, tz), _end_of_day(today, tz), "today")
    if re.search(r"\byesterday\b|\bdun\b|\bgestern\b", text):
        day = today - dt.timedelta(days=1)
        return DateRange(_start_of_day(day, tz), _end_of_day(day, tz), "yesterday")
    match = re.search(r"\b(?:last|past|previous|son)\s+(\d{1,3})\s+(day|days|week|weeks|month|months|gun)\b", text)
    if match:
        count = int(match.group(1))
        unit = match.group(2)
        days = count * (7 if unit.startswith("week") else 30 if unit.startswith("month") else 1)
        return DateRange(_start_of_day(today - dt.timedelta(days=days), tz), now, f"last {count} {unit}")
    if re.search(r"\bthis week\b|\bbu hafta\b|\bdiese woche\b", text):
        start = today - dt.timedelta(days=today.weekday())
        return DateRange(_start_of_day(start, tz), now, "this week")
    if re.search(r"\blast week\b|\bgecen hafta\b|\bletzte woche\b", text):
        start = today - dt.timedelta(days=today.weekday() + 7)
        return DateRange(_start_of_day(start, tz), _end_of_day(start + dt.timedelta(days=6), tz), "last week")
    if re.search(r"\bthis month\b|\bbu ay\b|\bdiesen monat\b", text):
        return DateRange(_start_of_day(today.replace(day=1), tz), now, "this month")
    if re.search(r"\blast month\b|\bgecen ay\b|\bletzten monat\b|\bvormonat\b", text):
        year, month = (today.year, today.month - 1) if today.month > 1 else (today.year - 1, 12)
        start, end = _month_range(year, month, tz)
        return DateRange(start, end, "last month")
    if re.search(r"\blast year\b|\bgecen yil\b|\bletztes jahr\b", text):
        return DateRange(
            _start_of_day(dt.date(today.year - 1, 1, 1), tz),
            _end_of_day(dt.date(today.year - 1, 12, 31), tz),
            "last year",
        )
    month_names = "|".join(sorted((re.escape(name) for name in MONTHS if len(name) >= 3), key=len, reverse=True))
    match = re.search(rf"\b(in|since|after|before|during|from)\s+({month_names})\b(?:\s+(\d{{4}}))?", text)
    if match:
        month = MONTHS[match.group(2)]
        year = int(match.group(3)) if match.group(3) else (today.year if month <= today.month else today.year - 1)
        start, end = _month_range(year, month, tz)
        word = match.group(1)
        label = f"{word} {calendar.month_name[month]} {year}"
        if word in ("since", "after", "from"):
            return DateRange(start if word != "after" else end, None, label)
        if word == "before":
            return DateRange(None, start, label)
        return DateRange(start, end, label)
    match = re.search(r"\b(in|since|during)\s+((?:19|20)\d{2})\b", text)
    if match:
        year = int(match.group(2))
        start = _start_of_day(dt.date(year, 1, 1), tz)
        if match.group(1) == "since":
            return DateRange(start, None, f"since {year}")
        return DateRange(start, _end_of_day(dt.date(year, 12, 31), tz), f"in {year}")
    return DateRange()


MAIL_TIME_WORDS = re.compile(
    r"\b(sent|send|received|receive|got|get|came|arrived|wrote|written|mail|mails|e-?mails?|messages?|"
    r"gönder\w*|geldi|geschickt|bekommen)\b",
    re.IGNORECASE,
)
RELATIVE_LABELS = ("today", "yesterday", "this week", "last week", "this month", "last month", "last year", "last ")


def mail_date_range(question: str, now: dt.datetime) -> DateRange:
    """The date range that limits which mail is searched. Relative periods ("last month", "yesterday")
    always do; a named month or year only when the question is about mail sent or received then
    ("what did Lena send in March"), not about an event then ("the trip in December")."""
    found = parse_date_range(question, now)
    if not found.label or found.label.startswith(RELATIVE_LABELS) or MAIL_TIME_WORDS.search(question):
        return found
    return DateRange()


# --- entities and keywords ------------------------------------------------------------------------------


def term_matches(folded_text: str, term: str) -> bool:
    """A lexicon term against folded lowercase text: stems by prefix at a word start, others whole."""
    if term.endswith("*"):
        stem = normalize(term[:-1])
        start = folded_text.find(stem)
        while start != -1:
            if start == 0 or not folded_text[start - 1].isalnum():
                return True
            start = folded_text.find(stem, start + 1)
        return False
    return contains_word(folded_text, normalize(term))


def detect_concepts(question: str) -> list[str]:
    text = normalize(question)
    found: list[str] = []
    for concept in CONCEPTS:
        if any(term_matches(text, term) for term in (*concept.terms, *concept.triggers)):
            found.append(concept.name)
    # "when … pay" asks for the due date even when no deadline word was used.
    if "payment" in found and any(contains_word(text, normalize(t)) for t in DATE_TRIGGERS) and "due_date" not in found:
        found.append("due_date")
    if "due_date" in found and not ({"payment", "invoice", "statement"} & set(found)):
        # "when is the meeting" is about a date, not about a payment deadline.
        found.remove("due_date")
    return found


_WORD = re.compile(r"[\w][\w.&'@-]*[\w]|[\w]", re.UNICODE)


def extract_entities(question: str) -> tuple[list[str], list[str]]:
    """(entities, sender/organisation hints): capitalised or all-caps words that are not sentence starts,
    question words or lexicon terms; addresses and domains; the word before "bank", "Inc", "GmbH"…"""
    entities: list[str] = []
    senders: list[str] = []
    words = _WORD.findall(question)
    lexicon = {normalize(term.rstrip("*")) for concept in CONCEPTS for term in concept.terms if " " not in term}
    for index, word in enumerate(words):
        plain = word.strip(".'")
        folded = normalize(plain)
        if not plain or folded in QUESTION_WORDS or folded in STOPWORDS or folded in TIME_WORDS:
            continue
        if "@" in plain or re.fullmatch(r"[\w-]+\.(com|org|net|de|tr|example|io|co)", plain.lower()):
            entities.append(plain)
            senders.append(plain)
            continue
        is_caps = len(plain) >= 2 and plain.isupper() and any(c.isalpha() for c in plain)
        is_capitalised = plain[:1].isupper() and index > 0 and folded not in lexicon
        if (is_caps or is_capitalised) and folded not in lexicon and plain not in entities:
            entities.append(plain)
        following = normalize(words[index + 1]) if index + 1 < len(words) else ""
        if following in ORG_SUFFIXES and folded not in lexicon and plain not in senders:
            senders.append(plain)
            if plain not in entities:
                entities.append(plain)
        previous = normalize(words[index - 1]) if index > 0 else ""
        named = is_caps or is_capitalised
        from_someone = previous in ("from", "by", "von", "de")
        # "what did Lena say / has Tom sent": the person wrote it.
        said_by = previous in ("did", "has", "have") and following in SAYING_VERBS
        if named and (from_someone or said_by) and plain not in senders:
            senders.append(plain)
    return entities, senders


def content_keywords(question: str) -> list[str]:
    words: list[str] = []
    for word in _WORD.findall(question):
        folded = normalize(word)
        if len(folded) < 2 or folded in QUESTION_WORDS or folded in STOPWORDS or folded.isdigit():
            continue
        if folded in TIME_WORDS or "'" in folded:
            continue
        if folded not in words:
            words.append(folded)
    return words


def _search_spelling(term: str) -> str:
    return term.rstrip("*")


def keyword_queries(entities: list[str], concepts: list[str], keywords: list[str]) -> list[str]:
    """Query variants for the local index, most specific first. Each runs as all-words, then any-word."""
    queries: list[str] = []
    if entities:
        queries.append(" ".join(entities))
    if keywords:
        queries.append(" ".join(keywords))
    for name in concepts:
        concept = CONCEPTS_BY_NAME[name]
        spellings = [_search_spelling(term) for term in concept.terms if " " not in term]
        phrases = [f'"{_search_spelling(term)}"' for term in concept.terms if " " in term]
        prefix = (" ".join(entities) + " ") if entities else ""
        queries.append(prefix + " ".join(spellings + phrases))
    seen: set[str] = set()
    unique: list[str] = []
    for query in queries:
        if query and query not in seen:
            seen.add(query)
            unique.append(query)
    return unique[:8]


def provider_queries(plan: Plan) -> dict[str, str]:
    """Gmail `q=` and Graph `$search` strings. With entities they are the query (precise, and language
    independent: "QNB" finds a Turkish statement, "payment" would not); otherwise the content words."""
    words = [f'"{e}"' if " " in e else e for e in plan.entities] if plan.entities else plan.keywords[:6]
    gmail = " ".join(words)
    if plan.date_range.start:
        gmail += f" after:{plan.date_range.start:%Y/%m/%d}"
    if plan.date_range.end:
        gmail += f" before:{(plan.date_range.end + dt.timedelta(days=1)):%Y/%m/%d}"
    graph = " ".join(plan.entities or plan.keywords[:4])
    return {"gmail": gmail.strip(), "graph": graph.strip()}


# --- the plan -----------------------------------------------------------------------------------------


def _draft_request(question: str) -> DraftRequest:
    days_match = DAYS_RE.search(question)
    days = 3
    if days_match:
        days = int(days_match.group(1)) * (7 if days_match.group(2).lower().startswith("week") else 1)
    topic = [
        word
        for word in content_keywords(question)
        if word
        not in {
            "draft",
            "write",
            "prepare",
            "compose",
            "follow",
            "up",
            "followup",
            "everyone",
            "everybody",
            "anyone",
            "who",
            "hasn",
            "hasnt",
            "haven",
            "havent",
            "replied",
            "responded",
            "answered",
            "yet",
            "days",
            "day",
            "weeks",
            "week",
            "reply",
            "replies",
            "people",
            "nudge",
            "reminder",
        }
        and not word.isdigit()
        and not any(word in normalize(phrase).split() or word == normalize(phrase) for phrase in FOLLOW_UP_WORDS)
    ]
    return DraftRequest(topic_terms=topic, min_days=max(0, days))


def plan_question(
    question: str,
    *,
    now: dt.datetime,
    history: list[PreviousTurn] | None = None,
) -> Plan:
    intent, refusal = classify_intent(question)
    plan = Plan(question=question, intent=intent, refusal=refusal)
    if intent == "unsupported":
        return plan
    if intent == "follow_up_drafts":
        plan.draft = _draft_request(question)
        plan.keywords = plan.draft.topic_terms
        plan.date_range = parse_date_range(question, now)
        return plan
    entities, senders = extract_entities(question)
    concepts = detect_concepts(question)
    keywords = content_keywords(question)
    date_range = mail_date_range(question, now)
    text = normalize(question)
    previous = history[-1] if history else None
    is_follow_up = bool(previous) and (
        bool(FOLLOW_UP_QUESTION.search(question.strip())) or (len(keywords) <= 2 and not entities)
    )
    if previous is not None and is_follow_up:
        before = previous.plan
        entities = entities or list(before.get("entities") or [])
        senders = senders or list(before.get("sender_hints") or [])
        concepts = concepts or list(before.get("concepts") or [])
        inherited = [k for k in before.get("keywords") or [] if k not in keywords]
        keywords = [*keywords, *inherited]
        if BEFORE_RE.search(question) and previous.top_evidence_date is not None:
            date_range = DateRange(
                None, previous.top_evidence_date - dt.timedelta(seconds=1), "before the previous answer"
            )
        elif AFTER_RE.search(question) and previous.top_evidence_date is not None:
            date_range = DateRange(
                previous.top_evidence_date + dt.timedelta(seconds=1), None, "after the previous answer"
            )
        elif not date_range.label and before.get("date_range"):
            saved = before["date_range"]
            date_range = DateRange(
                dt.datetime.fromisoformat(saved["start"]) if saved.get("start") else None,
                dt.datetime.fromisoformat(saved["end"]) if saved.get("end") else None,
                str(saved.get("label") or ""),
            )
    answer_type: AnswerType = "any"
    if any(contains_word(text, normalize(t)) for t in AMOUNT_TRIGGERS):
        answer_type = "amount"
    elif any(contains_word(text, normalize(t)) for t in DATE_TRIGGERS):
        answer_type = "date"
    elif is_follow_up and previous is not None:
        answer_type = previous.plan.get("answer_type") or "any"
    plan.follow_up = is_follow_up
    plan.answer_type = answer_type
    plan.entities = entities
    plan.sender_hints = senders
    plan.concepts = concepts
    plan.keywords = keywords
    plan.date_range = date_range
    plan.wants_attachments = bool(
        {"statement", "invoice", "contract", "payment", "due_date", "amount", "credit_card"} & set(concepts)
        or any(contains_word(text, normalize(h)) for h in ATTACHMENT_HINTS)
    )
    plan.keyword_queries = keyword_queries(entities, concepts, keywords)
    context = ""
    if is_follow_up and previous is not None:
        context = previous.question + " "
    plan.semantic_query = (context + question).strip()
    plan.provider_queries = provider_queries(plan)
    return plan


def folded_terms(concept_name: str) -> list[str]:
    return [fold(term).lower() for term in CONCEPTS_BY_NAME[concept_name].terms]

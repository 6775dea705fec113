"""Step 1 of an Ask run: is this a question, a request for follow-up drafts, or an action Ask does not do?

Instructions are recognised by their English verbs (the product's UI language); anything else is a
question, so a question in another language is never refused. Pure functions, unit-tested."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from apps.ask.textutil import normalize
from apps.ask.vocabulary import answer_types_of
from apps.search.folding import STOPWORDS, fold_tokens

IntentName = Literal["question", "follow_up_drafts", "unsupported"]

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
}
# Verbs of these actions are also names or nouns ("Mark Sagel's phone number", "Star Furniture delivery date");
# the verbs that send, move or delete mail are always read as instructions.
NAME_LIKE_ACTIONS = ("change read/done marks", "change flags", "change labels", "block senders")
RULE_WORDS = ("rule", "filter", "automation", "auto-reply", "autoreply", "out of office")
POLITE_PREFIX = re.compile(
    r"^(?:please|pls|kindly|hey|hi|ok|okay|now|go ahead and|can you|could you|would you|will you|i want you to|"
    r"i'd like you to|i need you to)\b[\s,]*",
    re.IGNORECASE,
)
DRAFT_WORDS = ("draft", "write", "prepare", "compose")
FOLLOW_UP_WORDS = ("follow-up", "follow up", "followup", "nudge", "reminder", "chase")
NO_REPLY_PATTERNS = re.compile(
    r"(hasn'?t|have ?n[o']t|did ?n[o']t|not yet|never|no one|nobody|has not|have not)\s+(yet\s+)?"
    r"(replied|responded|answered|gotten back|got back|written back)",
    re.IGNORECASE,
)
DAYS_RE = re.compile(r"\b(\d{1,3})\s*(day|days|d|week|weeks)\b", re.IGNORECASE)


@dataclass(slots=True)
class DraftRequest:
    topic_terms: list[str]
    min_days: int


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
    if verb in UNSUPPORTED_ACTIONS and not (
        UNSUPPORTED_ACTIONS[verb] in NAME_LIKE_ACTIONS and _asks_about_a_name(text)
    ):
        action = UNSUPPORTED_ACTIONS[verb]
        if verb in ("create", "add", "set") and not any(word in lowered for word in RULE_WORDS):
            return "question", ""
        if verb == "file" and not re.match(r"file\s+(all|every|the|these|this|those|my|them|it)\b", instruction):
            return "question", ""
        return "unsupported", action
    if any(word in lowered for word in RULE_WORDS) and re.search(r"\b(make|create|add|set up|setup)\b", lowered):
        return "unsupported", "create rules or filters"
    return "question", ""


_NAME_START = re.compile(r"^[^\W\d_][^\W_]*\s+[^\W\d_]")


def _asks_about_a_name(text: str) -> bool:
    """ "Mark Sagel's phone number", "Bill White's fax": the first word is a name (capitalised, and so is the
    next one), and the text asks for a kind of value. "Delete Ergoform mails" asks for none: an instruction."""
    start = _NAME_START.match(text)
    if not start or not text[:1].isupper() or not start.group(0)[-1].isupper():
        return False
    return any(kind != "yesno" for kind in answer_types_of(text))


def refusal_text(action: str) -> str:
    return (
        f"I can't {action} — Ask Inbox only reads your mail, answers questions about it and can prepare "
        "follow-up drafts for you to review. Nothing in your mailbox was changed."
    )


_TOPIC_WORD = re.compile(r"[\w][\w.&'@-]*[\w]|[\w]", re.UNICODE)


def _topic_words(question: str) -> list[str]:
    words: list[str] = []
    for word in _TOPIC_WORD.findall(question):
        folded = normalize(word)
        if len(folded) < 2 or folded in STOPWORDS or folded.isdigit() or "'" in folded:
            continue
        if folded not in words:
            words.append(folded)
    return words


def draft_request(question: str) -> DraftRequest:
    days_match = DAYS_RE.search(question)
    days = 3
    if days_match:
        days = int(days_match.group(1)) * (7 if days_match.group(2).lower().startswith("week") else 1)
    topic = [
        word
        for word in _topic_words(question)
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


# ------------------------------------------------------------------------------------------ the request router
# One conversation over mail and library files (seed inbox-agent-conversational.md): before a request is
# planned as a mail question it is routed. Fast rules first, by the product's English UI verbs and the kind
# of object named (a file, a photo, a PDF, mail); the configured language model only when the rules are
# unsure (see route_with_llm in apps/ask/file_router.py); anything else stays a mail question.

RequestIntent = Literal[
    "question",
    "follow_up_drafts",
    "unsupported",
    "query_files",
    "confirm",
    "reject",
    "choose",
    "organize",
    "save",
    "chat",
]
FILE_INTENTS = ("query_files", "confirm", "reject", "choose", "organize", "save")
SURE = 0.8  # below this the rules are unsure and a configured language model decides

# Nouns that name the kind of object asked for: library files (and which kind) or mail. UI vocabulary about
# objects, not topics: "find my passport" names neither and is left to the model (or stays a mail question).
FILE_KIND_NOUNS: dict[str, str] = {
    "photo": "image", "photos": "image", "picture": "image", "pictures": "image", "pic": "image",
    "pics": "image", "image": "image", "images": "image", "screenshot": "image", "screenshots": "image",
    "jpg": "image", "jpeg": "image", "png": "image", "heic": "image",
    "pdf": "pdf", "pdfs": "pdf",
    "docx": "docx",
}  # fmt: skip
FILE_NOUNS = {"file", "files", "document", "documents", "doc", "docs", "scan", "scans", "library", "folder"}
MAIL_NOUNS = {"mail", "mails", "email", "emails", "e-mail", "e-mails", "message", "messages", "thread", "threads"}
FIND_VERBS = re.compile(
    r"^(?:find|show|open|locate|get|fetch|list|display|where(?:'s| is| are| did i (?:put|save))|look (?:for|up)|"
    r"search(?: for)?|pull up|bring up|give me|do i have)\b",
    re.IGNORECASE,
)
AFFIRM = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|alright|fine|do it|go ahead|go for it|sounds good|please do|confirm|"
    r"accept|approve|move (?:it|this|that|them|these|those)|file (?:it|them)|that'?s right|correct)\b",
    re.IGNORECASE,
)
NEGATE = re.compile(
    r"^(?:no|nope|nah|don'?t|do not|cancel|reject|decline|keep (?:it|this|that|them)|leave (?:it|this|that|them)|"
    r"never ?mind)\b",
    re.IGNORECASE,
)
# "not that one, the driver's license": a follow-up that narrows the previous file query.
NARROW = re.compile(
    r"^(?:no[,.!]?\s+)?(?:not (?:that|this|these|those|it|them)(?: one| ones)?|(?:the )?other (?:one|ones)|"
    r"another(?: one)?|something else)\b",
    re.IGNORECASE,
)
# Words that only talk about the decision itself ("yes, move it there please").
DECISION_WORDS = {
    "yes", "yeah", "yep", "yup", "sure", "ok", "okay", "alright", "fine", "do", "it", "go", "ahead", "for",
    "sounds", "good", "please", "confirm", "accept", "approve", "move", "moved", "file", "that", "thats",
    "that's", "right", "correct", "this", "these", "those", "them", "one", "ones", "the", "there", "here",
    "no", "nope", "nah", "don't", "dont", "not", "cancel", "reject", "decline", "keep", "leave", "never",
    "mind", "nevermind", "in", "inbox", "where", "is", "stay", "stays", "thanks", "thank", "you", "to",
    "suggested", "suggestion", "folder", "all", "both", "every", "of", "and", "just", "now", "we", "can",
}  # fmt: skip
ALL_WORDS = {"all", "both", "every", "them", "these", "those"}
# "no, move it to Taxes/2024", "put them in Receipts", "file it under Work": another folder than the suggested one
# (a pronoun only: "move the newsletters to archive" is about mail, and a file is named on the buttons' card).
MOVE_TO = re.compile(
    r"^(?:(?:yes|yeah|ok|okay|no|nope|nah|actually|rather|instead)\b[\s,.!]*)*"
    r"(?:move|put|file|place)\s+(?P<object>it|this|that|them|these|those|both|all(?: of them)?)\s+"
    r"(?:to|in|into|under)\s+(?:the\s+)?(?P<folder>[^?]+?)(?:\s+folder)?(?:\s+(?:instead|please|then))?\s*[.!]*$",
    re.IGNORECASE,
)
SAVE = re.compile(
    r"^(?:(?:save|store|note down|jot down|write down|add to (?:my )?library)\b"
    r"(?:\s+(?:this|that|the following|a|my))?(?P<object>\s+(?:note|link|url|text|page|idea|thought))?"
    r"|(?P<label>note|memo)(?=\s*:))\s*(?P<colon>[:\-\u2013\u2014])?\s*",
    re.IGNORECASE,
)
URL = re.compile(r"https?://[^\s<>\"']+", re.IGNORECASE)
# A question about something (an event, a fact) rather than a request for an object: "when are …", "did …".
ASKS_ABOUT = re.compile(
    r"^(?:when|what(?:'s)?|who(?:se|m)?|how|which|why|did|does|do|is|are|was|were|has|have|had|can|could|will|"
    r"would|should)\b",
    re.IGNORECASE,
)
ORGANIZE = re.compile(
    r"^(?:organi[sz]e|sort(?: out)?|tidy(?: up)?|file away|suggest (?:a )?folders?(?: for)?)\b", re.IGNORECASE
)


@dataclass(slots=True)
class RouterContext:
    """What the router may know beyond the words: is a decision pending, did the previous turn find files."""

    pending_suggestions: int = 0  # the owner's pending folder suggestions
    shown_pending: int = 0  # of them, the ones this conversation showed last
    last_file_query: bool = False  # the previous turn of this conversation was a file query
    has_files: bool = False  # the owner's library has files
    folders: tuple[str, ...] = ()  # the library's folders (relative paths), read when a suggestion is pending


@dataclass(slots=True)
class Route:
    intent: RequestIntent
    confidence: float
    source: Literal["rules", "llm", "examples"] = "rules"
    refusal: str = ""
    query: str = ""  # query_files: the words to search for
    kind: str = ""  # query_files: image | pdf | docx (named in the request), "" for any
    narrow: bool = False  # query_files: refines the previous file query of the conversation
    exclude_previous: bool = False  # query_files: "not that one" — leave out the file shown first last time
    content: str = ""  # save: the note or the link
    names: list[str] = field(default_factory=list)  # confirm/reject: other words (a file's name), "all"
    folder: str = ""  # choose: the folder the user named instead of the suggested one
    reason: str = ""  # why the rules decided this (shown in the step detail)
    reply: str = ""  # chat: the short reply

    def as_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "confidence": round(self.confidence, 2),
            "source": self.source,
            "query": self.query,
            "kind": self.kind,
            "narrow": self.narrow,
            "exclude_previous": self.exclude_previous,
            "names": self.names,
            "folder": self.folder,
            "reason": self.reason,
        }


def instruction_text(question: str) -> str:
    text = " ".join(question.strip().split())
    stripped = POLITE_PREFIX.sub("", text)
    return POLITE_PREFIX.sub("", stripped)


def _words(text: str) -> list[str]:
    return [normalize(w) for w in re.findall(r"[\w][\w'.-]*[\w]|[\w]", text)]


FILLER = {"one", "ones", "that", "this", "these", "those", "other", "another", "not", "else", "something", "please"}


def file_query_words(text: str) -> tuple[str, str]:
    """(search words, kind) of a file request: its words minus the verb, stopwords and the nouns that only
    say "a file" (a kind noun — photo, PDF — becomes the kind)."""
    body = FIND_VERBS.sub("", text.strip(), count=1)
    kind = ""
    words: list[str] = []
    for word in re.findall(r"[\w][\w'.&-]*[\w]|[\w]", body):
        folded = normalize(word).removesuffix("'s")
        if folded in FILE_KIND_NOUNS:
            kind = kind or FILE_KIND_NOUNS[folded]
            continue
        if folded in FILE_NOUNS | FILLER | STOPWORDS or (len(folded) < 2 and not folded.isdigit()):
            continue
        if word not in words:
            words.append(word.removesuffix("'s").removesuffix("\u2019s"))
    return " ".join(words), kind


def decision_route(text: str, intent: Literal["confirm", "reject"], match: re.Match[str], ctx: RouterContext) -> Route:
    rest = [w for w in _words(text[match.end() :]) if w not in DECISION_WORDS]
    all_words = [w for w in _words(text) if w in ALL_WORDS]
    names = [*rest, *(["all"] if all_words else [])]
    pending = ctx.pending_suggestions or ctx.shown_pending
    if not rest:
        return Route(intent, 0.95 if pending else 0.85, names=names, reason="a yes/no to a folder suggestion")
    # Other words may name the file ("yes, move the invoice"); a few are fine, more make it another request.
    confidence = 0.85 if pending and len(rest) <= 3 else 0.0
    return Route(intent, confidence, names=names, reason="a yes/no naming a file")


def named_folder(typed: str, folders: tuple[str, ...]) -> str:
    """The library folder the user named: a folder's path, or the last part of exactly one folder's path
    ("Receipts" → "Finance/Receipts"), compared case- and accent-insensitively; else the words as typed
    (a new folder, created when the file moves there)."""
    wanted = " ".join(fold_tokens(typed.strip().strip("/")))
    if not wanted:
        return ""
    exact = [f for f in folders if " ".join(fold_tokens(f)) == wanted]
    if exact:
        return exact[0]
    by_name = [f for f in folders if " ".join(fold_tokens(f.rsplit("/", 1)[-1])) == wanted]
    return by_name[0] if len(by_name) == 1 else typed.strip().strip("/")


def move_to_route(text: str, ctx: RouterContext) -> Route | None:
    """ "no, move it to Taxes/2024": a pending suggestion answered with another folder."""
    match = MOVE_TO.match(text)
    if match is None or not (ctx.pending_suggestions or ctx.shown_pending) or set(_words(text)) & MAIL_NOUNS:
        return None
    folder = named_folder(match.group("folder"), ctx.folders)
    if not folder:
        return None
    target = match.group("object").lower()
    names = ["all"] if target.split()[0] in ALL_WORDS or target.startswith("all") else []
    kind = "an existing" if folder in ctx.folders else "a new"
    return Route("choose", 0.9, folder=folder, names=names, reason=f"another folder ({kind} one) for a suggestion")


def saved_content(question: str) -> str:
    """The note or link after "save this note:", with its own line breaks (the router's text has none)."""
    raw = question.strip()
    while (prefix := POLITE_PREFIX.match(raw)) and prefix.end():
        raw = raw[prefix.end() :]
    save = SAVE.match(raw)
    return raw[save.end() :].strip() if save else raw


def route_request(question: str, ctx: RouterContext | None = None) -> Route:
    """Route one request of a conversation by rules. A Route below SURE is a guess the language model may
    overrule (when one is configured)."""
    ctx = ctx or RouterContext()
    text = instruction_text(question)
    lowered = text.lower()
    words = set(_words(text))
    mentions_mail = bool(words & MAIL_NOUNS)
    names_kind = bool(words & set(FILE_KIND_NOUNS)) or bool(
        re.search(r"\.(?:pdf|jpe?g|png|heic|docx?|txt|md|csv|xlsx?)\b", lowered)
    )
    mentions_file = names_kind or bool(words & FILE_NOUNS)
    narrow = NARROW.match(text)
    if ctx.last_file_query and narrow:
        query, kind = file_query_words(text[narrow.end() :])
        return Route("query_files", 0.9, query=query, kind=kind, narrow=True, exclude_previous=True,
                     reason="narrows the previous file search")  # fmt: skip
    if (chosen := move_to_route(text, ctx)) is not None:
        return chosen
    affirm, negate = AFFIRM.match(text), NEGATE.match(text)
    if affirm or negate:
        route = decision_route(text, "confirm" if affirm else "reject", affirm or negate, ctx)  # type: ignore[arg-type]
        if ctx.last_file_query and negate and route.names:
            # "no, the driver's license": the previous file search, narrowed.
            query, kind = file_query_words(text[negate.end() :])
            return Route("query_files", 0.85, query=query, kind=kind, narrow=True, exclude_previous=True,
                         reason="narrows the previous file search")  # fmt: skip
        if route.confidence:
            return route
    save = SAVE.match(text)
    if save and text[save.end() :].strip():
        # "save this note: …", "save https://…", "note: …" are sure; "save the invoice from the bank" may mean a
        # mail attachment, which Ask cannot save: unsure (the model decides if configured, else a question).
        explicit = save.group("object") or save.group("label") or save.group("colon") or URL.match(text[save.end() :])
        if explicit:
            return Route("save", 0.9, content=saved_content(question), reason="something to keep in the library")
        return Route("question", 0.6, reason="save what? a mail or its attachment cannot be saved from Ask")
    if URL.fullmatch(text.strip().rstrip(".")):
        return Route("save", 0.9, content=text.strip(), reason="a link on its own")
    organize = ORGANIZE.match(text)
    if organize and not mentions_mail and (organize.group(0).lower().startswith("organi") or mentions_file):
        return Route("organize", 0.9, reason="organize the library inbox")
    intent, refusal = classify_intent(question)
    if intent != "question":
        return Route(intent, 0.9, refusal=refusal, reason="an instruction about mail")
    finding = FIND_VERBS.match(text)
    if not mentions_mail and names_kind and not finding and ASKS_ABOUT.match(text):
        # "when are the team pictures being taken?" asks about an event a mail tells of, not for a photo:
        # unsure (the model decides if configured; else mail, and library files too when there are some).
        query, kind = file_query_words(text)
        return Route("question", 0.5, query=query, kind=kind, reason="a question that names a kind of file")
    if not mentions_mail and ((finding and mentions_file) or names_kind):
        query, kind = file_query_words(text)
        return Route("query_files", 0.9, query=query, kind=kind, reason="asks for a file")
    if ctx.last_file_query and not mentions_mail and len(words) <= 4 and not question.strip().endswith("?"):
        # "the driver's license": a few words right after a file search refine it.
        query, kind = file_query_words(text)
        return Route("query_files", 0.7, query=query, kind=kind, narrow=True, reason="refines the file search")
    if finding and not mentions_mail and ctx.has_files:
        # "find my passport": a file or a mail? The model decides when configured; else mail and files both.
        query, kind = file_query_words(text)
        return Route("question", 0.5, query=query, kind=kind, reason="could be a file or a mail")
    return Route("question", 0.9 if not finding else 0.7, reason="a question about your mail")

"""Reads: message search shaped for the CLI, the API and the pages; embedding progress for diagnostics."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection
from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from apps.accounts.actions import tag_key
from apps.accounts.models import Attachment, MailAccount, MailFolder, MailTag, Message, MessageLocation, MessageTag
from apps.accounts.selectors import copy_keys
from apps.search.backends import get_search_backend
from apps.search.backends.base import MODES, EmbeddingProgress, Mode, SearchFilters, SearchHit
from apps.search.folding import STOPWORDS, fold_tokens
from apps.search.gist import gist_embedder_key, gist_progress, gists_enabled
from apps.search.headers import exact_address, term_pattern
from apps.search.kinds import DocumentPreview, document_kind
from apps.search.models import DocumentKind, SavedSearch, SearchDocument, SearchGist, SearchHeaders
from apps.search.query import HEADER_OPERATORS, ME, Operator, SearchQuery, parse_search

MAX_LIMIT = 100
MESSAGE_KINDS = (DocumentKind.MESSAGE.value, DocumentKind.ATTACHMENT.value)


@dataclass(slots=True)
class MessageResult:
    pk: int
    message_id: str
    score: float
    sources: list[str]
    snippet: str  # HTML: escaped text with the matching words in <mark>
    subject: str
    sender: str
    date: dt.datetime | None
    account_id: int
    folder: str
    kind: str
    thread_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "score": round(self.score, 6),
            "sources": self.sources,
            "snippet": self.snippet,
            "subject": self.subject,
            "from": self.sender,
            "date": self.date.isoformat() if self.date else None,
        }


def account_ids_for_user(user: Any, account: str | None = None) -> tuple[int, ...]:
    """The user's accounts, optionally narrowed to one by name (or id); unknown names give none."""
    accounts = MailAccount.objects.filter(owner=user)
    if account:
        by_name_or_id = Q(name=account)
        if account.isdigit():
            by_name_or_id |= Q(pk=int(account))
        accounts = accounts.filter(by_name_or_id)
    return tuple(accounts.values_list("pk", flat=True))


def account_ids_by_name(name: str) -> tuple[int, ...]:
    return tuple(MailAccount.objects.filter(name=name).values_list("pk", flat=True))


def normalize_mode(mode: str | None) -> Mode:
    value = (mode or "hybrid").strip().lower()
    for known in MODES:
        if value == known:
            return known
    raise ValueError(f"mode must be one of {', '.join(MODES)}")


def search_messages(
    query: str,
    *,
    mode: Mode = "hybrid",
    limit: int = 20,
    filters: SearchFilters | None = None,
    prefix_last: bool = False,
) -> list[MessageResult]:
    """Ranked messages for `query`; an attachment hit stands for its message, each message once."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    filters = filters or SearchFilters()
    if filters.kinds is None:
        filters = SearchFilters(**{**_filter_fields(filters), "kinds": MESSAGE_KINDS})
    backend = get_search_backend()
    options: dict[str, Any] = {"filters": filters, "limit": limit + 10}
    if mode != "semantic":
        options["prefix_last"] = prefix_last
    hits = backend.search(query, mode=mode, **options)
    ordered: list[tuple[int, Any]] = []
    seen: set[int] = set()
    for hit in hits:
        if hit.message_id is None or hit.message_id in seen:
            continue
        seen.add(hit.message_id)
        ordered.append((hit.message_id, hit))
        if len(ordered) >= limit:
            break
    messages = {
        m.pk: m
        for m in Message.objects.filter(pk__in=[pk for pk, _ in ordered]).only(
            "id",
            "message_id",
            "dedupe_key",
            "subject",
            "from_name",
            "from_address",
            "date",
            "account_id",
            "folder",
            "thread_id",
        )
    }
    results: list[MessageResult] = []
    for pk, hit in ordered:
        message = messages.get(pk)
        if message is None:
            continue
        results.append(
            MessageResult(
                pk=pk,
                message_id=message.message_id or message.dedupe_key,
                score=hit.score,
                sources=hit.sources,
                snippet=hit.snippet,
                subject=message.subject,
                sender=message.sender,
                date=message.date,
                account_id=message.account_id,
                folder=message.folder,
                kind=hit.kind,
                thread_id=message.thread_id,
            )
        )
    return results


def parse_date_bound(value: str | dt.date | None, *, end: bool) -> dt.datetime | None:
    """A date (the whole day) or an ISO datetime; naive values are in the current time zone."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time.max if end else dt.time.min)
    else:
        text = value.strip()
        try:
            moment = dt.datetime.fromisoformat(text)
            if len(text) <= 10:
                moment = dt.datetime.combine(moment.date(), dt.time.max if end else dt.time.min)
        except ValueError as exc:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD) or ISO datetime") from exc
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def build_filters(
    *,
    account_ids: tuple[int, ...] | None,
    folder: str | None = None,
    date_from: str | dt.date | None = None,
    date_to: str | dt.date | None = None,
    from_address: str | None = None,
    to_address: str | None = None,
    has_attachment: bool | None = None,
    kind: str | None = None,
) -> SearchFilters:
    kinds: tuple[str, ...] | None = None
    if kind:
        if kind not in DocumentKind.values:
            raise ValueError(f"kind must be one of {', '.join(DocumentKind.values)}")
        kinds = (kind,)
    return SearchFilters(
        account_ids=account_ids,
        folder=folder or None,
        date_from=parse_date_bound(date_from, end=False),
        date_to=parse_date_bound(date_to, end=True),
        from_address=from_address or None,
        to_address=to_address or None,
        has_attachment=has_attachment,
        kinds=kinds,
    )


def _filter_fields(filters: SearchFilters) -> dict[str, Any]:
    return {name: getattr(filters, name) for name in SearchFilters.__dataclass_fields__}


def embedding_progress() -> EmbeddingProgress:
    """Documents embedded with the current vectors' model / all indexed documents (diagnostics)."""
    return get_search_backend().embedding_progress()


ETA_CACHE_KEY = "search:embedding-eta-samples"
ETA_WINDOW_SECONDS = 180  # the rate is measured over the last few minutes of progress
ETA_MIN_SPAN_SECONDS = 20  # and only once it spans this long (one batch is not a rate)


def embedding_eta_seconds(done: int, pending: int, *, now: float | None = None) -> float | None:
    """About how long until the pending documents and gists are embedded, at the rate measured between
    the progress samples of the last few minutes (kept in the shared cache, so every process and every
    poll of the panel adds to the same measurement); None while there is no rate to go by."""
    import time

    from django.core.cache import cache

    now = time.time() if now is None else now
    samples = [s for s in cache.get(ETA_CACHE_KEY, []) if now - s[0] <= ETA_WINDOW_SECONDS and s[1] <= done]
    samples.append((now, done))
    cache.set(ETA_CACHE_KEY, samples[-60:], ETA_WINDOW_SECONDS)
    if not pending:
        return 0.0
    first_time, first_done = samples[0]
    span = now - first_time
    if span < ETA_MIN_SPAN_SECONDS or done <= first_done:
        return None
    return pending / ((done - first_done) / span)


def progress_context() -> dict[str, Any]:
    """The progress panel's numbers, with the time left at the measured rate (vectors and gists together)."""
    progress, gists = embedding_progress(), gist_embedding_progress()
    pending = progress.pending + (gists.pending if gists.embedder else 0)
    eta = embedding_eta_seconds(progress.done + gists.done, pending)
    return {
        "progress": progress,
        "gists": gists,
        "eta_minutes": None if eta is None else max(1, round(eta / 60)),
        "hidden": False,
    }


def index_work_pending() -> bool:
    """Whether documents wait for vectors or messages for a gist or its continuation: three cheap reads (~10 ms
    together on 44,715 mails, the last one on a partial index; the counts of the progress panel take 260 ms);
    a gist stale after a re-index is not seen."""
    if get_search_backend().has_pending_embeddings():
        return True
    if not gists_enabled():
        return False
    if SearchDocument.objects.filter(kind=DocumentKind.MESSAGE, gist__isnull=True).exists():
        return True
    return SearchGist.objects.filter(continuation__isnull=True).exists()


def gist_embedding_progress() -> EmbeddingProgress:
    """Messages with a current gist (apps/search/gist.py) / message documents; embedder "" when switched off."""
    done, total = gist_progress()  # by the stored keys: the model is not loaded for a count
    return EmbeddingProgress(done=done, total=total, embedder=gist_embedder_key())


# ---------------------------------------------------------------------------------------------------
# The search syntax (apps/search/query.py) turned into index filters, and the page of results the search
# page, /api/search and `manage.py search` show: mail grouped by thread, library files, a count, paging and
# a "did you mean".

MAIL_KINDS = MESSAGE_KINDS
FILE_KIND = DocumentKind.FILE.value  # read once: an enum member's .value is a slow property in loops over hits
ATTACHMENT_KIND = DocumentKind.ATTACHMENT.value
ALL_KINDS = (*MESSAGE_KINDS, FILE_KIND)
COLLECT = 300  # ranked documents a query pages through (the count covers every keyword match)
MAX_COLLECT = 10_000  # ranked documents a deep page or a long page may ask for
PER_PAGE = 20
MAX_PER_PAGE = 1000  # `manage.py search --limit` above it is refused (the API and the page allow 100)
COPY_WINDOW_PAGES = 2  # copies are folded over the rows up to the end of the page after the one shown


def _like(value: str) -> str:
    escaped = value.strip().lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(Message._meta.db_table), quote(Attachment._meta.db_table)


def _file_paths_condition(like: str) -> str:
    """`filename:` over the registered file kind's paths ("" when no app registered one)."""
    entry = document_kind(FILE_KIND)
    if entry is None:
        return ""
    quote = connection.ops.quote_name
    table, column = quote(entry.model._meta.db_table), quote(entry.path_column)
    return (
        f" OR ({{d}}.kind = 'file' AND {{d}}.object_id IN"  # noqa: S608 (table names; values are params)
        f" (SELECT f.id FROM {table} f WHERE lower(f.{column}){like}))"
    )


def _location_tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(MessageLocation._meta.db_table), quote(MailFolder._meta.db_table)


def _tag_tables() -> tuple[str, str]:
    quote = connection.ops.quote_name
    return quote(MessageTag._meta.db_table), quote(MailTag._meta.db_table)


def _caseless(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def folders_condition(folders: tuple[str, ...], account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """Mail in any of `folders` or their subfolders, as `in:` means it, as one condition for
    SearchFilters.conditions (a mailbox MCP token restricted to folders searches only there)."""
    parts = [_condition(Operator(name="in", value=folder), account_ids) for folder in folders]
    return "(" + " OR ".join(sql for sql, _ in parts) + ")", tuple(p for _, params in parts for p in params)


def _condition(op: Operator, account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """One operator as SQL over search_document "{d}" (documents of messages join the message table)."""
    messages, attachments = _tables()
    like = r" LIKE %s ESCAPE '\'"
    value = op.value
    if op.name in HEADER_OPERATORS:
        return _header_condition(op, account_ids)
    if op.name == "filename":
        files = _file_paths_condition(like)
        return (
            f"({{d}}.message_id IN (SELECT a.message_id FROM {attachments} a WHERE lower(a.filename){like})"  # noqa: S608
            f"{files})",
            (_like(value), _like(value)) if files else (_like(value),),
        )
    if op.name == "is":
        column, wanted = {"unread": ("seen", False), "read": ("seen", True), "starred": ("flagged", True)}[value]
        return f"{{d}}.message_id IN (SELECT m.id FROM {messages} m WHERE m.{column} = %s)", (wanted,)  # noqa: S608
    if op.name == "tag":
        # The user's own tags (apps.accounts MailTag): only their accounts' documents are searched, and a tag is
        # only ever on its owner's messages, so the key alone names the right rows.
        tagged, tags = _tag_tables()
        return (
            f"{{d}}.message_id IN (SELECT mt.message_id FROM {tagged} mt"  # noqa: S608 (table names; values are params)
            f" JOIN {tags} t ON t.id = mt.tag_id WHERE t.{connection.ops.quote_name('key')} = %s)",
            (tag_key(value),),
        )
    if op.name == "in":
        folder = value.strip().lower()
        folders = MailFolder.objects.all()
        if account_ids is not None:
            folders = folders.filter(account_id__in=account_ids)
        # Compared in Python: SQLite folds ASCII letters only, and folder names are often not ASCII.
        # NFC too: a name read from a file system (macOS writes NFD) and a typed name may compose "Ü" differently.
        asked = _caseless(folder)
        names = sorted(
            {
                name
                for name, display, role in folders.values_list("name", "display_name", "role")
                if asked in {_caseless(name), _caseless(display), _caseless(role)}
                or _caseless(name).startswith(f"{asked}/")
            }
        )
        escaped = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        # Mail is in every folder it has a location in (a copy in two folders is found in both); library
        # files carry their folder on the document.
        placeholders = ", ".join(["%s"] * len(names))
        named = f" OR {{d}}.folder IN ({placeholders})" if names else ""
        located_named = f" OR f.name IN ({placeholders})" if names else ""
        located, folder_table = _location_tables()
        return (
            f"(({{d}}.kind = 'file' AND (lower({{d}}.folder) = %s OR lower({{d}}.folder){like}{named}))"  # noqa: S608
            f" OR {{d}}.message_id IN (SELECT l.message_id FROM {located} l"
            f" JOIN {folder_table} f ON f.id = l.folder_id"
            f" WHERE lower(f.name) = %s OR lower(f.name){like}{located_named}))",
            (folder, f"{escaped}/%", *names, folder, f"{escaped}/%", *names),
        )
    raise ValueError(f"{op.name}: is not a filter")


# The stored fields each header operator looks in: notmuch's to: is every recipient (To, Cc and Bcc).
HEADER_FIELDS = {
    "from": ("sender",),
    "to": ("to", "cc", "bcc"),
    "cc": ("cc",),
    "bcc": ("bcc",),
    "subject": ("subject",),
}


def _header_condition(op: Operator, account_ids: tuple[int, ...] | None) -> tuple[str, tuple[Any, ...]]:
    """from: to: cc: bcc: subject: as words or a phrase of the document's header fields (apps/search/headers.py);
    `me` as the exact address of the document's own account."""
    quote = connection.ops.quote_name
    headers = quote(SearchHeaders._meta.db_table)
    contains = "instr({column}, %s) > 0" if connection.vendor == "sqlite" else "strpos({column}, %s) > 0"
    columns = [f"h.{quote(column)}" for column in HEADER_FIELDS[op.name]]
    if op.value.lower() == ME and op.name != "subject":
        accounts = MailAccount.objects.exclude(address="")
        if account_ids is not None:
            accounts = accounts.filter(pk__in=account_ids)
        own = list(accounts.values_list("pk", "address"))
        if not own:
            return "1 = 0", ()
        found = " OR ".join(contains.format(column=column) for column in columns)
        per_account = " OR ".join(f"({{d}}.account_id = %s AND ({found}))" for _ in own)
        params: tuple[Any, ...] = tuple(
            value for pk, address in own for value in (pk, *[exact_address(address)] * len(columns))
        )
        return (
            f"EXISTS (SELECT 1 FROM {headers} h WHERE h.document_id = {{d}}.id AND ({per_account}))",  # noqa: S608
            params,
        )
    pattern = term_pattern(op.value)
    found = " OR ".join(contains.format(column=column) for column in columns)
    return (
        f"EXISTS (SELECT 1 FROM {headers} h WHERE h.document_id = {{d}}.id AND ({found}))",  # noqa: S608
        (pattern,) * len(columns),
    )


def filters_for_query(
    parsed: SearchQuery,
    *,
    user: Any = None,
    account: str | None = None,
    base: SearchFilters | None = None,
) -> SearchFilters:
    """SearchFilters for a parsed query. With `user`, only their accounts (and their library files unless an
    account is named); without (the CLI), every account. Unknown names raise ValueError."""
    if parsed.errors:
        raise ValueError("; ".join(parsed.errors))
    base = base or SearchFilters()
    names = [*([account] if account else []), *parsed.values("account")]
    account_ids: tuple[int, ...] | None = base.account_ids
    for name in names:
        found = account_ids_for_user(user, name) if user is not None else account_ids_by_name(name)
        if not found:
            raise ValueError(f"No account named {name!r}")
        account_ids = found if account_ids is None else tuple(pk for pk in account_ids if pk in found)
    if not names and user is not None and account_ids is None:
        account_ids = account_ids_for_user(user)
    owner_id = getattr(user, "pk", None) if user is not None and not names else None
    kinds: tuple[str, ...] = base.kinds or ALL_KINDS
    for value in parsed.values("kind"):
        wanted = {"mail": MAIL_KINDS, "file": (DocumentKind.FILE.value,)}.get(value, (value,))
        kinds = tuple(kind for kind in kinds if kind in wanted)
    for value in parsed.values("kind", negated=True):
        unwanted = {"mail": MAIL_KINDS, "file": (DocumentKind.FILE.value,)}.get(value, (value,))
        kinds = tuple(kind for kind in kinds if kind not in unwanted)
    if not kinds:
        kinds = ("-",)  # kind:mail -kind:mail: nothing
    conditions = list(base.conditions)
    for op in parsed.operators:
        if op.name in {"account", "kind", "before", "after", "date"}:
            continue
        if op.name == "has":
            sql, params = "{d}.has_attachments = %s", (True,)
        else:
            sql, params = _condition(op, account_ids)
        conditions.append((f"NOT COALESCE(({sql}), FALSE)" if op.negated else sql, params))
    for name in parsed.values("account", negated=True):
        found = account_ids_for_user(user, name) if user is not None else account_ids_by_name(name)
        if not found:
            raise ValueError(f"No account named {name!r}")
        if account_ids is not None:
            account_ids = tuple(pk for pk in account_ids if pk not in found)
        else:
            placeholders = ", ".join(["%s"] * len(found))
            conditions.append((f"NOT COALESCE(({{d}}.account_id IN ({placeholders})), FALSE)", tuple(found)))
    adapt = connection.ops.adapt_datetimefield_value
    for start, end in parsed.excluded_periods:
        bounds = [("{d}.date >= %s", start), ("{d}.date < %s", end)]
        sql = " AND ".join(clause for clause, moment in bounds if moment is not None)
        conditions.append((f"NOT COALESCE(({sql}), FALSE)", tuple(adapt(m) for _, m in bounds if m is not None)))
    date_from = max((d for d in (base.date_from, parsed.date_from) if d is not None), default=None)
    date_to = min((d for d in (base.date_to, parsed.date_to) if d is not None), default=None)
    return replace(
        base,
        account_ids=account_ids,
        owner_id=owner_id,
        kinds=kinds,
        date_from=date_from,
        date_to=date_to,
        conditions=tuple(conditions),
        exclude_words=(*base.exclude_words, *parsed.excluded),
    )


@dataclass(slots=True)
class ResultRow:
    """One row of results: a thread (its best-ranked matching message, and how many of its messages match),
    a message without a thread, or a library file."""

    kind: str  # "mail" | "file"
    score: float
    sources: list[str]
    snippet: str
    title: str
    sender: str
    date: dt.datetime | None
    folder: str
    matches: int = 1
    pk: int = 0  # the message's or the file's primary key
    message_id: str = ""
    thread_id: int | None = None
    account_id: int | None = None
    attachment: bool = False  # the best hit was text of one of the message's attachments
    path: str = ""
    mime_type: str = ""
    is_image: bool = False
    unread: bool = False
    copies: int = 0  # copies of this mail folded into the row (_fold_copies)
    copy_pks: list[int] = field(default_factory=list)  # their message pks, best ranked first
    copy_details: list[dict[str, Any]] = field(default_factory=list)  # filled for the shown rows (_fill)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "score": round(self.score, 6),
            "sources": self.sources,
            "snippet": self.snippet,
            "title": self.title,
            "from": self.sender,
            "date": self.date.isoformat() if self.date else None,
            "folder": self.folder,
            "matches": self.matches,
        }
        if self.kind == "file":
            data.update(file_id=self.pk, path=self.path, mime_type=self.mime_type)
        else:
            # "subject" repeats the title for callers of the message-only shape this replaced.
            data.update(
                id=self.pk,
                message_id=self.message_id,
                subject=self.title,
                thread_id=self.thread_id,
                account_id=self.account_id,
                unread=self.unread,
                copies=self.copies,
                copy_messages=self.copy_details,
            )
        return data


@dataclass(slots=True)
class SearchPage:
    query: SearchQuery
    mode: Mode
    rows: list[ResultRow]
    count: int  # matching documents: every keyword match plus meaning matches above the floor
    threads: int  # rows (threads, loose messages, files) among the ranked documents
    page: int
    per_page: int
    has_next: bool
    truncated: bool  # more documents matched than COLLECT: paging stops at the best COLLECT
    suggestion: str = ""  # the whole query with misspelt words replaced ("did you mean")

    @property
    def pages(self) -> int:
        return max(1, -(-self.threads // self.per_page))


def search_page(
    raw: str,
    *,
    user: Any = None,
    mode: Mode = "hybrid",
    page: int = 1,
    per_page: int = PER_PAGE,
    account: str | None = None,
    base: SearchFilters | None = None,
    prefix_last: bool = False,
    group: bool = True,
) -> SearchPage:
    """Parse `raw`, rank (or, for operators alone, list newest first), group mail by thread and cut one page.
    Invalid operators or unknown accounts raise ValueError with what to write instead."""
    parsed = parse_search(raw)
    filters = filters_for_query(parsed, user=user, account=account, base=base)
    backend = get_search_backend()
    page = max(1, int(page))
    per_page = int(per_page)
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise ValueError(f"results per page must be between 1 and {MAX_PER_PAGE}")
    # The best COLLECT documents, or as many as the asked page needs (up to MAX_COLLECT): rows past them are
    # not ranked, and the page says so (truncated) rather than being cut short silently.
    collect = min(MAX_COLLECT, max(COLLECT, (page + COPY_WINDOW_PAGES) * per_page))
    floor = float(backend.options["SEMANTIC_FLOOR"])
    text = parsed.text.strip()
    if not text:
        hits, count = backend.browse(filters=filters, limit=collect)
        hits = [hit for hit in hits if hit.kind]
    elif mode == "keyword":
        hits = backend.keyword(text, filters=filters, limit=collect, prefix_last=prefix_last, snippets=False)
        count = _items(hits)
        if len(hits) >= collect:
            count = backend.keyword_count(text, filters=filters)
    elif mode == "semantic":
        hits = [h for h in backend.semantic(text, filters=filters, limit=collect, snippets=False) if h.score >= floor]
        count = _items(hits)
    else:
        hits = backend.hybrid(
            text, filters=filters, limit=collect, prefix_last=prefix_last, snippets=False, semantic_floor=floor
        )
        count = _items(hits)
        if len(hits) >= collect:
            keyword_items = _items([h for h in hits if "fts" in h.sources])
            count = backend.keyword_count(text, filters=filters) + count - keyword_items
    ranked_items = _items(hits)
    start = (page - 1) * per_page
    rows = _fold_copies(_group(hits, by_thread=group), window=start + COPY_WINDOW_PAGES * per_page)
    shown = rows[start : start + per_page]
    _fill(shown, hits, text, prefix_last=prefix_last)
    suggestion = ""
    if text:
        suggestion = did_you_mean(parsed, backend)
    return SearchPage(
        query=parsed,
        mode=mode,
        rows=shown,
        count=max(count, ranked_items),
        threads=len(rows),
        page=page,
        per_page=per_page,
        has_next=start + per_page < len(rows),
        truncated=count > ranked_items,
        suggestion=suggestion,
    )


def _items(hits: list[SearchHit]) -> int:
    """Messages and files among `hits` (an attachment's text and its message are one message)."""
    return len({(hit.kind == FILE_KIND, hit.message_id or hit.object_id) for hit in hits})


def did_you_mean(parsed: SearchQuery, backend: Any = None) -> str:
    """The query with each word the index lacks replaced by its closest indexed spelling ("" if none)."""
    backend = backend or get_search_backend()
    words = [token for token in fold_tokens(parsed.text) if token not in STOPWORDS]
    fixes = backend.suggest(words)
    if not fixes:
        return ""

    def replace_word(match: re.Match[str]) -> str:
        word = match.group(0)
        folded = fold_tokens(word)
        return fixes.get(folded[0], word) if len(folded) == 1 else word

    return parsed.with_text(WORD_RE.sub(replace_word, parsed.text))


WORD_RE = re.compile(r"[^\W_]+")


def _group(hits: list[SearchHit], *, by_thread: bool = True) -> list[ResultRow]:
    """Rows in rank order: each thread once (at its best message; each message when not `by_thread`), each
    file once."""
    threads = _thread_ids([hit.message_id for hit in hits if hit.message_id is not None])
    rows: list[ResultRow] = []
    by_key: dict[str, ResultRow] = {}
    counted: dict[str, set[int]] = {}
    for hit in hits:
        if hit.kind == FILE_KIND:
            key, pk, kind = f"f{hit.object_id}", hit.object_id, "file"
        elif hit.message_id is not None and hit.message_id in threads:
            thread_id = threads[hit.message_id]
            key = f"t{thread_id}" if thread_id is not None and by_thread else f"m{hit.message_id}"
            pk, kind = hit.message_id, "mail"
        else:
            continue
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = ResultRow(
                kind=kind, score=hit.score, sources=list(hit.sources), snippet="", title="", sender="", date=None,
                folder="", pk=pk, thread_id=threads.get(pk) if kind == "mail" else None,
                attachment=hit.kind == ATTACHMENT_KIND,
            )  # fmt: skip
            rows.append(row)
            counted[key] = set()
        counted[key].add(pk)
        row.matches = len(counted[key])
    return rows


def _fold_copies(rows: list[ResultRow], *, window: int) -> list[ResultRow]:
    """One row per mail among the first `window` rows: a copy of a better-ranked row's message (the same mail
    in another folder or mailbox, or imported twice: apps.accounts.selectors.copy_keys) is folded into that
    row, which counts it. Folding keeps the order, so the pages before stay as they were shown; the rows past
    the window (pages not asked for) are left as they are, which keeps a query's cost to its page."""
    keys = copy_keys([row.pk for row in rows[:window] if row.kind == "mail"])
    kept: list[ResultRow] = []
    first: dict[tuple[Any, ...], ResultRow] = {}
    for row in rows[:window]:
        key = keys.get(row.pk) if row.kind == "mail" else None
        if key is None:
            kept.append(row)
        elif (original := first.get(key)) is not None:
            original.copies += 1 + row.copies
            original.copy_pks += [row.pk, *row.copy_pks]
            original.sources = list(dict.fromkeys([*original.sources, *row.sources]))
        else:
            first[key] = row
            kept.append(row)
    return kept + rows[window:]


def _thread_ids(message_ids: list[int]) -> dict[int, int | None]:
    """{message pk: its thread id} of the existing messages among `message_ids` (raw SQL: the ORM took longer
    to build this query than SQLite to answer it). On SQLite through the narrow (id, thread_id) index
    (mail migration 0007): the table row holds thread_id after the body."""
    found: dict[int, int | None] = {}
    if not message_ids:
        return found
    table = connection.ops.quote_name(Message._meta.db_table)
    indexed = " INDEXED BY mail_message_id_thread" if connection.vendor == "sqlite" else ""
    unique = list(dict.fromkeys(message_ids))
    with connection.cursor() as cursor:
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            cursor.execute(
                f"SELECT id, thread_id FROM {table}{indexed} WHERE id IN ({', '.join(['%s'] * len(batch))})",  # noqa: S608
                batch,
            )
            found.update(cursor.fetchall())
    return found


def _fill(rows: list[ResultRow], hits: list[SearchHit], text: str, *, prefix_last: bool = False) -> None:
    """Titles, senders, dates and snippets for the shown rows only (a page costs the same at any depth)."""
    message_pks = [row.pk for row in rows if row.kind == "mail"]
    file_pks = [row.pk for row in rows if row.kind == "file"]
    copy_pks = [pk for row in rows for pk in row.copy_pks]
    messages = Message.objects.filter(pk__in=[*message_pks, *copy_pks]).only(
        "id", "message_id", "dedupe_key", "subject", "from_name", "from_address", "date", "account_id", "folder",
        "thread_id", "seen",
    ).in_bulk()  # fmt: skip
    file_kind = document_kind(FILE_KIND)
    files = file_kind.describe(file_pks) if file_pks and file_kind is not None else {}
    best: dict[tuple[str, int], SearchHit] = {}
    for hit in hits:
        key = ("file", hit.object_id) if hit.kind == FILE_KIND else ("mail", hit.message_id or 0)
        best.setdefault(key, hit)
    shown = [best[(row.kind, row.pk)] for row in rows if (row.kind, row.pk) in best]
    filled = get_search_backend().snippets(shown, text, prefix_last=prefix_last)
    snippets = {hit.document_id: hit.snippet for hit in filled}
    for row in rows:
        top = best.get((row.kind, row.pk))
        row.snippet = snippets.get(top.document_id, "") if top else ""
        if row.kind == "mail" and (message := messages.get(row.pk)):
            row.title, row.sender, row.date = message.subject, message.sender, message.date
            row.folder, row.account_id, row.unread = message.folder, message.account_id, not message.seen
            row.message_id = message.message_id or message.dedupe_key
            row.thread_id = message.thread_id
            row.copy_details = [
                {
                    "id": copy.pk,
                    "message_id": copy.message_id or copy.dedupe_key,
                    "account_id": copy.account_id,
                    "folder": copy.folder,
                }
                for copy in (messages.get(pk) for pk in row.copy_pks)
                if copy is not None
            ]
        elif row.kind == "file" and (file := files.get(row.pk)):
            row.title, row.path, row.folder = file.title, file.path, file.folder
            row.mime_type, row.is_image = file.mime_type, file.is_image
            row.sender, row.date = file.sender, file.date


def document_preview(user: Any, kind: str, pk: int) -> DocumentPreview | None:
    """One of `user`'s documents of a registered kind (None: not theirs, gone, or no such kind)."""
    entry = document_kind(kind)
    return entry.preview(user, pk) if entry is not None else None


# --- saved searches ---------------------------------------------------------------------------------------


def access_saved_search(*, user: Any, saved_search_id: object) -> SavedSearch:
    try:
        pk = int(str(saved_search_id))
    except (TypeError, ValueError):
        raise Http404("No such saved search") from None
    saved = SavedSearch.objects.select_related("owner").filter(pk=pk, owner=user).first()
    if saved is None:
        raise Http404("No such saved search")
    return saved


@dataclass(frozen=True, slots=True)
class SavedSearchCount:
    saved: SavedSearch
    count: int | None  # messages and files the query matches by its words and operators; None: it cannot run
    error: str = ""


def count_matches(*, user: Any, query: str) -> int:
    """What the query matches by words and operators (the keyword side: no model is loaded for a count)."""
    parsed = parse_search(query)
    filters = filters_for_query(parsed, user=user)
    backend = get_search_backend()
    text = parsed.text.strip()
    if not text:
        return int(backend.browse(filters=filters, limit=1)[1])
    return int(backend.keyword_count(text, filters=filters))


def list_saved_searches(*, user: Any, counts: bool = True) -> list[SavedSearchCount]:
    rows = []
    for saved in SavedSearch.objects.filter(owner=user).order_by("name", "pk"):
        if not counts:
            rows.append(SavedSearchCount(saved=saved, count=None))
            continue
        try:  # an account named in the query may have been removed since
            rows.append(SavedSearchCount(saved=saved, count=count_matches(user=user, query=saved.query)))
        except ValueError as exc:
            rows.append(SavedSearchCount(saved=saved, count=None, error=str(exc)))
    return rows

"""The page of results the search page, /api/search and `manage.py search` show: mail grouped by thread, copies
of a mail folded into one row, library files, a count, paging and a "did you mean". Reached through
apps.search.selectors."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from apps.accounts.models import Message
from apps.accounts.selectors import copy_keys
from apps.search.backends import get_search_backend
from apps.search.backends.base import Mode, SearchFilters, SearchHit
from apps.search.folding import STOPWORDS, fold_tokens
from apps.search.kinds import document_kind
from apps.search.query import SearchQuery, parse_search
from apps.search.query_filters import ATTACHMENT_KIND, FILE_KIND, filters_for_query

COLLECT = 300  # ranked documents a query pages through (the count covers every keyword match)
MAX_COLLECT = 10_000  # ranked documents a deep page or a long page may ask for
PER_PAGE = 20
MAX_PER_PAGE = 1000  # `manage.py search --limit` above it is refused (the API and the page allow 100)
COPY_WINDOW_PAGES = 2  # copies are folded over the rows up to the end of the page after the one shown


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
